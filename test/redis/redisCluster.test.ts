/**
 * A Redis Cluster of three primaries: two gateway replicas given one seed node share the
 * revocation list (a revocation through one replica is refused by the other within 1 s:
 * the scripts' keys share a slot, and the announcement reaches a subscriber on any node)
 * and the token limits (no check falls back to local counters for a CROSSSLOT error);
 * the replay store claims a jti once across the cluster.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeJwt } from 'jose';
import { ManualClock } from '../../src/lib/clock.js';
import { RedisReplayStore } from '../../src/oauth/redisReplayStore.js';
import { createRedisClient } from '../../src/redis/redisClient.js';
import { revocationKeys } from '../../src/revocation/redisRevocationLayout.js';
import { scrape } from '../helpers/metrics.js';
import {
  callWith,
  issueToken,
  REDIS_DEFAULTS,
  redisConfig,
  refusedAsRevoked,
  revokeVia,
  TOKEN_PATH,
} from '../helpers/redisFixtures.js';
import { CLIENT, SECRET, startReplicas } from './gatewayReplicas.js';
import { startCluster } from './redisCluster.js';

const BURST = 4;

test('two replicas on a three-primary cluster share revocations and token limits', async (t) => {
  const cluster = await startCluster(t);
  const [a, b] = await startReplicas(t, 2, {
    redis: { cluster: { nodes: [cluster.seeds[1]] }, connectTimeoutMs: 1000 },
    tokenLimits: {
      store: 'redis',
      perAddress: { ratePerSecond: 1000, burst: 1000 },
      perClient: { ratePerSecond: 0.01, burst: BURST },
    },
  });
  assert.ok(a && b);

  // The client's buckets are one across the replicas: the first token from the client's
  // bucket, BURST more from the known pair's (`tokenEndpointLimits.ts`), then 429 everywhere.
  const tokens: string[] = [];
  for (let i = 0; i < BURST + 1; i += 1) {
    tokens.push(await issueToken((i % 2 === 0 ? a : b).publicUrl, CLIENT, SECRET));
  }
  for (const url of [a.publicUrl, b.publicUrl]) {
    const res = await fetch(url + TOKEN_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ clientId: CLIENT, clientSecret: SECRET }),
    });
    await res.arrayBuffer();
    assert.equal(res.status, 429);
  }
  for (const adminUrl of [a.adminUrl, b.adminUrl]) {
    const fallbacks = (await scrape(adminUrl))
      .split('\n')
      .filter((line) => line.startsWith('portaria_token_limit_redis_fallbacks_total'))
      .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
    assert.equal(fallbacks, 0, 'a token limit check fell back to local counters');
  }

  const token = tokens[0] as string;
  assert.equal((await callWith(b.publicUrl, token)).status, 200);
  const jti = decodeJwt(token).jti as string;
  assert.equal((await revokeVia(a.adminUrl, { jti })).status, 201);
  const ms = await refusedAsRevoked(b.publicUrl, token, 1000);
  t.diagnostic(`replica B refused the revoked token after ${Math.round(ms)} ms`);

  const client = createRedisClient(
    redisConfig('', { url: null, cluster: { nodes: cluster.seeds } }),
    { role: 'test' },
  );
  t.after(() => client.disconnect());
  await client.connect();
  const keys = revocationKeys('portaria:', true);
  assert.equal(keys.tokens, '{portaria:revocation}:tokens');
  assert.notEqual(await client.zscore(keys.tokens, jti), null);
});

test('the replay store claims an assertion jti once across a cluster', async (t) => {
  const cluster = await startCluster(t);
  const clock = new ManualClock(Date.now());
  const config = {
    ...REDIS_DEFAULTS,
    ...redisConfig(''),
    url: null,
    cluster: { nodes: cluster.seeds },
  };
  const stores = [0, 1].map(() => {
    const redis = createRedisClient(config, { role: 'replay' });
    return { redis, store: new RedisReplayStore(redis, 'portaria:', clock) };
  });
  for (const { redis, store } of stores) {
    await redis.connect();
    t.after(() => store.close());
  }
  const [first, second] = stores.map((s) => s.store) as [RedisReplayStore, RedisReplayStore];
  const until = clock.now() + 60_000;
  const answers = await Promise.all(
    ['j1', 'j2', 'j3'].flatMap((jti) => [
      first.claim('acme', jti, until),
      second.claim('acme', jti, until),
    ]),
  );
  assert.deepEqual(answers.filter((won) => won).length, 3, 'each jti claimed exactly once');
});
