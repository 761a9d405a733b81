import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { loadClientRegistry } from '../../src/clients/clientRegistry.js';
import {
  addClient,
  ClientsFileError,
  disableClient,
  listClients,
  readClientsFile,
} from '../../src/clients/clientsFile.js';
import { hashGeneratedSecret } from '../../src/clients/secretHash.js';
import { ConfigError } from '../../src/config/configError.js';

const HASH = hashGeneratedSecret('a secret');

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
      addClient(file, { id: 'a b', secrets: [{ hash: HASH }], scopes: ['a'] }),
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
      { id: 'acme', scopes: ['a', 'b'], lifetimeSeconds: 900, disabled: false, secretCount: 2 },
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
});
