/**
 * Redis behind Sentinel, as production runs it: two gateway replicas reach the primary
 * through a sentinel (its own password) as an ACL user with a password file, for the
 * revocation list, the token limits and the replay store. Under a stream of revocations
 * and requests the primary is killed and the sentinel promotes the replica: every
 * revocation acknowledged (201) before, during or after the failover is refused by both
 * replicas afterwards and is in the new primary, and every Redis connection is back.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeJwt } from 'jose';
import { createRedisClient } from '../../src/redis/redisClient.js';
import { revocationKeys } from '../../src/revocation/redisRevocationLayout.js';
import { scrape } from '../helpers/metrics.js';
import {
  callWith,
  issueToken,
  REDIS_DEFAULTS,
  readyz,
  revokeVia,
} from '../helpers/redisFixtures.js';
import { waitFor } from '../helpers/wait.js';
import { CLIENT, SECRET, startReplicas } from './gatewayReplicas.js';
import { MASTER_NAME, startSentinelGroup } from './sentinelGroup.js';

const REVOCATIONS = 60;
const KILL_AFTER = 20;

test('a Sentinel failover under revocations loses no acknowledged revocation on any replica', async (t) => {
  const group = await startSentinelGroup(t);
  const redis = {
    username: 'gw',
    passwordFile: group.dataPasswordFile,
    sentinel: {
      masterName: MASTER_NAME,
      nodes: [`127.0.0.1:${group.sentinel.port}`],
      passwordFile: group.sentinelPasswordFile,
    },
    connectTimeoutMs: 500,
    commandTimeoutMs: 500,
  };
  const [a, b] = await startReplicas(t, 2, { redis });
  assert.ok(a && b);

  const tokens: string[] = [];
  for (let i = 0; i < REVOCATIONS; i += 1) {
    tokens.push(await issueToken((i % 2 === 0 ? a : b).publicUrl, CLIENT, SECRET));
  }
  const kept = await issueToken(a.publicUrl, CLIENT, SECRET);

  // Load beside the revocations: bearer calls on both replicas, bounded in count and time.
  let loading = true;
  const load = (async () => {
    const until = performance.now() + 30_000;
    for (let i = 0; loading && i < 5000 && performance.now() < until; i += 1) {
      await callWith((i % 2 === 0 ? a : b).publicUrl, kept);
    }
  })();

  const acknowledged: string[] = [];
  const refused: number[] = [];
  for (let i = 0; i < REVOCATIONS; i += 1) {
    if (i === KILL_AFTER) await group.primary.stop();
    const jti = decodeJwt(tokens[i] as string).jti as string;
    const { status } = await revokeVia((i % 2 === 0 ? a : b).adminUrl, { jti });
    if (status === 201) acknowledged.push(tokens[i] as string);
    else refused.push(status);
    // Spread the revocations over the failover (about 1 s from the kill).
    if (i >= KILL_AFTER) await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.ok(acknowledged.length >= KILL_AFTER, `acknowledged ${acknowledged.length}`);

  await waitFor(
    'the sentinel promoted the replica',
    async () => ((await group.primaryPort()) === group.replica.port ? true : undefined),
    15_000,
    50,
  );
  // Ready and not degraded: synchronised with the new primary, nothing left queued.
  await Promise.all(
    [a.adminUrl, b.adminUrl].map((adminUrl) =>
      waitFor(
        `${adminUrl} synchronised with the new primary`,
        async () => {
          const { status, body } = await readyz(adminUrl);
          return status === 200 && body.degraded === undefined ? true : undefined;
        },
        15_000,
        50,
      ),
    ),
  );
  loading = false;
  await load;

  const urls: string[] = [a.publicUrl, b.publicUrl];
  const admitted: string[] = [];
  for (const token of acknowledged) {
    for (const url of urls) {
      const answer = await callWith(url, token);
      if (answer.status !== 401 || answer.code !== 'token-revoked') {
        admitted.push(
          `token ${tokens.indexOf(token)} on ${url === a.publicUrl ? 'A' : 'B'}: ${answer.status}`,
        );
      }
    }
  }
  assert.deepEqual(admitted, []);
  assert.equal((await callWith(a.publicUrl, kept)).status, 200);

  // The new primary holds them all (a replica started now loads them from there).
  const client = createRedisClient(
    {
      ...REDIS_DEFAULTS,
      ...redis,
      url: null,
      sentinel: { ...REDIS_DEFAULTS.sentinel, ...redis.sentinel },
      keyPrefix: 'portaria:',
    },
    { role: 'test' },
  );
  client.on('error', () => {});
  t.after(() => client.disconnect());
  await client.connect();
  const keys = revocationKeys('portaria:');
  for (const token of acknowledged) {
    assert.notEqual(await client.zscore(keys.tokens, decodeJwt(token).jti as string), null);
  }
  // Every connection (revocation, subscriber, token limits, replay store) is back.
  for (const adminUrl of [a.adminUrl, b.adminUrl]) {
    const connected = (await scrape(adminUrl))
      .split('\n')
      .filter((line) => line.startsWith('portaria_redis_connected{'));
    assert.equal(connected.length, 4, connected.join('\n'));
    for (const line of connected) assert.match(line, / 1$/);
  }
  t.diagnostic(`acknowledged ${acknowledged.length}, refused ${JSON.stringify(refused)}`);
});
