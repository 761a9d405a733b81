/**
 * Kubernetes' service-link variables (docs/deploying.md): the chart turns them off
 * (`enableServiceLinks: false`), and the gateway and `portaria config check` still start
 * with every variable Kubernetes derives from the Services the chart renders, for several
 * release names, beside another team's Services named `portaria-…` (an IPv6 cluster IP,
 * a UDP port, an unnamed port). A genuine typo next to them is still refused with the
 * nearest name, and a retired short name with a plain value names its replacement.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import { generateSigningKey, writeSigningKey } from '../../src/keys/generateKey.js';
import { runGateway } from '../helpers/process.js';
import { runCli } from '../helpers/runCli.js';
import { find, render } from './helm.js';
import { type ServiceShape, serviceLinkVariables, servicesOf } from './serviceLinkVariables.js';

/** Release names and the Services the chart renders for each. */
const RELEASES: readonly { release: string; services: readonly string[] }[] = [
  { release: 'portaria', services: ['portaria-admin', 'portaria'] },
  { release: 'portaria-prod', services: ['portaria-prod-admin', 'portaria-prod'] },
  { release: 'gw', services: ['gw-portaria-admin', 'gw-portaria'] },
];

/** Another team's Services in the same namespace, and the API server's. */
const NEIGHBOURS: readonly ServiceShape[] = [
  {
    name: 'portaria-server',
    clusterIP: 'fd00:10:96::2a',
    ports: [
      { name: 'grpc-web', port: 8080, protocol: 'TCP' },
      { name: 'dns', port: 53, protocol: 'UDP' },
    ],
  },
  { name: 'portaria-legacy', clusterIP: '10.96.7.7', ports: [{ port: 443 }] },
  { name: 'kubernetes', clusterIP: '10.96.0.1', ports: [{ name: 'https', port: 443 }] },
];

/** A production configuration (keys, one client), both listeners on loopback port 0. */
async function gatewayFiles(t: TestContext): Promise<{ dir: string; file: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-links-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  await writeSigningKey(join(dir, 'keys'), await generateSigningKey('ES256', new Date()));
  const secret = hashGeneratedSecret('acme-secret-0123456789abcdefghijklmnopqrstu');
  await writeFile(
    join(dir, 'clients.json'),
    JSON.stringify({ clients: [{ id: 'acme', secrets: [{ hash: secret }], scopes: ['a'] }] }),
  );
  const file = join(dir, 'portaria.yaml');
  await writeFile(
    file,
    JSON.stringify({
      server: { host: '127.0.0.1', port: 0 },
      admin: { host: '127.0.0.1', port: 0 },
      keys: { dir: 'keys' },
      clients: { file: 'clients.json' },
      revocation: { file: 'revocations.log' },
      upstream: { default: { upstream: 'http://127.0.0.1:9' } },
    }),
  );
  return { dir, file };
}

/** The variables a pod of `release` gets: the chart's Services and the neighbours'. */
async function podVariables(release: string, services: readonly string[]) {
  const objects = await render({ release });
  const own = servicesOf(objects, ['10.96.0.12', '10.96.0.13']);
  assert.deepEqual(
    own.map((s) => s.name),
    services,
  );
  const ownVariables = serviceLinkVariables(own);
  return { objects, ownVariables, env: { ...ownVariables, ...serviceLinkVariables(NEIGHBOURS) } };
}

/** Starts the gateway process; resolves with its public URL once it listens. */
async function startedGateway(t: TestContext, file: string, env: Record<string, string>) {
  const gateway = runGateway(t, ['--config', file], { env });
  const out = await gateway.waitForOutput('stdout', /"msg":"listening"/, 15_000);
  const line = out.split('\n').find((l) => l.includes('"msg":"listening"')) ?? '';
  return { gateway, publicUrl: (JSON.parse(line) as { publicUrl: string }).publicUrl };
}

describe('Kubernetes service links', () => {
  for (const { release, services } of RELEASES) {
    test(`release ${release}: the chart turns service links off`, async () => {
      const { objects } = await podVariables(release, services);
      const deployment = find(objects, 'Deployment') as unknown as IDeployment;
      assert.equal(deployment.spec?.template.spec?.enableServiceLinks, false);
    });

    test(`release ${release}: config check and the gateway start with every service link`, async (t) => {
      const { ownVariables, env } = await podVariables(release, services);
      // Two Services of one port each: eight variables apiece.
      assert.equal(Object.keys(ownVariables).length, 16);
      const { dir, file } = await gatewayFiles(t);
      const check = await runCli(['config', 'check', '--config', file], { cwd: dir, env });
      assert.equal(check.stderr, '');
      assert.equal(check.code, 0);
      assert.match(check.stdout, /^ok: /);

      const { gateway, publicUrl } = await startedGateway(t, file, env);
      const jwks = await fetch(`${publicUrl}/.well-known/jwks.json`);
      assert.equal(jwks.status, 200);
      await jwks.arrayBuffer();
      gateway.child.kill('SIGTERM');
      assert.deepEqual(await gateway.exited, { code: 0, signal: null });
      assert.doesNotMatch(gateway.stdout() + gateway.stderr(), /SERVICE_HOST|tcp:\/\//);
    });
  }

  test('a typo next to the service links is refused with the nearest name, by both', async (t) => {
    const { env } = await podVariables('portaria', ['portaria-admin', 'portaria']);
    const { dir, file } = await gatewayFiles(t);
    const withTypo = { ...env, PORTARIA_SERVER__PROT: '8443' };
    const problem =
      '  - PORTARIA_SERVER__PROT: no setting has this variable (did you mean PORTARIA_SERVER__PORT?)\n';
    const check = await runCli(['config', 'check', '--config', file], { cwd: dir, env: withTypo });
    assert.equal(check.code, 1);
    assert.equal(
      check.stderr,
      `portaria: config check: invalid configuration (${file}):\n${problem}`,
    );

    const gateway = runGateway(t, ['--config', file], { env: withTypo });
    assert.deepEqual(await gateway.exited, { code: 1, signal: null });
    assert.ok(gateway.stderr().endsWith(problem), gateway.stderr());
    assert.equal(gateway.stderr().split('\n  - ').length, 2, 'one problem only');
  });

  test('a retired short name set to a port is refused naming its replacement, by both', async (t) => {
    const { dir, file } = await gatewayFiles(t);
    const env = { PORTARIA_PORT: '8443', PORTARIA_ADMIN_PORT: '9443' };
    const problems =
      '  - PORTARIA_PORT: no longer read (Kubernetes sets this name for its Services); set PORTARIA_SERVER__PORT\n' +
      '  - PORTARIA_ADMIN_PORT: no longer read (Kubernetes sets this name for its Services); set PORTARIA_ADMIN__PORT\n';
    const check = await runCli(['config', 'check', '--config', file], { cwd: dir, env });
    assert.equal(check.code, 1);
    assert.equal(
      check.stderr,
      `portaria: config check: invalid configuration (${file}):\n${problems}`,
    );

    const gateway = runGateway(t, ['--config', file], { env });
    assert.deepEqual(await gateway.exited, { code: 1, signal: null });
    assert.ok(gateway.stderr().endsWith(problems), gateway.stderr());
  });
});
