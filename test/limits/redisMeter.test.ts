/**
 * `RedisMeter` against a real `redis-server` (started per test on a free loopback port):
 * two meters on two connections share exact counters (of 50 parallel checks exactly the
 * 20 with room are allowed), readings match `LocalMeter`'s, windows roll over with the
 * injected clock, keys carry the hash tag and TTLs, scripts survive SCRIPT FLUSH, and a
 * Redis stopped or frozen mid-test answers `unavailable` (bounded by the command
 * timeout) until it is back. And `createMeter` with Redis down at start.
 */
import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import type { RedisConfig } from '../../src/config/types.js';
import { ManualClock } from '../../src/lib/clock.js';
import { createMeter } from '../../src/limits/createMeter.js';
import { LocalMeter } from '../../src/limits/localMeter.js';
import type { Meter } from '../../src/limits/meter.js';
import { type MeterReading, quotaPolicy, UNAVAILABLE } from '../../src/limits/quotaPolicy.js';
import { RedisMeter, WINDOW_KEY_MARGIN_MS } from '../../src/limits/redisMeter.js';
import { createRedisClient, type RedisClient } from '../../src/redis/redisClient.js';
import { NOBODY_LISTENS } from '../helpers/process.js';
import { redisConfig } from '../helpers/redisFixtures.js';
import { type RedisServer, startRedis } from '../helpers/redisServer.js';
import { waitFor } from '../helpers/wait.js';
import { startCluster } from '../redis/redisCluster.js';

const PREFIX = 'quota-test:';
const START = Date.parse('2026-05-04T10:00:00Z');
const DAILY = quotaPolicy('daily', null, { limit: 20, window: 'day', timeZone: 'UTC' });
const BURST = quotaPolicy('burst', { ratePerSecond: 0.01, burst: 20 }, null);
const BOTH = quotaPolicy(
  'both',
  { ratePerSecond: 1, burst: 2 },
  { limit: 3, window: 'minute', timeZone: 'UTC' },
);

function configOf(server: RedisServer): RedisConfig {
  return redisConfig(server, { keyPrefix: PREFIX });
}

async function connected(t: TestContext, config: RedisConfig): Promise<RedisClient> {
  const client = createRedisClient(config, { role: 'test' });
  client.on('error', () => {});
  await client.connect();
  t.after(() => client.disconnect());
  return client;
}

async function redisMeter(
  t: TestContext,
  server: RedisServer,
  clock: ManualClock,
  transitions: string[] = [],
): Promise<RedisMeter> {
  const config = configOf(server);
  const meter = new RedisMeter({
    redis: await connected(t, config),
    redisConfig: config,
    clock,
    hooks: { stateChanged: (state) => transitions.push(state) },
  });
  t.after(() => meter.close());
  return meter;
}

describe('RedisMeter', () => {
  for (const policy of [DAILY, BURST]) {
    test(`two meters on two connections: exactly 20 of 50 parallel checks allowed (${policy.name})`, async (t) => {
      const server = await startRedis(t);
      const clock = new ManualClock(START);
      const [one, two] = [await redisMeter(t, server, clock), await redisMeter(t, server, clock)];
      const readings = await Promise.all(
        Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? one : two).check(policy, 'acme')),
      );
      assert.equal(readings.filter((r) => r.allowed).length, 20);
      assert.equal(readings.filter((r) => r.unavailable).length, 0);
      const left = readings
        .map((r) => r.quota?.remaining ?? r.rate?.remaining)
        .sort((a, b) => Number(a) - Number(b));
      assert.deepEqual(
        left.slice(30),
        [...Array.from({ length: 20 }, (_, i) => i)],
        'each allowed one saw its own count',
      );
      const after = await two.peek(policy, 'acme');
      assert.deepEqual(
        [after.allowed, after.quota?.remaining ?? after.rate?.remaining],
        [false, 0],
      );
      assert.equal((await one.check(policy, 'globex')).allowed, true, 'another key has its own');
    });
  }

  test('readings are the local meter’s, step by step, through a window rollover', async (t) => {
    const server = await startRedis(t);
    const clock = new ManualClock(START + 30_000);
    const shared = await redisMeter(t, server, clock);
    const local = new LocalMeter(10, clock);
    const steps: [number, 'check' | 'peek'][] = [
      [0, 'check'],
      [0, 'check'],
      [0, 'check'],
      [250, 'peek'],
      [750, 'check'],
      [1000, 'check'],
      [0, 'check'],
      [29_000, 'check'],
      [0, 'peek'],
    ];
    for (const [advance, method] of steps) {
      clock.advance(advance);
      const mine = await shared[method](BOTH, 'acme');
      assert.deepEqual(
        mine,
        local[method](BOTH, 'acme'),
        `${method} at +${clock.now() - START} ms`,
      );
    }
    const last = await shared.peek(BOTH, 'acme');
    assert.deepEqual([last.allowed, last.quota?.remaining, last.rate?.remaining], [true, 2, 1]);
  });

  test('a refused check consumes nothing; the next window starts from zero', async (t) => {
    const server = await startRedis(t);
    const clock = new ManualClock(START);
    const meter = await redisMeter(t, server, clock);
    const client = await connected(t, configOf(server));
    const perMinute = quotaPolicy('per-minute', null, {
      limit: 2,
      window: 'minute',
      timeZone: 'UTC',
    });
    await meter.check(perMinute, 'acme');
    await meter.check(perMinute, 'acme');
    clock.advance(59_999);
    const refused = await meter.check(perMinute, 'acme');
    assert.deepEqual([refused.allowed, refused.retryAfterMs], [false, 1]);
    const windowKey = `${PREFIX}quota:{acme}:per-minute:w:${START}`;
    assert.equal(await client.get(windowKey), '2', 'the refusal was not counted');
    clock.advance(1);
    const next = await meter.check(perMinute, 'acme');
    assert.deepEqual([next.allowed, next.quota?.remaining], [true, 1]);
    assert.equal(await client.get(`${PREFIX}quota:{acme}:per-minute:w:${START + 60_000}`), '1');
  });

  test('keys carry the key as hash tag and TTLs: bucket until full, window until its end + margin', async (t) => {
    const server = await startRedis(t);
    const clock = new ManualClock(START + 40_000);
    const meter = await redisMeter(t, server, clock);
    const client = await connected(t, configOf(server));
    await meter.check(BOTH, 'acme route-7');
    assert.deepEqual((await client.keys(`${PREFIX}*`)).sort(), [
      `${PREFIX}quota:{acme route-7}:both:b`,
      `${PREFIX}quota:{acme route-7}:both:w:${START}`,
    ]);
    const bucketTtl = await client.pttl(`${PREFIX}quota:{acme route-7}:both:b`);
    assert.ok(bucketTtl > 0 && bucketTtl <= 1000, `bucket TTL ${bucketTtl}: one token to refill`);
    const windowTtl = await client.pttl(`${PREFIX}quota:{acme route-7}:both:w:${START}`);
    const untilEnd = 20_000 + WINDOW_KEY_MARGIN_MS;
    assert.ok(windowTtl > untilEnd - 5000 && windowTtl <= untilEnd, `window TTL ${windowTtl}`);
  });

  test('peek writes nothing; reset forgets one key of one policy', async (t) => {
    const server = await startRedis(t);
    const clock = new ManualClock(START);
    const meter = await redisMeter(t, server, clock);
    const client = await connected(t, configOf(server));
    const fresh = await meter.peek(BOTH, 'acme');
    assert.deepEqual([fresh.allowed, fresh.quota?.remaining, fresh.rate?.remaining], [true, 3, 2]);
    assert.deepEqual(await client.keys(`${PREFIX}*`), []);
    await meter.check(BOTH, 'acme');
    await meter.check(BOTH, 'globex');
    await meter.reset(BOTH, 'acme');
    const reset = await meter.peek(BOTH, 'acme');
    assert.deepEqual([reset.quota?.remaining, reset.rate?.remaining], [3, 2]);
    assert.equal((await meter.peek(BOTH, 'globex')).quota?.remaining, 2);
  });

  test('the script survives SCRIPT FLUSH (EVALSHA, then EVAL on NOSCRIPT)', async (t) => {
    const server = await startRedis(t);
    const clock = new ManualClock(START);
    const meter = await redisMeter(t, server, clock);
    const client = await connected(t, configOf(server));
    await meter.check(DAILY, 'acme');
    await client.script('FLUSH');
    assert.equal((await meter.check(DAILY, 'acme')).quota?.remaining, 18);
  });

  test('Redis stopped mid-test: unavailable readings, then shared counters again once it is back', {
    timeout: 30_000,
  }, async (t) => {
    const server = await startRedis(t);
    const clock = new ManualClock(START);
    const transitions: string[] = [];
    const meter = await redisMeter(t, server, clock, transitions);
    assert.equal((await meter.check(DAILY, 'acme')).allowed, true);
    await server.stop();
    await waitFor('the connection to notice', () => (meter.connected() ? undefined : true));
    const during = await Promise.all([meter.check(DAILY, 'acme'), meter.peek(DAILY, 'acme')]);
    assert.deepEqual(during, [UNAVAILABLE, UNAVAILABLE]);
    assert.deepEqual(transitions, ['down']);
    await server.start();
    const back = await waitFor(
      'Redis to answer again',
      async () => {
        const reading = await meter.check(DAILY, 'acme');
        return reading.unavailable ? undefined : reading;
      },
      15_000,
      100,
    );
    // A restarted redis-server without persistence starts empty.
    assert.deepEqual([back.allowed, back.quota?.remaining], [true, 19]);
    assert.deepEqual(transitions, ['down', 'up']);
  });

  test('Redis frozen (connection open, no answers): unavailable within the command timeout, never a hang', {
    timeout: 30_000,
  }, async (t) => {
    const server = await startRedis(t);
    t.after(() => server.resume());
    const clock = new ManualClock(START);
    const transitions: string[] = [];
    const meter = await redisMeter(t, server, clock, transitions);
    await meter.check(DAILY, 'acme');
    server.pause();
    const frozen: MeterReading[] = await Promise.all([
      meter.check(DAILY, 'acme'),
      meter.check(DAILY, 'globex'),
    ]);
    assert.deepEqual(frozen, [UNAVAILABLE, UNAVAILABLE]);
    // Within the retry pause no check even tries Redis.
    assert.deepEqual(await meter.check(DAILY, 'acme'), UNAVAILABLE);
    assert.deepEqual(transitions, ['down']);
    server.resume();
    const back = await waitFor(
      'Redis to answer again',
      async () => {
        const reading = await meter.check(DAILY, 'acme');
        return reading.unavailable ? undefined : reading;
      },
      15_000,
      100,
    );
    // Redis kept its counter. The frozen check of acme ran when Redis thawed: counted,
    // though answered unavailable (a timed-out command is not withdrawn).
    assert.equal(back.quota?.remaining, 17);
  });
});

describe('RedisMeter on a Redis Cluster', () => {
  test('one check’s two keys share a slot whatever the key: exact counts on three nodes', async (t) => {
    const cluster = await startCluster(t);
    const clock = new ManualClock(START);
    const config = redisConfig('', {
      url: null,
      keyPrefix: PREFIX,
      cluster: { nodes: cluster.seeds },
    });
    const meters = await Promise.all(
      [0, 1].map(async () => {
        const meter = new RedisMeter({
          redis: await connected(t, config),
          redisConfig: config,
          clock,
        });
        t.after(() => meter.close());
        return meter;
      }),
    );
    // Keys landing on every node, one with braces of its own (its tag is still one string).
    const keys = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'a{b}c route-1'];
    const readings = await Promise.all(
      keys.flatMap((key) =>
        Array.from({ length: 4 }, (_, i) => (meters[i % 2] as RedisMeter).check(BOTH, key)),
      ),
    );
    assert.equal(readings.filter((r) => r.unavailable).length, 0, 'no CROSSSLOT, no failure');
    assert.equal(readings.filter((r) => r.allowed).length, keys.length * 2, 'burst 2 per key');
  });
});

describe('createMeter', () => {
  test('local: a LocalMeter; redis down at start: the meter answers unavailable, never throws', async (t) => {
    const clock = new ManualClock(START);
    const hooks = {
      states: [] as string[],
      stateChanged: (s: string) => void hooks.states.push(s),
    };
    const local = await createMeter({
      store: 'local',
      maxKeys: 10,
      redis: redisConfig(NOBODY_LISTENS.replace('http', 'redis')),
      clock,
      hooks,
    });
    assert.ok(local instanceof LocalMeter);
    const meter: Meter = await createMeter({
      store: 'redis',
      maxKeys: 10,
      redis: redisConfig('redis://127.0.0.1:47', { keyPrefix: PREFIX }),
      clock,
      hooks,
    });
    t.after(() => meter.close());
    assert.deepEqual(await meter.check(DAILY, 'acme'), UNAVAILABLE);
    assert.deepEqual(hooks.states, ['down']);
  });
});
