/**
 * `ClientKeys` through its interface: real key files and a real JWKS server, the gateway's
 * key-set code behind it, a reloaded registry.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { buildClientRegistry, type ClientRecord } from '../../src/clients/clientRegistry.js';
import { type Clock, ManualClock, systemClock } from '../../src/lib/clock.js';
import { ClientKeys, ClientKeysUnavailable } from '../../src/oauth/clientKeys.js';
import { forceGcEvery } from '../helpers/forcedGc.js';
import {
  ecKey,
  hang,
  jwksOf,
  serve,
  startJwksServer,
  status,
  within,
} from '../helpers/jwksServer.js';
import { waitFor } from '../helpers/wait.js';

async function setup(
  t: TestContext,
  clock: Clock = systemClock,
): Promise<{ dir: string; keys: ClientKeys }> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-client-keys-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const keys = new ClientKeys({ clock, baseDir: dir, clockSkewSeconds: 60 });
  t.after(() => keys.close());
  return { dir, keys };
}

function registryWith(entry: Record<string, unknown>) {
  return buildClientRegistry(
    {
      clients: [
        { id: 'p', secrets: [], scopes: ['a'], authMethods: ['private_key_jwt'], ...entry },
      ],
    },
    'test',
  );
}

test('a JWKS file relative to the clients file is read at first use and again after a reload', async (t) => {
  const { dir, keys } = await setup(t);
  const first = ecKey('k1');
  const second = ecKey('k2');
  await writeFile(join(dir, 'p.jwks.json'), JSON.stringify(jwksOf(first)));
  const before = registryWith({ jwksFile: 'p.jwks.json' });
  keys.sync(before);
  const client = before.get('p') as ClientRecord;
  assert.ok(await keys.keyFor(client, 'k1', 'ES256'));
  assert.equal(await keys.keyFor(client, 'k1', 'RS256'), null, 'another alg finds nothing');
  await writeFile(join(dir, 'p.jwks.json'), JSON.stringify(jwksOf(second)));
  assert.ok(
    await keys.keyFor(client, 'k1', 'ES256'),
    'the file is not read again without a reload',
  );
  const after = registryWith({ jwksFile: 'p.jwks.json' });
  keys.sync(after);
  const reloaded = after.get('p') as ClientRecord;
  assert.equal(await keys.keyFor(reloaded, 'k1', 'ES256'), null);
  assert.ok(await keys.keyFor(reloaded, 'k2', 'ES256'));
});

test('an unreadable key file makes the client’s keys unavailable, not the gateway', async (t) => {
  const { keys } = await setup(t);
  const registry = registryWith({ jwksFile: 'missing.json' });
  keys.sync(registry);
  await assert.rejects(
    keys.keyFor(registry.get('p') as ClientRecord, 'k1', 'ES256'),
    ClientKeysUnavailable,
  );
});

test('a jwks_uri is fetched once and kept across reloads that leave it unchanged', async (t) => {
  const { keys } = await setup(t);
  const key = ecKey('r1');
  const server = await startJwksServer(t, serve(jwksOf(key)));
  const registry = registryWith({ jwksUri: server.url });
  keys.sync(registry);
  const client = registry.get('p') as ClientRecord;
  assert.ok(await keys.keyFor(client, 'r1', 'ES256'));
  assert.ok(await keys.keyFor(client, 'r1', 'ES256'));
  keys.sync(registryWith({ jwksUri: server.url }));
  assert.ok(await keys.keyFor(client, 'r1', 'ES256'));
  assert.equal(server.count(), 1, 'one fetch');
});

test('a key server that never answered 200 makes the keys unavailable', async (t) => {
  const { keys } = await setup(t);
  const server = await startJwksServer(t, status(500));
  const registry = registryWith({ jwksUri: server.url });
  keys.sync(registry);
  await assert.rejects(
    keys.keyFor(registry.get('p') as ClientRecord, 'r1', 'ES256'),
    ClientKeysUnavailable,
  );
});

/** The download deadline of a client's `jwks_uri` (`issuers/clientKeySetConfig.ts`). */
const CLIENT_FETCH_TIMEOUT_MS = 5000;

test('a jwks_uri whose server never answers makes the keys unavailable at the download deadline, through forced garbage collections', async (t) => {
  forceGcEvery(t);
  const { keys } = await setup(t);
  const server = await startJwksServer(t, hang());
  const registry = registryWith({ jwksUri: server.url });
  keys.sync(registry);
  const started = performance.now();
  await assert.rejects(
    within(
      keys.keyFor(registry.get('p') as ClientRecord, 'r1', 'ES256'),
      CLIENT_FETCH_TIMEOUT_MS + 3000,
      'the first assertion’s key lookup',
    ),
    ClientKeysUnavailable,
  );
  const elapsed = performance.now() - started;
  assert.ok(elapsed >= CLIENT_FETCH_TIMEOUT_MS - 50, `waited ${Math.round(elapsed)} ms`);
});

test('a jwks_uri set past its max age whose server hangs still answers at once and is downloaded again after the deadline', async (t) => {
  forceGcEvery(t);
  const clock = new ManualClock();
  const { keys } = await setup(t, clock);
  const first = ecKey('r1');
  const next = ecKey('r2');
  const server = await startJwksServer(t, serve(jwksOf(first)));
  const registry = registryWith({ jwksUri: server.url });
  keys.sync(registry);
  const client = registry.get('p') as ClientRecord;
  assert.ok(await keys.keyFor(client, 'r1', 'ES256'));
  server.behaviour = hang();
  clock.advance(601_000);
  const started = performance.now();
  assert.ok(await within(keys.keyFor(client, 'r1', 'ES256'), 2000, 'a known kid'));
  assert.ok(performance.now() - started < 2000, 'a known kid does not wait for the 5 s download');
  await waitFor(
    'the background download to reach the server',
    () => (server.count() >= 2 ? true : undefined),
    5000,
  );
  server.behaviour = serve(jwksOf(first, next));
  await waitFor(
    'a download after the deadline',
    () => (server.count() >= 3 ? true : undefined),
    CLIENT_FETCH_TIMEOUT_MS + 5000,
  );
  await waitFor(
    'the new key',
    async () => ((await keys.keyFor(client, 'r2', 'ES256')) === null ? undefined : true),
    5000,
  );
});
