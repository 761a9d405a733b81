import assert from 'node:assert/strict';
import { type TestContext, test } from 'node:test';
import { jwtVerify } from 'jose';
import type { IssuerConfig } from '../../src/config/types.js';
import { PortariaError } from '../../src/errors.js';
import { createIssuerKeySet } from '../../src/issuers/issuerKeySet.js';
import {
  backoffDelayMs,
  RemoteKeySet,
  type RemoteKeySetDeps,
  type SetTimer,
} from '../../src/issuers/remoteKeySet.js';
import { StaticKeySet } from '../../src/issuers/staticKeySet.js';
import { ManualClock } from '../../src/lib/clock.js';
import { forceGcEvery } from '../helpers/forcedGc.js';
import {
  type Behaviour,
  ecKey,
  garbage,
  hang,
  issuerConfig,
  type JwksServer,
  jwksOf,
  oversized,
  recordingHooks,
  redirect,
  reset,
  serve,
  signedBy,
  startJwksServer,
  status,
  trickle,
  within,
} from '../helpers/jwksServer.js';
import { newKeyPair } from '../helpers/keyPairs.js';
import { waitFor } from '../helpers/wait.js';

const A = ecKey('key-a');
const B = ecKey('key-b');

interface Harness {
  server: JwksServer;
  set: RemoteKeySet;
  clock: ManualClock;
  events: ReturnType<typeof recordingHooks>['events'];
  logs: { event: string; detail: Record<string, unknown> }[];
}

/** A JWKS server with `initial` behaviour and a key set on it; `ready` waits for the startup fetch. */
async function harness(
  t: TestContext,
  initial: Behaviour,
  options: {
    config?: Partial<IssuerConfig>;
    deps?: Partial<RemoteKeySetDeps>;
    ready?: boolean;
  } = {},
): Promise<Harness> {
  const server = await startJwksServer(t, initial);
  const clock = new ManualClock();
  const { events, hooks } = recordingHooks();
  const logs: Harness['logs'] = [];
  const set = new RemoteKeySet(issuerConfig({ jwksUri: server.url, ...options.config }), {
    clock,
    hooks,
    log: (event, detail) => logs.push({ event, detail }),
    ...options.deps,
  });
  t.after(() => set.close());
  set.start();
  if (options.ready !== false) await within(set.ready(), 2000, 'the startup fetch');
  return { server, set, clock, events, logs };
}

const outcomes = (h: Harness) => h.events.map((e) => `${e.trigger}:${e.outcome}`);

/** Waits until the hooks have seen `n` outcomes (fetches settle asynchronously). */
const outcomesSeen = (h: Harness, n: number) =>
  waitFor(`${n} fetch outcomes`, () => (h.events.length >= n ? true : undefined));

async function assertUnavailable(
  lookup: () => unknown,
  reason: 'issuer-keys-stale' | 'issuer-keys-missing',
) {
  await assert.rejects(
    async () => lookup(),
    (error: unknown) => {
      assert.ok(error instanceof PortariaError);
      assert.equal(error.code, 'issuer-unavailable');
      assert.equal(error.status, 503);
      assert.equal(error.detail, "The token issuer's keys are unavailable.");
      assert.equal(error.reason, reason);
      return true;
    },
  );
}

test('the startup fetch loads the set and a known kid is answered synchronously with a working key', async (t) => {
  const h = await harness(t, serve(jwksOf(A, B)));
  const key = h.set.getKey('key-a', 'ES256');
  assert.ok(key !== null && !(key instanceof Promise), 'a known kid is answered synchronously');
  assert.equal(key.alg, 'ES256');
  await jwtVerify(await signedBy(A), key.key, { algorithms: ['ES256'] });
  assert.deepEqual(h.set.state(), { usable: true, ageSeconds: 0, keys: 2, lastError: null });
  assert.deepEqual(h.events, [{ issuer: 'partner', trigger: 'startup', outcome: 'ok' }]);
  assert.deepEqual(h.server.paths, ['/jwks']);
});

test('a known kid asked for with another alg is null, without a fetch', async (t) => {
  const h = await harness(t, serve(jwksOf(A)));
  h.clock.advance(60_000);
  assert.equal(h.set.getKey('key-a', 'RS256'), null);
  assert.equal(h.set.getKey('key-a', 'ES384'), null);
  assert.equal(h.server.count(), 1);
});

test('keys that must not verify are skipped and logged; the rest are used', async (t) => {
  const rsa = (bits: number) =>
    newKeyPair('rsa', { modulusLength: bits }).publicKey.export({ format: 'jwk' });
  const ec384 = newKeyPair('ec', { namedCurve: 'P-384' }).publicKey.export({
    format: 'jwk',
  });
  const ed = newKeyPair('ed25519').publicKey.export({ format: 'jwk' });
  const priv = newKeyPair('ec', { namedCurve: 'P-256' }).privateKey.export({
    format: 'jwk',
  });
  const rsa2048 = rsa(2048);
  const cases: Record<string, unknown> = {
    'use enc': { ...A.jwk, kid: 'enc', use: 'enc' },
    'key_ops without verify': { ...A.jwk, kid: 'ops', key_ops: ['encrypt'] },
    'no kid': { ...A.jwk, kid: undefined },
    'kid with a slash': { ...A.jwk, kid: 'a/b' },
    'private d': { ...priv, kid: 'private' },
    'symmetric oct': { kty: 'oct', k: 'c2VjcmV0', kid: 'hmac', alg: 'HS256' },
    'RSA 1024': { ...rsa(1024), kid: 'small-rsa' },
    'alg not allowed': { ...ec384, kid: 'p384' },
    'alg none': { ...A.jwk, kid: 'none', alg: 'none' },
    'alg against curve': { ...ec384, kid: 'mislabelled', alg: 'ES256' },
    'not an object': 'key',
    'duplicate kid': { ...rsa2048, kid: 'key-a' },
  };
  const h = await harness(
    t,
    serve({
      keys: [
        A.jwk,
        ...Object.values(cases),
        { ...rsa2048, kid: 'rsa-implied' },
        { ...rsa2048, kid: 'rsa-pss', alg: 'PS256', use: 'sig', key_ops: ['verify'] },
        { ...ed, kid: 'ed' },
      ],
    }),
    { config: { algorithms: ['ES256', 'EdDSA', 'RS256', 'PS256'] } },
  );
  assert.equal(h.set.state().keys, 4);
  assert.equal((h.set.getKey('key-a', 'ES256') as { alg: string }).alg, 'ES256');
  assert.equal((h.set.getKey('rsa-implied', 'RS256') as { alg: string }).alg, 'RS256');
  assert.equal(h.set.getKey('rsa-implied', 'PS256'), null, 'RSA without alg is RS256 only');
  assert.equal((h.set.getKey('rsa-pss', 'PS256') as { alg: string }).alg, 'PS256');
  assert.equal((h.set.getKey('ed', 'EdDSA') as { alg: string }).alg, 'EdDSA');
  for (const kid of ['enc', 'ops', 'private', 'hmac', 'small-rsa', 'p384', 'none', 'mislabelled']) {
    for (const alg of ['ES256', 'ES384', 'RS256', 'HS256', 'none']) {
      assert.equal(h.set.getKey(kid, alg), null, `${kid} ${alg}`);
    }
  }
  const lines = h.logs.filter((l) => l.event === 'issuer keys skipped');
  assert.equal(lines.length, 1, 'one line per fetch');
  assert.equal(lines[0]?.detail.count, Object.keys(cases).length);
  const skipped = lines[0]?.detail.keys as string[];
  assert.equal(skipped.length, Object.keys(cases).length);
  assert.match(String(skipped[6]), /RSA modulus under 2048 bits/);
  assert.match(String(skipped[11]), /duplicate kid/);
});

test('a set flooded with unusable entries is logged as one line with a count', async (t) => {
  const flood = { keys: [A.jwk, ...Array.from({ length: 5000 }, () => ({}))] };
  const h = await harness(t, serve(flood));
  assert.equal(h.set.state().keys, 1);
  const lines = h.logs.filter((l) => l.event === 'issuer keys skipped');
  assert.equal(lines.length, 1);
  assert.equal(lines[0]?.detail.count, 5000);
  assert.equal((lines[0]?.detail.keys as string[] | undefined)?.length, 20);
});

test('a set with no usable key is invalid and the previous set is kept', async (t) => {
  const h = await harness(t, serve(jwksOf(A)));
  h.server.behaviour = serve({ keys: [{ ...B.jwk, use: 'enc' }] });
  assert.equal(await h.set.refreshNow(), false);
  assert.deepEqual(outcomes(h), ['startup:ok', 'scheduled:invalid']);
  assert.ok(h.set.getKey('key-a', 'ES256'));
  assert.equal(h.set.state().lastError, 'invalid: no usable key');
});

test('1,000 concurrent lookups of random unknown kids cause at most one fetch per cooldown', async (t) => {
  const h = await harness(t, serve(jwksOf(A)));
  const burst = () =>
    Promise.all(
      Array.from({ length: 1000 }, () =>
        h.set.getKey(`kid-${Math.random().toString(36).slice(2)}`, 'ES256'),
      ),
    );
  assert.deepEqual(new Set(await burst()), new Set([null]), 'inside the startup cooldown');
  assert.equal(h.server.count(), 1, 'no fetch within the cooldown of the startup fetch');

  h.clock.advance(30_000);
  assert.deepEqual(new Set(await burst()), new Set([null]));
  assert.equal(h.server.count(), 2, 'one fetch for the whole burst');
  assert.deepEqual(new Set(await burst()), new Set([null]));
  assert.equal(h.server.count(), 2, 'the next burst is inside the cooldown');

  h.clock.advance(30_000);
  await burst();
  assert.equal(h.server.count(), 3, 'exactly one more after the cooldown');
  assert.deepEqual(outcomes(h), ['startup:ok', 'unknown-kid:ok', 'unknown-kid:ok']);
});

test('a malformed kid is null without a fetch', async (t) => {
  const h = await harness(t, serve(jwksOf(A)));
  h.clock.advance(60_000);
  for (const kid of ['k'.repeat(500), 'a/b', '', 'a b', '../../etc', 'ключ', 'k'.repeat(129)]) {
    assert.equal(h.set.getKey(kid, 'ES256'), null, JSON.stringify(kid.slice(0, 20)));
  }
  assert.equal(h.server.count(), 1);
  assert.equal(await h.set.getKey('k'.repeat(128), 'ES256'), null, '128 characters are allowed');
  assert.equal(h.server.count(), 2);
});

test('a kid not found by a fetch is answered null at once for the cooldown, even while a fetch is in flight', async (t) => {
  const h = await harness(t, serve(jwksOf(A)));
  h.clock.advance(30_000);
  assert.equal(await h.set.getKey('ghost', 'ES256'), null);
  assert.equal(h.server.count(), 2);

  const slow = serve(jwksOf(A));
  h.server.behaviour = (req, res, n) => h.server.later(150, () => slow(req, res, n));
  const refresh = h.set.refreshNow();
  assert.equal(h.set.getKey('ghost', 'ES256'), null, 'negative: null synchronously');
  const other = h.set.getKey('other', 'ES256');
  assert.ok(other instanceof Promise, 'an unknown, not-remembered kid joins the fetch in flight');
  assert.equal(await other, null);
  await refresh;
  assert.equal(h.server.count(), 3);

  h.server.behaviour = serve(jwksOf(A));
  h.clock.advance(30_000);
  assert.equal(await h.set.getKey('ghost', 'ES256'), null);
  assert.equal(h.server.count(), 4, 'remembered for the cooldown only');
});

test('a rotation at the issuer is picked up on the first token with the new kid after the cooldown', async (t) => {
  const h = await harness(t, serve(jwksOf(A)));
  h.server.behaviour = serve(jwksOf(B));
  assert.equal(h.set.getKey('key-b', 'ES256'), null, 'inside the cooldown of the last fetch');
  assert.equal(h.server.count(), 1);

  h.clock.advance(30_000);
  const pending = h.set.getKey('key-b', 'ES256');
  assert.ok(pending instanceof Promise);
  const key = await pending;
  assert.ok(key);
  await jwtVerify(await signedBy(B), key.key, { algorithms: ['ES256'] });
  assert.equal(h.set.getKey('key-a', 'ES256'), null, 'the removed key is gone');
  assert.deepEqual(outcomes(h), ['startup:ok', 'unknown-kid:ok']);
});

test('a slow key server times out and the previous set still serves', async (t) => {
  const h = await harness(t, serve(jwksOf(A)), { config: { fetchTimeoutMs: 100 } });
  h.server.behaviour = (req, res, n) => h.server.later(1000, () => serve(jwksOf(B))(req, res, n));
  h.clock.advance(30_000);
  const started = performance.now();
  assert.equal(await h.set.getKey('key-b', 'ES256'), null);
  assert.ok(performance.now() - started < 900, 'the timeout bounds the wait');
  assert.deepEqual(outcomes(h), ['startup:ok', 'unknown-kid:timeout']);
  assert.ok(h.set.getKey('key-a', 'ES256'));
  assert.match(String(h.set.state().lastError), /^timeout: /);
});

test('an unknown kid while the key server hangs is answered null at the fetch deadline, through forced garbage collections', async (t) => {
  forceGcEvery(t);
  const h = await harness(t, serve(jwksOf(A)), { config: { fetchTimeoutMs: 300 } });
  h.server.behaviour = hang();
  h.clock.advance(30_000);
  const started = performance.now();
  assert.equal(
    await within(Promise.resolve(h.set.getKey('key-b', 'ES256')), 5000, 'the lookup'),
    null,
  );
  assert.ok(performance.now() - started < 3000, 'the deadline bounds the wait');
  assert.deepEqual(outcomes(h), ['startup:ok', 'unknown-kid:timeout']);
  assert.ok(h.set.getKey('key-a', 'ES256'), 'the held set still answers');
});

test('a download from a key server that trickles forever ends at the fetch deadline, through forced garbage collections', async (t) => {
  forceGcEvery(t);
  const h = await harness(t, serve(jwksOf(A)), { config: { fetchTimeoutMs: 500 } });
  h.server.behaviour = trickle(100);
  const started = performance.now();
  assert.equal(await within(h.set.refreshNow(), 5000, 'the refresh'), false);
  assert.ok(performance.now() - started < 3500, 'the deadline bounds the body too');
  assert.deepEqual(outcomes(h), ['startup:ok', 'scheduled:timeout']);
  assert.match(String(h.set.state().lastError), /^timeout: no complete answer within 500 ms$/);
});

test('a set past its max age whose key server hangs answers known kids at once and downloads again after the deadline', async (t) => {
  forceGcEvery(t);
  const h = await harness(t, serve(jwksOf(A)), {
    config: { fetchTimeoutMs: 300, cacheMaxAgeSeconds: 600, maxStalenessSeconds: 3600 },
    deps: { backoffBaseMs: 50, backoffMaxMs: 100 },
  });
  h.server.behaviour = hang();
  h.clock.advance(601_000);
  const key = h.set.getKey('key-a', 'ES256');
  assert.ok(key !== null && !(key instanceof Promise), 'a known kid is answered synchronously');
  await jwtVerify(await signedBy(A), key.key, { algorithms: ['ES256'] });
  await waitFor(
    'the background download to time out',
    () => (outcomes(h).includes('scheduled:timeout') ? true : undefined),
    5000,
  );
  h.server.behaviour = serve(jwksOf(A, B));
  await waitFor(
    'a later download to succeed',
    () => (outcomes(h).includes('retry:ok') ? true : undefined),
    5000,
  );
  assert.ok(h.set.getKey('key-b', 'ES256'), 'the new set is held');
  assert.equal(h.set.state().lastError, null);
});

test('past max age and max staleness, a lookup waiting on a hanging download is a 503 at the deadline', async (t) => {
  forceGcEvery(t);
  const h = await harness(t, serve(jwksOf(A)), {
    config: { fetchTimeoutMs: 300, cacheMaxAgeSeconds: 600, maxStalenessSeconds: 3600 },
    deps: { backoffBaseMs: 60_000 },
  });
  h.server.behaviour = hang();
  h.clock.advance(601_000);
  assert.ok(h.set.getKey('key-a', 'ES256'), 'inside max staleness: served, download started');
  await waitFor(
    'the download to reach the server',
    () => (h.server.count() === 2 ? true : undefined),
    5000,
  );
  h.clock.advance(3_600_000);
  const started = performance.now();
  await assertUnavailable(
    () => within(Promise.resolve(h.set.getKey('key-a', 'ES256')), 5000, 'the lookup'),
    'issuer-keys-stale',
  );
  assert.ok(performance.now() - started < 3000, 'the deadline bounds the wait');
  assert.deepEqual(outcomes(h), ['startup:ok', 'scheduled:timeout']);
});

test('while the key server is down, keys are served until cacheMaxAge + maxStaleness, then 503', async (t) => {
  const h = await harness(t, serve(jwksOf(A)), {
    config: { cacheMaxAgeSeconds: 600, maxStalenessSeconds: 3600 },
    deps: { backoffBaseMs: 60_000 },
  });
  await h.server.stop();
  h.clock.advance(600_000);
  assert.ok(h.set.getKey('key-a', 'ES256'), 'past max age: stale but served');
  await outcomesSeen(h, 2);
  assert.deepEqual(outcomes(h), ['startup:ok', 'scheduled:error'], 'and a refresh was tried');
  assert.match(String(h.set.state().lastError), /ECONNREFUSED/);

  h.clock.advance(3_599_000);
  assert.ok(h.set.getKey('key-a', 'ES256'), 'one second before the limit');
  assert.equal(h.set.state().usable, true);

  h.clock.advance(1000);
  await assertUnavailable(() => h.set.getKey('key-a', 'ES256'), 'issuer-keys-stale');
  await assertUnavailable(() => h.set.getKey('unknown', 'ES256'), 'issuer-keys-stale');
  assert.equal(h.set.state().usable, false);
  assert.equal(h.set.state().ageSeconds, 4200);
});

test('a key server answering 500 or resetting loses no lookup inside maxStaleness', async (t) => {
  for (const [name, behaviour] of [
    ['500', status(500)],
    ['reset', reset()],
  ] as const) {
    await t.test(name, async (t) => {
      const h = await harness(t, serve(jwksOf(A)));
      h.server.behaviour = behaviour;
      h.clock.advance(1_000_000);
      assert.equal(await h.set.refreshNow(), false);
      assert.deepEqual(outcomes(h), ['startup:ok', 'scheduled:error']);
      assert.ok(h.set.getKey('key-a', 'ES256'));
    });
  }
});

test('before the first successful fetch a lookup is a 503', async (t) => {
  const h = await harness(t, status(500), { ready: false });
  await outcomesSeen(h, 1);
  assert.deepEqual(outcomes(h), ['startup:error']);
  await assertUnavailable(() => h.set.getKey('key-a', 'ES256'), 'issuer-keys-missing');
  assert.deepEqual(h.set.state(), {
    usable: false,
    ageSeconds: null,
    keys: 0,
    lastError: 'error: HTTP 500',
  });
});

test('a bad answer is reported with its outcome and the previous set is kept', async (t) => {
  const cases: [string, Behaviour, string][] = [
    ['garbage body', garbage(), 'invalid'],
    ['JSON without keys', serve({ keys: 'none' }), 'invalid'],
    ['JSON array', serve([A.jwk]), 'invalid'],
    ['oversized, declared', oversized(true), 'too-large'],
    ['oversized, chunked', oversized(false), 'too-large'],
    ['status 404', status(404), 'error'],
    ['status 204', status(204), 'error'],
  ];
  for (const [name, behaviour, outcome] of cases) {
    await t.test(name, async (t) => {
      const h = await harness(t, serve(jwksOf(A)));
      h.server.behaviour = behaviour;
      assert.equal(await h.set.refreshNow(), false);
      assert.deepEqual(outcomes(h), ['startup:ok', `scheduled:${outcome}`]);
      assert.ok(h.set.getKey('key-a', 'ES256'));
      assert.equal(h.set.state().keys, 1);
    });
  }
});

test('an older, slower fetch finishing after a newer one does not overwrite it', async (t) => {
  const h = await harness(t, serve(jwksOf(A)));
  const slowA = serve(jwksOf(A));
  h.server.behaviour = (req, res, n) => {
    if (n === 2) h.server.later(200, () => slowA(req, res, n));
    else serve(jwksOf(B))(req, res, n);
  };
  const older = h.set.refreshNow();
  await waitFor('the older request to arrive', () => (h.server.count() === 2 ? true : undefined));
  const newer = h.set.refreshNow();
  assert.equal(await newer, true);
  assert.ok(h.set.getKey('key-b', 'ES256'));
  assert.equal(await older, true);
  assert.ok(h.set.getKey('key-b', 'ES256'), 'B remains');
  assert.equal(h.set.getKey('key-a', 'ES256'), null);
  assert.deepEqual(outcomes(h), ['startup:ok', 'scheduled:ok', 'scheduled:ok']);
  assert.ok(h.logs.some((l) => l.event === 'issuer keys result discarded'));
});

/** A timer the test fires by hand; records every delay asked for. */
function manualTimers() {
  const armed: { delay: number; fire: () => void; cancelled: boolean }[] = [];
  const setTimer: SetTimer = (callback, delay) => {
    const timer = { delay, fire: callback, cancelled: false };
    armed.push(timer);
    return () => {
      timer.cancelled = true;
    };
  };
  const pending = () => armed.filter((x) => !x.cancelled);
  return { armed, pending, setTimer };
}

test('the background refresh is armed for 80 % of max age and decided by the clock', async (t) => {
  const timers = manualTimers();
  const h = await harness(t, serve(jwksOf(A)), {
    config: { cacheMaxAgeSeconds: 10 },
    deps: { setTimer: timers.setTimer },
  });
  assert.deepEqual(
    timers.armed.map((x) => x.delay),
    [8000],
  );
  const first = timers.armed[0];
  assert.ok(first);

  first.fire();
  assert.equal(h.server.count(), 1, 'fired early by the clock: no fetch');
  assert.deepEqual(
    timers.armed.map((x) => x.delay),
    [8000, 8000],
    're-armed for the rest',
  );

  h.server.behaviour = serve(jwksOf(B));
  h.clock.advance(8000);
  timers.armed[1]?.fire();
  await outcomesSeen(h, 2);
  assert.deepEqual(outcomes(h), ['startup:ok', 'scheduled:ok']);
  assert.ok(h.set.getKey('key-b', 'ES256'));
  assert.equal(h.set.state().ageSeconds, 0);
  assert.equal(timers.pending().at(-1)?.delay, 8000, 'and armed again from the new set');
});

test('failed fetches are retried with jittered backoff until the server comes back', async (t) => {
  assert.equal(
    backoffDelayMs(0, 1000, 60_000, () => 0),
    500,
  );
  assert.equal(
    backoffDelayMs(0, 1000, 60_000, () => 1),
    1000,
  );
  assert.equal(
    backoffDelayMs(3, 1000, 60_000, () => 1),
    8000,
  );
  assert.equal(
    backoffDelayMs(10, 1000, 60_000, () => 1),
    60_000,
  );
  assert.equal(
    backoffDelayMs(10, 1000, 60_000, () => 0.5),
    45_000,
  );
  assert.equal(
    backoffDelayMs(1e6, 1000, 60_000, () => 0),
    30_000,
  );

  const delays: number[] = [];
  const recording: SetTimer = (callback, delay) => {
    delays.push(delay);
    const timer = setTimeout(callback, delay);
    return () => clearTimeout(timer);
  };
  const h = await harness(t, status(503), {
    ready: false,
    deps: { setTimer: recording, random: () => 0, backoffBaseMs: 20, backoffMaxMs: 50 },
  });
  await outcomesSeen(h, 4);
  h.server.behaviour = serve(jwksOf(A));
  await within(h.set.ready(), 2000, 'a retry to succeed');
  const seen = outcomes(h);
  assert.deepEqual(seen.slice(0, 4), [
    'startup:error',
    'retry:error',
    'retry:error',
    'retry:error',
  ]);
  assert.equal(seen.at(-1), 'retry:ok');
  assert.deepEqual(delays.slice(0, 4), [10, 20, 25, 25]);
  assert.ok(h.set.getKey('key-a', 'ES256'));
  assert.equal(h.set.state().lastError, null);
});

test('a redirect is not followed', async (t) => {
  const h = await harness(t, redirect('/elsewhere'), { ready: false });
  h.server.behaviour = (req, res, n) =>
    req.url === '/elsewhere' ? serve(jwksOf(A))(req, res, n) : redirect('/elsewhere')(req, res, n);
  await outcomesSeen(h, 1);
  assert.deepEqual(outcomes(h), ['startup:error']);
  assert.deepEqual(h.server.paths, ['/jwks']);
  assert.equal(h.set.state().usable, false);
});

test('close() cancels the timers and aborts a fetch in flight', async (t) => {
  const timers = manualTimers();
  const h = await harness(t, serve(jwksOf(A)), { deps: { setTimer: timers.setTimer } });
  assert.equal(timers.pending().length, 1, 'the refresh timer');
  h.server.behaviour = () => {};
  const inFlight = h.set.refreshNow();
  await waitFor('the request to arrive', () => (h.server.count() === 2 ? true : undefined));
  h.set.close();
  assert.equal(await within(inFlight, 1000, 'the aborted fetch'), false);
  assert.deepEqual(outcomes(h), ['startup:ok', 'scheduled:error']);
  assert.equal(timers.pending().length, 0, 'no timer left, no retry armed');
  assert.ok(h.set.getKey('key-a', 'ES256'), 'the held set still answers');
});

test('hooks see every outcome with its trigger and the issuer id', async (t) => {
  const h = await harness(t, serve(jwksOf(A)), { config: { id: 'acme-idp' } });
  h.clock.advance(30_000);
  await h.set.getKey('nope', 'ES256');
  h.server.behaviour = garbage();
  await h.set.refreshNow('retry');
  assert.deepEqual(h.events, [
    { issuer: 'acme-idp', trigger: 'startup', outcome: 'ok' },
    { issuer: 'acme-idp', trigger: 'unknown-kid', outcome: 'ok' },
    { issuer: 'acme-idp', trigger: 'retry', outcome: 'invalid' },
  ]);
});

test('createIssuerKeySet picks the source from the configuration', (t) => {
  const clock = new ManualClock();
  const remote = createIssuerKeySet(issuerConfig({ jwksUri: 'http://127.0.0.1:9/jwks' }), {
    clock,
  });
  const file = createIssuerKeySet(issuerConfig({ keyFile: '/nonexistent/keys.json' }), { clock });
  t.after(() => {
    remote.close();
    file.close();
  });
  assert.ok(remote instanceof RemoteKeySet);
  assert.ok(file instanceof StaticKeySet);
  assert.throws(() => createIssuerKeySet(issuerConfig(), { clock }), /neither jwksUri nor keyFile/);
});
