/**
 * `portaria clients add --auth … --jwks …` and `portaria clients set-auth`, run as the
 * operator runs them (a child process), and the file they write loaded by the gateway's
 * own registry.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadClientRegistry } from '../../src/clients/clientRegistry.js';
import { ecKey } from '../helpers/jwksServer.js';
import { runCli, tempDir } from '../helpers/runCli.js';

async function fileOf(path: string): Promise<{ clients: Record<string, unknown>[] }> {
  return JSON.parse(await readFile(path, 'utf8'));
}

describe('portaria clients: OAuth client authentication', () => {
  test('add --auth private_key_jwt --jwks FILE: no secret, the key file stored relative to the clients file', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');
    await writeFile(join(cwd, 'partner.jwks.json'), JSON.stringify({ keys: [ecKey('p1').jwk] }));
    const added = await runCli(
      [
        'clients',
        'add',
        'partner',
        '--scopes',
        'orders:read',
        '--auth',
        'private_key_jwt',
        '--jwks',
        'partner.jwks.json',
        '--audience',
        'https://api.test/orders',
        '--audience',
        'partner-api',
        '--permission',
        'introspect',
        '--clients-file',
        file,
      ],
      { cwd },
    );
    assert.equal(added.stderr, '');
    assert.equal(added.code, 0);
    assert.doesNotMatch(added.stdout, /client secret:/);
    assert.match(added.stdout, /private_key_jwt only: no secret was made/);
    assert.deepEqual((await fileOf(file)).clients, [
      {
        id: 'partner',
        secrets: [],
        scopes: ['orders:read'],
        authMethods: ['private_key_jwt'],
        jwksFile: 'partner.jwks.json',
        audiences: ['https://api.test/orders', 'partner-api'],
        permissions: ['introspect'],
      },
    ]);
    const client = (await loadClientRegistry(file)).get('partner');
    assert.deepEqual(client?.permissions, ['introspect']);
    const listed = await runCli(['clients', 'list', '--clients-file', file], { cwd });
    assert.match(listed.stdout, /partner\s+orders:read\s+default\s+no\s+0\s+jwt\n/);
  });

  test('add --jwks-uri with --alg RS256, and refusals that name the problem', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');
    const ok = await runCli(
      [
        'clients',
        'add',
        'remote',
        '--scopes',
        'a',
        '--auth',
        'private_key_jwt',
        '--jwks-uri',
        'https://partner.test/jwks.json',
        '--alg',
        'RS256',
        '--clients-file',
        file,
      ],
      { cwd },
    );
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal((await fileOf(file)).clients[0]?.jwksUri, 'https://partner.test/jwks.json');
    await writeFile(join(cwd, 'ec.jwks.json'), JSON.stringify({ keys: [ecKey('e1').jwk] }));
    const cases: [string[], RegExp][] = [
      [
        ['--auth', 'private_key_jwt', '--jwks-uri', 'http://partner.test/jwks'],
        /--jwks-uri: must be an https: URL/,
      ],
      [
        ['--auth', 'private_key_jwt', '--jwks', 'ec.jwks.json', '--alg', 'RS256'],
        /--jwks: .*no usable key.*\(for RS256\)/,
      ],
      [['--auth', 'private_key_jwt', '--jwks', 'missing.json'], /--jwks/],
      [['--auth', 'basic'], /--auth: "basic" is not one of/],
      [['--alg', 'HS256'], /--alg: must be one of/],
      [['--auth', 'private_key_jwt'], /private_key_jwt needs the client's keys/],
      [['--permission', 'admin'], /permissions: must be an array of distinct permissions/],
    ];
    for (const [extra, message] of cases) {
      const refused = await runCli(
        ['clients', 'add', 'x', '--scopes', 'a', ...extra, '--clients-file', file],
        { cwd },
      );
      assert.notEqual(refused.code, 0, extra.join(' '));
      assert.match(refused.stderr, message, extra.join(' '));
    }
    assert.equal((await fileOf(file)).clients.length, 1, 'nothing refused was written');
  });

  test('set-auth changes methods and keys; clearing returns to the defaults; secrets stay', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');
    const added = await runCli(
      ['clients', 'add', 'acme', '--scopes', 'a', '--clients-file', file],
      { cwd },
    );
    assert.equal(added.code, 0);
    await writeFile(join(cwd, 'acme.jwks.json'), JSON.stringify({ keys: [ecKey('a1').jwk] }));
    const changed = await runCli(
      [
        'clients',
        'set-auth',
        'acme',
        '--auth',
        'client_secret_basic,private_key_jwt',
        '--jwks',
        'acme.jwks.json',
        '--audience',
        'https://api.test',
        '--clients-file',
        file,
      ],
      { cwd },
    );
    assert.equal(changed.code, 0, changed.stderr);
    assert.match(
      changed.stdout,
      /authenticates with client_secret_basic, private_key_jwt, keys from acme.jwks.json \(ES256\)/,
    );
    let entry = (await fileOf(file)).clients[0] as Record<string, unknown>;
    assert.equal((entry.secrets as unknown[]).length, 1);
    assert.deepEqual(entry.authMethods, ['client_secret_basic', 'private_key_jwt']);
    const moved = await runCli(
      [
        'clients',
        'set-auth',
        'acme',
        '--jwks-uri',
        'https://keys.test/acme',
        '--clear-audiences',
        '--clients-file',
        file,
      ],
      { cwd },
    );
    assert.equal(moved.code, 0, moved.stderr);
    entry = (await fileOf(file)).clients[0] as Record<string, unknown>;
    assert.equal(entry.jwksUri, 'https://keys.test/acme');
    assert.equal(entry.jwksFile, undefined, 'the new key source replaced the old one');
    assert.equal(entry.audiences, undefined);
    const nothing = await runCli(['clients', 'set-auth', 'acme', '--clients-file', file], { cwd });
    assert.equal(nothing.code, 2);
    const unknown = await runCli(
      ['clients', 'set-auth', 'nobody', '--auth', 'client_secret_post', '--clients-file', file],
      { cwd },
    );
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no client "nobody"/);
    const keysOff = await runCli(
      ['clients', 'set-auth', 'acme', '--auth', 'client_secret_post', '--clients-file', file],
      { cwd },
    );
    assert.notEqual(keysOff.code, 0, 'keys without private_key_jwt are refused');
    assert.match(keysOff.stderr, /jwksFile and jwksUri are used only with private_key_jwt/);
  });

  test('set-auth to private_key_jwt only removes the secrets; --keep-secrets keeps them, and says they are refused', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');
    await writeFile(join(cwd, 'k.jwks.json'), JSON.stringify({ keys: [ecKey('k1').jwk] }));
    for (const id of ['leaked', 'kept']) {
      const added = await runCli(['clients', 'add', id, '--scopes', 'a', '--clients-file', file], {
        cwd,
      });
      assert.equal(added.code, 0, added.stderr);
    }
    const keyOnly = (id: string, ...extra: string[]) =>
      runCli(
        [
          'clients',
          'set-auth',
          id,
          '--auth',
          'private_key_jwt',
          '--jwks',
          'k.jwks.json',
          ...extra,
          '--clients-file',
          file,
        ],
        { cwd },
      );
    const moved = await keyOnly('leaked');
    assert.equal(moved.code, 0, moved.stderr);
    assert.match(moved.stdout, /authenticates with private_key_jwt, keys from k.jwks.json/);
    assert.match(moved.stdout, /Removed its secret: no token endpoint accepts them any more\./);
    const kept = await keyOnly('kept', '--keep-secrets');
    assert.equal(kept.code, 0, kept.stderr);
    assert.match(
      kept.stdout,
      /Kept its secrets \(--keep-secrets\): every token endpoint refuses them\./,
    );
    const [leaked, keptEntry] = (await fileOf(file)).clients as Record<string, unknown>[];
    assert.deepEqual(leaked?.secrets, []);
    assert.equal((keptEntry?.secrets as unknown[] | undefined)?.length, 1);
    const registry = await loadClientRegistry(file);
    assert.deepEqual(registry.get('leaked')?.secrets, []);
    assert.deepEqual(registry.get('kept')?.authMethods, ['private_key_jwt']);
  });
});
