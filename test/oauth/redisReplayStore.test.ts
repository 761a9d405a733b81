/** The shared replay store against a real redis-server: one claim wins across clients, and it fails closed. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PortariaError } from '../../src/errors.js';
import { ManualClock } from '../../src/lib/clock.js';
import { RedisReplayStore } from '../../src/oauth/redisReplayStore.js';
import { createRedisClient } from '../../src/redis/redisClient.js';
import { redisConfig } from '../helpers/redisFixtures.js';
import { startRedis } from '../helpers/redisServer.js';

test('of two stores sharing one Redis, exactly one claims a jti; Redis expires it (PX)', async (t) => {
  const server = await startRedis(t);
  const clock = new ManualClock(Date.now());
  const stores = [0, 1].map(() => {
    const redis = createRedisClient(redisConfig(server), { role: 'replay' });
    return { redis, store: new RedisReplayStore(redis, 'portaria:', clock) };
  });
  for (const { redis, store } of stores) {
    await redis.connect();
    t.after(() => store.close());
  }
  const [a, b] = stores.map((s) => s.store) as [RedisReplayStore, RedisReplayStore];
  const until = clock.now() + 300;
  const answers = await Promise.all([a.claim('acme', 'j1', until), b.claim('acme', 'j1', until)]);
  assert.deepEqual(answers.sort(), [false, true]);
  assert.equal(await b.claim('other', 'j1', until), true);
  const keys = await stores[0]?.redis.keys('portaria:oauth:jti:*');
  assert.equal(keys?.length, 2);
  const ttl = await stores[0]?.redis.pttl(keys?.[0] as string);
  assert.ok(ttl !== undefined && ttl > 0 && ttl <= 300, `ttl ${ttl}`);
});

test('Redis down: the claim is refused with 503, never taken as unseen', async (t) => {
  const server = await startRedis(t);
  const redis = createRedisClient(redisConfig(server), { role: 'replay' });
  redis.on('error', () => undefined);
  await redis.connect();
  const store = new RedisReplayStore(redis, 'portaria:', new ManualClock(Date.now()));
  t.after(() => store.close());
  await server.stop();
  await assert.rejects(
    Promise.resolve(store.claim('acme', 'j2', Date.now() + 60_000)),
    (err: unknown) => err instanceof PortariaError && err.status === 503,
  );
});
