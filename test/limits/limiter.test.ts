/**
 * The generic limiter through its interface: bucket families (independent, bounded,
 * refilled by the injected clock), the back-off and known pairs per settings, answered
 * by `LocalLimiter` as values and by `RedisLimiter` against a real `redis-server` under
 * the same key names as ever, with each family's label on a fallback.
 */
import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import { ManualClock } from '../../src/lib/clock.js';
import { createLimiter } from '../../src/limits/createLimiter.js';
import {
  bucketFamily,
  type Limiter,
  type LimiterSettings,
  UNKNOWN_PAIR,
} from '../../src/limits/limiter.js';
import { LocalLimiter } from '../../src/limits/localLimiter.js';
import { NO_LIMITS } from '../../src/limits/noLimits.js';
import { createRedisClient } from '../../src/redis/redisClient.js';
import { NOBODY_LISTENS } from '../helpers/process.js';
import { redisConfig } from '../helpers/redisFixtures.js';
import { startRedis } from '../helpers/redisServer.js';

const SETTINGS: LimiterSettings = { maxTrackedKeys: 100, backoff: null, knownPairs: false };
const BACKOFF = {
  freeFailures: 0,
  baseDelayMs: 60_000,
  maxDelayMs: 60_000,
  forgetAfterSeconds: 900,
};
const PER_SECOND = { ratePerSecond: 1, burst: 2 };
const QUOTA = bucketFamily('quota', PER_SECOND, 'quota');
const OTHER = bucketFamily('other', PER_SECOND, 'other');

describe('bucket families', () => {
  test('a name that could meet another namespace is refused; a family is frozen', () => {
    for (const name of ['', 'backoff', 'known', 'a:b', 'Client', 'a b']) {
      assert.throws(() => bucketFamily(name, PER_SECOND, 'x'), /invalid bucket family name/, name);
    }
    const configured = { enabled: true, ...PER_SECOND };
    const family = bucketFamily('client-known', configured, 'client');
    assert.deepEqual(family, { name: 'client-known', rule: PER_SECOND, label: 'client' });
    assert.ok(Object.isFrozen(family) && Object.isFrozen(family.rule));
  });
});

describe('LocalLimiter', () => {
  test('answers values, not promises: a caller awaits nothing', () => {
    const limiter = new LocalLimiter({ ...SETTINGS, backoff: BACKOFF }, new ManualClock());
    assert.equal(limiter.take(QUOTA, 'k'), 0);
    assert.equal(typeof limiter.take(QUOTA, 'k'), 'number');
    assert.equal(limiter.recordFailure('s', '192.0.2.1'), undefined);
    assert.equal(limiter.recordSuccess('s', '192.0.2.1'), undefined);
    const check = limiter.checkBackoff('s', '192.0.2.1');
    assert.equal('then' in check, false);
    assert.deepEqual(check, { waitMs: 0, known: true });
  });

  test('a family refills with the clock, and its key is refused until a token is back', () => {
    const clock = new ManualClock();
    const limiter = new LocalLimiter(SETTINGS, clock);
    assert.deepEqual(
      [1, 2, 3].map(() => limiter.take(QUOTA, 'partner')),
      [0, 0, 1000],
    );
    clock.advance(999);
    assert.equal(limiter.take(QUOTA, 'partner'), 1);
    clock.advance(1);
    assert.equal(limiter.take(QUOTA, 'partner'), 0);
    assert.equal(limiter.take(QUOTA, 'partner'), 1000);
    assert.equal(limiter.take(QUOTA, 'another'), 0, 'per key');
  });

  test('families are independent: one key in two families is two buckets; one name is one', () => {
    const limiter = new LocalLimiter(SETTINGS, new ManualClock());
    limiter.take(QUOTA, 'k');
    limiter.take(QUOTA, 'k');
    assert.equal(limiter.take(QUOTA, 'k'), 1000);
    assert.equal(limiter.take(OTHER, 'k'), 0, 'another family is full');
    const sameName = bucketFamily('quota', { ratePerSecond: 1, burst: 2 }, 'quota');
    assert.equal(limiter.take(sameName, 'k'), 1000, 'a family is its name (as in Redis)');
  });

  test('each family holds at most maxTrackedKeys keys; another family pushes none of them out', () => {
    const limiter = new LocalLimiter({ ...SETTINGS, maxTrackedKeys: 3 }, new ManualClock());
    const drain = (key: string) => {
      limiter.take(QUOTA, key);
      limiter.take(QUOTA, key);
    };
    drain('a');
    for (let i = 0; i < 10; i++) limiter.take(OTHER, `o${i}`);
    assert.equal(limiter.take(QUOTA, 'a'), 1000, 'still tracked');
    drain('b');
    drain('c');
    drain('d');
    assert.equal(limiter.take(QUOTA, 'a'), 0, 'the least recently seen was forgotten: full');
    assert.equal(limiter.take(QUOTA, 'd'), 1000);
  });

  test('without a back-off or known pairs nothing is recorded; known pairs alone wait for nothing', () => {
    const none = new LocalLimiter(SETTINGS, new ManualClock());
    none.recordSuccess('s', '192.0.2.1');
    none.recordFailure('s', '192.0.2.1');
    assert.equal(none.checkBackoff('s', '192.0.2.1'), UNKNOWN_PAIR);
    const known = new LocalLimiter({ ...SETTINGS, knownPairs: true }, new ManualClock());
    known.recordFailure('s', '192.0.2.1');
    assert.deepEqual(known.checkBackoff('s', '192.0.2.1'), { waitMs: 0, known: false });
    known.recordSuccess('s', '192.0.2.1');
    assert.deepEqual(known.checkBackoff('s', '192.0.2.1'), { waitMs: 0, known: true });
  });

  test('a failure makes the pair wait; a success forgets it and makes it known', () => {
    const clock = new ManualClock();
    const limiter = new LocalLimiter({ ...SETTINGS, backoff: BACKOFF }, clock);
    limiter.recordFailure('s', '192.0.2.1');
    assert.deepEqual(limiter.checkBackoff('s', '192.0.2.1'), { waitMs: 60_000, known: false });
    assert.equal(limiter.checkBackoff('s', '192.0.2.2'), UNKNOWN_PAIR, 'per address');
    assert.equal(limiter.checkBackoff('t', '192.0.2.1'), UNKNOWN_PAIR, 'per subject');
    clock.advance(1000);
    assert.equal(limiter.checkBackoff('s', '192.0.2.1').waitMs, 59_000);
    limiter.recordSuccess('s', '192.0.2.1');
    assert.deepEqual(limiter.checkBackoff('s', '192.0.2.1'), { waitMs: 0, known: true });
  });
});

describe('NO_LIMITS', () => {
  test('never waits and knows no pair', () => {
    NO_LIMITS.recordFailure('s', '192.0.2.1');
    assert.equal(NO_LIMITS.take(QUOTA, 'k'), 0);
    assert.equal(NO_LIMITS.checkBackoff('s', '192.0.2.1'), UNKNOWN_PAIR);
  });
});

async function redisLimiter(
  t: TestContext,
  url: string,
  clock: ManualClock,
  fallbacks: string[] = [],
): Promise<Limiter> {
  const limiter = await createLimiter({
    settings: { ...SETTINGS, backoff: BACKOFF },
    store: 'redis',
    redis: redisConfig(url, { keyPrefix: 'families:' }),
    clock,
    hooks: { fallback: (check) => fallbacks.push(check), stateChanged: () => {} },
  });
  t.after(() => limiter.close());
  return limiter;
}

describe('RedisLimiter', () => {
  test('answers as the local limiter, each family under <prefix>limits:<name>:<key>', async (t) => {
    const server = await startRedis(t);
    const clock = new ManualClock();
    const fallbacks: string[] = [];
    const shared = await redisLimiter(t, server.url, clock, fallbacks);
    const local = new LocalLimiter({ ...SETTINGS, backoff: BACKOFF }, new ManualClock());
    const run = async (limiter: Limiter) => [
      await limiter.take(QUOTA, 'k'),
      await limiter.take(QUOTA, 'k'),
      await limiter.take(QUOTA, 'k'),
      await limiter.take(OTHER, 'k'),
    ];
    assert.deepEqual(await run(local), [0, 0, 1000, 0]);
    assert.deepEqual(await run(shared), [0, 0, 1000, 0]);
    const redis = createRedisClient(redisConfig(server), { role: 'test' });
    await redis.connect();
    t.after(() => redis.disconnect());
    assert.deepEqual((await redis.keys('*')).sort(), [
      'families:limits:other:k',
      'families:limits:quota:k',
    ]);
    assert.deepEqual(fallbacks, []);
  });

  test('with Redis unusable each call is answered locally and counted under its label', async (t) => {
    const fallbacks: string[] = [];
    const limiter = await redisLimiter(
      t,
      `redis${NOBODY_LISTENS.slice(4)}`,
      new ManualClock(),
      fallbacks,
    );
    assert.equal(await limiter.take(QUOTA, 'k'), 0);
    assert.equal(await limiter.take(QUOTA, 'k'), 0);
    assert.equal(await limiter.take(QUOTA, 'k'), 1000, 'the local fallback counts');
    assert.equal(await limiter.take(OTHER, 'k'), 0);
    await limiter.recordFailure('s', '192.0.2.1');
    assert.equal((await limiter.checkBackoff('s', '192.0.2.1')).waitMs, 60_000);
    assert.deepEqual(fallbacks, ['quota', 'quota', 'quota', 'other', 'record', 'backoff']);
  });
});
