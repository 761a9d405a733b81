/**
 * Redis losing the revocation list while every connection stays up, against a real
 * `redis-server`: the sets evicted under `volatile-lru` (the marker, without a TTL,
 * stays), a set recreated by a write right after its eviction, and a FLUSHALL followed
 * by a new replica that rewrites the marker before the old one's next heartbeat. In each
 * case the replica that knows the entries must write them back, so that a replica
 * starting afterwards enforces them. Loopback only; every wait is a bounded poll.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { epochSeconds, ManualClock, systemClock } from '../../src/lib/clock.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redisClient.js';
import {
  revocationKeys,
  WRITE_SCRIPT,
  writeArguments,
} from '../../src/revocation/redisRevocationLayout.js';
import {
  RedisRevocationStore,
  type RedisRevocationStoreOptions,
} from '../../src/revocation/redisRevocationStore.js';
import {
  encodeRevocationRecord,
  type RevocationRecord,
} from '../../src/revocation/revocationLogRecord.js';
import { PREFIX, redisConfig } from '../helpers/redisFixtures.js';
import { type RedisServer, startRedis } from '../helpers/redisServer.js';
import { waitFor } from '../helpers/wait.js';

const KEYS = revocationKeys(PREFIX);
const CHANGED = 'revocation list in redis changed: synchronising in full';
const WRITTEN_BACK = 'revocation entries missing from redis: written back';

interface Logged {
  level: string;
  event: string;
  detail: Record<string, unknown>;
}

async function openStore(
  t: TestContext,
  server: RedisServer,
  options: Partial<RedisRevocationStoreOptions> = {},
): Promise<{ store: RedisRevocationStore; logged: Logged[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-redis-eviction-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const logged: Logged[] = [];
  const store = await RedisRevocationStore.open({
    redis: redisConfig(server),
    clock: systemClock,
    maxSyncLagSeconds: 1,
    whileRedisDown: 'queue',
    queueFile: join(dir, 'pending.log'),
    log: (level, event, detail) => logged.push({ level, event, detail }),
    ...options,
  });
  t.after(() => store.close());
  assert.equal(store.state().loaded, true);
  return { store, logged };
}

function rawClient(t: TestContext, server: RedisServer): RedisClient {
  const client = createRedisClient(redisConfig(server), { role: 'test', offlineQueue: true });
  client.on('error', () => {});
  t.after(() => client.disconnect());
  return client;
}

const soon = () => epochSeconds(systemClock) + 3600;
const byJti = (tokenId: string) => ({ tokenId, clientId: 'someone', issuedAt: 0 });
const byClient = (clientId: string, issuedAt: number) => ({ tokenId: 'any', clientId, issuedAt });

/** Polls until Redis holds the jti and the client's cut-off again. */
async function heldByRedis(raw: RedisClient, jti: string, clientId: string, timeoutMs = 5000) {
  await waitFor(
    `${jti} and ${clientId} in redis`,
    async () =>
      (await raw.zscore(KEYS.tokens, jti)) !== null &&
      (await raw.zscore(KEYS.clients, clientId)) !== null &&
      (await raw.zscore(KEYS.cutoffs, clientId)) !== null
        ? true
        : undefined,
    timeoutMs,
  );
}

test('the sets evicted under volatile-lru while the marker stays are written back within a few heartbeats, and a new store enforces them', async (t) => {
  const redis = await startRedis(t);
  const raw = rawClient(t, redis);
  const { store: a, logged } = await openStore(t, redis);
  const cut = epochSeconds(systemClock);
  await a.revokeToken('stolen-jti', soon());
  await a.revokeClient('leaky-client', cut, soon());

  // ElastiCache's default policy. Fill memory with keys WITHOUT a TTL: the only keys
  // volatile-lru may evict are the revocation sets (they carry TTLs; the marker does
  // not), and once they are gone further writes fail with OOM.
  await raw.config('SET', 'maxmemory-policy', 'volatile-lru');
  const used = Number(/used_memory:(\d+)/.exec(await raw.info('memory'))?.[1]);
  await raw.config('SET', 'maxmemory', String(used + 256 * 1024));
  const fill = raw.pipeline();
  for (let i = 0; i < 5000; i++) fill.set(`portaria:filler:${i}`, 'x'.repeat(200));
  await fill.exec();
  await waitFor('the sets evicted', async () =>
    (await raw.exists(KEYS.tokens, KEYS.clients, KEYS.cutoffs)) === 0 ? true : undefined,
  );
  assert.ok(Number(/evicted_keys:(\d+)/.exec(await raw.info('stats'))?.[1]) >= 3);
  // The pressure goes away (no write back can succeed while Redis refuses every write).
  await raw.config('SET', 'maxmemory', '0');

  await heldByRedis(raw, 'stolen-jti', 'leaky-client');
  assert.ok(logged.some((l) => l.event === CHANGED && l.detail.reason === 'set-missing'));
  assert.ok(logged.some((l) => l.event === WRITTEN_BACK && l.level === 'warn'));
  assert.equal(a.isRevoked(byJti('stolen-jti')), true, 'enforced throughout');

  const { store: b } = await openStore(t, redis);
  assert.equal(b.isRevoked(byJti('stolen-jti')), true);
  assert.equal(b.isRevoked(byClient('leaky-client', cut - 10)), true);
  assert.equal(b.isRevoked(byClient('leaky-client', cut + 10)), false, 'issued after the cut');
  await waitFor('A synchronised and fresh', () =>
    a.state().synced && !a.isStale() ? true : undefined,
  );
});

test('a write that recreates an evicted set does not hide the loss from the stores that knew its entries', async (t) => {
  const redis = await startRedis(t);
  const raw = rawClient(t, redis);
  const { store: a } = await openStore(t, redis);
  const { store: b } = await openStore(t, redis);
  await a.revokeToken('evicted-jti', soon());
  await a.revokeClient('evicted-client', 1000, soon());
  await waitFor('B learnt both', () => (b.size() === 2 ? true : undefined));

  // Evicted, and recreated at once (atomically, so no heartbeat can run in between) by a
  // replica that never knew the evicted entries: both sets exist again, the marker is
  // the one A and B synchronised against, and no heartbeat alone can tell.
  const fresh: RevocationRecord[] = [
    { kind: 'token', tokenId: 'new-jti', expiresAt: soon() },
    { kind: 'client', clientId: 'new-client', issuedBefore: 2000, expiresAt: soon() },
  ];
  const tx = raw.multi().del(KEYS.tokens, KEYS.clients, KEYS.cutoffs);
  for (const record of fresh) {
    const message = encodeRevocationRecord(record).slice(0, -1);
    tx.eval(
      WRITE_SCRIPT,
      4,
      KEYS.tokens,
      KEYS.clients,
      KEYS.cutoffs,
      KEYS.marker,
      ...writeArguments(record, KEYS.channel, message),
    );
  }
  await tx.exec();

  await heldByRedis(raw, 'evicted-jti', 'evicted-client');
  const { store: c } = await openStore(t, redis);
  assert.equal(c.isRevoked(byJti('evicted-jti')), true);
  assert.equal(c.isRevoked(byClient('evicted-client', 1000)), true);
  assert.equal(c.isRevoked(byJti('new-jti')), true);
  assert.equal(c.isRevoked(byClient('new-client', 2000)), true);
});

/**
 * FLUSHALL, then a new store opens before A's next heartbeat and writes a new marker. With
 * no queue, A still finds its sets missing; with a queue of its own (revocations made
 * during an earlier outage), B's sync recreates both sets too, and only the generation
 * tells A that the list it synchronised against is gone.
 */
const flushRaces = [
  { name: 'a new store with nothing to write', queued: [] as RevocationRecord[] },
  {
    name: 'a new store whose queue recreates both sets',
    queued: [
      { kind: 'token', tokenId: 'queued-jti', expiresAt: soon() },
      { kind: 'client', clientId: 'queued-client', issuedBefore: 10, expiresAt: soon() },
    ] as RevocationRecord[],
  },
];

for (const { name, queued } of flushRaces) {
  test(`after FLUSHALL, ${name} rewriting the marker before the old store’s next heartbeat does not hide the loss`, async (t) => {
    const redis = await startRedis(t);
    const raw = rawClient(t, redis);
    const heartbeatMs = 1000;
    const { store: a, logged } = await openStore(t, redis, { heartbeatMs, maxSyncLagSeconds: 5 });
    const cut = epochSeconds(systemClock);
    await a.revokeToken('before-flush', soon());
    await a.revokeClient('acme', cut, soon());
    const dir = await mkdtemp(join(tmpdir(), 'portaria-redis-eviction-queue-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const queueFile = join(dir, 'pending.log');
    await writeFile(queueFile, queued.map((r) => encodeRevocationRecord(r)).join(''));
    // Just after a heartbeat of A, so its next one is heartbeatMs away (creating the
    // sets reset the generation: a marker present means A synchronised against it since).
    await waitFor(
      'a heartbeat of A that confirmed the list',
      async () =>
        (a.state().syncAgeSeconds ?? 1) < 0.05 && (await raw.get(KEYS.marker)) !== null
          ? true
          : undefined,
      4 * heartbeatMs,
      5,
    );
    const beat = performance.now();

    await raw.flushall(); // or a Redis restarted empty behind a proxy keeping the connections
    const { store: b } = await openStore(t, redis, { queueFile }); // e.g. a rollout's new pod
    assert.notEqual(await raw.get(KEYS.marker), null, 'B wrote a marker');
    assert.ok(performance.now() - beat < heartbeatMs, 'before A’s next heartbeat');
    assert.equal(b.isRevoked(byJti('before-flush')), false, 'B found Redis empty');
    const recreated = await raw.exists(KEYS.tokens, KEYS.clients, KEYS.cutoffs);
    assert.equal(recreated, queued.length === 0 ? 0 : 3);

    await heldByRedis(raw, 'before-flush', 'acme', 3 * heartbeatMs);
    const noticed = logged.find((l) => l.event === CHANGED && l.detail.reason !== 'marker-missing');
    assert.equal(noticed?.detail.reason, queued.length === 0 ? 'set-missing' : 'marker-replaced');
    assert.ok(logged.some((l) => l.event === WRITTEN_BACK && l.detail.written === 2));
    await waitFor('B learnt the entries written back', () =>
      b.isRevoked(byJti('before-flush')) && b.isRevoked(byClient('acme', cut)) ? true : undefined,
    );
    const { store: c } = await openStore(t, redis);
    assert.equal(c.isRevoked(byJti('before-flush')), true);
    assert.equal(c.isRevoked(byClient('acme', cut)), true);
    assert.equal(c.size(), 2 + queued.length);
  });
}

test('a list Redis keeps whole costs no full sync: heartbeats and writes into existing sets leave it alone', async (t) => {
  const redis = await startRedis(t);
  const { store: a, logged } = await openStore(t, redis, { heartbeatMs: 50 });
  await a.revokeToken('first-jti', soon());
  await a.revokeClient('first-client', 1000, soon());
  // Creating a set resets the generation (harmless here): at most one full sync per set.
  const syncs = () => logged.filter((l) => l.event === 'revocation list synchronised').length;
  const raw = rawClient(t, redis);
  await waitFor('synchronised against a marker', async () =>
    a.state().synced && (await raw.get(KEYS.marker)) !== null ? true : undefined,
  );
  await new Promise((resolve) => setTimeout(resolve, 150)); // three heartbeats
  const settled = syncs();
  assert.ok(settled <= 3, `${settled} full syncs`);
  for (const l of logged.filter((l) => l.event === CHANGED)) {
    assert.equal(l.detail.reason, 'marker-missing');
  }

  await a.revokeToken('second-jti', soon());
  await a.revokeClient('second-client', 1000, soon());
  await new Promise((resolve) => setTimeout(resolve, 300)); // six heartbeats
  assert.equal(syncs(), settled);
  assert.equal(a.isStale(), false);
  assert.equal(
    logged.some((l) => l.level === 'warn'),
    false,
    JSON.stringify(logged.filter((l) => l.level === 'warn')),
  );
});

/**
 * A set Redis expired, or a replica swept, because the clocks disagree is no loss: the
 * replica expects a set only while its entries are live by its clock and by Redis's.
 */
const skews = [
  { name: 'behind', offsetMs: -120_000, advanceMs: 0 },
  { name: 'ahead of', offsetMs: 120_000, advanceMs: 61_000 },
];

for (const { name, offsetMs, advanceMs } of skews) {
  test(`a replica clock 2 min ${name} Redis’s does not take a set gone by expiry for a loss`, async (t) => {
    const redis = await startRedis(t);
    const raw = rawClient(t, redis);
    const clock = new ManualClock(Date.now() + offsetMs);
    const { store: a, logged } = await openStore(t, redis, { clock, heartbeatMs: 50 });
    // Behind: already expired by Redis's clock (its set expires at once). Ahead: expired
    // by ours a minute later, and swept from Redis though Redis's clock says live.
    await a.revokeToken('skewed', epochSeconds(clock) + 60);
    clock.advance(advanceMs);
    await a.sweep();
    assert.equal(await raw.exists(KEYS.tokens), 0);
    const syncs = () => logged.filter((l) => l.event === 'revocation list synchronised').length;
    await waitFor('synchronised against a marker', async () =>
      a.state().synced && (await raw.get(KEYS.marker)) !== null ? true : undefined,
    );
    await new Promise((resolve) => setTimeout(resolve, 150)); // three heartbeats
    const settled = syncs();
    await new Promise((resolve) => setTimeout(resolve, 300)); // six more
    assert.equal(syncs(), settled, 'no full sync on every heartbeat');
    assert.equal(logged.filter((l) => l.detail.reason === 'set-missing').length, 0);
  });
}
