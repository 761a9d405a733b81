/**
 * Token-endpoint abuse controls on a real gateway with the local store: per-address and
 * per-client token buckets, the failed-secret back-off per (client, address), the 429
 * answer, the switches and the metrics. Time is a manual clock; source addresses are
 * distinct loopback addresses (127.0.0.2, …).
 */
import assert from 'node:assert/strict';
import { randomBytes, scryptSync } from 'node:crypto';
import { describe, type TestContext, test } from 'node:test';
import { ManualClock } from '../../src/lib/clock.js';
import { CLIENT_ID, CLIENT_SECRET, startGateway } from '../helpers/fixture.js';
import { sample, scrape } from '../helpers/metrics.js';
import { accessLineOf } from '../helpers/wait.js';
import { attempt, credentials, limitsOff, postToken } from './tokenRequests.js';

const WRONG = 'not-the-secret';
const CHOSEN = 'an operator-chosen secret';

function limited(clock: ManualClock, tokenLimits: Record<string, unknown>) {
  return { clock, settings: () => ({ tokenLimits: { ...limitsOff(), ...tokenLimits } }) };
}

/**
 * A gateway behind `trustedProxies` (default: loopback), with a per-address bucket of one
 * request; returns a function posting valid credentials "via" an X-Forwarded-For value,
 * from 127.0.0.1 or the given loopback address.
 */
async function behindTrustedProxy(
  t: TestContext,
  trustedProxies: string[] = ['loopback'],
): Promise<(xff: string, from?: string) => Promise<number>> {
  const gw = await startGateway(t, {
    clock: new ManualClock(),
    settings: () => ({
      server: { host: '127.0.0.1', port: 0, shutdownGraceMs: 2000, trustedProxies },
      tokenLimits: { ...limitsOff(), perAddress: { enabled: true, ratePerSecond: 1, burst: 1 } },
    }),
  });
  return (xff, from = '127.0.0.1') =>
    postToken(gw.url, credentials(), { from, headers: { 'x-forwarded-for': xff } }).then(
      (r) => r.status,
    );
}

describe('per-address limit', () => {
  test('the burst passes, then 429 too-many-requests with Retry-After, and a refill admits again', async (t) => {
    const clock = new ManualClock();
    const gw = await startGateway(
      t,
      limited(clock, { perAddress: { enabled: true, ratePerSecond: 1, burst: 3 } }),
    );
    for (let i = 0; i < 3; i++) assert.equal(await attempt(gw.url, '127.0.0.2'), '200');

    const refused = await postToken(gw.url, credentials(), { from: '127.0.0.2' });
    assert.equal(refused.status, 429);
    assert.equal(refused.headers['retry-after'], '1');
    assert.equal(refused.headers['content-type'], 'application/problem+json');
    assert.equal(refused.headers['cache-control'], 'no-store');
    const requestId = refused.headers['x-request-id'] as string;
    assert.deepEqual(refused.body, {
      tipo: 'urn:portaria:problem:too-many-requests',
      titulo: 'Too many requests',
      status: 429,
      detalhe:
        'Too many token requests from this address; try again after the seconds given in Retry-After.',
      instancia: `/v1/authentication/accesstoken#${requestId}`,
    });
    // Refused before the body was read: the connection is not reused.
    assert.equal(refused.headers.connection, 'close');
    const line = await accessLineOf(gw.logs, requestId);
    assert.equal(line['portaria.reason'], 'rate-limit-address');
    assert.equal(line['http.response.status_code'], 429);

    assert.equal(await attempt(gw.url, '127.0.0.3'), '200', 'another address has its own bucket');
    clock.advance(999);
    assert.equal(await attempt(gw.url, '127.0.0.2'), '429 after 1');
    clock.advance(1);
    assert.equal(await attempt(gw.url, '127.0.0.2'), '200');
    assert.equal(await attempt(gw.url, '127.0.0.2'), '429 after 1');
  });

  test('Retry-After is the wait in whole seconds, rounded up', async (t) => {
    const clock = new ManualClock();
    const gw = await startGateway(
      t,
      limited(clock, { perAddress: { enabled: true, ratePerSecond: 0.3, burst: 1 } }),
    );
    assert.equal(await attempt(gw.url, '127.0.0.2'), '200');
    assert.equal(await attempt(gw.url, '127.0.0.2'), '429 after 4');
    clock.advance(3000);
    assert.equal(await attempt(gw.url, '127.0.0.2'), '429 after 1');
    clock.advance(334);
    assert.equal(await attempt(gw.url, '127.0.0.2'), '200');
  });

  test('every request counts, also those refused later (bad body, wrong secret)', async (t) => {
    const clock = new ManualClock();
    const gw = await startGateway(
      t,
      limited(clock, { perAddress: { enabled: true, ratePerSecond: 1, burst: 2 } }),
    );
    assert.equal((await postToken(gw.url, '{', { from: '127.0.0.2' })).status, 400);
    assert.equal(await attempt(gw.url, '127.0.0.2', CLIENT_ID, WRONG), '401');
    assert.equal(await attempt(gw.url, '127.0.0.2'), '429 after 1');
  });

  test('behind a trusted proxy the first untrusted hop from the right is the address, never an earlier one', async (t) => {
    const via = await behindTrustedProxy(t);
    assert.equal(await via('203.0.113.1, 198.51.100.7'), 200);
    assert.equal(
      await via('203.0.113.2, 198.51.100.7'),
      429,
      'a forged first entry changes nothing',
    );
    assert.equal(await via('198.51.100.8'), 200);
  });

  test('IPv6 sources count per /64: a new address in the same /64 shares the bucket', async (t) => {
    const via = await behindTrustedProxy(t);
    assert.equal(await via('2001:db8:1:2::1'), 200);
    assert.equal(await via('2001:db8:1:2:ffff:ffff:ffff:ffff'), 429, 'same /64');
    assert.equal(await via('2001:DB8:1:2:0:0:0:7'), 429, 'same /64, spelled otherwise');
    assert.equal(await via('2001:db8:1:3::1'), 200, 'the next /64 has its own bucket');
  });

  test('behind two trusted proxies the hop before them is the address', async (t) => {
    const via = await behindTrustedProxy(t, ['loopback', '10.0.0.0/8']);
    assert.equal(await via('6.6.6.6, 198.51.100.7, 10.0.0.9'), 200);
    assert.equal(await via('7.7.7.7, 198.51.100.7, 10.0.0.3'), 429, 'the same client');
    assert.equal(await via('198.51.100.7'), 429, 'the same client, one proxy less');
    assert.equal(await via('6.6.6.6, 198.51.100.8, 10.0.0.9'), 200, 'another client');
  });

  test('a garbage X-Forwarded-For entry keys on the trusted hop that wrote it', async (t) => {
    const via = await behindTrustedProxy(t, ['loopback', '10.0.0.0/8']);
    assert.equal(await via('junk, 10.0.0.9'), 200);
    assert.equal(await via('10.0.0.9'), 429, 'keyed on 10.0.0.9');
    assert.equal(await via('198.51.100.7:4711'), 200, 'keyed on the peer, 127.0.0.1');
    assert.equal(await via('[2001:db8::1]'), 429, 'the peer again');
  });

  test('from a peer outside trustedProxies X-Forwarded-For is ignored', async (t) => {
    const via = await behindTrustedProxy(t, ['127.0.0.1']);
    assert.equal(await via('198.51.100.7', '127.0.0.2'), 200);
    assert.equal(await via('198.51.100.8', '127.0.0.2'), 429, 'keyed on 127.0.0.2');
    assert.equal(await via('198.51.100.8'), 200, 'through the trusted peer: the client');
  });

  test('without trusted proxies X-Forwarded-For is ignored', async (t) => {
    const clock = new ManualClock();
    const gw = await startGateway(
      t,
      limited(clock, { perAddress: { enabled: true, ratePerSecond: 1, burst: 1 } }),
    );
    const via = (xff: string) =>
      postToken(gw.url, credentials(), { headers: { 'x-forwarded-for': xff } }).then(
        (r) => r.status,
      );
    assert.equal(await via('198.51.100.7'), 200);
    assert.equal(await via('198.51.100.8'), 429);
  });
});

describe('per-client limit', () => {
  test('one client shares its bucket across addresses; other clients are not affected', async (t) => {
    const clock = new ManualClock();
    const gw = await startGateway(
      t,
      limited(clock, { perClient: { enabled: true, ratePerSecond: 0.5, burst: 2 } }),
    );
    assert.equal(await attempt(gw.url, '127.0.0.2'), '200');
    assert.equal(await attempt(gw.url, '127.0.0.3'), '200');
    const refused = await postToken(gw.url, credentials(), { from: '127.0.0.4' });
    assert.equal(refused.status, 429);
    assert.equal(refused.headers['retry-after'], '2');
    assert.equal(
      refused.body.detalhe,
      'Too many token requests for this client; try again after the seconds given in Retry-After.',
    );
    assert.equal(
      await attempt(gw.url, '127.0.0.4', 'reader', 'reader-secret-0123456789abcdefghijklmnopq'),
      '200',
    );
    clock.advance(2000);
    assert.equal(await attempt(gw.url, '127.0.0.5'), '200');
  });

  test('an unknown client id is limited like a known one, and an oversized id too', async (t) => {
    const clock = new ManualClock();
    const gw = await startGateway(
      t,
      limited(clock, { perClient: { enabled: true, ratePerSecond: 1, burst: 1 } }),
    );
    for (const id of ['nobody', 'y'.repeat(5000)]) {
      assert.equal(await attempt(gw.url, '127.0.0.2', id, WRONG), '401');
      assert.equal(await attempt(gw.url, '127.0.0.3', id, WRONG), '429 after 1');
    }
    assert.equal(await attempt(gw.url, '127.0.0.3', CLIENT_ID, WRONG), '401');
  });
});

describe('failed-secret back-off', () => {
  const backoff = (rule: Record<string, unknown>) => ({
    failedSecretBackoff: { enabled: true, ...rule },
  });

  test('after freeFailures wrong secrets each failure doubles the wait, up to maxDelayMs', async (t) => {
    const clock = new ManualClock();
    const gw = await startGateway(
      t,
      limited(clock, backoff({ freeFailures: 2, baseDelayMs: 1000, maxDelayMs: 4000 })),
    );
    const from = '127.0.0.2';
    const seen: string[] = [];
    const step = async (waitMs: number) => {
      seen.push(await attempt(gw.url, from, CLIENT_ID, WRONG));
      seen.push(await attempt(gw.url, from, CLIENT_ID, WRONG));
      clock.advance(waitMs);
    };
    await step(0);
    await step(1000);
    await step(2000);
    await step(4000);
    await step(4000);
    await step(4000);
    assert.deepEqual(seen, [
      '401',
      '401', // two free failures
      '401', // the third: 1 s
      '429 after 1',
      '401', // 2 s
      '429 after 2',
      '401', // 4 s
      '429 after 4',
      '401', // capped at 4 s
      '429 after 4',
      '401',
      '429 after 4',
    ]);
  });

  test('concurrent guesses for a pair that failed lately are checked one at a time', async (t) => {
    // An operator-chosen secret under scrypt with p = 8 (~0.3 s a check here): the
    // concurrent attempts all arrive while the first one is being checked.
    const salt = randomBytes(16);
    const digest = scryptSync(CHOSEN, salt, 32, { N: 16384, r: 8, p: 8, maxmem: 64 << 20 });
    const hash = `scrypt:16384:8:8:${salt.toString('base64url')}:${digest.toString('base64url')}`;
    const clock = new ManualClock();
    const gw = await startGateway(t, {
      ...limited(clock, backoff({ freeFailures: 3, baseDelayMs: 1000, maxDelayMs: 60_000 })),
      clients: [{ id: 'chosen', secret: CHOSEN, hash, scopes: ['orders:read'] }],
    });
    const from = '127.0.0.2';
    assert.equal(await attempt(gw.url, from, 'chosen', WRONG), '401', 'a free failure');

    const guesses = await Promise.all(
      Array.from({ length: 6 }, () => attempt(gw.url, from, 'chosen', WRONG)),
    );
    assert.deepEqual(
      guesses.sort(),
      ['401', '429 after 1', '429 after 1', '429 after 1', '429 after 1', '429 after 1'],
      'one guess checked, the others refused unchecked while it ran',
    );
    assert.equal(await attempt(gw.url, from, 'chosen', CHOSEN), '200', 'then checked again');

    // A pair with no failure is never serialised (a fleet behind one NAT).
    const fleet = await Promise.all(
      Array.from({ length: 4 }, () => attempt(gw.url, '127.0.0.3', 'chosen', CHOSEN)),
    );
    assert.deepEqual(fleet, ['200', '200', '200', '200']);
  });

  test('a backing-off address cannot use even the right secret; the client from another address succeeds at once', async (t) => {
    const clock = new ManualClock();
    const gw = await startGateway(
      t,
      limited(clock, backoff({ freeFailures: 0, baseDelayMs: 10_000, maxDelayMs: 60_000 })),
    );
    assert.equal(await attempt(gw.url, '127.0.0.2', CLIENT_ID, WRONG), '401');
    const refused = await postToken(gw.url, credentials(), { from: '127.0.0.2' });
    assert.equal(refused.status, 429);
    assert.equal(refused.headers['retry-after'], '10');
    assert.equal(
      refused.body.detalhe,
      'Too many failed attempts for this client from this address; try again after the seconds given in Retry-After.',
    );
    // The refused attempt was not a failure: the wait did not grow.
    clock.advance(9000);
    assert.equal(await attempt(gw.url, '127.0.0.2'), '429 after 1');
    assert.equal(await attempt(gw.url, '127.0.0.3'), '200', 'the legitimate address is untouched');
    assert.equal(
      await attempt(gw.url, '127.0.0.2', 'reader', 'reader-secret-0123456789abcdefghijklmnopq'),
      '200',
      'other clients from the same address are untouched',
    );
    clock.advance(1000);
    assert.equal(await attempt(gw.url, '127.0.0.2'), '200');
  });

  test('a success resets the pair', async (t) => {
    const clock = new ManualClock();
    const gw = await startGateway(
      t,
      limited(clock, backoff({ freeFailures: 2, baseDelayMs: 5000, maxDelayMs: 60_000 })),
    );
    const from = '127.0.0.2';
    assert.equal(await attempt(gw.url, from, CLIENT_ID, WRONG), '401');
    assert.equal(await attempt(gw.url, from, CLIENT_ID, WRONG), '401');
    assert.equal(await attempt(gw.url, from, CLIENT_ID, CLIENT_SECRET), '200');
    // Two free failures again, and the first wait is the base delay, not a doubled one.
    assert.equal(await attempt(gw.url, from, CLIENT_ID, WRONG), '401');
    assert.equal(await attempt(gw.url, from, CLIENT_ID, WRONG), '401');
    assert.equal(await attempt(gw.url, from, CLIENT_ID, WRONG), '401');
    assert.equal(await attempt(gw.url, from, CLIENT_ID, CLIENT_SECRET), '429 after 5');
  });

  test('a pair with no failure for forgetAfterSeconds starts over', async (t) => {
    const clock = new ManualClock();
    const gw = await startGateway(
      t,
      limited(
        clock,
        backoff({ freeFailures: 1, baseDelayMs: 1000, maxDelayMs: 60_000, forgetAfterSeconds: 60 }),
      ),
    );
    const from = '127.0.0.2';
    assert.equal(await attempt(gw.url, from, CLIENT_ID, WRONG), '401');
    assert.equal(await attempt(gw.url, from, CLIENT_ID, WRONG), '401');
    assert.equal(await attempt(gw.url, from, CLIENT_ID, WRONG), '429 after 1');
    clock.advance(59_999);
    assert.equal(await attempt(gw.url, from, CLIENT_ID, WRONG), '401', 'remembered: 2 s now');
    assert.equal(await attempt(gw.url, from, CLIENT_ID, WRONG), '429 after 2');
    clock.advance(60_000);
    assert.equal(await attempt(gw.url, from, CLIENT_ID, WRONG), '401', 'forgotten: free again');
    assert.equal(await attempt(gw.url, from, CLIENT_ID, WRONG), '401');
    assert.equal(await attempt(gw.url, from, CLIENT_ID, WRONG), '429 after 1');
  });

  test('an unknown client gets exactly the answers a known client with a wrong secret gets', async (t) => {
    const clock = new ManualClock();
    const gw = await startGateway(
      t,
      limited(clock, backoff({ freeFailures: 1, baseDelayMs: 2000, maxDelayMs: 60_000 })),
    );
    const run = async (clientId: string, from: string) => {
      const answers: unknown[] = [];
      for (const waitMs of [0, 0, 0, 2000, 0]) {
        clock.advance(waitMs);
        const reply = await postToken(gw.url, credentials(clientId, WRONG), { from });
        answers.push([
          reply.status,
          reply.headers['retry-after'],
          reply.body.tipo,
          reply.body.detalhe,
        ]);
      }
      return answers;
    };
    const known = await run(CLIENT_ID, '127.0.0.2');
    const unknown = await run('nobody', '127.0.0.3');
    assert.deepEqual(unknown, known);
    assert.deepEqual(
      known.map((a) => (a as unknown[])[0]),
      [401, 401, 429, 401, 429],
    );
  });
});

describe('switches and metrics', () => {
  test('every limit switched off lets everything through, whatever its numbers', async (t) => {
    const clock = new ManualClock();
    const gw = await startGateway(t, {
      clock,
      settings: () => ({
        tokenLimits: {
          perAddress: { enabled: false, ratePerSecond: 0.001, burst: 1 },
          perClient: { enabled: false, ratePerSecond: 0.001, burst: 1 },
          failedSecretBackoff: { enabled: false, freeFailures: 0 },
        },
      }),
    });
    for (let i = 0; i < 5; i++) {
      assert.equal(await attempt(gw.url, '127.0.0.2', CLIENT_ID, WRONG), '401');
    }
    for (let i = 0; i < 5; i++) assert.equal(await attempt(gw.url, '127.0.0.2'), '200');
    const text = await scrape(gw.adminUrl);
    for (const reason of ['address', 'client', 'backoff']) {
      assert.equal(sample(text, `portaria_token_limit_refusals_total{reason="${reason}"}`), 0);
    }
  });

  const oneOff: [string, Record<string, unknown>, string][] = [
    [
      // The first token makes the address known: the next ones come from the bucket of
      // the client's known pairs (also a burst of 2).
      'perAddress off: the per-client limit still applies',
      {
        perAddress: { enabled: false, ratePerSecond: 1, burst: 1 },
        perClient: { ratePerSecond: 1, burst: 2 },
        failedSecretBackoff: { freeFailures: 100 },
      },
      '200,200,200,429 after 1',
    ],
    [
      'perClient off: the per-address limit still applies',
      {
        perAddress: { ratePerSecond: 1, burst: 2 },
        perClient: { enabled: false, ratePerSecond: 1, burst: 1 },
        failedSecretBackoff: { freeFailures: 100 },
      },
      '200,200,429 after 1',
    ],
    [
      'failedSecretBackoff off: wrong secrets never block, the buckets still apply',
      {
        perAddress: { ratePerSecond: 1, burst: 3 },
        perClient: { ratePerSecond: 1, burst: 100 },
        failedSecretBackoff: { enabled: false, freeFailures: 0 },
      },
      '401,401,401,429 after 1',
    ],
  ];
  for (const [name, tokenLimits, expected] of oneOff) {
    test(name, async (t) => {
      const clock = new ManualClock();
      const gw = await startGateway(t, { clock, settings: () => ({ tokenLimits }) });
      const secret = name.startsWith('failedSecretBackoff') ? WRONG : CLIENT_SECRET;
      const answers: string[] = [];
      for (let i = 0; i < expected.split(',').length; i++) {
        answers.push(await attempt(gw.url, '127.0.0.2', CLIENT_ID, secret));
      }
      assert.equal(answers.join(','), expected);
    });
  }

  test('the defaults are on: 20 requests from one address pass, the 21st is refused', async (t) => {
    const clock = new ManualClock();
    const gw = await startGateway(t, { clock, settings: () => ({ tokenLimits: {} }) });
    for (let i = 0; i < 20; i++) {
      assert.equal(await attempt(gw.url, '127.0.0.2', `client-${i}`, WRONG), '401');
    }
    assert.equal(await attempt(gw.url, '127.0.0.2'), '429 after 1');
  });

  test('refusals are counted by reason, and as rate_limited token outcomes', async (t) => {
    const clock = new ManualClock();
    const gw = await startGateway(
      t,
      limited(clock, {
        perAddress: { enabled: true, ratePerSecond: 1, burst: 3 },
        perClient: { enabled: true, ratePerSecond: 1, burst: 2 },
        failedSecretBackoff: { enabled: true, freeFailures: 0, baseDelayMs: 60_000 },
      }),
    );
    assert.equal(await attempt(gw.url, '127.0.0.2', 'reader', WRONG), '401');
    assert.equal(await attempt(gw.url, '127.0.0.2', 'reader', WRONG), '429 after 60');
    assert.equal(await attempt(gw.url, '127.0.0.2'), '200');
    assert.equal(await attempt(gw.url, '127.0.0.2'), '429 after 1');
    assert.equal(await attempt(gw.url, '127.0.0.3'), '200');
    assert.equal(await attempt(gw.url, '127.0.0.4'), '429 after 1');
    const text = await scrape(gw.adminUrl);
    const refusals = (reason: string) =>
      sample(text, `portaria_token_limit_refusals_total{reason="${reason}"}`);
    assert.deepEqual([refusals('address'), refusals('client'), refusals('backoff')], [1, 1, 1]);
    assert.equal(sample(text, 'portaria_token_requests_total{outcome="rate_limited"}'), 3);
    assert.equal(sample(text, 'portaria_token_requests_total{outcome="issued"}'), 2);
    assert.equal(sample(text, 'portaria_token_requests_total{outcome="invalid_client"}'), 1);
    assert.equal(
      sample(
        text,
        'portaria_http_requests_total{route="token",method="unsafe",status_class="4xx"}',
      ),
      4,
    );
  });
});
