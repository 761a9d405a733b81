/**
 * Client ids in any script, end to end: registered with `portaria clients add`, a token
 * from the contract's JSON operation, a call through a route (the upstream reads the id
 * from `X-Client-Id`, percent-encoded, and decoding gives it back), revoked by client
 * through the admin API (or `portaria revoke`), then refused with 401. The NFC and NFD
 * spellings of one name are two clients: revoking one leaves the other working. The same
 * with the Redis revocation store.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { decodeJwt } from 'jose';
import { type Gateway, startGateway } from '../helpers/fixture.js';
import { sample, scrape } from '../helpers/metrics.js';
import { ADMIN_TOKEN, revokeVia, writeAdminToken } from '../helpers/redisFixtures.js';
import { startRedis } from '../helpers/redisServer.js';
import { runCli } from '../helpers/runCli.js';
import { NFC_ID, NFD_ID, UNICODE_CLIENT_IDS } from '../helpers/unicodeIds.js';
import { accessLineOf } from '../helpers/wait.js';

const SECRET_LINE = /^client secret: ([A-Za-z0-9_-]{43})$/m;
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

interface Registered {
  readonly clientsFile: string;
  readonly adminTokenFile: string;
  readonly secrets: ReadonlyMap<string, string>;
}

/** Registers every id with the CLI into a fresh clients file. */
async function register(t: TestContext, ids: readonly string[]): Promise<Registered> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-unicode-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const clientsFile = join(dir, 'clients.json');
  const secrets = new Map<string, string>();
  for (const id of ids) {
    const r = await runCli(
      ['clients', 'add', id, '--scopes', 'orders:read', '--clients-file', clientsFile],
      { cwd: dir },
    );
    assert.equal(r.code, 0, r.stderr);
    secrets.set(id, SECRET_LINE.exec(r.stdout)?.[1] ?? assert.fail(r.stdout));
  }
  return { clientsFile, adminTokenFile: await writeAdminToken(dir), secrets };
}

function gatewayWith(
  t: TestContext,
  registered: Registered,
  extra: Record<string, unknown> = {},
): Promise<Gateway> {
  return startGateway(t, {
    settings: () => ({
      clients: { file: registered.clientsFile },
      admin: { host: '127.0.0.1', port: 0, tokenFile: registered.adminTokenFile },
      ...extra,
    }),
  });
}

function call(gw: Gateway, token: string): Promise<Response> {
  return fetch(`${gw.url}/v1/orders/1`, { headers: { authorization: `Bearer ${token}` } });
}

/** Calls through the route and returns what the upstream read from X-Client-Id. */
async function upstreamClientId(gw: Gateway, token: string): Promise<string> {
  const before = gw.upstream.received.length;
  const res = await call(gw, token);
  assert.equal(res.status, 200);
  await res.arrayBuffer();
  const received = gw.upstream.received[before] ?? assert.fail('the upstream got no request');
  const raw = received.rawHeaders;
  const at = raw.findIndex((name, i) => i % 2 === 0 && name.toLowerCase() === 'x-client-id');
  const value = raw[at + 1] ?? assert.fail('no X-Client-Id');
  assert.match(value, VISIBLE_ASCII, 'a valid field value in visible ASCII');
  return value;
}

async function expectRevoked(gw: Gateway, token: string): Promise<void> {
  const res = await call(gw, token);
  assert.equal(res.status, 401);
  assert.equal(((await res.json()) as { tipo: string }).tipo, 'urn:portaria:problem:token-revoked');
}

async function revokeClient(gw: Gateway, clientId: string): Promise<void> {
  const { status, body } = await revokeVia(gw.adminUrl, { clientId });
  assert.equal(status, 201, JSON.stringify(body));
  assert.equal(body.clientId, clientId);
}

describe('Unicode client ids end to end', () => {
  test('each script: register, token, call through a route, revoke by client → 401', async (t) => {
    const ids = UNICODE_CLIENT_IDS.map(([, id]) => id);
    const registered = await register(t, ids);
    const gw = await gatewayWith(t, registered);
    const tokens = new Map<string, string>();
    for (const [script, id] of UNICODE_CLIENT_IDS) {
      const token = await gw.token(id, registered.secrets.get(id));
      tokens.set(id, token);
      const claims = decodeJwt(token);
      assert.equal(claims.sub, id, `${script}: sub as is`);
      assert.equal(claims.client_id, id, `${script}: client_id as is`);
      const header = await upstreamClientId(gw, token);
      assert.equal(header, encodeURIComponent(id), `${script}: percent-encoded UTF-8`);
      assert.equal(decodeURIComponent(header), id, `${script}: decoding gives the id`);

      const res = await call(gw, token);
      await res.arrayBuffer();
      const line = await accessLineOf(gw.logs, res.headers.get('x-request-id') ?? '');
      assert.equal(
        line['portaria.client_id'],
        id,
        `${script}: the access log carries the id, JSON-escaped`,
      );
    }

    const metrics = await scrape(gw.adminUrl);
    for (const id of ids) {
      assert.equal(sample(metrics, `portaria_tokens_issued_by_client_total{client="${id}"}`), 1);
    }
    const promtool = spawnSync('promtool', ['check', 'metrics'], {
      input: metrics,
      encoding: 'utf8',
    });
    assert.equal(promtool.status, 0, `${promtool.stdout}${promtool.stderr}`);

    for (const [script, id] of UNICODE_CLIENT_IDS) {
      await revokeClient(gw, id);
      await expectRevoked(gw, tokens.get(id) as string);
      for (const other of ids.slice(ids.indexOf(id) + 1)) {
        assert.equal((await call(gw, tokens.get(other) as string)).status, 200, `${script}`);
      }
    }
    const listing = (await (
      await fetch(`${gw.adminUrl}/admin/v1/revocations`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      })
    ).json()) as { clients: { clientId: string }[] };
    assert.deepEqual(
      listing.clients.map((c) => c.clientId),
      ids,
    );
  });

  test('NFC and NFD spellings are two clients: own secrets, own header, revoked apart', async (t) => {
    const registered = await register(t, [NFC_ID, NFD_ID]);
    const gw = await gatewayWith(t, registered);
    const nfcSecret = registered.secrets.get(NFC_ID) as string;
    const nfdSecret = registered.secrets.get(NFD_ID) as string;
    await assert.rejects(gw.token(NFD_ID, nfcSecret), /token request failed: 401/);
    const nfc = await gw.token(NFC_ID, nfcSecret);
    const nfd = await gw.token(NFD_ID, nfdSecret);
    assert.equal(decodeJwt(nfc).sub, NFC_ID);
    assert.equal(decodeJwt(nfd).sub, NFD_ID);
    assert.equal(await upstreamClientId(gw, nfc), 'caf%C3%A9-partner');
    assert.equal(await upstreamClientId(gw, nfd), 'cafe%CC%81-partner');

    // Revoked with the CLI: only the NFD spelling.
    const r = await runCli(
      [
        'revoke',
        '--client',
        NFD_ID,
        '--admin-url',
        gw.adminUrl,
        '--token-file',
        registered.adminTokenFile,
        '--clients-file',
        registered.clientsFile,
      ],
      { cwd: gw.dir },
    );
    assert.equal(r.code, 0, r.stderr);
    await expectRevoked(gw, nfd);
    assert.equal((await call(gw, nfc)).status, 200, 'the NFC client still works');

    await revokeClient(gw, NFC_ID);
    await expectRevoked(gw, nfc);
  });

  test('with the Redis revocation store: revoked by client per script; NFD is not NFC', async (t) => {
    const redis = await startRedis(t);
    const ids = [...UNICODE_CLIENT_IDS.map(([, id]) => id), NFC_ID, NFD_ID];
    const registered = await register(t, ids);
    const gw = await gatewayWith(t, registered, {
      revocation: { store: 'redis', maxSyncLagSeconds: 1 },
      redis: { url: redis.url, connectTimeoutMs: 500, commandTimeoutMs: 500 },
    });
    const tokens = new Map<string, string>();
    for (const id of ids) tokens.set(id, await gw.token(id, registered.secrets.get(id)));
    for (const id of ids.filter((id) => id !== NFD_ID)) {
      assert.equal((await call(gw, tokens.get(id) as string)).status, 200);
      await revokeClient(gw, id);
      await expectRevoked(gw, tokens.get(id) as string);
    }
    assert.equal((await call(gw, tokens.get(NFD_ID) as string)).status, 200);
  });
});
