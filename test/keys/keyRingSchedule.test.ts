import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PortariaError } from '../../src/errors.js';
import { KeyRing, type LoadedKey } from '../../src/keys/keyRing.js';
import type { KeySchedule } from '../../src/keys/keySchedule.js';
import { ManualClock } from '../../src/lib/clock.js';
import { newPrivateKey } from './keyFixtures.js';

const T0 = Date.UTC(2026, 0, 1);
const MIN = 60_000;

function key(kid: string, alg: LoadedKey['alg'] = 'ES256'): LoadedKey {
  return { kid, alg, privateKey: newPrivateKey(alg) };
}

function at(
  publish: number,
  activate: number,
  retire: number | null = null,
  remove: number | null = null,
): KeySchedule {
  const t = (m: number | null) => (m === null ? null : T0 + m * MIN);
  return {
    publishAt: T0 + publish * MIN,
    activateAt: T0 + activate * MIN,
    retireAt: t(retire),
    removeAt: t(remove),
  };
}

/** old (unscheduled? no: scheduled) signs until +10 min; next is published at 0, signs from +10. */
function rotating(clock: ManualClock): KeyRing {
  return new KeyRing(
    [key('a-old'), key('b-next'), key('c-eddsa', 'EdDSA')],
    new Map([
      ['a-old', at(-100, -100, 10, 70)],
      ['b-next', at(0, 10)],
    ]),
    'ES256',
    clock,
  );
}

describe('KeyRing with a schedule', () => {
  test('signs with the key whose activateAt is latest among those active now', () => {
    const clock = new ManualClock(T0 - MIN);
    const keys = rotating(clock);
    assert.equal(keys.signingKey.kid, 'a-old');
    clock.set(T0 + 10 * MIN - 1);
    assert.equal(keys.signingKey.kid, 'a-old');
    clock.set(T0 + 10 * MIN);
    assert.equal(keys.signingKey.kid, 'b-next');
    assert.equal(keys.signingKey.alg, 'ES256');
    // Going back in time goes back to the old signer: nothing is latched.
    clock.set(T0);
    assert.equal(keys.signingKey.kid, 'a-old');
  });

  test('breaks an activateAt tie by the greatest kid, and prefers a scheduled key to unscheduled ones', () => {
    const clock = new ManualClock(T0);
    const keys = new KeyRing(
      [key('x'), key('y'), key('zz-unscheduled')],
      new Map([
        ['x', at(-1, -1)],
        ['y', at(-1, -1)],
      ]),
      'ES256',
      clock,
    );
    assert.equal(keys.signingKey.kid, 'y');
  });

  test('answers 503 no-active-key once the last signer retired', () => {
    const clock = new ManualClock(T0);
    const keys = new KeyRing([key('a')], new Map([['a', at(-1, -1, 5, 10)]]), 'ES256', clock);
    assert.equal(keys.signingKey.kid, 'a');
    clock.set(T0 + 5 * MIN);
    assert.throws(
      () => keys.signingKey,
      (err: unknown) => err instanceof PortariaError && err.reason === 'no-active-key',
    );
    assert.equal(keys.verificationKey('a')?.alg, 'ES256');
    assert.equal(keys.activeKeyAgeSeconds(), null);
  });

  test('hands signing to a key of another algorithm once a rotation retired the configured one', () => {
    const clock = new ManualClock(T0);
    const keys = [key('a-es256'), key('b-ps256', 'PS256'), key('c-eddsa', 'EdDSA')];
    const schedule = new Map([
      ['a-es256', at(-100, -100, 10, 70)],
      ['b-ps256', at(0, 10)],
    ]);
    const es256 = new KeyRing(keys, schedule, 'ES256', clock);
    const ps256 = new KeyRing(keys, schedule, 'PS256', clock);
    assert.equal(es256.signingKey.kid, 'a-es256');
    // A PS256 gateway never signs ES256: before the hand-over it has no signer.
    assert.throws(
      () => ps256.signingKey,
      (err: unknown) => err instanceof PortariaError && err.reason === 'no-active-key',
    );
    clock.set(T0 + 10 * MIN);
    assert.deepEqual([es256.signingKey.kid, es256.signingKey.alg], ['b-ps256', 'PS256']);
    assert.equal(ps256.signingKey.kid, 'b-ps256');
    // The unscheduled EdDSA key never takes over.
    assert.equal(es256.states().find((k) => k.kid === 'c-eddsa')?.state, 'retiring');
  });

  test('a key of another algorithm without a schedule entry never signs, even with none left', () => {
    const clock = new ManualClock(T0 + 10 * MIN);
    const keys = new KeyRing(
      [key('a'), key('b-eddsa', 'EdDSA')],
      new Map([['a', at(-1, -1, 5, 10)]]),
      'ES256',
      clock,
    );
    assert.throws(
      () => keys.signingKey,
      (err: unknown) => err instanceof PortariaError && err.reason === 'no-active-key',
    );
  });

  test('verifies with a key only from publishAt until removeAt', () => {
    const clock = new ManualClock(T0 - 1);
    const keys = rotating(clock);
    assert.equal(keys.verificationKey('b-next'), undefined);
    clock.set(T0);
    assert.equal(keys.verificationKey('b-next')?.alg, 'ES256');
    clock.set(T0 + 70 * MIN - 1);
    assert.equal(keys.verificationKey('a-old')?.alg, 'ES256');
    clock.set(T0 + 70 * MIN);
    assert.equal(keys.verificationKey('a-old'), undefined);
    assert.equal(keys.verificationKey('c-eddsa')?.alg, 'EdDSA');
  });

  test('publishes exactly the keys within publishAt ≤ now < removeAt', () => {
    const clock = new ManualClock(T0 - 1);
    const keys = rotating(clock);
    const kids = () => keys.jwks().keys.map((k) => k.kid);
    assert.deepEqual(kids(), ['c-eddsa', 'a-old']);
    clock.set(T0);
    assert.deepEqual(kids(), ['c-eddsa', 'b-next', 'a-old']);
    clock.set(T0 + 70 * MIN);
    assert.deepEqual(kids(), ['c-eddsa', 'b-next']);
    assert.equal(keys.jwksJson(), JSON.stringify(keys.jwks()));
  });

  test('returns the identical JWKS string and object until a publishAt or removeAt passes', () => {
    const clock = new ManualClock(T0 - 50 * MIN);
    const keys = rotating(clock);
    const json = keys.jwksJson();
    const doc = keys.jwks();
    assert.ok(Object.isFrozen(doc) && Object.isFrozen(doc.keys));
    for (const m of [-40, -1, -0.001]) {
      clock.set(T0 + m * MIN);
      assert.equal(keys.jwksJson(), json);
      assert.equal(keys.jwks(), doc);
    }
    clock.set(T0);
    const published = keys.jwksJson();
    assert.notEqual(published, json);
    // An activateAt or retireAt (+10 min) changes the signer, not the JWKS.
    for (const m of [1, 10, 11, 69]) {
      clock.set(T0 + m * MIN);
      assert.equal(keys.jwksJson(), published);
    }
    clock.set(T0 + 70 * MIN);
    const removed = keys.jwksJson();
    assert.notEqual(removed, published);
    assert.equal(JSON.parse(removed).keys.length, 2);
    clock.set(T0 + 1000 * MIN);
    assert.equal(keys.jwksJson(), removed);
  });

  test('reports pending, active, retiring and retired states with their times', () => {
    const clock = new ManualClock(T0 - MIN);
    const keys = rotating(clock);
    const states = () => Object.fromEntries(keys.states().map((k) => [k.kid, k.state]));
    assert.deepEqual(states(), { 'c-eddsa': 'retiring', 'b-next': 'pending', 'a-old': 'active' });
    clock.set(T0);
    assert.deepEqual(states(), { 'c-eddsa': 'retiring', 'b-next': 'pending', 'a-old': 'active' });
    clock.set(T0 + 10 * MIN);
    assert.deepEqual(states(), { 'c-eddsa': 'retiring', 'b-next': 'active', 'a-old': 'retiring' });
    clock.set(T0 + 70 * MIN);
    assert.deepEqual(states(), { 'c-eddsa': 'retiring', 'b-next': 'active', 'a-old': 'retired' });
    const b = keys.states().find((k) => k.kid === 'b-next');
    assert.deepEqual(b, {
      kid: 'b-next',
      alg: 'ES256',
      state: 'active',
      publishAt: T0,
      activateAt: T0 + 10 * MIN,
      retireAt: null,
      removeAt: null,
    });
  });

  test('calls an activated key that a newer one superseded retiring, though it has not retired', () => {
    const clock = new ManualClock(T0);
    const keys = new KeyRing(
      [key('a'), key('b')],
      new Map([
        ['a', at(-10, -10)],
        ['b', at(-5, -5)],
      ]),
      'ES256',
      clock,
    );
    assert.deepEqual(
      keys.states().map((k) => [k.kid, k.state]),
      [
        ['b', 'active'],
        ['a', 'retiring'],
      ],
    );
  });

  test('measures the active key age from its activateAt', () => {
    const clock = new ManualClock(T0 + 10 * MIN);
    const keys = rotating(clock);
    assert.equal(keys.activeKeyAgeSeconds(), 0);
    clock.advance(90_500);
    assert.equal(keys.activeKeyAgeSeconds(), 90.5);
    clock.set(T0);
    assert.equal(keys.activeKeyAgeSeconds(), 100 * 60);
  });

  test('tells how long the active key has until its scheduled retirement', () => {
    const clock = new ManualClock(T0);
    const keys = rotating(clock);
    assert.equal(keys.activeKeyRetiresInSeconds(), 10 * 60);
    clock.advance(9 * MIN);
    assert.equal(keys.activeKeyRetiresInSeconds(), 60);
    // The successor has no retirement scheduled.
    clock.set(T0 + 10 * MIN);
    assert.equal(keys.signingKey.kid, 'b-next');
    assert.equal(keys.activeKeyRetiresInSeconds(), null);
  });
});
