/**
 * `portaria config check`: the compiled CLI as a child process over real configuration
 * files, keys made by `keys generate` and a clients file made by `clients add`.
 */
import assert from 'node:assert/strict';
import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { createTestPki } from '../helpers/certificates.js';
import { runCli, tempDir } from '../helpers/runCli.js';

const ADMIN_TOKEN = 'config-check-admin-token-0123456789';

/** A complete configuration with a key, a client and the admin token; returns its path. */
async function workingSetup(t: TestContext, extra = ''): Promise<{ cwd: string; file: string }> {
  const cwd = await tempDir(t);
  const file = join(cwd, 'portaria.yaml');
  await writeFile(
    file,
    [
      'server:',
      '  host: 127.0.0.1',
      'admin:',
      '  tokenFile: admin-token',
      'keys:',
      '  dir: keys',
      'clients:',
      '  file: clients.json',
      'revocation:',
      '  file: revocations.log',
      'routes:',
      '  - id: orders',
      '    prefix: /orders',
      '    upstream: http://127.0.0.1:9000',
      extra,
    ].join('\n'),
  );
  await writeFile(join(cwd, 'admin-token'), ADMIN_TOKEN);
  for (const args of [
    ['keys', 'generate'],
    ['clients', 'add', 'acme', '--scopes', 'a'],
  ]) {
    const made = await runCli([...args, '--config', file], { cwd });
    assert.equal(made.code, 0, made.stderr);
  }
  return { cwd, file };
}

describe('portaria config check', () => {
  test('a configuration the gateway would start with: exit 0, "ok" and a summary', async (t) => {
    const { cwd, file } = await workingSetup(t);
    const r = await runCli(['config', 'check', '--config', file], { cwd });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    const lines = r.stdout.split('\n');
    assert.equal(lines[0], `ok: ${file}`);
    assert.match(r.stdout, /^ {2}listeners: +public 127\.0\.0\.1:8080, admin 127\.0\.0\.1:9091$/m);
    assert.match(r.stdout, /^ {2}signing: +ES256, key \S+ \(1 published\)$/m);
    assert.match(r.stdout, /^ {2}clients: +1$/m);
    assert.match(r.stdout, /^ {2}routes: +1, no default upstream$/m);
    assert.match(r.stdout, /^ {2}profile: +none$/m);
  });

  test('token.algorithm PS256: the key keys generate made for it checks ok; an RS256 key does not', async (t) => {
    const { cwd, file } = await workingSetup(t, 'token:\n  algorithm: PS256\n');
    const r = await runCli(['config', 'check', '--config', file], { cwd });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ {2}signing: +PS256, key \S+ \(1 published\)$/m);
    const rsa = await tempDir(t);
    await writeFile(
      join(rsa, 'portaria.yaml'),
      `token:\n  algorithm: PS256\nkeys:\n  dir: ${join(rsa, 'keys')}\n`,
    );
    const made = await runCli(
      ['keys', 'generate', '--alg', 'RS256', '--keys-dir', join(rsa, 'keys')],
      {
        cwd: rsa,
      },
    );
    assert.equal(made.code, 0, made.stderr);
    const refused = await runCli(['config', 'check', '--config', join(rsa, 'portaria.yaml')], {
      cwd: rsa,
    });
    assert.equal(refused.code, 1);
    assert.match(
      refused.stdout + refused.stderr,
      /no PS256 key in keys\.dir .* a PS256 key is an RSASSA-PSS key/,
    );
  });

  test('-o json: ok, file, problems, warnings and the summary, with stable names', async (t) => {
    const { cwd, file } = await workingSetup(t);
    const r = await runCli(['config', 'check', '--config', file, '-o', 'json'], { cwd });
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout);
    assert.deepEqual(Object.keys(report), ['ok', 'file', 'problems', 'warnings', 'summary']);
    assert.equal(report.ok, true);
    assert.deepEqual(report.problems, []);
    assert.deepEqual(Object.keys(report.summary), [
      'publicListener',
      'adminListener',
      'adminApi',
      'algorithm',
      'signingKid',
      'keys',
      'clients',
      'routes',
      'defaultUpstream',
      'issuers',
      'revocationStore',
      'profile',
      'mode',
      'decisionListeners',
    ]);
    assert.equal(report.summary.clients, 1);
    assert.equal(report.summary.adminApi, true);
    assert.match(report.summary.signingKid, /^\d{8}T\d{6}Z-[0-9a-f]{8}$/);
  });

  test('checks the TLS files as the gateway would read them', async (t) => {
    const { cwd, file } = await workingSetup(t);
    const tls =
      '  tls:\n    enabled: true\n    certFile: tls/server.crt\n    keyFile: clients.json\n';
    const text = await readFile(file, 'utf8');
    await writeFile(file, text.replace('  host: 127.0.0.1\n', `  host: 127.0.0.1\n${tls}`));
    const r = await runCli(['config', 'check', '--config', file, '-o', 'json'], { cwd });
    assert.equal(r.code, 1);
    assert.deepEqual(JSON.parse(r.stdout).problems, [
      `server.tls.certFile: cannot read ${join(cwd, 'tls/server.crt')} (ENOENT)`,
      'server.tls.keyFile: holds no unencrypted PEM private key',
    ]);
    const pki = await createTestPki(await tempDir(t));
    await writeFile(
      file,
      (await readFile(file, 'utf8'))
        .replace('tls/server.crt', pki.server.certFile)
        .replace('keyFile: clients.json', `keyFile: ${pki.server.keyFile}`),
    );
    const ok = await runCli(['config', 'check', '--config', file], { cwd });
    assert.equal(ok.code, 0, ok.stderr);
  });

  test('opens no port: a configuration whose ports are taken still checks ok', async (t) => {
    const ports: number[] = [];
    for (let i = 0; i < 2; i++) {
      const busy = createServer();
      await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
      t.after(() => busy.close());
      ports.push((busy.address() as { port: number }).port);
    }
    const [pub, admin] = ports as [number, number];
    const { cwd, file } = await workingSetup(t);
    const r = await runCli(['config', 'check', '--config', file], {
      cwd,
      env: { PORTARIA_SERVER__PORT: String(pub), PORTARIA_ADMIN__PORT: String(admin) },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.stdout.includes(`public 127.0.0.1:${pub}, admin 127.0.0.1:${admin}`), r.stdout);
  });

  test('every problem of the files it names is listed, not just the first (exit 1)', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'portaria.yaml');
    await writeFile(
      file,
      [
        'admin:',
        '  tokenFile: no-token',
        'keys:',
        '  dir: no-keys',
        'clients:',
        '  file: no-clients.json',
        'issuers:',
        '  - id: partner',
        '    issuer: https://partner.example',
        '    audiences: [api]',
        '    keyFile: no-partner.pem',
        '',
      ].join('\n'),
    );
    const r = await runCli(['config', 'check', '--config', file], { cwd });
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    const [head, ...problems] = r.stderr.trimEnd().split('\n');
    assert.equal(head, `portaria: config check: invalid configuration (${file}):`);
    const expected = [
      /^ {2}- keys\.dir: .*no-keys/,
      /^ {2}- clients\.file: .*no-clients\.json does not exist/,
      /^ {2}- admin\.tokenFile: cannot read .*no-token \(ENOENT\)$/,
      /^ {2}- issuers\[0\]\.keyFile: .*no-partner\.pem/,
    ];
    for (const pattern of expected) {
      assert.ok(
        problems.some((p) => pattern.test(p)),
        `${pattern} not in:\n${problems.join('\n')}`,
      );
    }
    const json = await runCli(['config', 'check', '--config', file, '--output', 'json'], { cwd });
    assert.equal(json.code, 1);
    assert.equal(json.stderr, '');
    const report = JSON.parse(json.stdout);
    assert.equal(report.ok, false);
    assert.equal(report.problems.length, problems.length);
  });

  test('the client certificate header’s CA and CRL files are read as start reads them', async (t) => {
    const extra = [
      'clientCertificate:',
      '  source: header',
      '  caFiles: [no-partners-ca.pem]',
      '  crlFiles: [no-partners.crl]',
      '',
    ].join('\n');
    const { cwd, file } = await workingSetup(t);
    await appendFile(file, extra);
    const r = await runCli(['config', 'check', '--config', file], {
      cwd,
      env: { PORTARIA_SERVER__TRUSTED_PROXIES: '127.0.0.1' },
    });
    assert.equal(r.code, 1, r.stdout);
    const problems = r.stderr.trimEnd().split('\n').slice(1);
    assert.deepEqual(problems, [
      `  - clientCertificate.caFiles[0]: cannot read ${join(cwd, 'no-partners-ca.pem')} (ENOENT)`,
      `  - clientCertificate.crlFiles[0]: cannot read ${join(cwd, 'no-partners.crl')} (ENOENT)`,
    ]);
  });

  test('settings problems are all listed, environment variables by name', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'portaria.yaml');
    await writeFile(file, 'server:\n  port: many\nlog:\n  level: loud\n');
    const r = await runCli(['config', 'check', '--config', file], {
      cwd,
      env: { PORTARIA_ADMIN__PORT: '70000', PORTARIA_SERVR__HOST: 'x' },
    });
    assert.equal(r.code, 1);
    const problems = r.stderr.trimEnd().split('\n').slice(1);
    assert.deepEqual(problems, [
      '  - PORTARIA_SERVR__HOST: no setting has this variable (did you mean PORTARIA_SERVER__HOST?)',
      '  - server.port: must be integer',
      '  - admin.port (PORTARIA_ADMIN__PORT): must be <= 65535',
      '  - log.level: must be one of "fatal", "error", "warn", "info", "debug", "trace", "silent"',
    ]);
  });

  test('no routes and no default upstream: a warning on stderr, still exit 0', async (t) => {
    const { cwd, file } = await workingSetup(t);
    const r = await runCli(['config', 'check', '--config', file], {
      cwd,
      env: { PORTARIA_ROUTES: '[]' },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stderr,
      'warning: no routes and no upstream.default: every request but the token operation gets 404\n',
    );
  });

  test('a local replay store beside a Redis revocation store: a warning, still exit 0', async (t) => {
    const { cwd, file } = await workingSetup(t, 'oauth:\n  replayStore: local');
    const env = {
      PORTARIA_REVOCATION__STORE: 'redis',
      PORTARIA_REDIS__URL: 'redis://127.0.0.1:6379/0',
    };
    const r = await runCli(['config', 'check', '--config', file], { cwd, env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stderr,
      'warning: oauth.replayStore is local beside a Redis revocation store: each replica remembers used client assertions alone, so one private_key_jwt assertion is accepted once per replica (leave oauth.replayStore unset, or set it to redis)\n',
    );
    // Unset, it follows the revocation store: nothing to warn about.
    const { cwd: cwd2, file: file2 } = await workingSetup(t);
    const followed = await runCli(['config', 'check', '--config', file2], { cwd: cwd2, env });
    assert.equal(followed.code, 0, followed.stderr);
    assert.equal(followed.stderr, '');
  });

  test('without --config or PORTARIA_CONFIG it is a usage error (exit 2)', async (t) => {
    const cwd = await tempDir(t);
    const r = await runCli(['config', 'check'], { cwd });
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr,
      'portaria: config check: missing --config (or $PORTARIA_CONFIG) (see "portaria config check --help")\n',
    );
  });
});
