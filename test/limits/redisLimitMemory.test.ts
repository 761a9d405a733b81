/**
 * What one source address can make the shared (Redis) token limits hold is bounded,
 * whatever client ids it names: its back-off entries live in one hash per address, with
 * at most 16 clients tracked on their own and the rest sharing one overflow entry. A real
 * `redis-server` per test (a missing binary fails the test).
 */
import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import type { TokenLimitsConfig } from '../../src/config/types.js';
import { ManualClock } from '../../src/lib/clock.js';
import { createLimiter } from '../../src/limits/createLimiter.js';
import {
  TokenEndpointLimits,
  type TokenLimitLabel,
  tokenLimiterSettings,
  tokenLimitFamilies,
} from '../../src/limits/tokenEndpointLimits.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redisClient.js';
import { localTokenLimits } from '../helpers/localTokenLimits.js';
import { REDIS_DEFAULTS } from '../helpers/redisFixtures.js';
import { startRedis } from '../helpers/redisServer.js';

const PREFIX = 'memory-test:';
const ADDRESS = '2001:db8:1:2::/64';
/** 16 clients on their own + the overflow entry. */
const MAX_FIELDS = 17;

const CONFIG: TokenLimitsConfig = {
  store: 'redis',
  maxTrackedKeys: 100_000,
  perAddress: { enabled: false, ratePerSecond: 5, burst: 20 },
  perClient: { enabled: false, ratePerSecond: 10, burst: 50 },
  failedSecretBackoff: {
    enabled: true,
    freeFailures: 3,
    baseDelayMs: 1000,
    maxDelayMs: 300_000,
    forgetAfterSeconds: 900,
  },
};

async function sharedLimiter(
  t: TestContext,
  url: string,
  clock: ManualClock,
  config: TokenLimitsConfig = CONFIG,
): Promise<{ limiter: TokenEndpointLimits; redis: RedisClient; fallbacks: string[] }> {
  const redisConfig = {
    ...REDIS_DEFAULTS,
    url,
    keyPrefix: PREFIX,
    connectTimeoutMs: 1000,
    commandTimeoutMs: 1000,
  };
  const fallbacks: string[] = [];
  const limiter = new TokenEndpointLimits(
    await createLimiter<TokenLimitLabel>({
      settings: tokenLimiterSettings(config),
      store: config.store,
      redis: redisConfig,
      clock,
      hooks: { fallback: (check) => fallbacks.push(check), stateChanged: () => {} },
    }),
    tokenLimitFamilies(config),
  );
  assert.ok(limiter !== null);
  t.after(() => limiter.close());
  const redis = createRedisClient(redisConfig, { role: 'test' });
  await redis.connect();
  t.after(() => redis.disconnect());
  return { limiter, redis, fallbacks };
}

/** A 128-character client id (the longest kept as is), distinct per `i`. */
const longId = (i: number) => `guess-${i}-`.padEnd(128, 'x');

describe('shared token limits: memory per source address', () => {
  test('wrong secrets for 300 distinct client ids from one address leave one bounded hash', async (t) => {
    const server = await startRedis(t);
    const clock = new ManualClock();
    const { limiter, redis, fallbacks } = await sharedLimiter(t, server.url, clock);
    for (let i = 0; i < 300; i++) {
      await limiter.recordFailure(longId(i), ADDRESS);
      clock.advance(10);
    }
    const key = `${PREFIX}limits:backoff:${ADDRESS}`;
    assert.deepEqual(await redis.keys(`${PREFIX}*`), [key]);
    assert.equal(await redis.dbsize(), 1);
    const fields = await redis.hlen(key);
    assert.ok(fields <= MAX_FIELDS, `${fields} fields`);
    const bytes = Number(await redis.call('MEMORY', 'USAGE', key));
    assert.ok(bytes <= 2048, `${bytes} bytes for one address`);
    const ttl = await redis.pttl(key);
    assert.ok(ttl > 0 && ttl <= 900_000, `ttl ${ttl}`);
    assert.deepEqual(fallbacks, [], 'every check went to Redis');
  });

  test('many addresses: one key each, whatever the number of client ids', async (t) => {
    const server = await startRedis(t);
    const clock = new ManualClock();
    const { limiter, redis } = await sharedLimiter(t, server.url, clock);
    for (let a = 0; a < 5; a++) {
      for (let i = 0; i < 40; i++) await limiter.recordFailure(`c-${a}-${i}`, `192.0.2.${a}`);
    }
    assert.equal(await redis.dbsize(), 5);
    for (let a = 0; a < 5; a++) {
      assert.ok((await redis.hlen(`${PREFIX}limits:backoff:192.0.2.${a}`)) <= MAX_FIELDS);
    }
  });

  test('the shared store answers exactly as the local one (overflow, known pairs, expiry)', async (t) => {
    const config: TokenLimitsConfig = {
      ...CONFIG,
      perClient: { enabled: true, ratePerSecond: 1, burst: 2 },
    };
    const server = await startRedis(t);
    const sharedClock = new ManualClock();
    const {
      limiter: shared,
      redis,
      fallbacks,
    } = await sharedLimiter(t, server.url, sharedClock, config);
    const localClock = new ManualClock();
    const local = localTokenLimits({ ...config, store: 'local' }, localClock);
    const run = async (limiter: TokenEndpointLimits, clock: ManualClock): Promise<string[]> => {
      const seen: string[] = [];
      const check = async (client: string, address = ADDRESS) => {
        const { waitMs, known } = await limiter.checkPair(client, address);
        seen.push(`${client}@${address}: ${waitMs}${known ? ' known' : ''}`);
      };
      for (let i = 0; i < 16; i++) await limiter.recordFailure(`c${i}`, ADDRESS);
      for (const client of ['x1', 'x2', 'x3', 'x4']) await limiter.recordFailure(client, ADDRESS);
      await check('x9');
      await check('c0');
      await check('x9', '192.0.2.1');
      await limiter.recordSuccess('acme', ADDRESS);
      await check('acme');
      for (let i = 0; i < 4; i++) await limiter.recordFailure('acme', ADDRESS);
      await check('acme');
      clock.advance(1000);
      await check('x9');
      await limiter.recordFailure('x5', ADDRESS);
      await check('x9');
      clock.advance(902_000);
      await check('x9');
      await limiter.recordFailure('fresh', ADDRESS);
      await check('fresh');
      for (const known of [false, false, false, true, true, true]) {
        seen.push(`take ${known}: ${await limiter.takeClient('acme', known)}`);
      }
      await limiter.recordSuccess('acme', ADDRESS);
      await check('acme');
      return seen;
    };
    const expected = [
      `x9@${ADDRESS}: 1000`,
      `c0@${ADDRESS}: 0`,
      'x9@192.0.2.1: 0',
      `acme@${ADDRESS}: 0 known`,
      `acme@${ADDRESS}: 1000 known`,
      `x9@${ADDRESS}: 0`,
      `x9@${ADDRESS}: 2000`,
      `x9@${ADDRESS}: 0`,
      `fresh@${ADDRESS}: 0`,
      'take false: 0',
      'take false: 0',
      'take false: 1000',
      'take true: 0',
      'take true: 0',
      'take true: 1000',
      `acme@${ADDRESS}: 0 known`,
    ];
    assert.deepEqual(await run(local, localClock), expected);
    assert.deepEqual(await run(shared, sharedClock), expected);
    assert.deepEqual(fallbacks, []);
    const key = `${PREFIX}limits:backoff:${ADDRESS}`;
    assert.deepEqual(await redis.hkeys(key), ['fresh'], 'dead fields were dropped');
    assert.equal(await redis.exists(`${PREFIX}limits:known:${ADDRESS} acme`), 1);
  });
});
