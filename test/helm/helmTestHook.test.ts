/**
 * `helm test` without a cluster: the gateway runs in-process on exactly what the chart
 * renders for the "default" CI scenario — the ConfigMap's portaria.yaml and the Secret's
 * key file, clients.json and admin token, with only the pod paths, listen addresses and the
 * upstream URL mapped onto this machine — and the test hook pod's own script (sh + curl, as
 * in the curl image) runs against it with the hook Secret's credentials.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, type TestContext, test } from 'node:test';
import type { IPod } from 'kubernetes-models/v1/Pod';
import { parse } from 'yaml';
import { createApp } from '../../src/app/createApp.js';
import { validateConfig } from '../../src/config/validateConfig.js';
import { createTestPki } from '../helpers/certificates.js';
import { startUpstream } from '../helpers/fixture.js';
import { runToEnd, tempDir } from '../helpers/process.js';
import { find, installed, type K8sObject, render, SCENARIOS } from './helm.js';

interface Secret {
  metadata: { name: string };
  data: Record<string, string>;
}

const decode = (b64: string) => Buffer.from(b64, 'base64').toString('utf8');

/**
 * Runs the rendered gateway; returns its public URL. `files` are what the pod's other
 * mounts hold (pod path → content), written where the pod paths are mapped to.
 */
async function startRenderedGateway(
  t: TestContext,
  objects: readonly K8sObject[],
  files: Readonly<Record<string, string>> = {},
): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-helm-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  for (const [path, content] of Object.entries(files)) {
    const local = join(dir, 'pod', path);
    await mkdir(dirname(local), { recursive: true });
    await writeFile(local, content);
  }
  const secretDir = join(dir, 'secret');
  const dataDir = join(dir, 'data');
  await mkdir(secretDir, { mode: 0o700 });
  await mkdir(dataDir);
  const secret = installed(objects).find((o) => o.kind === 'Secret') as unknown as Secret;
  for (const [name, value] of Object.entries(secret.data)) {
    await writeFile(join(secretDir, name), decode(value), { mode: 0o400 });
  }
  const map = find(objects, 'ConfigMap') as unknown as { data: Record<string, string> };
  // The pod's paths and addresses, mapped onto this machine.
  const podPath = (path: string) =>
    path
      .replace(/^\/etc\/portaria\/secret/, secretDir)
      .replace(/^\/data/, dataDir)
      .replace(/^\/etc\/portaria\//, `${join(dir, 'pod')}/etc/portaria/`);
  const raw = parse(map.data['portaria.yaml'] as string) as {
    server: Record<string, unknown>;
    admin: Record<string, unknown>;
    keys: { dir: string };
    clients: { file: string };
    revocation: { file: string; queueFile: string };
    routes: { upstream: string }[];
    clientCertificate?: { caFiles?: string[]; crlFiles?: string[] };
  };
  const upstream = await startUpstream(t);
  raw.server = { ...raw.server, host: '127.0.0.1', port: 0 };
  raw.admin = {
    ...raw.admin,
    host: '127.0.0.1',
    port: 0,
    tokenFile: raw.admin.tokenFile ? podPath(raw.admin.tokenFile as string) : null,
  };
  raw.keys.dir = podPath(raw.keys.dir);
  raw.clients.file = podPath(raw.clients.file);
  raw.revocation.file = podPath(raw.revocation.file);
  raw.revocation.queueFile = podPath(raw.revocation.queueFile);
  for (const route of raw.routes) route.upstream = upstream.url;
  const tls = raw.server.tls as { certFile?: string; keyFile?: string } | undefined;
  if (tls?.certFile) tls.certFile = podPath(tls.certFile);
  if (tls?.keyFile) tls.keyFile = podPath(tls.keyFile);
  const certificates = raw.clientCertificate;
  if (certificates?.caFiles) certificates.caFiles = certificates.caFiles.map(podPath);
  if (certificates?.crlFiles) certificates.crlFiles = certificates.crlFiles.map(podPath);
  const config = validateConfig(raw, { baseDir: dir });
  const app = await createApp({
    config,
    logDestination: new Writable({ write: (_chunk, _encoding, done) => done() }),
  });
  const { publicUrl } = await app.listen();
  t.after(() => app.shutdown());
  return publicUrl;
}

/** The test pod's script, run by sh with the pod's environment (Secret refs resolved). */
async function runHook(
  objects: readonly K8sObject[],
  publicUrl: string,
  override: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const pod = find(objects, 'Pod') as unknown as IPod;
  const container = pod.spec?.containers[0];
  assert.ok(container?.command, 'the test pod has a command');
  const [shell, flags, script] = container.command;
  assert.equal(shell, '/bin/sh');
  assert.equal(flags, '-ec');
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
  for (const variable of container.env ?? []) {
    const ref = variable.valueFrom?.secretKeyRef;
    if (ref) {
      const secret = objects.find((o) => o.kind === 'Secret' && o.metadata.name === ref.name);
      assert.ok(secret, `the hook references Secret ${ref.name}, which the chart does not render`);
      env[variable.name] = decode((secret as unknown as Secret).data[ref.key as string] as string);
    } else env[variable.name] = variable.value ?? '';
  }
  assert.match(env.PORTARIA_URL ?? '', /^https?:\/\/portaria\.portaria\.svc:80$/);
  Object.assign(env, { PORTARIA_URL: publicUrl }, override);
  return runToEnd('sh', ['-ec', script as string], { env });
}

describe('helm test hook, run against the gateway the chart renders', () => {
  const defaultScenario = () => {
    const scenario = SCENARIOS.find((s) => s.name === 'default');
    assert.ok(scenario);
    return render({ files: [scenario.file] });
  };

  test('gets a token and calls through the gateway (credentials from the hook Secret)', async (t) => {
    const objects = await defaultScenario();
    const hookSecret = find(objects, 'Secret', '-test-credentials');
    assert.equal(hookSecret.metadata.annotations?.['helm.sh/hook'], 'test');
    const url = await startRenderedGateway(t, objects);
    const result = await runHook(objects, url);
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.deepEqual(result.stdout.trim().split('\n'), [
      'ok: public keys served',
      'ok: /v1/orders/1 refused without a token',
      'ok: token issued',
      'ok: GET /v1/orders/1 with the token answered 200',
    ]);
  });

  test('fails on refused credentials and on an unexpected status', async (t) => {
    const objects = await defaultScenario();
    const url = await startRenderedGateway(t, objects);
    const wrong = await runHook(objects, url, { CLIENT_SECRET: 'not-the-secret-"quoted"\\' });
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /FAIL: token request answered 401, expected 200/);
    const status = await runHook(objects, url, { EXPECT_STATUS: '204' });
    assert.notEqual(status.code, 0);
    assert.match(
      status.stderr,
      /FAIL: GET \/v1\/orders\/1 with the token answered 200, expected 204/,
    );
    const down = await runHook(objects, 'http://127.0.0.1:9');
    assert.notEqual(down.code, 0);
    assert.match(down.stderr, /FAIL: GET \/.well-known\/jwks.json answered 000/);
  });

  test('with TLS and client certificates required: over https, trusting the CA, presenting the partner certificate', async (t) => {
    const objects = await render({
      files: [SCENARIOS.find((s) => s.name === 'tls')?.file as string],
    });
    const pki = await createTestPki(await tempDir(t, 'portaria-pki-'));
    // The scenario's fapi policy with TLS 1.2 takes RSA suites only.
    const server = await pki.ca.issue('rsa-server', { use: 'server', keyType: 'rsa' });
    const url = await startRenderedGateway(t, objects, {
      '/etc/portaria/tls/tls.crt': server.cert,
      '/etc/portaria/tls/tls.key': server.key,
      '/etc/portaria/client-ca/ca.crt': pki.ca.pem,
      '/etc/portaria/client-crl/crl.pem': await readFile(pki.crlFile, 'utf8'),
    });
    assert.match(url, /^https:/);
    const curlTls = (client: { certFile: string; keyFile: string }) =>
      `--cacert ${pki.ca.certFile} --cert ${client.certFile} --key ${client.keyFile}`;
    const result = await runHook(objects, url, { CURL_TLS: curlTls(pki.client) });
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.deepEqual(result.stdout.trim().split('\n'), [
      'ok: public keys served',
      'ok: /open-banking/accounts/v2/accounts refused without a token',
      'ok: token issued',
      'ok: GET /open-banking/accounts/v2/accounts with the token answered 200',
    ]);
    const revoked = await runHook(objects, url, { CURL_TLS: curlTls(pki.revokedClient) });
    assert.notEqual(revoked.code, 0);
    assert.match(revoked.stderr, /FAIL: token request answered 401, expected 200/);
  });

  test('under profile fapi-br: the partner gets a bound token with its secret and certificate, and uses it', async (t) => {
    const objects = await render({
      files: [SCENARIOS.find((s) => s.name === 'fapi-br')?.file as string],
    });
    const pki = await createTestPki(await tempDir(t, 'portaria-pki-'));
    const server = await pki.ca.issue('rsa-server', { use: 'server', keyType: 'rsa' });
    const url = await startRenderedGateway(t, objects, {
      '/etc/portaria/tls/tls.crt': server.cert,
      '/etc/portaria/tls/tls.key': server.key,
      '/etc/portaria/client-ca/ca.crt': pki.ca.pem,
    });
    const client = pki.client;
    const curlTls = `--cacert ${pki.ca.certFile} --cert ${client.certFile} --key ${client.keyFile}`;
    const result = await runHook(objects, url, { CURL_TLS: curlTls });
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.deepEqual(result.stdout.trim().split('\n'), [
      'ok: public keys served',
      'ok: /open-banking/accounts/v2/accounts refused without a token',
      'ok: token issued',
      'ok: GET /open-banking/accounts/v2/accounts with the token answered 200',
    ]);
  });

  test('without test credentials it checks the public keys and the refusal only', async (t) => {
    const objects = await render();
    assert.equal(objects.filter((o) => o.metadata.name.endsWith('-test-credentials')).length, 0);
    const withKeys = await render({
      files: [SCENARIOS.find((s) => s.name === 'default')?.file as string],
    });
    const url = await startRenderedGateway(t, withKeys);
    const result = await runHook(objects, url);
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.match(
      result.stdout,
      /ok: \/ refused without a token\nno test client .*: token step skipped/,
    );
  });
});
