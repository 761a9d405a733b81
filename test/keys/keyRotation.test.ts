import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { T0, transitions, type WalkOptions, walkRotation } from './rotationWalk.js';

const S = 1000;
const MAX_AGE = 300;
const SKEW = 60;
const LIFETIME = 3600;
const ACTIVATE = (MAX_AGE + SKEW) * S;
const REMOVE = ACTIVATE + (LIFETIME + SKEW) * S;

function options(overrides: Partial<WalkOptions> = {}): WalkOptions {
  const start = T0 - 600 * S;
  return {
    rotation: { jwksMaxAgeSeconds: MAX_AGE, clockSkewSeconds: SKEW, maxLifetimeSeconds: LIFETIME },
    cacheMaxAgeSeconds: MAX_AGE,
    tokenLifetimeSeconds: LIFETIME,
    verifierSkewSeconds: SKEW,
    replicaOffsetsMs: [0],
    stepMs: 30 * S,
    startMs: start,
    endMs: T0 + REMOVE + 3600 * S,
    boundariesMs: [T0, T0 + ACTIVATE, T0 + REMOVE],
    // Every phase of the cache period, and just before each boundary.
    verifierFirstFetchMs: [
      ...Array.from({ length: MAX_AGE / 30 }, (_, k) => start + k * 30 * S),
      T0 - 1,
      T0 + ACTIVATE - 1,
      T0 + REMOVE - 1,
    ],
    ...overrides,
  };
}

function firstFailures(failures: readonly string[]): string {
  return `${failures.length} failures:\n${failures.slice(0, 10).join('\n')}`;
}

describe('key rotation, walked with a fake clock', () => {
  test('no token ever fails verification, at the gateway or at a verifier caching the JWKS', async (t) => {
    const walk = await walkRotation(t, options());
    const { a, b, steps } = walk;
    assert.deepEqual(walk.failures, [], firstFailures(walk.failures));
    assert.ok(walk.tokens.length > 250, `${walk.tokens.length} tokens`);
    assert.ok(walk.verified > 100_000, `${walk.verified} verifications`);

    // The schedule keys rotate wrote.
    assert.deepEqual(walk.rotation.added.schedule, {
      publishAt: T0,
      activateAt: T0 + ACTIVATE,
      retireAt: null,
      removeAt: null,
    });
    assert.deepEqual(walk.rotation.retiring, [
      {
        kid: a,
        schedule: { publishAt: 0, activateAt: 0, retireAt: T0 + ACTIVATE, removeAt: T0 + REMOVE },
      },
    ]);

    // A signs until B's activateAt, B from then on.
    for (const step of steps) {
      assert.equal(step.signer, step.now < T0 + ACTIVATE ? a : b, `signer at ${step.now - T0}`);
    }
    // B is in the JWKS max-age + skew before its first token.
    const firstPublished = steps.find((s) => s.published.includes(b))?.now ?? Number.NaN;
    const firstSigned = steps.find((s) => s.signer === b)?.now ?? Number.NaN;
    assert.equal(firstPublished, T0);
    assert.equal(firstSigned, T0 + ACTIVATE);
    assert.ok(firstSigned - firstPublished >= (MAX_AGE + SKEW) * S);
    // A leaves the JWKS only once its last token expired, plus the skew.
    const lastExpiry = Math.max(...walk.tokens.filter((x) => x.kid === a).map((x) => x.exp));
    const removed = steps.find((s) => s.now > T0 && !s.published.includes(a))?.now ?? Number.NaN;
    assert.equal(removed, T0 + REMOVE);
    assert.ok(removed >= lastExpiry + SKEW * S, `removed ${removed - lastExpiry} ms after expiry`);
    assert.ok(steps.filter((s) => s.now < removed).every((s) => s.published.includes(a)));

    assert.deepEqual(transitions(steps), {
      [a]: [
        [-600 * S, 'active'],
        [ACTIVATE, 'retiring'],
        [REMOVE, 'retired'],
      ],
      [b]: [
        [0, 'pending'],
        [ACTIVATE, 'active'],
      ],
    });
    // The JWKS text is rebuilt only at the reload (T0) and when A leaves, not per step.
    assert.deepEqual(
      steps.filter((s) => !s.sameJwksJson).map((s) => s.now - T0),
      [-600 * S, 0, REMOVE],
    );
  });

  test('ES256 → PS256: PS256 signs from the hand-over on replicas still configured for ES256, and the ES256 key stays published until its last token expired', async (t) => {
    const walk = await walkRotation(
      t,
      options({
        from: 'ES256',
        to: 'PS256',
        stepMs: 60 * S,
        verifierFirstFetchMs: [T0 - 600 * S, T0 - 1, T0 + 150 * S, T0 + ACTIVATE - 1],
      }),
    );
    const { a, b, steps } = walk;
    assert.deepEqual(walk.failures, [], firstFailures(walk.failures));
    assert.equal(walk.rotation.alg, 'PS256');
    assert.deepEqual(
      walk.rotation.retiring.map((r) => [r.kid, r.schedule.retireAt, r.schedule.removeAt]),
      [[a, T0 + ACTIVATE, T0 + REMOVE]],
    );
    // Replica 0 signs ES256 with A until the hand-over, PS256 with B from then on.
    const algs = new Map(walk.tokens.map((x) => [x.kid, x.alg]));
    assert.deepEqual([algs.get(a), algs.get(b)], ['ES256', 'PS256']);
    for (const step of steps) {
      assert.equal(step.signer, step.now < T0 + ACTIVATE ? a : b, `signer at ${step.now - T0}`);
    }
    // A stays in the JWKS until its last token expired, plus the skew.
    const lastExpiry = Math.max(...walk.tokens.filter((x) => x.kid === a).map((x) => x.exp));
    const removed = steps.find((s) => s.now > T0 && !s.published.includes(a))?.now ?? Number.NaN;
    assert.equal(removed, T0 + REMOVE);
    assert.ok(removed >= lastExpiry + SKEW * S, `removed ${removed - lastExpiry} ms after expiry`);
    assert.deepEqual(transitions(steps), {
      [a]: [
        [-600 * S, 'active'],
        [ACTIVATE, 'retiring'],
        [REMOVE, 'retired'],
      ],
      [b]: [
        [0, 'pending'],
        [ACTIVATE, 'active'],
      ],
    });
  });

  test('ES256 → PS256: the replicas may take token.algorithm PS256 at any moment after the hand-over', async (t) => {
    const walk = await walkRotation(
      t,
      options({
        from: 'ES256',
        to: 'PS256',
        replicaOffsetsMs: [-(SKEW / 2) * S, 0, (SKEW / 2) * S],
        stepMs: 60 * S,
        reconfiguredAtMs: T0 + ACTIVATE + SKEW * S + 1,
        verifierFirstFetchMs: [T0 - 1, T0 + ACTIVATE - 1],
      }),
    );
    assert.deepEqual(walk.failures, [], firstFailures(walk.failures));
    const after = walk.steps.filter((s) => s.now > T0 + ACTIVATE + SKEW * S);
    assert.ok(after.length > 0 && after.every((s) => s.signer === walk.b));
    // Under PS256 the ES256 key is on its way out, not unused.
    assert.ok(after.every((s) => s.states[walk.a] !== 'active'));
  });

  test('replicas whose clocks differ by up to the skew agree without talking', async (t) => {
    const walk = await walkRotation(
      t,
      options({ replicaOffsetsMs: [-(SKEW / 2) * S, 0, (SKEW / 2) * S] }),
    );
    assert.deepEqual(walk.failures, [], firstFailures(walk.failures));
    assert.ok(
      walk.tokens.some((x) => x.kid === walk.a) && walk.tokens.some((x) => x.kid === walk.b),
    );
  });

  test('the walk catches a rotation that does not publish ahead (control)', async (t) => {
    const walk = await walkRotation(
      t,
      options({
        rotation: { jwksMaxAgeSeconds: 0, clockSkewSeconds: 0, maxLifetimeSeconds: LIFETIME },
        boundariesMs: [T0, T0 + LIFETIME * S],
      }),
    );
    assert.ok(walk.failures.length > 0);
    assert.ok(
      walk.failures.every(
        (f) => /verifier \d+ .* refuses token \d+ \(.{8}, /.test(f) && f.includes(walk.b.slice(-8)),
      ),
      firstFailures(walk.failures),
    );
  });

  test('the walk catches a key removed before its tokens expire (control)', async (t) => {
    const walk = await walkRotation(
      t,
      options({
        rotation: { jwksMaxAgeSeconds: MAX_AGE, clockSkewSeconds: SKEW, maxLifetimeSeconds: 600 },
        boundariesMs: [T0, T0 + ACTIVATE, T0 + ACTIVATE + 660 * S],
      }),
    );
    assert.ok(walk.failures.length > 0);
    assert.ok(walk.failures.some((f) => /replica 0 has no key for token/.test(f)));
    assert.ok(
      walk.failures.every((f) => f.includes(`(${walk.a.slice(-8)}, `)),
      firstFailures(walk.failures),
    );
  });

  test('the walk catches replicas further apart than the skew (control)', async (t) => {
    const walk = await walkRotation(t, options({ replicaOffsetsMs: [-70 * S, 0, 70 * S] }));
    assert.ok(walk.failures.length > 0);
  });
});
