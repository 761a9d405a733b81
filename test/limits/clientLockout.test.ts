/**
 * Nobody locks a client out of the token operation from the client's own addresses.
 * Wrong secrets sprayed at one client from many source addresses (IPv6 /64s, through a
 * trusted X-Forwarded-For) drain the client's bucket for addresses it has not proven;
 * an address that got the client a token lately draws from the client's other bucket,
 * which only such addresses reach. The sprayer stays bounded by the per-client rate.
 * Run with the local store and with the shared (Redis) one; time is a manual clock.
 */
import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import { ManualClock } from '../../src/lib/clock.js';
import { CLIENT_ID, CLIENT_SECRET, startGateway } from '../helpers/fixture.js';
import { startRedis } from '../helpers/redisServer.js';
import { credentials, postToken } from './tokenRequests.js';

const WRONG = 'not-the-secret';
const OWN = '198.51.100.7';

type Via = (xff: string, secret?: string) => Promise<string>;

/** A gateway behind a trusted proxy; `via` posts acme's credentials "from" an X-Forwarded-For value. */
async function gatewayBehindProxy(
  t: TestContext,
  clock: ManualClock,
  store: 'local' | 'redis',
): Promise<Via> {
  const redis = store === 'redis' ? await startRedis(t) : null;
  const gw = await startGateway(t, {
    clock,
    settings: () => ({
      server: { host: '127.0.0.1', port: 0, shutdownGraceMs: 2000, trustedProxies: ['loopback'] },
      ...(redis === null
        ? {}
        : { redis: { url: redis.url, keyPrefix: 'lockout:', commandTimeoutMs: 500 } }),
      tokenLimits: {
        store,
        perAddress: { ratePerSecond: 5, burst: 20 },
        perClient: { ratePerSecond: 1, burst: 5 },
        failedSecretBackoff: { freeFailures: 3, baseDelayMs: 1000, maxDelayMs: 300_000 },
      },
    }),
  });
  return async (xff, secret = CLIENT_SECRET) => {
    const reply = await postToken(gw.url, credentials(CLIENT_ID, secret), {
      headers: { 'x-forwarded-for': xff },
    });
    const after = reply.headers['retry-after'];
    const tipo = String(reply.body.tipo ?? '').replace('urn:portaria:problem:', '');
    return after === undefined ? String(reply.status) : `${reply.status} ${tipo} after ${after}`;
  };
}

/** One wrong secret from each of `count` fresh /64s (prefix `2001:db8:<round>::/48`). */
async function spray(via: Via, round: number, count: number): Promise<Record<string, number>> {
  const seen: Record<string, number> = {};
  for (let i = 0; i < count; i++) {
    const answer = await via(`2001:db8:${round}:${i.toString(16)}::1`, WRONG);
    seen[answer] = (seen[answer] ?? 0) + 1;
  }
  return seen;
}

for (const store of ['local', 'redis'] as const) {
  describe(`a client sprayed with wrong secrets from many addresses (${store} store)`, () => {
    test('its own address, which got a token before, keeps getting tokens; the sprayer stays bounded', async (t) => {
      const clock = new ManualClock();
      const via = await gatewayBehindProxy(t, clock, store);
      assert.equal(await via(OWN), '200', 'the client proves its address');

      // 20 fresh /64s, one guess each: the 4 tokens left in acme's bucket are checked
      // (and fail), the rest are refused unchecked.
      assert.deepEqual(await spray(via, 1, 20), {
        '401': 4,
        '429 too-many-requests after 1': 16,
      });
      assert.equal(await via(OWN), '200', 'the own address is not locked out');
      assert.equal(await via(OWN), '200');

      // An address the client never got a token from shares the drained bucket: the
      // limiter cannot tell it from the sprayer (the documented price).
      assert.equal(await via('198.51.100.8'), '429 too-many-requests after 1');

      // One second later the sprayer gets one more check (1 per second), no more.
      clock.advance(1000);
      assert.deepEqual(await spray(via, 2, 20), {
        '401': 1,
        '429 too-many-requests after 1': 19,
      });
      assert.equal(await via(OWN), '200');
    });

    test("the own address's bucket is the client's rate too, and a sprayer cannot reach it", async (t) => {
      const clock = new ManualClock();
      const via = await gatewayBehindProxy(t, clock, store);
      assert.equal(await via(OWN), '200');
      assert.deepEqual(await spray(via, 1, 10), {
        '401': 4,
        '429 too-many-requests after 1': 6,
      });
      // The proven address's own share: a burst of 5, then the client's rate.
      const answers: string[] = [];
      for (let i = 0; i < 6; i++) answers.push(await via(OWN));
      assert.deepEqual(answers, [
        '200',
        '200',
        '200',
        '200',
        '200',
        '429 too-many-requests after 1',
      ]);
      clock.advance(1000);
      assert.equal(await via(OWN), '200');
    });
  });
}
