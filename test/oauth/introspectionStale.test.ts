/**
 * Introspection (RFC 7662) follows the edge's rule for a stale Redis revocation list: a
 * real redis-server stopped mid-test. While the list cannot be confirmed current, an
 * otherwise active token gets 503 problem details (the server cannot determine that it
 * was not revoked, RFC 7662 §4), a token known revoked or invalid still gets
 * `{"active":false}`, and with Redis back the answers are active again. With both
 * `whenStale` classes admitted, introspection answers from the local copy, as the edge
 * does.
 */
import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { decodeJwt } from 'jose';
import { type Gateway, problemOf, startGateway } from '../helpers/fixture.js';
import { sample, scrape } from '../helpers/metrics.js';
import { redisConfig } from '../helpers/redisFixtures.js';
import { type RedisServer, startRedis } from '../helpers/redisServer.js';
import { accessLineOf, waitFor } from '../helpers/wait.js';
import { basic, CLIENTS, INTROSPECT_PATH, postForm, RESOURCE_SERVER } from './formRequests.js';

const asResourceServer = () => basic(RESOURCE_SERVER.id, RESOURCE_SERVER.secret);

function gatewayOn(
  t: TestContext,
  redis: RedisServer,
  revocation: Record<string, unknown> = {},
): Promise<Gateway> {
  return startGateway(t, {
    clients: CLIENTS,
    settings: () => ({
      revocation: { store: 'redis', maxSyncLagSeconds: 1, ...revocation },
      // The replay store stays local: this test is about the revocation list alone.
      oauth: { replayStore: 'local' },
      redis: redisConfig(redis),
    }),
  });
}

function introspect(gw: Gateway, token: string): Promise<Response> {
  return postForm(gw, INTROSPECT_PATH, { token }, asResourceServer());
}

async function activeOf(gw: Gateway, token: string): Promise<unknown> {
  const res = await introspect(gw, token);
  assert.equal(res.status, 200, await res.clone().text());
  return ((await res.json()) as { active?: unknown }).active;
}

/** Waits until the edge refuses an unsafe request for the stale list (its own rule). */
async function waitUntilStale(gw: Gateway, token: string): Promise<void> {
  await waitFor(
    'the revocation list stale at the edge',
    async () => {
      const res = await fetch(`${gw.url}/v1/orders/1`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      });
      await res.arrayBuffer();
      return res.status === 503 ? true : undefined;
    },
    20_000,
    50,
  );
}

/** The stale-list refusal counters: the edge's and introspection's, and introspection's outcome. */
async function staleCounts(gw: Gateway): Promise<{ unsafe: number; unavailable: number }> {
  const text = await scrape(gw.adminUrl);
  return {
    unsafe: sample(text, 'portaria_revocation_stale_refusals_total{method="unsafe"}') ?? 0,
    unavailable:
      sample(text, 'portaria_oauth_requests_total{endpoint="introspect",outcome="unavailable"}') ??
      0,
  };
}

test('a stale revocation list: an active token gets 503 problem details as at the edge, counted as a stale refusal; known revoked and invalid tokens stay inactive', async (t) => {
  const redis = await startRedis(t);
  const gw = await gatewayOn(t, redis);
  const good = await gw.token();
  const revoked = await gw.token();
  const { jti } = decodeJwt(revoked);
  await gw.app.revoke(jti as string);
  assert.equal(await activeOf(gw, good), true);
  assert.equal(await activeOf(gw, revoked), false);

  await redis.stop();
  await waitUntilStale(gw, good);
  const before = await staleCounts(gw);
  const res = await introspect(gw, good);
  assert.equal(res.status, 503);
  // Counted where the edge's stale refusals are (a POST: `unsafe`), and as its outcome.
  assert.deepEqual(await staleCounts(gw), {
    unsafe: before.unsafe + 1,
    unavailable: before.unavailable + 1,
  });
  assert.equal(res.headers.get('cache-control'), 'no-store');
  const problem = await problemOf(res);
  assert.equal(problem.tipo, 'urn:portaria:problem:service-unavailable');
  const line = await accessLineOf(gw.logs, res.headers.get('x-request-id') as string);
  assert.equal(line['portaria.reason'], 'revocation-stale');
  assert.equal(line['http.route'], 'oauth-introspect');
  assert.ok(!JSON.stringify(problem).includes(good), 'the token is not echoed');

  assert.equal(await activeOf(gw, revoked), false, 'a known revocation is a verdict, stale or not');
  assert.equal(await activeOf(gw, `${good}x`), false, 'an invalid token is a verdict too');
  assert.deepEqual(
    await staleCounts(gw),
    { unsafe: before.unsafe + 1, unavailable: before.unavailable + 1 },
    'a verdict is no stale refusal',
  );

  await redis.start();
  await waitFor(
    'the list current again',
    async () => ((await introspect(gw, good)).status === 200 ? true : undefined),
    20_000,
    50,
  );
  assert.equal(await activeOf(gw, good), true);
});

test('whenStale admitting both classes: introspection answers from the local copy while stale, as the edge admits', async (t) => {
  const redis = await startRedis(t);
  const gw = await gatewayOn(t, redis, { whenStale: { safe: 'admit', unsafe: 'admit' } });
  const good = await gw.token();
  await redis.stop();
  await waitFor(
    'the revocation list stale',
    async () => (gw.app.readiness().degraded?.includes('stale') === true ? true : undefined),
    20_000,
    50,
  );
  assert.equal(await activeOf(gw, good), true);
});
