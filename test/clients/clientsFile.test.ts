import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { createClientAuthenticator } from '../../src/clients/authenticateClient.js';
import { loadClientRegistry } from '../../src/clients/clientRegistry.js';
import {
  addClient,
  ClientsFileError,
  disableClient,
  listClients,
  readClientsFile,
  removeClient,
  rotateClientSecret,
  writeClientsFile,
} from '../../src/clients/clientsFile.js';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import { ConfigError } from '../../src/config/configError.js';
import { ManualClock } from '../../src/lib/clock.js';

const HASH = hashGeneratedSecret('a secret');
const OLD = 'old-secret-0123456789abcdefghijklmnopqrstu';
const NEW = 'new-secret-0123456789abcdefghijklmnopqrstu';
const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 2, 1);

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-clientsfile-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe('clientsFile', () => {
  test('reads a missing file as an empty client list', async (t) => {
    const dir = await tempDir(t);
    assert.deepEqual(await readClientsFile(join(dir, 'clients.json')), { clients: [] });
  });

  test('adds a client to a new file, in a new directory, that the gateway loads', async (t) => {
    const dir = await tempDir(t);
    const file = join(dir, 'data', 'clients.json');
    await addClient(file, { id: 'acme', secrets: [{ hash: HASH }], scopes: ['a', 'b'] });
    await addClient(file, {
      id: 'globex',
      secrets: [{ hash: HASH }],
      scopes: ['c'],
      lifetimeSeconds: 60,
    });
    const registry = await loadClientRegistry(file);
    assert.deepEqual(registry.ids(), ['acme', 'globex']);
    assert.equal(registry.get('globex')?.lifetimeSeconds, 60);
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    assert.equal((await stat(join(dir, 'data'))).mode & 0o777, 0o700);
    assert.deepEqual(await readdir(join(dir, 'data')), ['clients.json']);
  });

  test('refuses to add a duplicate id and leaves the file unchanged', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await addClient(file, { id: 'acme', secrets: [{ hash: HASH }], scopes: ['a'] });
    const before = await readFile(file, 'utf8');
    await assert.rejects(
      addClient(file, { id: 'acme', secrets: [{ hash: HASH }], scopes: ['b'] }),
      (err: unknown) =>
        err instanceof ClientsFileError &&
        err.message === `client "acme" already exists in ${file}`,
    );
    assert.equal(await readFile(file, 'utf8'), before);
  });

  test('refuses to add an entry the gateway would refuse', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await assert.rejects(
      addClient(file, { id: 'a\nb', secrets: [{ hash: HASH }], scopes: ['a'] }),
      ConfigError,
    );
    assert.deepEqual(await readdir(join(file, '..')), []);
  });

  test('disables a client once and reports when it already was disabled', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await addClient(file, { id: 'acme', secrets: [{ hash: HASH }], scopes: ['a'] });
    assert.equal(await disableClient(file, 'acme'), true);
    assert.equal((await loadClientRegistry(file)).get('acme')?.disabled, true);
    assert.equal(await disableClient(file, 'acme'), false);
  });

  test('refuses to disable an unknown client', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await addClient(file, { id: 'acme', secrets: [{ hash: HASH }], scopes: ['a'] });
    await assert.rejects(disableClient(file, 'nobody'), {
      name: 'ClientsFileError',
      message: `no client "nobody" in ${file}`,
    });
  });

  test('lists clients without any hash', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await addClient(file, {
      id: 'acme',
      secrets: [{ hash: HASH }, { hash: HASH }],
      scopes: ['a', 'b'],
      lifetimeSeconds: 900,
    });
    const list = await listClients(file);
    assert.deepEqual(list, [
      {
        id: 'acme',
        authMethods: ['client_secret_basic', 'client_secret_post'],
        scopes: ['a', 'b'],
        lifetimeSeconds: 900,
        disabled: false,
        secretCount: 2,
      },
    ]);
    assert.equal(JSON.stringify(list).includes('sha256'), false);
  });

  test('refuses to change an invalid file and leaves it as it was', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    const broken = '{"clients":[{"id":"acme","secrets":[],"scopes":["a"]}]}';
    await writeFile(file, broken);
    await assert.rejects(
      addClient(file, { id: 'other', secrets: [{ hash: HASH }], scopes: ['a'] }),
      (err: unknown) =>
        err instanceof ConfigError &&
        err.problems.join() === 'clients[0].secrets: must hold 1 or 2 secrets',
    );
    assert.equal(await readFile(file, 'utf8'), broken);
  });

  test('rotation keeps an earlier expiry the old secret already had', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await addClient(file, {
      id: 'acme',
      secrets: [{ hash: HASH, expiresAt: '2026-03-01T01:00:00Z' }],
      scopes: ['a'],
    });
    const result = await rotateClientSecret(file, 'acme', {
      hash: hashGeneratedSecret(NEW),
      nowMs: NOW,
      overlapMs: 24 * HOUR,
    });
    assert.deepEqual(result, { kept: ['2026-03-01T01:00:00Z'], dropped: 0 });
    assert.deepEqual((await readClientsFile(file)).clients[0]?.secrets, [
      { hash: HASH, expiresAt: '2026-03-01T01:00:00Z' },
      { hash: hashGeneratedSecret(NEW) },
    ]);
  });

  test('rotation refuses when two secrets that never expire are valid', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await addClient(file, { id: 'acme', secrets: [{ hash: HASH }, { hash: HASH }], scopes: ['a'] });
    await assert.rejects(
      rotateClientSecret(file, 'acme', { hash: HASH, nowMs: NOW, overlapMs: HOUR }),
      {
        name: 'ClientsFileError',
        message:
          'acme already has two valid secrets and neither expires; pass --overlap 0 to replace both',
      },
    );
    const zero = await rotateClientSecret(file, 'acme', {
      hash: hashGeneratedSecret(NEW),
      nowMs: NOW,
      overlapMs: 0,
    });
    assert.deepEqual(zero, { kept: [], dropped: 2 });
  });

  test('a rotated client authenticates with both secrets during the overlap, then only the new one', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await addClient(file, {
      id: 'acme',
      secrets: [{ hash: hashGeneratedSecret(OLD) }],
      scopes: ['a'],
    });
    await rotateClientSecret(file, 'acme', {
      hash: hashGeneratedSecret(NEW),
      nowMs: NOW,
      overlapMs: 24 * HOUR,
    });
    const clock = new ManualClock(NOW);
    const auth = createClientAuthenticator(await loadClientRegistry(file), clock);
    assert.equal((await auth('acme', OLD)).ok, true);
    assert.equal((await auth('acme', NEW)).ok, true);
    clock.set(NOW + 24 * HOUR - 1);
    assert.equal((await auth('acme', OLD)).ok, true, 'valid until the last millisecond');
    clock.set(NOW + 24 * HOUR);
    assert.deepEqual(await auth('acme', OLD), { ok: false, reason: 'secret-expired' });
    assert.equal((await auth('acme', NEW)).ok, true);
  });

  test('removes a client and refuses an unknown one', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await addClient(file, { id: 'acme', secrets: [{ hash: HASH }], scopes: ['a'] });
    await addClient(file, { id: 'globex', secrets: [{ hash: HASH }], scopes: ['a'] });
    await removeClient(file, 'acme');
    assert.deepEqual((await loadClientRegistry(file)).ids(), ['globex']);
    await assert.rejects(removeClient(file, 'acme'), {
      name: 'ClientsFileError',
      message: `no client "acme" in ${file}`,
    });
    await removeClient(file, 'globex');
    assert.deepEqual(await readClientsFile(file), { clients: [] });
  });

  test('rotation and removal refuse an invalid file', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await writeClientsFile(file, {
      clients: [{ id: 'acme', secrets: [], scopes: ['a'] }],
    });
    await assert.rejects(
      rotateClientSecret(file, 'acme', { hash: HASH, nowMs: NOW, overlapMs: HOUR }),
      ConfigError,
    );
    await assert.rejects(removeClient(file, 'acme'), ConfigError);
  });
});

describe('clientsFile under concurrent changes', () => {
  test('changes made at the same moment all land (none is lost to a later rename)', async (t) => {
    const file = join(await tempDir(t), 'clients.json');
    await addClient(file, { id: 'first', secrets: [{ hash: HASH }], scopes: ['a'] });
    const ids = ['c1', 'c2', 'c3', 'c4', 'c5', 'c6'];
    await Promise.all([
      ...ids.map((id) => addClient(file, { id, secrets: [{ hash: HASH }], scopes: ['a'] })),
      disableClient(file, 'first'),
    ]);
    const listed = await listClients(file);
    assert.deepEqual(listed.map((c) => c.id).sort(), ['c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'first']);
    assert.equal(listed.find((c) => c.id === 'first')?.disabled, true);
    assert.deepEqual(await readdir(join(file, '..')), ['clients.json']);
  });
});
