/**
 * `profile: fapi-br` stops a real gateway process at start, and fails `portaria config
 * check`, naming every contradiction by its setting in one run: the configuration's
 * first (as every configuration problem comes before the files are read), then the
 * clients file's and the keys directory's together.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import type { SigningAlgorithm } from '../../src/config/types.js';
import { generateSigningKey, writeSigningKey } from '../../src/keys/generateKey.js';
import { MAIN_JS, runToEnd, tempDir, testEnv } from '../helpers/process.js';
import { runCli } from '../helpers/runCli.js';

const SECRET = 'acme-secret-0123456789abcdefghijklmnopqrstu';

/** A config file, a key of `alg` and the clients in `dir`; the config file's path. */
async function setup(
  dir: string,
  settings: Record<string, unknown>,
  alg: SigningAlgorithm,
  clients: Record<string, unknown>[],
): Promise<string> {
  await writeSigningKey(join(dir, 'keys'), await generateSigningKey(alg, new Date()));
  const entries = clients.map((c) => ({
    secrets: [{ hash: hashGeneratedSecret(SECRET) }],
    scopes: ['orders:read'],
    ...c,
  }));
  await writeFile(join(dir, 'clients.json'), JSON.stringify({ clients: entries }));
  const file = join(dir, 'portaria.yaml');
  const config = {
    server: { host: '127.0.0.1', port: 0 },
    admin: { host: '127.0.0.1', port: 0 },
    keys: { dir: 'keys' },
    clients: { file: 'clients.json' },
    revocation: { file: 'revocations.log' },
    ...settings,
  };
  await writeFile(file, JSON.stringify(config, null, 2));
  return file;
}

function start(file: string, cwd: string) {
  return runToEnd(process.execPath, [MAIN_JS, '--config', file], {
    cwd,
    env: testEnv(),
    timeoutMs: 10_000,
  });
}

/** The settings named by the problem lines under the head line. */
function settingsIn(stderr: string): string[] {
  return stderr
    .split('\n')
    .filter((l) => l.startsWith('  - '))
    .map((l) => l.slice(4, l.indexOf(':', 4)))
    .sort();
}

const FAPI_BASE = {
  profile: 'fapi-br',
  token: { algorithm: 'PS256' },
  server: { host: '127.0.0.1', port: 0, trustedProxies: ['127.0.0.1'] },
  clientCertificate: { source: 'header' },
};
const FAPI_CLIENT = {
  id: 'acme',
  authMethods: ['private_key_jwt'],
  jwksFile: 'acme.jwks.json',
  assertionAlg: 'PS256',
};

describe('profile fapi-br at start', () => {
  test('every contradiction of the configuration stops the process, each named by its setting', async (t) => {
    const dir = await tempDir(t, 'portaria-fapi-');
    const file = await setup(
      dir,
      {
        profile: 'fapi-br',
        token: { lifetimeSeconds: 60 },
        server: {
          host: '127.0.0.1',
          port: 0,
          tls: { enabled: true, certFile: 'tls.pem', keyFile: 'tls.key' },
        },
        routes: [
          {
            id: 'orders',
            prefix: '/orders',
            upstream: 'http://127.0.0.1:9',
            requireCertificateBound: false,
          },
        ],
        issuers: [
          { id: 'idp', issuer: 'https://idp', jwksUri: 'https://idp/jwks', audiences: ['x'] },
        ],
      },
      'ES256',
      [{ id: 'acme' }],
    );
    const run = await start(file, dir);
    assert.equal(run.code, 1);
    assert.equal(run.stdout, '');
    assert.match(run.stderr, /^portaria: invalid configuration/);
    assert.deepEqual(settingsIn(run.stderr), [
      'clientCertificate.source',
      'issuers[0].algorithms',
      'routes[0].requireCertificateBound',
      'server.tls.policy',
      'token.algorithm',
      'token.lifetimeSeconds',
    ]);
  });

  test('the clients file and the keys directory are held to it together', async (t) => {
    const dir = await tempDir(t, 'portaria-fapi-');
    const file = await setup(dir, FAPI_BASE, 'ES256', [
      { id: 'plain' },
      { ...FAPI_CLIENT, lifetimeSeconds: 60 },
      { id: 'self', authMethods: ['client_secret_post', 'private_key_jwt'], jwksFile: 'x.json' },
    ]);
    const run = await start(file, dir);
    assert.equal(run.code, 1);
    assert.deepEqual(settingsIn(run.stderr), [
      'clients[0].authMethods',
      'clients[1].lifetimeSeconds',
      'clients[2].assertionAlg',
      'clients[2].authMethods',
      'token.algorithm',
    ]);
    assert.match(
      run.stderr,
      /clients\[0\]\.authMethods: client_secret_basic, client_secret_post \(client "plain", the default with secrets\)/,
    );
    assert.match(run.stderr, /token\.algorithm: no PS256 key in keys\.dir/);
  });

  test('config check lists the same problems and exits 1; a conforming setup passes', async (t) => {
    const dir = await tempDir(t, 'portaria-fapi-');
    const file = await setup(dir, FAPI_BASE, 'PS256', [{ id: 'plain' }]);
    const refused = await runCli(['config', 'check', '--config', file], { cwd: dir });
    assert.equal(refused.code, 1);
    assert.deepEqual(settingsIn(refused.stderr), ['clients[0].authMethods']);

    const good = await tempDir(t, 'portaria-fapi-');
    const goodFile = await setup(good, FAPI_BASE, 'PS256', [FAPI_CLIENT]);
    const passed = await runCli(['config', 'check', '--config', goodFile], { cwd: good });
    assert.equal(passed.code, 0, passed.stderr);
    assert.match(passed.stdout, /signing: {5}PS256/);
    assert.match(passed.stdout, /^ {2}profile: +fapi-br$/m);
  });
});
