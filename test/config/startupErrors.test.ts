import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import { generateSigningKey, writeSigningKey } from '../../src/keys/generateKey.js';
import { runToEnd, testEnv } from '../helpers/process.js';

const MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));

/** Runs the gateway's entry point as a process; kills it if it is still up after 10 s. */
function runMain(args: readonly string[], cwd: string, env: Record<string, string> = {}) {
  return runToEnd(process.execPath, [MAIN, ...args], { cwd, env: testEnv(env), timeoutMs: 10_000 });
}

function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

interface Layout {
  /** Working directory of the process (empty). */
  cwd: string;
  /** The config file, in its own directory. */
  file: string;
  keysDir: string;
  clientsFile: string;
}

/** A temp tree: `cwd/` (where the process runs) and `etc/portaria.yaml` with `etc/keys`, `etc/clients.json`. */
async function layout(t: TestContext, yaml: string): Promise<Layout> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-start-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const cwd = join(dir, 'cwd');
  const etc = join(dir, 'etc');
  await mkdir(cwd);
  await mkdir(etc);
  const file = join(etc, 'portaria.yaml');
  await writeFile(file, yaml);
  return { cwd, file, keysDir: join(etc, 'keys'), clientsFile: join(etc, 'clients.json') };
}

const PRODUCTION = [
  'server:',
  '  host: 127.0.0.1',
  '  port: 0',
  'admin:',
  '  port: 0',
  'keys:',
  '  dir: keys',
  'clients:',
  '  file: clients.json',
  '',
].join('\n');

async function writeClients(file: string): Promise<void> {
  const secret = hashGeneratedSecret('acme-secret-0123456789abcdefghijklmnopqrstu');
  const clients = [{ id: 'acme', secrets: [{ hash: secret }], scopes: ['orders:read'] }];
  await writeFile(file, JSON.stringify({ clients }));
}

async function writeKey(dir: string): Promise<void> {
  await writeSigningKey(dir, await generateSigningKey('ES256', new Date()));
}

describe('gateway start-up errors', () => {
  test('a missing keys.dir exits 1 naming keys.dir and how to create a key, creating nothing', async (t) => {
    const l = await layout(t, PRODUCTION);
    await writeClients(l.clientsFile);
    const run = await runMain(['--config', l.file], l.cwd);
    assert.equal(run.code, 1);
    assert.equal(run.stdout, '');
    assert.equal(
      run.stderr,
      `portaria: invalid configuration (keys.dir (${l.keysDir})):\n` +
        `  - keys.dir: ${l.keysDir} does not exist (create a key with "portaria keys generate --alg ES256")\n`,
    );
    assert.equal(await exists(l.keysDir), false);
    assert.deepEqual(await readdir(l.cwd), []);
  });

  test('a missing clients.file exits 1 naming clients.file and how to add a client, creating nothing', async (t) => {
    const l = await layout(t, PRODUCTION);
    await writeKey(l.keysDir);
    const run = await runMain(['--config', l.file], l.cwd);
    assert.equal(run.code, 1);
    assert.equal(run.stdout, '');
    assert.equal(
      run.stderr,
      `portaria: invalid configuration (clients.file (${l.clientsFile})):\n` +
        `  - clients.file: ${l.clientsFile} does not exist (create it with "portaria clients add <id> --scopes …")\n`,
    );
    assert.equal(await exists(l.clientsFile), false);
    assert.deepEqual(await readdir(l.cwd), []);
  });

  test('missing keys and clients are both reported in one run', async (t) => {
    const l = await layout(t, PRODUCTION);
    const run = await runMain(['--config', l.file], l.cwd);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /keys\.dir: .* does not exist/);
    assert.match(run.stderr, /clients\.file: .* does not exist/);
    assert.equal(await exists(l.keysDir), false);
    assert.equal(await exists(l.clientsFile), false);
  });

  test('a missing admin token file is reported in the same run as missing keys and clients', async (t) => {
    const l = await layout(t, PRODUCTION);
    const run = await runMain(['--config', l.file], l.cwd, {
      PORTARIA_ADMIN_TOKEN_FILE: 'no-such-admin-token',
    });
    assert.equal(run.code, 1);
    assert.match(run.stderr, /keys\.dir: .* does not exist/);
    assert.match(run.stderr, /clients\.file: .* does not exist/);
    assert.match(run.stderr, /admin\.tokenFile: cannot read .*no-such-admin-token \(ENOENT\)/);
  });

  test('a revocation file that cannot be created is reported with the other start-up problems, creating nothing', async (t) => {
    const l = await layout(t, `${PRODUCTION}revocation:\n  file: portaria.yaml/revocations.log\n`);
    const run = await runMain(['--config', l.file], l.cwd);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /keys\.dir: .* does not exist/);
    assert.match(run.stderr, /clients\.file: .* does not exist/);
    assert.match(
      run.stderr,
      /revocation\.file: cannot open .*portaria\.yaml\/revocations\.log \(ENOTDIR\)/,
    );
    assert.deepEqual((await readdir(join(l.file, '..'))).sort(), ['portaria.yaml']);
  });

  test('TLS files that cannot be read or used are reported with the other start-up problems', async (t) => {
    const yaml = [
      'server:',
      '  host: 127.0.0.1',
      '  port: 0',
      '  tls:',
      '    enabled: true',
      '    certFile: tls/server.crt',
      '    keyFile: portaria.yaml',
      '    clientCertificates: require',
      'clientCertificate:',
      '  source: tls',
      '  caFiles: [tls/partners-ca.pem]',
      'admin:',
      '  port: 0',
      'keys:',
      '  dir: keys',
      'clients:',
      '  file: clients.json',
      '',
    ].join('\n');
    const l = await layout(t, yaml);
    const etc = join(l.file, '..');
    const run = await runMain(['--config', l.file], l.cwd);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /keys\.dir: .* does not exist/);
    assert.match(run.stderr, /clients\.file: .* does not exist/);
    assert.ok(
      run.stderr.includes(
        `server.tls.certFile: cannot read ${join(etc, 'tls/server.crt')} (ENOENT)`,
      ),
      run.stderr,
    );
    assert.match(run.stderr, /server\.tls\.keyFile: holds no unencrypted PEM private key/);
    assert.ok(
      run.stderr.includes(
        `clientCertificate.caFiles[0]: cannot read ${join(etc, 'tls/partners-ca.pem')} (ENOENT)`,
      ),
      run.stderr,
    );
  });

  for (const [mode, reported] of [
    ['queue', true],
    ['refuse', false],
  ] as const) {
    test(`with the Redis store and whileRedisDown: ${mode}, an impossible queueFile is ${reported ? '' : 'not '}a start-up problem`, async (t) => {
      const yaml =
        `${PRODUCTION}redis:\n  url: redis://127.0.0.1:1\n` +
        `revocation:\n  store: redis\n  whileRedisDown: ${mode}\n  queueFile: portaria.yaml/pending.log\n`;
      const l = await layout(t, yaml);
      const run = await runMain(['--config', l.file], l.cwd);
      assert.equal(run.code, 1);
      assert.match(run.stderr, /keys\.dir: .* does not exist/);
      assert.equal(/revocation\.queueFile: cannot open .* \(ENOTDIR\)/.test(run.stderr), reported);
    });
  }

  test('an invalid config exits 1 listing all three problems, without a stack trace', async (t) => {
    const l = await layout(t, 'frob: 1\nserver:\n  port: http\ntoken:\n  algorithm: HS256\n');
    const run = await runMain(['--config', l.file], l.cwd);
    assert.equal(run.code, 1);
    assert.equal(run.stdout, '');
    assert.equal(
      run.stderr,
      'portaria: invalid configuration:\n' +
        '  - frob: unknown setting\n' +
        '  - server.port: must be integer\n' +
        '  - token.algorithm: must be one of "ES256", "EdDSA", "RS256", "PS256"\n',
    );
    assert.equal(run.stderr.includes('    at '), false);
  });

  test('the config file can be named by PORTARIA_CONFIG', async (t) => {
    const l = await layout(t, 'frob: 1\n');
    const run = await runMain([], l.cwd, { PORTARIA_CONFIG: l.file });
    assert.equal(run.code, 1);
    assert.equal(run.stderr, 'portaria: invalid configuration:\n  - frob: unknown setting\n');
  });

  test('no --config, no PORTARIA_CONFIG and no --demo exits 1 naming --config', async (t) => {
    const l = await layout(t, '');
    const run = await runMain([], l.cwd);
    assert.equal(run.code, 1);
    assert.match(
      run.stderr,
      /^portaria: invalid configuration:\n {2}- no configuration file: .*--config/,
    );
    assert.deepEqual(await readdir(l.cwd), []);
  });

  test('--help prints the usage and exits 0', async (t) => {
    const l = await layout(t, '');
    const run = await runMain(['--help'], l.cwd);
    assert.equal(run.code, 0);
    assert.match(run.stdout, /^Usage: .*--config FILE/);
    assert.equal(run.stderr, '');
  });

  test('--config together with --demo exits 2: they exclude each other', async (t) => {
    const l = await layout(t, PRODUCTION);
    const run = await runMain(['--config', l.file, '--demo'], l.cwd);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /^portaria: --config and --demo exclude each other\n/);
    assert.deepEqual(await readdir(l.cwd), []);
  });

  test('an unknown option exits 2 with the usage on stderr', async (t) => {
    const l = await layout(t, '');
    const run = await runMain(['--frob'], l.cwd);
    assert.equal(run.code, 2);
    assert.equal(run.stdout, '');
    assert.match(run.stderr, /^portaria: .*'--frob'/);
    assert.match(run.stderr, /\nUsage: /);
    assert.equal(run.stderr.includes('    at '), false);
  });
});
