import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { loadClientRegistry } from '../../src/clients/clientRegistry.js';
import { hashChosenSecret, hashGeneratedSecret } from '../../src/clients/secretHash.js';
import { ConfigError } from '../../src/config/configError.js';
import { NFC_ID, NFD_ID, UNICODE_CLIENT_IDS } from '../helpers/unicodeIds.js';

const HASH = hashGeneratedSecret('a secret');

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-clients-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function writeClients(t: TestContext, document: unknown): Promise<string> {
  const file = join(await tempDir(t), 'clients.json');
  await writeFile(file, typeof document === 'string' ? document : JSON.stringify(document));
  return file;
}

async function problemsOf(file: string): Promise<readonly string[]> {
  try {
    await loadClientRegistry(file);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    assert.ok(err.message.startsWith(`invalid configuration (clients.file (${file})):`));
    return err.problems;
  }
  assert.fail('expected a ConfigError');
}

describe('loadClientRegistry', () => {
  test('loads every client with its secrets, scopes, lifetime and state', async (t) => {
    const file = await writeClients(t, {
      clients: [
        {
          id: 'acme',
          secrets: [{ hash: HASH, expiresAt: '2026-12-01T00:00:00Z' }, { hash: HASH }],
          scopes: ['orders:read', 'orders:write'],
          lifetimeSeconds: 900,
        },
        { id: 'globex', secrets: [{ hash: HASH }], scopes: ['stock'], disabled: true },
      ],
    });
    const registry = await loadClientRegistry(file);
    assert.equal(registry.size, 2);
    assert.deepEqual(registry.ids(), ['acme', 'globex']);
    assert.equal(registry.usesScrypt, false);
    const acme = registry.get('acme');
    assert.ok(acme);
    assert.equal(acme.id, 'acme');
    assert.deepEqual(acme.scopes, ['orders:read', 'orders:write']);
    assert.equal(acme.scope, 'orders:read orders:write');
    assert.equal(acme.lifetimeSeconds, 900);
    assert.equal(acme.disabled, false);
    assert.deepEqual(
      acme.secrets.map((s) => s.expiresAtMs),
      [Date.UTC(2026, 11, 1), null],
    );
    assert.equal(acme.secrets[0]?.hash.scheme, 'sha256');
    const globex = registry.get('globex');
    assert.equal(globex?.lifetimeSeconds, null);
    assert.equal(globex?.disabled, true);
    assert.equal(registry.get('initech'), undefined);
  });

  test('returns frozen records that cannot be changed at run time', async (t) => {
    const file = await writeClients(t, {
      clients: [{ id: 'acme', secrets: [{ hash: HASH }], scopes: ['a'] }],
    });
    const registry = await loadClientRegistry(file);
    const acme = registry.get('acme');
    assert.ok(Object.isFrozen(registry));
    assert.ok(Object.isFrozen(acme));
    assert.ok(Object.isFrozen(acme?.scopes));
    assert.ok(Object.isFrozen(acme?.secrets));
    assert.ok(Object.isFrozen(acme?.secrets[0]));
    assert.ok(Object.isFrozen(registry.ids()));
  });

  test('reports that scrypt hashes are in use', async (t) => {
    const file = await writeClients(t, {
      clients: [
        { id: 'a', secrets: [{ hash: HASH }], scopes: ['x'] },
        {
          id: 'b',
          secrets: [{ hash: await hashChosenSecret('operator chosen secret') }],
          scopes: ['x'],
        },
      ],
    });
    assert.equal((await loadClientRegistry(file)).usesScrypt, true);
  });

  test('treats __proto__ and other Object.prototype names as ordinary ids', async (t) => {
    const file = await writeClients(
      t,
      `{"clients":[{"id":"__proto__","secrets":[{"hash":"${HASH}"}],"scopes":["x"]}]}`,
    );
    const registry = await loadClientRegistry(file);
    assert.equal(registry.size, 1);
    assert.equal(registry.get('__proto__')?.id, '__proto__');
    assert.equal(registry.get('constructor'), undefined);
    assert.equal(registry.get('toString'), undefined);
    assert.equal(registry.get('hasOwnProperty'), undefined);
  });

  test('refuses scopes too long for a token the listener accepts, and takes the longest allowed', async (t) => {
    // 4096 characters space-separated is the limit: 1024 scopes of 3 characters make 4095.
    const fits = Array.from({ length: 1024 }, (_, i) => i.toString(36).padStart(3, '0'));
    const file = await writeClients(t, {
      clients: [
        { id: 'fits', secrets: [{ hash: HASH }], scopes: fits },
        { id: 'long', secrets: [{ hash: HASH }], scopes: ['a'.repeat(13_000)] },
        { id: 'many', secrets: [{ hash: HASH }], scopes: [...fits, 'zzzz'] },
      ],
    });
    assert.deepEqual(await problemsOf(file), [
      'clients[1].scopes: the scopes take 13000 characters space-separated, more than 4096: every token carries them, and its Authorization header must fit server.maxHeaderBytes',
      'clients[2].scopes: the scopes take 4100 characters space-separated, more than 4096: every token carries them, and its Authorization header must fit server.maxHeaderBytes',
    ]);
  });

  test('reports every problem of every client with its path', async (t) => {
    const file = await writeClients(t, {
      version: 1,
      clients: [
        { id: 'ok', secrets: [{ hash: HASH }], scopes: ['a'] },
        'not an object',
        { id: 'has\ttab', secrets: [{ hash: 'md5:abc' }], scopes: 'a b', lifetimeSeconds: 0 },
        {
          id: 'x',
          secrets: [{ hash: HASH, expiresAt: '2026-02-30T00:00:00Z', note: 1 }],
          scopes: ['a b', 'c', 'c'],
          disabled: 'yes',
          lifetime: 60,
        },
        { id: 'y', secrets: [{ hash: HASH }, { hash: HASH }, { hash: HASH }], scopes: [] },
        { secrets: [], scopes: [1], lifetimeSeconds: 86401 },
      ],
    });
    assert.deepEqual(await problemsOf(file), [
      'version: unknown field',
      'clients[1]: must be an object',
      'clients[2].id: must be 1 to 256 bytes of UTF-8 without control characters or lone surrogates (control character U+0009 at index 3)',
      'clients[2].scopes: must be an array of scope tokens',
      'clients[2].lifetimeSeconds: must be an integer number of seconds from 1 to 86400',
      'clients[2].secrets[0].hash: must be "sha256:<base64url>" or "scrypt:N:r:p:<salt>:<hash>"',
      'clients[3].lifetime: unknown field',
      'clients[3].scopes: "a b" is not a scope token (RFC 6749 §3.3: printable ASCII without space, " or \\)',
      'clients[3].scopes: duplicate scope "c"',
      'clients[3].disabled: must be true or false',
      'clients[3].secrets[0].note: unknown field',
      'clients[3].secrets[0].expiresAt: must be an RFC 3339 date-time (2026-12-01T00:00:00Z)',
      'clients[4].scopes: must list at least one scope',
      'clients[4].secrets: must hold 1 or 2 secrets',
      'clients[5].id: must be a string of 1 to 256 bytes of UTF-8 without control characters or lone surrogates',
      'clients[5].scopes: must be an array of scope tokens',
      'clients[5].lifetimeSeconds: must be an integer number of seconds from 1 to 86400',
      'clients[5].secrets: must hold 1 or 2 secrets',
    ]);
  });

  test('reports a duplicate id at its second occurrence, naming the first', async (t) => {
    const entry = { id: 'acme', secrets: [{ hash: HASH }], scopes: ['a'] };
    const file = await writeClients(t, {
      clients: [entry, { ...entry, id: 'other' }, entry, { ...entry, scopes: 'bad' }],
    });
    assert.deepEqual(await problemsOf(file), [
      'clients[2].id: duplicate id "acme" (also clients[0])',
      'clients[3].scopes: must be an array of scope tokens',
      'clients[3].id: duplicate id "acme" (also clients[0])',
    ]);
  });

  test('accepts any Unicode id of 1 to 256 UTF-8 bytes and refuses longer ones', async (t) => {
    const entry = (id: string) => ({ id, secrets: [{ hash: HASH }], scopes: ['a'] });
    const ids = [
      'a',
      'a'.repeat(256),
      `${'客'.repeat(85)}x`,
      'Acme Corp 100%',
      ...UNICODE_CLIENT_IDS.map(([, id]) => id),
    ];
    const good = await writeClients(t, { clients: ids.map(entry) });
    const registry = await loadClientRegistry(good);
    assert.deepEqual(registry.ids(), ids);
    for (const id of ids) assert.equal(registry.get(id)?.id, id);
    const bad = await writeClients(t, {
      clients: [
        entry('a'.repeat(257)),
        entry('客'.repeat(86)),
        entry('x\u2028\u0085'),
        entry('\ud800'),
      ],
    });
    assert.deepEqual(await problemsOf(bad), [
      'clients[0].id: must be 1 to 256 bytes of UTF-8 without control characters or lone surrogates (it takes 257 bytes)',
      'clients[1].id: must be 1 to 256 bytes of UTF-8 without control characters or lone surrogates (it takes 258 bytes)',
      'clients[2].id: must be 1 to 256 bytes of UTF-8 without control characters or lone surrogates (control character U+0085 at index 2)',
      'clients[3].id: must be 1 to 256 bytes of UTF-8 without control characters or lone surrogates (lone surrogate U+D800 at index 0)',
    ]);
  });

  test('the NFC and NFD spellings of one name are two clients, looked up byte for byte', async (t) => {
    const entry = (id: string, scope: string) => ({
      id,
      secrets: [{ hash: HASH }],
      scopes: [scope],
    });
    const file = await writeClients(t, { clients: [entry(NFC_ID, 'nfc'), entry(NFD_ID, 'nfd')] });
    const registry = await loadClientRegistry(file);
    assert.equal(registry.size, 2);
    assert.equal(registry.get(NFC_ID)?.scope, 'nfc');
    assert.equal(registry.get(NFD_ID)?.scope, 'nfd');
    assert.equal(registry.get(NFC_ID.toUpperCase()), undefined);
  });

  test('accepts lifetimes from 1 to 86400 seconds only as integers', async (t) => {
    const entry = (lifetimeSeconds: unknown) => ({
      id: `c${String(lifetimeSeconds)}`,
      secrets: [{ hash: HASH }],
      scopes: ['a'],
      lifetimeSeconds,
    });
    const good = await writeClients(t, { clients: [entry(1), entry(86400)] });
    assert.equal((await loadClientRegistry(good)).size, 2);
    const bad = await writeClients(t, { clients: [entry(1.5), entry('60')] });
    assert.equal((await problemsOf(bad)).length, 2);
  });

  test('accepts expiry times with an offset and fractional seconds', async (t) => {
    const file = await writeClients(t, {
      clients: [
        {
          id: 'a',
          secrets: [{ hash: HASH, expiresAt: '2026-12-01T01:00:00.500+01:00' }],
          scopes: ['x'],
        },
      ],
    });
    const registry = await loadClientRegistry(file);
    assert.equal(registry.get('a')?.secrets[0]?.expiresAtMs, Date.UTC(2026, 11, 1) + 500);
  });

  test('says how to create a missing file', async (t) => {
    const file = join(await tempDir(t), 'absent.json');
    assert.deepEqual(await problemsOf(file), [
      `clients.file: ${file} does not exist (create it with "portaria clients add <id> --scopes …")`,
    ]);
  });

  test('refuses a file that is not JSON, without quoting it (it holds hashes)', async (t) => {
    const file = await writeClients(t, '{"clients": [');
    const problems = await problemsOf(file);
    assert.equal(problems.length, 1);
    assert.match(problems[0] ?? '', /^clients\.file: not valid JSON/);
    // V8 quotes the input in some of its messages ("Unexpected token …, "…" is not valid JSON").
    for (const text of [
      '{"clients": [{"secrets": [{"hash": "sha256:AbCdEf"} x',
      '{"hash": "sha256:AbCdEf", tru}',
      '{"hash": "sha256:AbCdEf"}}',
      'sha256:AbCdEf',
    ]) {
      const [problem] = await problemsOf(await writeClients(t, text));
      assert.match(problem ?? '', /^clients\.file: not valid JSON( at character \d+)?$/, text);
    }
  });

  test('refuses a document without a clients array', async (t) => {
    assert.deepEqual(await problemsOf(await writeClients(t, { clients: {} })), [
      'clients: must be an array',
    ]);
    assert.deepEqual(await problemsOf(await writeClients(t, '[]')), [
      'clients.file: must be a JSON object with a "clients" array',
    ]);
  });
});
