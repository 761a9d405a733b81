/**
 * The Redis revocation store against a real `redis-server` (test/helpers/redisServer.ts):
 * propagation by pub/sub, TTLs, the full load, resynchronisation after Redis restarts,
 * the durable queue, the refuse mode and staleness. Loopback only; every wait is a
 * bounded poll.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { type Clock, epochSeconds, ManualClock, systemClock } from '../../src/lib/clock.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redisClient.js';
import { revocationKeys } from '../../src/revocation/redisRevocationLayout.js';
import {
  RedisRevocationStore,
  type RedisRevocationStoreOptions,
  RevocationNotStored,
} from '../../src/revocation/redisRevocationStore.js';
import {
  decodeRevocationLine,
  encodeRevocationRecord,
} from '../../src/revocation/revocationLogRecord.js';
import { PREFIX, redisConfig } from '../helpers/redisFixtures.js';
import { type RedisServer, startRedis } from '../helpers/redisServer.js';
import { NFC_ID, NFD_ID, UNICODE_CLIENT_IDS } from '../helpers/unicodeIds.js';
import { waitFor } from '../helpers/wait.js';

const HOUR = 3600;
const KEYS = revocationKeys(PREFIX);

interface Logged {
  level: string;
  event: string;
  detail: Record<string, unknown>;
}

async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-redis-store-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function openStore(
  t: TestContext,
  server: RedisServer,
  options: Partial<RedisRevocationStoreOptions> & { dir?: string } = {},
): Promise<{ store: RedisRevocationStore; logged: Logged[]; queueFile: string }> {
  const dir = options.dir ?? (await tempDir(t));
  const logged: Logged[] = [];
  const queueFile = options.queueFile ?? join(dir, 'data', 'pending.log');
  const store = await RedisRevocationStore.open({
    redis: redisConfig(server),
    clock: systemClock,
    maxSyncLagSeconds: 1,
    whileRedisDown: 'queue',
    queueFile,
    log: (level, event, detail) => logged.push({ level, event, detail }),
    ...options,
  });
  t.after(() => store.close());
  return { store, logged, queueFile };
}

function rawClient(t: TestContext, server: RedisServer): RedisClient {
  const client = createRedisClient(redisConfig(server), { role: 'test', offlineQueue: true });
  client.on('error', () => {});
  t.after(() => client.disconnect());
  return client;
}

function token(tokenId: string, clientId = 'acme', issuedAt = 0) {
  return { tokenId, clientId, issuedAt };
}

function soon(clock: Clock = systemClock): number {
  return epochSeconds(clock) + HOUR;
}

/** Polls until the store answers `isRevoked` true for `t`; returns the time it took (ms). */
test('client revocations by Unicode id travel through Redis byte for byte; NFC and NFD are two entries', async (t) => {
  const redis = await startRedis(t);
  const { store: a } = await openStore(t, redis);
  const { store: b } = await openStore(t, redis);
  const ids = UNICODE_CLIENT_IDS.map(([, id]) => id);
  for (const id of ids) await a.revokeClient(id, 1000, soon());
  await a.revokeClient(NFC_ID, 1000, soon());
  await a.revokeClient(NFD_ID, 500, soon());
  await seenRevoked(b, token('j', NFD_ID, 500));
  const raw = rawClient(t, redis);
  const members = (await raw.zrangeBuffer(KEYS.cutoffs, '0', '-1', 'WITHSCORES')).map(String);
  const stored = new Map<string, string>();
  for (let i = 0; i < members.length; i += 2)
    stored.set(members[i] as string, members[i + 1] as string);
  assert.deepEqual(
    [...stored].sort(),
    [...ids.map((id) => [id, '1000']), [NFC_ID, '1000'], [NFD_ID, '500']].sort(),
    'members are the ids UTF-8 encoded, unnormalised',
  );

  // A store loading the list in full (ZSCAN) holds the same entries as the one told by pub/sub.
  const { store: c } = await openStore(t, redis);
  for (const store of [b, c]) {
    for (const id of [...ids, NFC_ID]) assert.equal(store.isRevoked(token('j', id, 1000)), true);
    assert.equal(store.isRevoked(token('j', NFD_ID, 501)), false, 'NFD has its own cut-off');
    assert.equal(store.isRevoked(token('j', NFC_ID, 501)), true, 'NFC keeps its cut-off');
  }
  const sorted = (s: RedisRevocationStore) =>
    s
      .entries()
      .clients.map((e) => [e.clientId, e.issuedBefore])
      .sort();
  assert.deepEqual(sorted(c), sorted(a));
  assert.deepEqual(sorted(b), sorted(a));
});

async function seenRevoked(
  store: RedisRevocationStore,
  t: ReturnType<typeof token>,
  timeoutMs = 2000,
): Promise<number> {
  const started = performance.now();
  await waitFor(`${t.tokenId} revoked`, () => (store.isRevoked(t) ? true : undefined), timeoutMs);
  return performance.now() - started;
}

test('a revocation by jti or by client cut-off reaches a second store through pub/sub within 1 s', async (t) => {
  const redis = await startRedis(t);
  const { store: a } = await openStore(t, redis);
  const { store: b } = await openStore(t, redis);
  assert.equal(a.state().loaded, true);
  assert.equal(b.state().loaded, true);

  await a.revokeToken('jti-1', soon());
  assert.equal(a.isRevoked(token('jti-1')), true, 'enforced where it was made at once');
  assert.ok((await seenRevoked(b, token('jti-1'))) < 1000);

  const cut = epochSeconds(systemClock);
  await b.revokeClient('acme', cut, soon());
  assert.ok((await seenRevoked(a, token('jti-2', 'acme', cut))) < 1000);
  assert.equal(a.isRevoked(token('jti-3', 'acme', cut + 1)), false, 'issued after the cut-off');
  assert.equal(a.isRevoked(token('jti-3', 'other', cut)), false, 'another client');
  assert.deepEqual(a.entries(), b.entries());
});

test('the sets carry a TTL at their latest entry expiry, and a sweep removes expired entries', async (t) => {
  const redis = await startRedis(t);
  const raw = rawClient(t, redis);
  const clock = new ManualClock(Date.now());
  const { store } = await openStore(t, redis, { clock });
  const now = epochSeconds(clock);
  await store.revokeToken('short', now + 10);
  await store.revokeToken('long', now + HOUR);
  await store.revokeClient('acme', now, now + 2 * HOUR);

  assert.equal(await raw.expiretime(KEYS.tokens), now + HOUR);
  assert.equal(await raw.expiretime(KEYS.clients), now + 2 * HOUR);
  assert.equal(await raw.expiretime(KEYS.cutoffs), now + 2 * HOUR);
  assert.equal(Number(await raw.zscore(KEYS.tokens, 'long')), now + HOUR);
  assert.equal(Number(await raw.zscore(KEYS.cutoffs, 'acme')), now);

  // An earlier expiry or cut-off never weakens an entry (ZADD GT).
  await store.revokeToken('long', now + 20);
  assert.equal(Number(await raw.zscore(KEYS.tokens, 'long')), now + HOUR);

  clock.advance(11_000);
  await store.sweep();
  assert.deepEqual(await raw.zrange(KEYS.tokens, '0', '-1'), ['long']);
  assert.equal(store.isRevoked(token('short', 'other')), false);
  clock.advance(2 * HOUR * 1000);
  await store.sweep();
  assert.equal(await raw.exists(KEYS.tokens, KEYS.clients, KEYS.cutoffs), 0);
  assert.equal(store.size(), 0);
});

test('a store opening on a Redis that holds revocations loads them all before it is ready', async (t) => {
  const redis = await startRedis(t);
  const raw = rawClient(t, redis);
  const exp = soon();
  // More than one ZSCAN page, written straight into Redis (no message was ever published).
  const pipeline = raw.pipeline();
  for (let i = 0; i < 2500; i++) pipeline.zadd(KEYS.tokens, exp, `jti-${i}`);
  for (let i = 0; i < 1200; i++) {
    pipeline.zadd(KEYS.clients, exp, `client-${i}`);
    pipeline.zadd(KEYS.cutoffs, 1000 + i, `client-${i}`);
  }
  pipeline.zadd(KEYS.tokens, 1, 'expired-long-ago');
  await pipeline.exec();

  const { store, logged } = await openStore(t, redis);
  assert.equal(store.state().loaded, true);
  assert.equal(store.size(), 3700);
  assert.equal(store.isRevoked(token('jti-2499', 'x')), true);
  assert.equal(store.isRevoked(token('y', 'client-1199', 2199)), true);
  assert.equal(store.isRevoked(token('y', 'client-1199', 2200)), false);
  assert.equal(store.isRevoked(token('expired-long-ago', 'x')), false);
  assert.ok(logged.some((l) => l.event === 'revocation list synchronised'));
});

test('after Redis restarts the list is loaded again in full, and what Redis lost is written back', async (t) => {
  const redis = await startRedis(t);
  const raw = rawClient(t, redis);
  const { store: a } = await openStore(t, redis);
  const { store: b, logged } = await openStore(t, redis);
  await a.revokeToken('before-restart', soon());
  await seenRevoked(b, token('before-restart'));

  await redis.stop();
  await waitFor('both stores see Redis down', () =>
    !a.state().connected.revocation && !b.state().synced ? true : undefined,
  );
  await redis.start();
  // Written straight into the (empty, restarted) Redis without a message: only a full
  // load can bring it to the stores.
  await raw.zadd(KEYS.tokens, String(soon()), 'while-disconnected');
  await seenRevoked(a, token('while-disconnected'), 8000);
  await seenRevoked(b, token('while-disconnected'), 8000);
  await waitFor('b synchronised', () => (b.state().synced ? true : undefined), 8000);
  assert.ok(logged.some((l) => l.event === 'redis connection lost'));
  assert.ok(logged.some((l) => l.event === 'redis connected'));

  // Redis kept nothing across the restart (no persistence): the stores wrote back what
  // they knew, so a replica starting now still learns it.
  await waitFor('written back', async () =>
    (await raw.zscore(KEYS.tokens, 'before-restart')) !== null ? true : undefined,
  );
  const { store: c } = await openStore(t, redis);
  assert.equal(c.isRevoked(token('before-restart')), true);
  assert.equal(c.isRevoked(token('while-disconnected')), true);
});

test('queue mode: a revocation made while Redis is down is fsynced to the queue, enforced at once and replayed after reconnecting', async (t) => {
  const redis = await startRedis(t);
  const { store: a, queueFile } = await openStore(t, redis);
  const { store: b } = await openStore(t, redis);
  await redis.stop();
  await waitFor('a sees Redis down', () => (!a.state().connected.revocation ? true : undefined));

  await a.revokeToken('while-down', soon());
  assert.equal(a.isRevoked(token('while-down')), true);
  assert.equal(a.state().queued, 1);
  const lines = (await readFile(queueFile, 'utf8')).split('\n').filter(Boolean);
  assert.equal(lines.length, 1);
  assert.equal(decodeRevocationLine(lines[0] as string)?.kind, 'token');
  assert.equal(b.isRevoked(token('while-down')), false);

  await redis.start();
  await seenRevoked(b, token('while-down'), 8000);
  await waitFor('queue drained', () => (a.state().queued === 0 ? true : undefined), 8000);
  assert.equal(await readFile(queueFile, 'utf8'), '');
});

test('queue mode: a queue left by an earlier run is replayed at the next start', async (t) => {
  const redis = await startRedis(t);
  const dir = await tempDir(t);
  const queueFile = join(dir, 'pending.log');
  const exp = soon();
  // More records than one write batch.
  let queued = '';
  for (let i = 0; i < 1200; i++) {
    queued += encodeRevocationRecord({ kind: 'token', tokenId: `queued-${i}`, expiresAt: exp });
  }
  queued += encodeRevocationRecord({
    kind: 'client',
    clientId: 'acme',
    issuedBefore: 50,
    expiresAt: exp,
  });
  await writeFile(queueFile, queued);
  const { store: b } = await openStore(t, redis);
  const { store: a } = await openStore(t, redis, { queueFile });
  assert.equal(a.isRevoked(token('queued-1', 'x')), true);
  await seenRevoked(b, token('queued-1199', 'x'));
  await seenRevoked(b, token('any', 'acme', 50));
  assert.equal(b.size(), 1201);
  await waitFor('queue drained', () => (a.state().queued === 0 ? true : undefined));
  assert.equal(await readFile(queueFile, 'utf8'), '');
  const { store: c } = await openStore(t, redis);
  assert.equal(c.size(), 1201, 'all in Redis');
});

test('queue mode: a store that starts while Redis is down is not loaded, queues, and catches up once Redis is back', async (t) => {
  const redis = await startRedis(t);
  await redis.stop();
  const { store, queueFile, logged } = await openStore(t, redis, { startWaitMs: 200 });
  assert.equal(store.state().loaded, false);
  assert.equal(store.isStale(), true, 'never synchronised: stale');
  await store.revokeToken('early', soon());
  assert.equal(store.isRevoked(token('early')), true);
  assert.ok(logged.some((l) => l.event === 'redis connection failed'));
  await store.close();

  await redis.start();
  const { store: again } = await openStore(t, redis, { queueFile });
  assert.equal(again.state().loaded, true);
  assert.equal(again.isRevoked(token('early')), true);
  const { store: other } = await openStore(t, redis);
  assert.equal(other.isRevoked(token('early')), true);
});

test('refuse mode: a revocation while Redis is down is rejected and not applied', async (t) => {
  const redis = await startRedis(t);
  const { store, queueFile } = await openStore(t, redis, { whileRedisDown: 'refuse' });
  await redis.stop();
  await waitFor('Redis down', () => (!store.state().connected.revocation ? true : undefined));
  await assert.rejects(store.revokeToken('refused', soon()), RevocationNotStored);
  assert.equal(store.isRevoked(token('refused')), false);
  assert.equal(store.state().queued, 0);
  await assert.rejects(readFile(queueFile), { code: 'ENOENT' });

  await redis.start();
  await waitFor('synced', () => (store.state().synced ? true : undefined), 8000);
  await store.revokeToken('accepted', soon());
  assert.equal(store.isRevoked(token('accepted')), true);
});

test('Redis losing the list with the connections up (FLUSHALL) is noticed and written back', async (t) => {
  const redis = await startRedis(t);
  const raw = rawClient(t, redis);
  const { store: a, logged } = await openStore(t, redis);
  const { store: b, logged: loggedB } = await openStore(t, redis);
  await a.revokeToken('before-flush', soon());
  await a.revokeClient('acme', 1000, soon());
  await seenRevoked(b, token('before-flush'));

  await raw.flushall();
  await waitFor(
    'written back',
    async () => ((await raw.zscore(KEYS.tokens, 'before-flush')) !== null ? true : undefined),
    5000,
  );
  assert.notEqual(await raw.zscore(KEYS.cutoffs, 'acme'), null);
  // Each store notices (a set it holds entries for is gone, or the marker is gone or new
  // once the other noticed first); whichever writes back first warns.
  const changed = (l: Logged) =>
    l.event === 'revocation list in redis changed: synchronising in full';
  await waitFor('both noticed', () =>
    logged.some(changed) && loggedB.some(changed) ? true : undefined,
  );
  const warned = [...logged, ...loggedB].filter(
    (l) => l.event === 'revocation entries missing from redis: written back',
  );
  assert.ok(warned.length >= 1);
  assert.ok(warned.every((l) => l.level === 'warn'));
  // A replica starting after the flush learns every entry.
  const { store: c } = await openStore(t, redis);
  assert.equal(c.isRevoked(token('before-flush')), true);
  assert.equal(c.isRevoked(token('other', 'acme', 999)), true);
});

test('a wall clock stepping back makes the list stale until the next synchronisation', async (t) => {
  const redis = await startRedis(t);
  const clock = new ManualClock(Date.now());
  const { store } = await openStore(t, redis, { clock, maxSyncLagSeconds: 1 });
  assert.equal(store.isStale(), false);
  await redis.stop();
  await waitFor('Redis down', () => (store.state().connected.revocation ? undefined : true));
  clock.set(clock.now() - 600_000); // NTP steps the clock 10 min back
  assert.equal(store.isStale(), true, 'its age cannot be told');
  // Without Redis no synchronisation succeeds: stale, not "fresh" for the next 10 min.
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal(store.isStale(), true);
  assert.equal(store.state().stale, true);
  await redis.start();
  await waitFor('fresh again', () => (store.isStale() ? undefined : true), 8000);
});

test('the list turns stale once no synchronisation succeeded for maxSyncLagSeconds, and fresh again after Redis returns', async (t) => {
  const redis = await startRedis(t);
  const { store } = await openStore(t, redis, { maxSyncLagSeconds: 1 });
  assert.equal(store.isStale(), false);
  // Heartbeats keep it fresh well past the lag.
  await new Promise((resolve) => setTimeout(resolve, 1300));
  assert.equal(store.isStale(), false);
  assert.ok((store.state().syncAgeSeconds ?? 99) < 1);

  await redis.stop();
  const down = performance.now();
  await waitFor('stale', () => (store.isStale() ? true : undefined), 3000);
  const took = performance.now() - down;
  assert.ok(took > 500 && took < 2000, `stale after ${Math.round(took)} ms`);
  assert.equal(store.state().stale, true);
  assert.ok(store.isRevoked(token('x')) === false, 'lookups keep working while stale');

  await redis.start();
  await waitFor('fresh again', () => (store.isStale() ? undefined : true), 8000);
});

test('close returns promptly while Redis is down and leaves nothing running', async (t) => {
  const redis = await startRedis(t);
  const { store } = await openStore(t, redis);
  await redis.stop();
  const started = performance.now();
  await store.close();
  assert.ok(performance.now() - started < 1000);
  await assert.rejects(store.revokeToken('late', soon()), RevocationNotStored);
});

test('a revocation Redis already holds as strict is stored once and announced once', async (t) => {
  const redis = await startRedis(t);
  const listener = rawClient(t, redis);
  const messages: string[] = [];
  listener.on('message', (_channel: string, message: string) => messages.push(message));
  await listener.subscribe(KEYS.channel);
  const { store } = await openStore(t, redis);
  const exp = soon();
  await store.revokeToken('once', exp);
  await store.revokeToken('once', exp);
  await store.revokeToken('once', exp - 10);
  await store.revokeToken('once', exp + 10);
  await waitFor('two messages', () => (messages.length >= 2 ? true : undefined));
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.deepEqual(
    messages.map((m) => decodeRevocationLine(m)),
    [
      { kind: 'token', tokenId: 'once', expiresAt: exp },
      { kind: 'token', tokenId: 'once', expiresAt: exp + 10 },
    ],
  );
});
