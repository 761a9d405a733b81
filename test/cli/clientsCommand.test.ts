import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { displayWidth } from '../../src/cli/displayWidth.js';
import { createClientAuthenticator } from '../../src/clients/authenticateClient.js';
import { loadClientRegistry } from '../../src/clients/clientRegistry.js';
import { verifySecret } from '../../src/clients/secretHash.js';
import { ManualClock, systemClock } from '../../src/lib/clock.js';
import { MemoryRevocationStore } from '../../src/revocation/memoryRevocationStore.js';
import { NOBODY_LISTENS } from '../helpers/process.js';
import { runCli, tempDir } from '../helpers/runCli.js';
import { NFC_ID, NFD_ID, UNICODE_CLIENT_IDS } from '../helpers/unicodeIds.js';
import { startAdminApi } from './adminApi.js';

const ADMIN_TOKEN = 'cli-admin-token-0123456789abcdefghijkl';
const SECRET_LINE = /^client secret: ([A-Za-z0-9_-]{43})$/m;

describe('portaria clients', () => {
  test('add, list, disable: the printed secret authenticates and is never shown again', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');

    const added = await runCli(
      [
        'clients',
        'add',
        'acme',
        '--scopes',
        'orders:read,orders:write',
        '--lifetime',
        '900',
        '--clients-file',
        file,
      ],
      { cwd },
    );
    assert.equal(added.code, 0);
    assert.equal(added.stderr, '');
    const secret = SECRET_LINE.exec(added.stdout)?.[1];
    assert.ok(secret, added.stdout);
    assert.equal(added.stdout.split(secret).length, 2, 'the secret is printed exactly once');
    assert.match(added.stdout, /Store the secret now: it cannot be shown again/);
    assert.equal((await stat(file)).mode & 0o777, 0o600);

    const stored = await readFile(file, 'utf8');
    assert.equal(stored.includes(secret), false, 'the secret itself is never stored');
    const registry = await loadClientRegistry(file);
    const acme = registry.get('acme');
    assert.ok(acme);
    assert.equal(acme.scope, 'orders:read orders:write');
    assert.equal(acme.lifetimeSeconds, 900);
    assert.equal(acme.secrets[0]?.hash.scheme, 'sha256');
    assert.equal(await verifySecret(secret, acme.secrets[0]?.hash ?? assert.fail()), true);
    const auth = createClientAuthenticator(registry, new ManualClock());
    assert.equal((await auth('acme', secret)).ok, true);

    const listed = await runCli(['clients', 'list', '--clients-file', file], { cwd });
    assert.equal(listed.code, 0);
    assert.equal(
      listed.stdout,
      'ID    SCOPES                    LIFETIME  DISABLED  SECRETS  AUTH\n' +
        'acme  orders:read,orders:write  900s      no        1        basic,post\n',
    );
    assert.equal(listed.stdout.includes(secret), false);

    const disabled = await runCli(['clients', 'disable', 'acme', '--clients-file', file], { cwd });
    assert.equal(disabled.code, 0);
    assert.equal(
      disabled.stdout,
      `Disabled client "acme" in ${file} (a running gateway picks it up on reload).\n`,
    );
    const relisted = await runCli(['clients', 'list', '--clients-file', file], { cwd });
    assert.match(relisted.stdout, /^acme +orders:read,orders:write +900s +yes +1 +basic,post$/m);
    assert.deepEqual(
      await auth('acme', secret),
      { ok: true, client: acme },
      'loaded registries do not change',
    );
    const reloaded = createClientAuthenticator(await loadClientRegistry(file), new ManualClock());
    assert.deepEqual(await reloaded('acme', secret), { ok: false, reason: 'disabled-client' });
  });

  test('Unicode ids: added as given, listed aligned, their secrets authenticate', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');
    const secrets = new Map<string, string>();
    for (const [, id] of UNICODE_CLIENT_IDS) {
      const added = await runCli(['clients', 'add', id, '--scopes', 'a', '--clients-file', file], {
        cwd,
      });
      assert.equal(added.code, 0, added.stderr);
      assert.ok(added.stdout.startsWith(`Added client ${JSON.stringify(id)} (scopes: a)`));
      assert.match(added.stdout, new RegExp(`^client id: {5}${id}$`, 'mu'));
      secrets.set(id, SECRET_LINE.exec(added.stdout)?.[1] ?? assert.fail(added.stdout));
    }
    const registry = await loadClientRegistry(file);
    const auth = createClientAuthenticator(registry, new ManualClock());
    for (const [id, secret] of secrets) assert.equal((await auth(id, secret)).ok, true, id);

    const listed = await runCli(['clients', 'list', '--clients-file', file], { cwd });
    assert.equal(listed.code, 0, listed.stderr);
    const lines = listed.stdout.trimEnd().split('\n');
    assert.deepEqual(
      lines.slice(1).map((l) => l.slice(0, l.indexOf('  '))),
      UNICODE_CLIENT_IDS.map(([, id]) => id),
    );
    // The SCOPES column starts at the same terminal column on every row.
    const columns = lines.map((l) => displayWidth(l.slice(0, l.search(/ {2}(SCOPES|a) /) + 2)));
    assert.equal(new Set(columns).size, 1, listed.stdout);
  });

  test('the NFD spelling of an existing NFC id is a second client, with a note saying so', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');
    const nfc = await runCli(['clients', 'add', NFC_ID, '--scopes', 'a', '--clients-file', file], {
      cwd,
    });
    assert.equal(nfc.code, 0, nfc.stderr);
    assert.doesNotMatch(nfc.stdout, /Note:/);
    const nfd = await runCli(['clients', 'add', NFD_ID, '--scopes', 'b', '--clients-file', file], {
      cwd,
    });
    assert.equal(nfd.code, 0, nfd.stderr);
    assert.ok(
      nfd.stdout.includes(
        `Note: the existing client ${JSON.stringify(NFC_ID)} is the same name in another Unicode spelling ("caf\\u00e9-partner", this one "cafe\\u0301-partner"); ids are compared byte for byte, so these are two clients.\n`,
      ),
      nfd.stdout,
    );
    const registry = await loadClientRegistry(file);
    assert.deepEqual(registry.ids(), [NFC_ID, NFD_ID]);
    assert.equal(registry.get(NFD_ID)?.scope, 'b');

    const listed = await runCli(['clients', 'list', '--clients-file', file], { cwd });
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok(
      listed.stdout.endsWith(
        'Note: "caf\\u00e9-partner", "cafe\\u0301-partner" look alike but are different clients (ids are compared byte for byte).\n',
      ),
      listed.stdout,
    );

    const removed = await runCli(['clients', 'remove', NFD_ID, '--clients-file', file], { cwd });
    assert.equal(removed.code, 0, removed.stderr);
    assert.deepEqual((await loadClientRegistry(file)).ids(), [NFC_ID]);
    const again = await runCli(['clients', 'disable', NFD_ID, '--clients-file', file], { cwd });
    assert.equal(again.code, 1);
    assert.equal(
      again.stderr,
      `portaria: clients disable: no client ${JSON.stringify(NFD_ID)} in ${file} ("caf\\u00e9-partner" differs from "cafe\\u0301-partner" only in Unicode spelling; ids are compared byte for byte)\n`,
    );
  });

  for (const [name, id, flaw] of [
    ['a newline', 'a\nb', 'control character U+000A at index 1'],
    ['a C1 control', 'é\u0085', 'control character U+0085 at index 1'],
    ['86 CJK characters', '客'.repeat(86), 'it takes 258 bytes'],
  ] as const) {
    test(`clients add refuses an id with ${name}, naming the rule (exit 2)`, async (t) => {
      const cwd = await tempDir(t);
      const r = await runCli(['clients', 'add', id, '--scopes', 'a'], { cwd });
      assert.equal(r.code, 2);
      assert.equal(
        r.stderr,
        `portaria: clients add: client id ${JSON.stringify(id)}: must be 1 to 256 bytes of UTF-8 without control characters or lone surrogates (${flaw}) (see "portaria clients add --help")\n`,
      );
      assert.deepEqual(await readdir(cwd), []);
    });
  }

  test('stores a secret read from stdin as a scrypt hash', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');
    const chosen = 'a long operator chosen secret';
    const result = await runCli(
      ['clients', 'add', 'globex', '--scopes', 'stock', '--secret-stdin', '--clients-file', file],
      { cwd, input: `${chosen}\n` },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout.includes(chosen), false);
    assert.doesNotMatch(result.stdout, /client secret:/);
    const hash = (await loadClientRegistry(file)).get('globex')?.secrets[0]?.hash;
    assert.equal(hash?.scheme, 'scrypt');
    assert.equal(await verifySecret(chosen, hash ?? assert.fail()), true);
  });

  test('refuses a secret from stdin shorter than 16 characters', async (t) => {
    const cwd = await tempDir(t);
    const result = await runCli(['clients', 'add', 'globex', '--scopes', 'a', '--secret-stdin'], {
      cwd,
      input: '123456789012345\n',
    });
    assert.equal(result.code, 2);
    assert.equal(
      result.stderr,
      'portaria: clients add: the secret on stdin must be 16 to 1024 characters (got 15) (see "portaria clients add --help")\n',
    );
  });

  test('uses PORTARIA_CLIENTS_FILE, else ./data/clients.json', async (t) => {
    const cwd = await tempDir(t);
    const fromEnv = join(cwd, 'env.json');
    const a = await runCli(['clients', 'add', 'a', '--scopes', 'x'], {
      cwd,
      env: { PORTARIA_CLIENTS_FILE: fromEnv },
    });
    assert.equal(a.code, 0, a.stderr);
    assert.deepEqual((await loadClientRegistry(fromEnv)).ids(), ['a']);
    const b = await runCli(['clients', 'add', 'b', '--scopes', 'x'], { cwd });
    assert.equal(b.code, 0, b.stderr);
    assert.deepEqual((await loadClientRegistry(join(cwd, 'data', 'clients.json'))).ids(), ['b']);
  });

  test('lists an empty file as having no clients', async (t) => {
    const cwd = await tempDir(t);
    await mkdir(join(cwd, 'data'));
    await writeFile(join(cwd, 'data', 'clients.json'), '{"clients":[]}');
    const result = await runCli(['clients', 'list'], { cwd });
    assert.equal(result.code, 0);
    assert.equal(result.stdout, 'No clients in ./data/clients.json.\n');
  });

  test('a missing file is an error, not an empty registry (a mistyped path must show)', async (t) => {
    const cwd = await tempDir(t);
    const result = await runCli(['clients', 'list', '--clients-file', 'typo.json'], { cwd });
    assert.equal(result.code, 1);
    assert.equal(result.stdout, '');
    assert.equal(
      result.stderr,
      'portaria: clients list: typo.json does not exist (create it with "portaria clients add <id> --scopes …")\n',
    );
  });

  test('an unreadable clients file or an impossible directory is named, with the error code', async (t) => {
    const cwd = await tempDir(t);
    await mkdir(join(cwd, 'dir.json'));
    await writeFile(join(cwd, 'plain'), '');
    const list = await runCli(['clients', 'list', '--clients-file', 'dir.json'], { cwd });
    assert.equal(list.code, 1);
    assert.equal(list.stderr, 'portaria: clients list: dir.json: cannot read (EISDIR)\n');
    const add = await runCli(
      ['clients', 'add', 'z', '--scopes', 'a', '--clients-file', 'plain/clients.json'],
      { cwd },
    );
    assert.equal(add.code, 1);
    assert.match(
      add.stderr,
      /^portaria: clients add: plain\/clients\.json: cannot create its directory \((EEXIST|ENOTDIR)\)\n$/,
    );
  });

  for (const [args, message] of [
    [
      ['clients', 'add', 'a', '--scopes', 'x', '--clients-file', ''],
      'clients add: option --clients-file needs a non-empty value',
    ],
    [
      ['clients', 'list', '--clients-file', ''],
      'clients list: option --clients-file needs a non-empty value',
    ],
    [
      ['keys', 'generate', '--keys-dir', ''],
      'keys generate: option --keys-dir needs a non-empty value',
    ],
    [
      ['clients', 'add', 'a', '--scopes', 'x', '--lifetime', '-5'],
      'clients add: option --lifetime: a value starting with "-" is written --lifetime=-5',
    ],
    [
      ['revoke', '--jti', '-6v4-KLS46ncdGT1HEPBHw'],
      'revoke: option --jti: a value starting with "-" is written --jti=-6v4-KLS46ncdGT1HEPBHw',
    ],
  ] as const) {
    test(`usage error (exit 2): ${args.join(' ')}`, async (t) => {
      const cwd = await tempDir(t);
      const result = await runCli([...args], { cwd });
      assert.equal(result.code, 2);
      assert.ok(result.stderr.startsWith(`portaria: ${message} (see`), result.stderr);
      assert.deepEqual(await readdir(cwd), []);
    });
  }

  test('fails with exit 1 on a duplicate id, an unknown id and an invalid file', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');
    await runCli(['clients', 'add', 'acme', '--scopes', 'a', '--clients-file', file], { cwd });
    const before = await readFile(file, 'utf8');

    const duplicate = await runCli(
      ['clients', 'add', 'acme', '--scopes', 'b', '--clients-file', file],
      { cwd },
    );
    assert.equal(duplicate.code, 1);
    assert.equal(duplicate.stdout, '');
    assert.equal(
      duplicate.stderr,
      `portaria: clients add: client "acme" already exists in ${file}\n`,
    );
    assert.equal(await readFile(file, 'utf8'), before);

    const unknown = await runCli(['clients', 'disable', 'nobody', '--clients-file', file], { cwd });
    assert.equal(unknown.code, 1);
    assert.equal(unknown.stderr, `portaria: clients disable: no client "nobody" in ${file}\n`);

    const bad = join(cwd, 'bad.json');
    await writeFile(bad, '{"clients":[{"id":"x","secrets":[],"scopes":"a"}]}');
    const invalid = await runCli(['clients', 'list', '--clients-file', bad], { cwd });
    assert.equal(invalid.code, 1);
    assert.equal(
      invalid.stderr,
      `portaria: clients list: invalid configuration (clients.file (${bad})):\n` +
        '  - clients[0].scopes: must be an array of scope tokens\n' +
        '  - clients[0].secrets: must hold 1 or 2 secrets\n',
    );
  });

  test('concurrent "clients add" runs all land in the file, each printed secret valid', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');
    const ids = ['p1', 'p2', 'p3', 'p4', 'p5', 'p6'];
    const runs = await Promise.all(
      ids.map((id) =>
        runCli(['clients', 'add', id, '--scopes', 'a', '--clients-file', file], { cwd }),
      ),
    );
    for (const run of runs) assert.equal(run.code, 0, run.stderr);
    const registry = await loadClientRegistry(file);
    assert.deepEqual([...registry.ids()].sort(), ids);
    for (const [i, id] of ids.entries()) {
      const secret = SECRET_LINE.exec(runs[i]?.stdout ?? '')?.[1];
      assert.ok(secret);
      const hash = registry.get(id)?.secrets[0]?.hash;
      assert.ok(hash !== undefined && (await verifySecret(secret, hash)), id);
    }
  });

  test("clients remove warns that the removed client's tokens stay valid and says how to revoke them", async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');
    const added = await runCli(
      ['clients', 'add', 'acme', '--scopes', 'a', '--clients-file', file],
      {
        cwd,
      },
    );
    assert.equal(added.code, 0, added.stderr);
    const removed = await runCli(['clients', 'remove', 'acme', '--clients-file', file], { cwd });
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal(removed.stdout, `Removed client "acme" from ${file}.\n`);
    assert.equal(
      removed.stderr,
      'warning: tokens already issued to "acme" stay valid until they expire; revoke them with "portaria revoke --client acme --force" (or remove with --revoke).\n',
    );
  });

  test('clients remove --revoke revokes every token of the client through the admin API, then removes it', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');
    const store = new MemoryRevocationStore(systemClock);
    const port = await startAdminApi(t, store, ADMIN_TOKEN);
    const tokenFile = join(cwd, 'admin-token');
    await writeFile(tokenFile, ADMIN_TOKEN);
    for (const id of ['acme', 'other']) {
      const added = await runCli(['clients', 'add', id, '--scopes', 'a', '--clients-file', file], {
        cwd,
      });
      assert.equal(added.code, 0, added.stderr);
    }
    const admin = ['--admin-url', `http://127.0.0.1:${port}`, '--token-file', tokenFile];
    const removed = await runCli(
      ['clients', 'remove', 'acme', '--revoke', '--clients-file', file, ...admin],
      { cwd },
    );
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal(removed.stderr, '');
    assert.match(removed.stdout, /^Revoked every token of client "acme" issued at or before /);
    assert.match(removed.stdout, new RegExp(`\nRemoved client "acme" from ${file}\\.\n$`));
    const now = Math.floor(Date.now() / 1000);
    assert.equal(store.isRevoked({ tokenId: 't', clientId: 'acme', issuedAt: now }), true);
    assert.equal(store.isRevoked({ tokenId: 't', clientId: 'other', issuedAt: now }), false);
    assert.deepEqual((await loadClientRegistry(file)).ids(), ['other']);
  });

  test('clients remove --revoke keeps the client when the revocation fails (exit 1)', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');
    const added = await runCli(
      ['clients', 'add', 'acme', '--scopes', 'a', '--clients-file', file],
      {
        cwd,
      },
    );
    assert.equal(added.code, 0, added.stderr);
    const tokenFile = join(cwd, 'admin-token');
    await writeFile(tokenFile, ADMIN_TOKEN);
    const removed = await runCli(
      [
        'clients',
        'remove',
        'acme',
        '--revoke',
        '--clients-file',
        file,
        '--admin-url',
        NOBODY_LISTENS,
        '--token-file',
        tokenFile,
      ],
      { cwd },
    );
    assert.equal(removed.code, 1);
    assert.match(
      removed.stderr,
      /^portaria: clients remove: cannot reach the admin API at http:\/\/127\.0\.0\.1:\d+\/admin\/v1\/revocations: ECONNREFUSED\n/,
    );
    assert.deepEqual((await loadClientRegistry(file)).ids(), ['acme']);
  });

  test('clients enable accepts a disabled client again; enabling an enabled one changes nothing', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');
    const run = (...args: string[]) =>
      runCli(['clients', ...args, '--clients-file', file], { cwd });
    assert.equal((await run('add', 'acme', '--scopes', 'a')).code, 0);
    assert.equal((await run('disable', 'acme')).code, 0);
    assert.equal((await loadClientRegistry(file)).get('acme')?.disabled, true);
    const enabled = await run('enable', 'acme');
    assert.equal(enabled.code, 0, enabled.stderr);
    assert.equal(
      enabled.stdout,
      `Enabled client "acme" in ${file} (a running gateway picks it up on reload).\n`,
    );
    assert.equal((await loadClientRegistry(file)).get('acme')?.disabled, false);
    const again = await run('enable', 'acme');
    assert.equal(again.stdout, 'Client "acme" was not disabled.\n');
    const missing = await run('enable', 'nosuch');
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^portaria: clients enable: no client "nosuch" in /);
  });

  test('clients list -o json: one array, documented field names, never a hash', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');
    const run = (...args: string[]) =>
      runCli(['clients', ...args, '--clients-file', file], { cwd });
    assert.equal((await run('add', 'acme', '--scopes', 'a,b', '--lifetime', '900')).code, 0);
    assert.equal((await run('add', '客户', '--scopes', 'c')).code, 0);
    assert.equal((await run('disable', '客户')).code, 0);
    for (const flag of [['-o', 'json'], ['--output', 'json'], ['--output=json']]) {
      const listed = await run('list', ...flag);
      assert.equal(listed.code, 0, listed.stderr);
      assert.deepEqual(JSON.parse(listed.stdout), [
        {
          id: 'acme',
          scopes: ['a', 'b'],
          lifetimeSeconds: 900,
          disabled: false,
          secrets: 1,
          authMethods: ['client_secret_basic', 'client_secret_post'],
        },
        {
          id: '客户',
          scopes: ['c'],
          lifetimeSeconds: null,
          disabled: true,
          secrets: 1,
          authMethods: ['client_secret_basic', 'client_secret_post'],
        },
      ]);
      assert.ok(!listed.stdout.includes('sha256:'));
    }
    const bad = await run('list', '-o', 'yaml');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--output: must be table or json \(got "yaml"\)/);
  });
});
