/**
 * `portaria clients add` and `set-auth` with RFC 8705's methods, run as the operator runs
 * them (a child process): the certificate identity options, no secret for a client
 * authenticating by certificate only, refusals naming the problem, and the file loaded
 * by the gateway's own registry.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadClientRegistry } from '../../src/clients/clientRegistry.js';
import { ecKey } from '../helpers/jwksServer.js';
import { runCli, tempDir } from '../helpers/runCli.js';

async function clientsOf(path: string): Promise<Record<string, unknown>[]> {
  return (JSON.parse(await readFile(path, 'utf8')) as { clients: Record<string, unknown>[] })
    .clients;
}

describe('portaria clients: mutual-TLS client authentication', () => {
  test('add --auth tls_client_auth --tls-subject-dn: no secret, the identity stored and loaded', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');
    const added = await runCli(
      [
        'clients',
        'add',
        'partner',
        '--scopes',
        'orders:read',
        '--auth',
        'tls_client_auth',
        '--tls-subject-dn',
        'CN=partner,O=Acme\\, Lda,C=PT',
        '--clients-file',
        file,
      ],
      { cwd },
    );
    assert.equal(added.stderr, '');
    assert.equal(added.code, 0);
    assert.doesNotMatch(added.stdout, /client secret:/);
    assert.match(added.stdout, /tls_client_auth only: no secret was made/);
    assert.deepEqual(await clientsOf(file), [
      {
        id: 'partner',
        secrets: [],
        scopes: ['orders:read'],
        authMethods: ['tls_client_auth'],
        tlsClientAuth: { subjectDn: 'CN=partner,O=Acme\\, Lda,C=PT' },
      },
    ]);
    const client = (await loadClientRegistry(file)).get('partner');
    assert.equal(client?.tlsClientAuth?.kind, 'subjectDn');
    const listed = await runCli(['clients', 'list', '--clients-file', file], { cwd });
    assert.match(listed.stdout, /partner\s+orders:read\s+default\s+no\s+0\s+tls\n/);
  });

  test('add --auth self_signed_tls_client_auth --jwks, and refusals that name the problem', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');
    await writeFile(join(cwd, 'self.jwks.json'), JSON.stringify({ keys: [ecKey('s1').jwk] }));
    const ok = await runCli(
      [
        'clients',
        'add',
        'self',
        '--scopes',
        'a',
        '--auth',
        'self_signed_tls_client_auth',
        '--jwks',
        'self.jwks.json',
        '--clients-file',
        file,
      ],
      { cwd },
    );
    assert.equal(ok.code, 0, ok.stderr);
    assert.deepEqual((await clientsOf(file))[0]?.authMethods, ['self_signed_tls_client_auth']);
    const cases: [string[], RegExp][] = [
      [['--auth', 'tls_client_auth'], /tls_client_auth needs the certificate's identity/],
      [
        ['--auth', 'tls_client_auth', '--tls-san-dns', 'a.example', '--tls-san-ip', '10.0.0.1'],
        /--tls-san-dns and --tls-san-ip are exclusive/,
      ],
      [
        ['--auth', 'tls_client_auth', '--tls-subject-dn', 'CN=a;b'],
        /--tls-subject-dn: not an RFC 4514 distinguished name/,
      ],
      [['--auth', 'tls_client_auth', '--tls-san-ip', 'nope'], /--tls-san-ip: must be an IPv4/],
      [['--tls-san-dns', 'a.example'], /tlsClientAuth is used only with tls_client_auth/],
      [['--auth', 'self_signed_tls_client_auth'], /needs the client's keys/],
    ];
    for (const [extra, message] of cases) {
      const refused = await runCli(
        ['clients', 'add', 'x', '--scopes', 'a', ...extra, '--clients-file', file],
        { cwd },
      );
      assert.notEqual(refused.code, 0, extra.join(' '));
      assert.match(refused.stderr, message, extra.join(' '));
    }
    assert.equal((await clientsOf(file)).length, 1, 'nothing refused was written');
  });

  test('set-auth moves a secret client to tls_client_auth by SAN, and back (the identity dropped)', async (t) => {
    const cwd = await tempDir(t);
    const file = join(cwd, 'clients.json');
    assert.equal(
      (await runCli(['clients', 'add', 'acme', '--scopes', 'a', '--clients-file', file], { cwd }))
        .code,
      0,
    );
    const moved = await runCli(
      [
        'clients',
        'set-auth',
        'acme',
        '--auth',
        'tls_client_auth',
        '--tls-san-uri',
        'spiffe://example.com/acme',
        '--clients-file',
        file,
      ],
      { cwd },
    );
    assert.equal(moved.code, 0, moved.stderr);
    const [entry] = await clientsOf(file);
    assert.deepEqual(entry?.authMethods, ['tls_client_auth']);
    assert.deepEqual(entry?.tlsClientAuth, { sanUri: 'spiffe://example.com/acme' });
    assert.deepEqual(entry?.secrets, []);
    const back = await runCli(
      ['clients', 'set-auth', 'acme', '--auth', 'private_key_jwt', '--clients-file', file],
      { cwd },
    );
    assert.notEqual(back.code, 0);
    assert.match(back.stderr, /private_key_jwt needs the client's keys/);
    await writeFile(join(cwd, 'acme.jwks.json'), JSON.stringify({ keys: [ecKey('a1').jwk] }));
    const keys = await runCli(
      [
        'clients',
        'set-auth',
        'acme',
        '--auth',
        'private_key_jwt',
        '--jwks',
        'acme.jwks.json',
        '--clients-file',
        file,
      ],
      { cwd },
    );
    assert.equal(keys.code, 0, keys.stderr);
    const [after] = await clientsOf(file);
    assert.equal('tlsClientAuth' in (after ?? {}), false);
  });
});
