/**
 * `portaria revoke` end to end: the compiled CLI as a child process against a real admin
 * listener (node:http + createAdminHandler) backed by a MemoryRevocationStore.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { systemClock } from '../../src/lib/clock.js';
import { MemoryRevocationStore } from '../../src/revocation/memoryRevocationStore.js';
import type { RevocationStore } from '../../src/revocation/revocationStore.js';
import { NOBODY_LISTENS } from '../helpers/process.js';
import { runCli, tempDir } from '../helpers/runCli.js';
import { NFC_ID, NFD_ID, UNICODE_CLIENT_IDS } from '../helpers/unicodeIds.js';
import { ADMIN_LIFETIME, ADMIN_SKEW, startAdminApi } from './adminApi.js';

const ADMIN_TOKEN = 'cli-admin-token-0123456789abcdefghijkl';
const LIFETIME = ADMIN_LIFETIME;
const SKEW = ADMIN_SKEW;

const KNOWN_CLIENTS = ['acme', ...UNICODE_CLIENT_IDS.map(([, id]) => id), NFD_ID];

function clientsFileOf(ids: readonly string[]): string {
  const hash = `sha256:${'A'.repeat(43)}`;
  return JSON.stringify({ clients: ids.map((id) => ({ id, secrets: [{ hash }], scopes: ['a'] })) });
}

interface Setup {
  url: string;
  store: RevocationStore;
  dir: string;
  tokenFile: string;
}

async function setup(t: TestContext, store?: RevocationStore): Promise<Setup> {
  const revocationStore = store ?? new MemoryRevocationStore(systemClock);
  const port = await startAdminApi(t, revocationStore, ADMIN_TOKEN);
  const dir = await tempDir(t);
  const tokenFile = join(dir, 'admin-token');
  await writeFile(tokenFile, `${ADMIN_TOKEN}\n`);
  // The clients file at the CLI's default place (./data/clients.json): `revoke --client`
  // checks that the client exists there.
  await mkdir(join(dir, 'data'));
  await writeFile(join(dir, 'data', 'clients.json'), clientsFileOf(KNOWN_CLIENTS));
  return { url: `http://127.0.0.1:${port}`, store: revocationStore, dir, tokenFile };
}

function assertNoToken(output: { stdout: string; stderr: string }): void {
  assert.ok(!output.stdout.includes(ADMIN_TOKEN), 'token on stdout');
  assert.ok(!output.stderr.includes(ADMIN_TOKEN), 'token on stderr');
}

describe('portaria revoke', () => {
  test('--jti revokes one token through the admin API (exit 0)', async (t) => {
    const s = await setup(t);
    const r = await runCli(
      ['revoke', '--jti', 'tok-1', '--admin-url', s.url, '--token-file', s.tokenFile],
      {
        cwd: s.dir,
      },
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^Revoked token "tok-1" \(entry kept until \d{4}-\d\d-\d\dT[\d:]+Z\)\.\n$/,
    );
    assert.equal(r.stderr, '');
    assertNoToken(r);
    const now = Math.floor(Date.now() / 1000);
    assert.equal(s.store.isRevoked({ tokenId: 'tok-1', clientId: 'x', issuedAt: now }), true);
  });

  test('--client --before revokes by cut-off; URL and token file from the environment', async (t) => {
    const s = await setup(t);
    const cut = Math.floor(Date.now() / 1000) - 60;
    const cutText = new Date(cut * 1000).toISOString().replace('.000Z', 'Z');
    const r = await runCli(['revoke', '--client', 'acme', '--before', cutText], {
      cwd: s.dir,
      env: { PORTARIA_ADMIN_URL: `${s.url}/`, PORTARIA_ADMIN_TOKEN_FILE: s.tokenFile },
    });
    assert.equal(r.code, 0, r.stderr);
    const kept = new Date((cut + LIFETIME + SKEW) * 1000).toISOString().replace('.000Z', 'Z');
    assert.equal(
      r.stdout,
      `Revoked every token of client "acme" issued at or before ${cutText} (entry kept until ${kept}).\n`,
    );
    assert.deepEqual(s.store.entries().clients, [
      { clientId: 'acme', issuedBefore: cut, expiresAt: cut + LIFETIME + SKEW },
    ]);
  });

  test('--client takes any Unicode id and revokes exactly that one (NFD is not NFC)', async (t) => {
    const s = await setup(t);
    for (const id of [...UNICODE_CLIENT_IDS.map(([, id]) => id), NFD_ID]) {
      const r = await runCli(
        ['revoke', '--client', id, '--admin-url', s.url, '--token-file', s.tokenFile],
        { cwd: s.dir },
      );
      assert.equal(r.code, 0, r.stderr);
      assert.ok(
        r.stdout.startsWith(`Revoked every token of client ${JSON.stringify(id)} `),
        r.stdout,
      );
      const now = Math.floor(Date.now() / 1000);
      assert.equal(s.store.isRevoked({ tokenId: 't', clientId: id, issuedAt: now }), true, id);
    }
    const now = Math.floor(Date.now() / 1000);
    assert.equal(s.store.isRevoked({ tokenId: 't', clientId: NFC_ID, issuedAt: now }), false);
  });

  test('--expires-at in the past: the API refusal is printed, exit 1', async (t) => {
    const s = await setup(t);
    const r = await runCli(
      [
        'revoke',
        '--jti',
        'tok-1',
        '--expires-at',
        '1000',
        '--admin-url',
        s.url,
        '--token-file',
        s.tokenFile,
      ],
      { cwd: s.dir },
    );
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, 'portaria: revoke: expiresAt must be in the future. (HTTP 400)\n');
    assert.equal(s.store.size(), 0);
  });

  test('a wrong admin token: 401 detail printed, exit 1, token never printed', async (t) => {
    const s = await setup(t);
    await writeFile(s.tokenFile, 'not-the-admin-token\n');
    const r = await runCli(
      ['revoke', '--jti', 'tok-1', '--admin-url', s.url, '--token-file', s.tokenFile],
      {
        cwd: s.dir,
      },
    );
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'portaria: revoke: The admin token is invalid. (HTTP 401)\n');
    assert.ok(!r.stderr.includes('not-the-admin-token'));
  });

  test('a store failure: 503 detail printed, exit 1', async (t) => {
    const failing = new MemoryRevocationStore(systemClock);
    failing.revokeToken = () => Promise.reject(new Error('disk full'));
    const s = await setup(t, failing);
    const r = await runCli(
      ['revoke', '--jti', 'tok-1', '--admin-url', s.url, '--token-file', s.tokenFile],
      {
        cwd: s.dir,
      },
    );
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'portaria: revoke: The revocation could not be stored. (HTTP 503)\n');
  });

  test('an unreachable gateway: exit 1 with the reason', async (t) => {
    const s = await setup(t);
    const r = await runCli(
      ['revoke', '--jti', 'tok-1', '--admin-url', NOBODY_LISTENS, '--token-file', s.tokenFile],
      { cwd: s.dir },
    );
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /^portaria: revoke: cannot reach the admin API at http:\/\/127\.0\.0\.1:\d+\/admin\/v1\/revocations: ECONNREFUSED\n$/,
    );
    assertNoToken(r);
  });

  test('a missing token file: exit 1 naming the file', async (t) => {
    const s = await setup(t);
    const missing = join(s.dir, 'nope');
    const r = await runCli(
      ['revoke', '--jti', 'x', '--admin-url', s.url, '--token-file', missing],
      {
        cwd: s.dir,
      },
    );
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      `portaria: revoke: cannot read the admin token file ${missing} (ENOENT)\n`,
    );
  });

  for (const [args, message] of [
    [['--jti', 'a', '--client', 'b'], 'give either --jti or --client, not both'],
    [[], 'missing --jti or --client'],
    [['--jti', 'a', '--before', '0'], '--before goes with --client only'],
    [['--client', 'a', '--expires-at', '5'], '--expires-at goes with --jti only'],
    [
      ['--client', 'a', '--before', 'yesterday'],
      '--before: not an RFC 3339 date-time or epoch seconds',
    ],
    [['--jti', 'a', '--expires-at', 'soon'], '--expires-at: not epoch seconds'],
    [['--jti', 'a', '--admin-url', 'ftp://x'], '--admin-url: must be an http or https URL'],
    [['--jti', 'a', '--frobnicate'], 'unknown option --frobnicate'],
    [['--jti', 'a', 'extra'], 'unexpected argument "extra"'],
    [
      ['--client', 'a\tb'],
      '--client: a client id must be 1 to 256 bytes of UTF-8 without control characters or lone surrogates (control character U+0009 at index 1)',
    ],
    [
      ['--client', '客'.repeat(86)],
      '--client: a client id must be 1 to 256 bytes of UTF-8 without control characters or lone surrogates (it takes 258 bytes)',
    ],
  ] as const) {
    test(`usage error (exit 2): ${message}`, async (t) => {
      const s = await setup(t);
      const r = await runCli(['revoke', ...args, '--token-file', s.tokenFile], { cwd: s.dir });
      assert.equal(r.code, 2);
      assert.equal(r.stderr, `portaria: revoke: ${message} (see "portaria revoke --help")\n`);
      assert.equal(s.store.size(), 0);
    });
  }

  test('no token file anywhere is a usage error', async (t) => {
    const s = await setup(t);
    const r = await runCli(['revoke', '--jti', 'a', '--admin-url', s.url], { cwd: s.dir });
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /missing --token-file \(or \$PORTARIA_ADMIN__TOKEN_FILE, \$PORTARIA_ADMIN_TOKEN_FILE\)/,
    );
  });

  test('--client for a client the clients file does not hold is refused (exit 1), nothing revoked', async (t) => {
    const s = await setup(t);
    const r = await runCli(
      ['revoke', '--client', 'nosuch', '--admin-url', s.url, '--token-file', s.tokenFile],
      { cwd: s.dir },
    );
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(
      r.stderr,
      `portaria: revoke: no client "nosuch" in ./data/clients.json; a client already removed from the file may still hold live tokens: revoke them with --force\n`,
    );
    assert.equal(s.store.size(), 0);
  });

  test('--client --force revokes a client the file no longer holds', async (t) => {
    const s = await setup(t);
    const r = await runCli(
      ['revoke', '--client', 'gone', '--force', '--admin-url', s.url, '--token-file', s.tokenFile],
      { cwd: s.dir },
    );
    assert.equal(r.code, 0, r.stderr);
    const now = Math.floor(Date.now() / 1000);
    assert.equal(s.store.isRevoked({ tokenId: 't', clientId: 'gone', issuedAt: now }), true);
  });

  test('revoke list shows the entries the gateway holds; -o json with documented names', async (t) => {
    const s = await setup(t);
    const admin = ['--admin-url', s.url, '--token-file', s.tokenFile];
    const empty = await runCli(['revoke', 'list', ...admin], { cwd: s.dir });
    assert.equal(empty.code, 0, empty.stderr);
    assert.equal(empty.stdout, 'No revocation entries.\n');
    await s.store.revokeToken('tok-1', 4_000_000_000);
    await s.store.revokeClient(NFC_ID, 1_800_000_000, 4_000_003_600);
    const listed = await runCli(['revoke', 'list', ...admin], { cwd: s.dir });
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(
      listed.stdout,
      [
        'KIND    ID            ISSUED-BEFORE         EXPIRES',
        'token   tok-1         -                     2096-10-02T07:06:40Z',
        `client  ${NFC_ID}  2027-01-15T08:00:00Z  2096-10-02T08:06:40Z`,
        '',
      ].join('\n'),
    );
    const json = await runCli(['revoke', 'list', '-o', 'json', ...admin], { cwd: s.dir });
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), [
      {
        kind: 'token',
        jti: 'tok-1',
        clientId: null,
        issuedBefore: null,
        expiresAt: '2096-10-02T07:06:40Z',
      },
      {
        kind: 'client',
        jti: null,
        clientId: NFC_ID,
        issuedBefore: '2027-01-15T08:00:00Z',
        expiresAt: '2096-10-02T08:06:40Z',
      },
    ]);
    assertNoToken(json);
  });

  test('--help describes the command; the top-level help lists it', async (t) => {
    const dir = await tempDir(t);
    const help = await runCli(['revoke', '--help'], { cwd: dir });
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: portaria revoke --jti ID/);
    assert.match(help.stdout, /--token-file PATH/);
    const top = await runCli(['--help'], { cwd: dir });
    assert.match(top.stdout, /\n {2}revoke {3}revoke a token/);
  });
});
