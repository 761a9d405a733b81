/**
 * Fault tests: a real `redis-server` stopped and restarted under traffic between real
 * gateways (loopback only, bounded polls, every wait has a deadline). What they prove:
 * revocations acknowledged while Redis is down are enforced at once, replayed and then
 * enforced by the other replica; the refuse mode answers 503; the `whenStale` policy
 * (defaults: safe admitted, unsafe refused); readiness and metrics tell the story; a
 * gateway restarted with a non-empty queue replays it.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { type TestContext, test } from 'node:test';
import { decodeJwt } from 'jose';
import { createApp } from '../../src/app/createApp.js';
import { systemClock } from '../../src/lib/clock.js';
import { RedisRevocationStore } from '../../src/revocation/redisRevocationStore.js';
import { type Gateway, startGateway } from '../helpers/fixture.js';
import { metric, sample, scrape } from '../helpers/metrics.js';
import { rawRequest } from '../helpers/rawHttp.js';
import { onlyResponse, rawProblemOf } from '../helpers/rawResponse.js';
import {
  callWith,
  readyz,
  refusedAsRevoked,
  revokeVia,
  writeAdminToken,
} from '../helpers/redisFixtures.js';
import { type RedisServer, startRedis } from '../helpers/redisServer.js';
import { parsedLogs, waitFor } from '../helpers/wait.js';

async function redisGateway(
  t: TestContext,
  redis: RedisServer,
  revocation: Record<string, unknown> = {},
): Promise<Gateway> {
  return startGateway(t, {
    settings: () => ({
      revocation: { store: 'redis', maxSyncLagSeconds: 1, ...revocation },
      redis: { url: redis.url, connectTimeoutMs: 500, commandTimeoutMs: 500 },
    }),
  });
}

/** A gateway with the admin API on (the token file lives in the fixture's directory). */
async function withAdmin(
  t: TestContext,
  redis: RedisServer,
  revocation: Record<string, unknown> = {},
): Promise<Gateway> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-redis-admin-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const tokenFile = await writeAdminToken(dir);
  return startGateway(t, {
    settings: () => ({
      admin: { host: '127.0.0.1', port: 0, tokenFile },
      revocation: { store: 'redis', maxSyncLagSeconds: 1, ...revocation },
      redis: { url: redis.url, connectTimeoutMs: 500, commandTimeoutMs: 500 },
    }),
  });
}

const connected = (role: string) => `portaria_redis_connected{role="${role}"}`;

/** Calls the gateway in a loop (GET and POST alternately) until stopped; records statuses. */
function traffic(gw: Gateway, token: string) {
  const seen: { method: string; status: number; code: string | undefined }[] = [];
  let running = true;
  const loop = (async () => {
    for (let i = 0; running; i++) {
      const method = i % 2 === 0 ? 'GET' : 'POST';
      const { status, code } = await callWith(gw.url, token, method);
      seen.push({ method, status, code });
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  return {
    seen,
    async stop() {
      running = false;
      await loop;
    },
  };
}

test('queue mode under traffic: Redis down and back — nothing acknowledged is lost, whenStale is honoured, readiness and metrics tell the story', async (t) => {
  const redis = await startRedis(t);
  const a = await withAdmin(t, redis);
  const b = await redisGateway(t, redis);
  assert.equal((await readyz(a.adminUrl)).status, 200);
  assert.deepEqual((await readyz(a.adminUrl)).body, { status: 'ready' });
  assert.equal(await metric(a.adminUrl, connected('revocation')), 1);
  assert.equal(await metric(a.adminUrl, connected('revocation-subscriber')), 1);

  const good = await a.token();
  const onB = await b.token();
  const onA = await a.token();
  const load = traffic(a, good);

  await redis.stop();
  await waitFor('A sees Redis down', async () =>
    (await metric(a.adminUrl, connected('revocation'))) === 0 ? true : undefined,
  );

  // Acknowledged while Redis is down: queued on disk, enforced by A at once.
  const r1 = await revokeVia(a.adminUrl, { jti: decodeJwt(onB).jti });
  const r2 = await revokeVia(a.adminUrl, { jti: decodeJwt(onA).jti });
  assert.equal(r1.status, 201);
  assert.equal(r2.status, 201);
  assert.equal((await callWith(a.url, onA)).code, 'token-revoked');
  assert.equal(await metric(a.adminUrl, 'portaria_revocation_queue_entries'), 2);
  const queue = await readFile(a.config.revocation.queueFile, 'utf8');
  assert.equal(queue.split('\n').filter(Boolean).length, 2);

  // Once the list is older than maxSyncLagSeconds (1 s): safe requests admitted, unsafe
  // refused with 503 (the defaults); known revocations still refused with 401.
  await waitFor(
    'A stale',
    async () => ((await callWith(a.url, good, 'POST')).status === 503 ? true : undefined),
    3000,
  );
  const refused = await fetch(`${a.url}/v1/orders/1`, {
    method: 'POST',
    headers: { authorization: `Bearer ${good}` },
  });
  assert.equal(refused.status, 503);
  assert.equal(
    ((await refused.json()) as { tipo: string }).tipo,
    'urn:portaria:problem:service-unavailable',
  );
  assert.equal((await callWith(a.url, good, 'GET')).status, 200);
  assert.equal((await callWith(a.url, onA, 'GET')).code, 'token-revoked');
  assert.equal((await callWith(b.url, onB, 'GET')).status, 200, 'B cannot know it yet');
  const ready = await readyz(a.adminUrl);
  assert.equal(ready.status, 200, 'a Redis outage does not take the replica out');
  assert.match(String(ready.body.degraded), /revocation list stale.*2 revocation\(s\) queued/);
  const down = await scrape(a.adminUrl);
  assert.ok(((await metric(a.adminUrl, 'portaria_revocation_sync_lag_seconds')) ?? 0) > 1);
  assert.match(down, /portaria_revocation_stale_refusals_total\{method="unsafe"\} [1-9]/);
  assert.match(down, /portaria_revocation_stale_refusals_total\{method="safe"\} 0/);

  await redis.start();
  // Replayed after the restart, then enforced by B.
  await refusedAsRevoked(b.url, onB, 8000);
  await waitFor(
    'A synchronised again',
    async () =>
      (await metric(a.adminUrl, 'portaria_revocation_queue_entries')) === 0 &&
      (await callWith(a.url, good, 'POST')).status === 200
        ? true
        : undefined,
    3000,
  );
  assert.equal(await readFile(a.config.revocation.queueFile, 'utf8'), '');
  assert.equal(await metric(a.adminUrl, connected('revocation')), 1);
  assert.ok(((await metric(a.adminUrl, 'portaria_revocation_sync_lag_seconds')) ?? 99) < 1);
  assert.ok(
    ((await metric(a.adminUrl, 'portaria_revocation_syncs_total{outcome="ok"}')) ?? 0) >= 2,
  );
  assert.deepEqual((await readyz(a.adminUrl)).body, { status: 'ready' });
  assert.equal(await metric(b.adminUrl, 'portaria_revocation_entries'), 2, 'B learnt both');

  await load.stop();
  assert.ok(load.seen.length > 20, `traffic ran (${load.seen.length} requests)`);
  for (const { method, status, code } of load.seen) {
    const allowed = method === 'GET' ? [200] : [200, 503];
    assert.ok(allowed.includes(status), `${method} → ${status} ${code}`);
  }
  assert.ok(
    load.seen.some((s) => s.status === 503),
    'unsafe requests were refused while stale',
  );
  // 5xx answers are logged at error (the stale refusals); nothing else is.
  for (const line of a.logs.filter((l) => l.includes('"level":"error"'))) {
    assert.match(line, /"portaria.reason":"revocation-stale"/);
  }
});

test('refuse mode: while Redis is down the admin API answers 503 and nothing is acknowledged', async (t) => {
  const redis = await startRedis(t);
  const a = await withAdmin(t, redis, { whileRedisDown: 'refuse' });
  const token = await a.token();
  await redis.stop();
  await waitFor('A sees Redis down', async () =>
    (await metric(a.adminUrl, connected('revocation'))) === 0 ? true : undefined,
  );
  const res = await revokeVia(a.adminUrl, { jti: decodeJwt(token).jti });
  assert.equal(res.status, 503);
  assert.equal(res.body.tipo, 'urn:portaria:problem:service-unavailable');
  assert.equal((await callWith(a.url, token)).status, 200, 'nothing revoked');
  assert.equal(await metric(a.adminUrl, 'portaria_revocation_queue_entries'), 0);
  assert.equal(await metric(a.adminUrl, 'portaria_revocations_total{kind="token"}'), undefined);

  await redis.start();
  await waitFor(
    'admin API accepts again',
    async () =>
      (await revokeVia(a.adminUrl, { jti: decodeJwt(token).jti })).status === 201
        ? true
        : undefined,
    8000,
    100,
  );
  assert.equal((await callWith(a.url, token)).code, 'token-revoked');
});

test('whenStale: refuse for safe and admit for unsafe is honoured as configured', async (t) => {
  const redis = await startRedis(t);
  const a = await redisGateway(t, redis, { whenStale: { safe: 'refuse', unsafe: 'admit' } });
  const token = await a.token();
  await redis.stop();
  await waitFor(
    'stale',
    async () => ((await callWith(a.url, token, 'GET')).status === 503 ? true : undefined),
    3000,
  );
  assert.equal((await callWith(a.url, token, 'HEAD')).status, 503);
  assert.equal((await callWith(a.url, token, 'DELETE')).status, 200);
  assert.equal((await callWith(a.url, 'not-a-token', 'GET')).status, 401, 'authentication first');
  const line = a.logs.find((l) => l.includes('"portaria.reason":"revocation-stale"'));
  assert.ok(line, 'the access log names the reason');
});

test('a gateway restarted with a non-empty queue replays it once Redis is reachable', async (t) => {
  const redis = await startRedis(t);
  const a = await withAdmin(t, redis);
  const token = await a.token();
  await redis.stop();
  await waitFor('A sees Redis down', async () =>
    (await metric(a.adminUrl, connected('revocation'))) === 0 ? true : undefined,
  );
  assert.equal((await revokeVia(a.adminUrl, { jti: decodeJwt(token).jti })).status, 201);
  const started = performance.now();
  await a.app.shutdown();
  assert.ok(performance.now() - started < 3000, 'shutdown does not hang on a dead Redis');
  const warning = parsedLogs(a.logs).find(
    (l) => l.msg === 'shutting down with revocations still queued for Redis',
  );
  assert.equal(warning?.level, 'error');
  assert.equal(warning?.queued, 1);
  assert.equal(warning?.queueFile, a.config.revocation.queueFile);

  await redis.start();
  const again = await createApp({
    config: a.config,
    logDestination: new Writable({ write: (_c, _e, done) => done() }),
  });
  const { publicUrl, adminUrl } = await again.listen();
  t.after(() => again.shutdown());
  assert.equal((await callWith(publicUrl, token)).code, 'token-revoked');
  await waitFor(
    'queue replayed',
    async () =>
      (await metric(adminUrl, 'portaria_revocation_queue_entries')) === 0 ? true : undefined,
    5000,
  );
  // A replica that starts now learns it from Redis.
  const probe = await RedisRevocationStore.open({
    redis: a.config.redis,
    clock: systemClock,
    maxSyncLagSeconds: 1,
    whileRedisDown: 'refuse',
    queueFile: `${a.config.revocation.queueFile}.probe`,
  });
  t.after(() => probe.close());
  assert.equal(
    probe.isRevoked({ tokenId: decodeJwt(token).jti as string, clientId: 'x', issuedAt: 0 }),
    true,
  );
});

test('whenStale applies to WebSocket upgrades too: a stale list refuses the handshake with 503', async (t) => {
  const redis = await startRedis(t);
  const a = await redisGateway(t, redis, { whenStale: { safe: 'refuse', unsafe: 'refuse' } });
  let upgrades = 0;
  a.upstream.server.on('upgrade', (_req, socket) => {
    upgrades++;
    socket.destroy();
  });
  const token = await a.token();
  const handshake = (bearer: string) =>
    rawRequest(
      a.url,
      'GET /v1/socket HTTP/1.1\r\nHost: gateway.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
        'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n' +
        `Authorization: Bearer ${bearer}\r\n\r\n`,
    );
  await redis.stop();
  await waitFor(
    'stale',
    async () => ((await callWith(a.url, token, 'GET')).status === 503 ? true : undefined),
    3000,
  );
  const refused = onlyResponse(await handshake(token));
  assert.equal(refused.status, 503);
  assert.equal(rawProblemOf(refused).tipo, 'urn:portaria:problem:service-unavailable');
  const unauthenticated = onlyResponse(await handshake('not-a-token'));
  assert.equal(unauthenticated.status, 401, 'authentication first');
  assert.equal(upgrades, 0, 'nothing reached the upstream');
});

test('a request refused because the list is stale is logged and counted under its route; an unknown path stays unmatched', async (t) => {
  const redis = await startRedis(t);
  const a = await startGateway(t, {
    settings: (u) => ({
      upstream: { default: null },
      routes: [{ id: 'orders', prefix: '/v1/orders', upstream: u }],
      revocation: { store: 'redis', maxSyncLagSeconds: 1 },
      redis: { url: redis.url, connectTimeoutMs: 500, commandTimeoutMs: 500 },
    }),
  });
  const token = await a.token();
  const post = (path: string) =>
    fetch(`${a.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  await redis.stop();
  await waitFor(
    'stale',
    async () => ((await callWith(a.url, token, 'POST')).status === 503 ? true : undefined),
    3000,
  );
  const known = await post('/v1/orders/1');
  assert.equal(known.status, 503);
  await known.arrayBuffer();
  // The stale list is refused before the route's absence is told: a token revoked
  // elsewhere, not yet known here, learns nothing of the route table.
  const unknown = await post('/v1/nothing/here');
  assert.equal(unknown.status, 503);
  await unknown.arrayBuffer();

  const lineOf = (res: Response) =>
    waitFor('the access line', () =>
      parsedLogs(a.logs).find((l) => l['portaria.request_id'] === res.headers.get('x-request-id')),
    );
  const knownLine = await lineOf(known);
  assert.deepEqual(
    [knownLine['http.route'], knownLine['portaria.reason']],
    ['orders', 'revocation-stale'],
  );
  const unknownLine = await lineOf(unknown);
  assert.deepEqual(
    [unknownLine['http.route'], unknownLine['portaria.reason']],
    ['unmatched', 'revocation-stale'],
  );
  const text = await scrape(a.adminUrl);
  assert.ok(
    (sample(
      text,
      'portaria_http_requests_total{route="orders",method="unsafe",status_class="5xx"}',
    ) ?? 0) >= 2,
    'the refusals on orders are counted under orders',
  );
  assert.equal(
    sample(
      text,
      'portaria_http_requests_total{route="unmatched",method="unsafe",status_class="5xx"}',
    ),
    1,
    'only the unknown path is unmatched',
  );
});
