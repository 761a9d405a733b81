/**
 * `tokenLimits.store: redis`: two gateways share their token limits through one real
 * `redis-server` (started per test on a free loopback port; a missing binary fails the
 * test). Also: keys under the prefix with TTLs, scripts surviving SCRIPT FLUSH, and the
 * local fallback while Redis is down (at start or mid-traffic) with its metric and logs.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { describe, test } from 'node:test';
import { ManualClock } from '../../src/lib/clock.js';
import { KNOWN_PAIR_MS } from '../../src/limits/limiter.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redisClient.js';
import { CLIENT_ID, type Gateway, startGateway } from '../helpers/fixture.js';
import { metric } from '../helpers/metrics.js';
import { REDIS_DEFAULTS } from '../helpers/redisFixtures.js';
import { startRedis } from '../helpers/redisServer.js';
import { parsedLogs, waitFor } from '../helpers/wait.js';
import { attempt } from './tokenRequests.js';

const WRONG = 'not-the-secret';
const PREFIX = 'limits-test:';

interface SharedLimits {
  perAddress?: Record<string, unknown>;
  perClient?: Record<string, unknown>;
  failedSecretBackoff?: Record<string, unknown>;
}

async function sharedGateway(
  t: TestContext,
  redisUrl: string,
  clock: ManualClock,
  limits: SharedLimits,
): Promise<Gateway> {
  return startGateway(t, {
    clock,
    settings: () => ({
      redis: { url: redisUrl, keyPrefix: PREFIX, commandTimeoutMs: 500, connectTimeoutMs: 500 },
      tokenLimits: { store: 'redis', ...limits },
    }),
  });
}

async function redisClient(t: TestContext, url: string): Promise<RedisClient> {
  const client = createRedisClient(
    { ...REDIS_DEFAULTS, url, keyPrefix: PREFIX, connectTimeoutMs: 1000, commandTimeoutMs: 1000 },
    { role: 'test' },
  );
  await client.connect();
  t.after(() => client.disconnect());
  return client;
}

function fallbacks(gw: Gateway, check: string): Promise<number | undefined> {
  return metric(gw.adminUrl, `portaria_token_limit_redis_fallbacks_total{check="${check}"}`);
}

function connected(gw: Gateway): Promise<number | undefined> {
  return metric(gw.adminUrl, 'portaria_redis_connected{role="limits"}');
}

function logged(gw: Gateway, message: string): boolean {
  return parsedLogs(gw.logs).some((line) => line.msg === message);
}

const DOWN = 'token limits: Redis unusable, each replica limits on its own';
const UP = 'token limits: Redis usable again, limits are shared';

describe('token limits shared through Redis', () => {
  test('two gateways share the per-address bucket, the per-client bucket and the back-off', async (t) => {
    const redis = await startRedis(t);
    const clock = new ManualClock();
    const limits = {
      perAddress: { ratePerSecond: 1, burst: 3 },
      perClient: { ratePerSecond: 1, burst: 4 },
      failedSecretBackoff: { freeFailures: 1, baseDelayMs: 5000, maxDelayMs: 60_000 },
    };
    const [one, two] = [
      await sharedGateway(t, redis.url, clock, limits),
      await sharedGateway(t, redis.url, clock, limits),
    ];
    // Per address: 3 from 127.0.0.2 in total, whichever gateway serves them.
    assert.equal(await attempt(one.url, '127.0.0.2'), '200');
    assert.equal(await attempt(two.url, '127.0.0.2'), '200');
    assert.equal(await attempt(one.url, '127.0.0.2'), '200');
    assert.equal(await attempt(two.url, '127.0.0.2'), '429 after 1');
    // Per client: 127.0.0.2's first token came from acme's bucket for addresses without a
    // token lately (burst 4), its next two from the bucket of acme's known pairs (burst 4).
    // Both are shared: three more addresses drain the first, whichever gateway serves them.
    assert.equal(await attempt(two.url, '127.0.0.3'), '200');
    assert.equal(await attempt(one.url, '127.0.0.7'), '200');
    assert.equal(await attempt(two.url, '127.0.0.8'), '200');
    assert.equal(await attempt(one.url, '127.0.0.4'), '429 after 1');
    // Those three are known now: two more tokens drain the second bucket.
    assert.equal(await attempt(one.url, '127.0.0.3'), '200');
    assert.equal(await attempt(two.url, '127.0.0.7'), '200');
    assert.equal(await attempt(one.url, '127.0.0.8'), '429 after 1');
    // Back-off: two failures through one gateway block the pair on the other.
    assert.equal(await attempt(one.url, '127.0.0.5', 'reader', WRONG), '401');
    assert.equal(await attempt(one.url, '127.0.0.5', 'reader', WRONG), '401');
    assert.equal(
      await attempt(two.url, '127.0.0.5', 'reader', 'reader-secret-0123456789abcdefghijklmnopq'),
      '429 after 5',
    );
    assert.equal(
      await attempt(two.url, '127.0.0.6', 'reader', 'reader-secret-0123456789abcdefghijklmnopq'),
      '200',
      'the same client from another address is not blocked',
    );
    clock.advance(5000);
    assert.equal(
      await attempt(two.url, '127.0.0.5', 'reader', 'reader-secret-0123456789abcdefghijklmnopq'),
      '200',
    );
    // The success reset the pair for both gateways: one free failure again.
    assert.equal(await attempt(one.url, '127.0.0.5', 'reader', WRONG), '401');
    assert.equal(
      await attempt(two.url, '127.0.0.5', 'reader', 'reader-secret-0123456789abcdefghijklmnopq'),
      '200',
    );
    for (const gw of [one, two]) {
      for (const check of ['address', 'client', 'backoff', 'record']) {
        assert.equal(await fallbacks(gw, check), undefined, `no ${check} fallback`);
      }
    }
  });

  test('every key lives under redis.keyPrefix and expires', async (t) => {
    const redis = await startRedis(t);
    const clock = new ManualClock();
    const gw = await sharedGateway(t, redis.url, clock, {
      perAddress: { ratePerSecond: 2, burst: 10 },
      perClient: { ratePerSecond: 1, burst: 50 },
      failedSecretBackoff: { freeFailures: 0, baseDelayMs: 1000, forgetAfterSeconds: 120 },
    });
    assert.equal(await attempt(gw.url, '127.0.0.2', CLIENT_ID, WRONG), '401');
    assert.equal(await attempt(gw.url, '127.0.0.3', 'x'.repeat(3000), WRONG), '401');
    // Two tokens from 127.0.0.4: the pair is known, the second comes from the known bucket.
    assert.equal(await attempt(gw.url, '127.0.0.4'), '200');
    assert.equal(await attempt(gw.url, '127.0.0.4'), '200');
    const client = await redisClient(t, redis.url);
    const keys = (await client.keys('*')).sort();
    assert.deepEqual(keys.slice(0, 5), [
      `${PREFIX}limits:address:127.0.0.2`,
      `${PREFIX}limits:address:127.0.0.3`,
      `${PREFIX}limits:address:127.0.0.4`,
      `${PREFIX}limits:backoff:127.0.0.2`,
      `${PREFIX}limits:backoff:127.0.0.3`,
    ]);
    assert.equal(keys.length, 9);
    assert.deepEqual(await client.hkeys(`${PREFIX}limits:backoff:127.0.0.2`), ['acme']);
    for (const key of ['client:acme', 'client-known:acme', 'known:127.0.0.4 acme']) {
      assert.ok(keys.includes(`${PREFIX}limits:${key}`), key);
    }
    assert.ok(
      keys.every((key) => key.startsWith(PREFIX) && key.length < 128),
      'long client ids are hashed',
    );
    for (const key of keys) {
      const ttl = await client.pttl(key);
      const limit = key.includes(':address:')
        ? 1000 // two tokens to refill at 2/s
        : key.includes(':client')
          ? 2000
          : key.includes(':known:')
            ? KNOWN_PAIR_MS
            : 120_000;
      assert.ok(ttl > 0 && ttl <= limit, `${key}: ttl ${ttl} ≤ ${limit}`);
    }
  });

  test('scripts flushed from Redis are sent again (NOSCRIPT), without a fallback', async (t) => {
    const redis = await startRedis(t);
    const clock = new ManualClock();
    const gw = await sharedGateway(t, redis.url, clock, {
      perAddress: { ratePerSecond: 1, burst: 2 },
    });
    assert.equal(await attempt(gw.url, '127.0.0.2'), '200');
    const client = await redisClient(t, redis.url);
    await client.script('FLUSH');
    assert.equal(await attempt(gw.url, '127.0.0.2'), '200');
    assert.equal(await attempt(gw.url, '127.0.0.2'), '429 after 1');
    assert.equal(await fallbacks(gw, 'address'), undefined);
  });

  test('Redis stopped mid-traffic: local limits answer at once and are counted; restarted: shared again', async (t) => {
    const redis = await startRedis(t);
    const clock = new ManualClock();
    const limits = {
      perAddress: { ratePerSecond: 1, burst: 2 },
      perClient: { ratePerSecond: 1, burst: 1000 },
      failedSecretBackoff: { freeFailures: 0, baseDelayMs: 30_000 },
    };
    const one = await sharedGateway(t, redis.url, clock, limits);
    const two = await sharedGateway(t, redis.url, clock, limits);
    assert.equal(await attempt(one.url, '127.0.0.2'), '200');
    assert.equal(await attempt(two.url, '127.0.0.2'), '200');
    assert.equal(await attempt(one.url, '127.0.0.2'), '429 after 1');
    assert.equal(await connected(one), 1, 'portaria_redis_connected{role="limits"}');

    await redis.stop();
    // Each gateway now limits on its own, starting from full local buckets.
    const started = performance.now();
    assert.equal(await attempt(one.url, '127.0.0.2'), '200');
    assert.equal(await attempt(one.url, '127.0.0.2'), '200');
    assert.equal(await attempt(one.url, '127.0.0.2'), '429 after 1');
    assert.equal(await attempt(two.url, '127.0.0.2'), '200');
    assert.equal(await attempt(one.url, '127.0.0.3', CLIENT_ID, WRONG), '401');
    assert.equal(await attempt(one.url, '127.0.0.3'), '429 after 30', 'back-off kept locally');
    assert.ok(performance.now() - started < 2000, 'no request waited for Redis');
    assert.ok(((await fallbacks(one, 'address')) ?? 0) >= 3);
    assert.ok(((await fallbacks(one, 'client')) ?? 0) >= 2);
    assert.ok(((await fallbacks(one, 'backoff')) ?? 0) >= 2);
    assert.ok(((await fallbacks(one, 'record')) ?? 0) >= 1);
    assert.ok(logged(one, DOWN));
    assert.equal(parsedLogs(one.logs).filter((l) => l.msg === DOWN).length, 1, 'logged once');
    assert.equal(await connected(one), 0, 'the limits connection is reported down');

    await redis.start();
    // Requests from fresh addresses until a gateway is back on Redis (ioredis reconnects
    // within its 2 s back-off cap).
    let n = 10;
    for (const gw of [one, two]) {
      await waitFor(
        'the limiter back on Redis',
        async () => {
          await attempt(gw.url, `127.0.1.${n++}`);
          return logged(gw, UP) ? true : undefined;
        },
        8000,
        100,
      );
    }
    // Shared again: a fresh Redis, so 127.0.0.4 has 2 tokens across both gateways.
    const before = await fallbacks(one, 'address');
    assert.equal(await attempt(one.url, '127.0.0.4'), '200');
    assert.equal(await attempt(two.url, '127.0.0.4'), '200');
    assert.equal(await attempt(one.url, '127.0.0.4'), '429 after 1');
    assert.equal(await fallbacks(one, 'address'), before);
    assert.equal(await connected(one), 1);
  });

  test('a hung Redis (connection open, no answers) costs one command timeout, not one per check', async (t) => {
    const redis = await startRedis(t);
    const limits = {
      perAddress: { ratePerSecond: 100, burst: 100 },
      perClient: { ratePerSecond: 100, burst: 100 },
      failedSecretBackoff: { freeFailures: 10 },
    };
    const gw = await sharedGateway(t, redis.url, new ManualClock(), limits);
    assert.equal(await attempt(gw.url, '127.0.0.2'), '200');
    redis.pause();
    // Four Redis checks per token request (address, back-off, client, record): only the
    // first waits for the 500 ms command timeout; the rest are answered locally at once.
    const first = performance.now();
    assert.equal(await attempt(gw.url, '127.0.0.2'), '200');
    const firstMs = performance.now() - first;
    assert.ok(firstMs < 1200, `the first request took ${firstMs} ms`);
    const next = performance.now();
    for (let i = 0; i < 5; i++) assert.equal(await attempt(gw.url, '127.0.0.2'), '200');
    const nextMs = performance.now() - next;
    assert.ok(nextMs < 400, `five more requests took ${nextMs} ms`);
    assert.ok(logged(gw, DOWN));

    redis.resume();
    // After the pause one check tries Redis again, and the limits are shared once more.
    await waitFor(
      'the limiter back on Redis',
      async () => {
        await attempt(gw.url, '127.0.0.3');
        return logged(gw, UP) ? true : undefined;
      },
      8000,
      100,
    );
  });

  test('Redis down at start: the gateway starts, limits locally, and shuts down cleanly', async (t) => {
    const redis = await startRedis(t);
    await redis.stop();
    const clock = new ManualClock();
    const gw = await sharedGateway(t, redis.url, clock, {
      perAddress: { ratePerSecond: 1, burst: 1 },
    });
    assert.ok(logged(gw, DOWN));
    assert.equal(await attempt(gw.url, '127.0.0.2'), '200');
    assert.equal(await attempt(gw.url, '127.0.0.2'), '429 after 1');
    assert.equal(await fallbacks(gw, 'address'), 2);
    await gw.app.shutdown();
  });
});
