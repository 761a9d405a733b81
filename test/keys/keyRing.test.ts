import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PortariaError } from '../../src/errors.js';
import { KeyRing } from '../../src/keys/keyRing.js';
import type { KeySchedule } from '../../src/keys/keySchedule.js';
import { ManualClock } from '../../src/lib/clock.js';
import { newPrivateKey } from './keyFixtures.js';

const NO_SCHEDULE: ReadonlyMap<string, KeySchedule> = new Map();

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

function ring(): KeyRing {
  return new KeyRing(
    [
      { kid: '20250101T000000Z-00000001', alg: 'ES256', privateKey: newPrivateKey('ES256') },
      { kid: '20260101T000000Z-00000002', alg: 'EdDSA', privateKey: newPrivateKey('EdDSA') },
      { kid: '20260101T000000Z-00000003', alg: 'RS256', privateKey: newPrivateKey('RS256') },
      { kid: '20240101T000000Z-00000004', alg: 'ES256', privateKey: newPrivateKey('ES256') },
    ],
    NO_SCHEDULE,
    'ES256',
    new ManualClock(),
  );
}

describe('KeyRing without a schedule', () => {
  test('picks the greatest kid of the configured algorithm as signer', () => {
    assert.equal(ring().signingKey.kid, '20250101T000000Z-00000001');
    assert.equal(ring().signingKey.alg, 'ES256');
  });

  test('publishes only public members of every key, newest first', () => {
    const jwks = ring().jwks();
    assert.deepEqual(
      jwks.keys.map((k) => [k.kid, k.alg, k.use, Object.keys(k).sort().join(',')]),
      [
        ['20260101T000000Z-00000003', 'RS256', 'sig', 'alg,e,kid,kty,n,use'],
        ['20260101T000000Z-00000002', 'EdDSA', 'sig', 'alg,crv,kid,kty,use,x'],
        ['20250101T000000Z-00000001', 'ES256', 'sig', 'alg,crv,kid,kty,use,x,y'],
        ['20240101T000000Z-00000004', 'ES256', 'sig', 'alg,crv,kid,kty,use,x,y'],
      ],
    );
    const text = JSON.stringify(jwks);
    for (const member of PRIVATE_MEMBERS)
      assert.equal(text.includes(`"${member}":`), false, member);
  });

  test('returns the same frozen JWKS object on every call', () => {
    const keys = ring();
    const jwks = keys.jwks();
    assert.equal(keys.jwks(), jwks);
    assert.ok(Object.isFrozen(jwks));
    assert.ok(Object.isFrozen(jwks.keys));
    assert.ok(jwks.keys.every((k) => Object.isFrozen(k)));
  });

  test('looks up verification keys by kid, public only', () => {
    const keys = ring();
    const found = keys.verificationKey('20260101T000000Z-00000002');
    assert.equal(found?.alg, 'EdDSA');
    assert.equal(found?.key.type, 'public');
    assert.equal(keys.verificationKey('unknown'), undefined);
    assert.equal(keys.verificationKey('__proto__'), undefined);
  });

  test('lists the algorithms present', () => {
    assert.deepEqual([...ring().algorithms].sort(), ['ES256', 'EdDSA', 'RS256']);
  });

  test('refuses duplicate kids and a schedule entry without a key', () => {
    const key = newPrivateKey('ES256');
    const clock = new ManualClock();
    assert.throws(
      () =>
        new KeyRing(
          [
            { kid: 'a', alg: 'ES256', privateKey: key },
            { kid: 'a', alg: 'ES256', privateKey: key },
          ],
          NO_SCHEDULE,
          'ES256',
          clock,
        ),
      /duplicate kid "a"/,
    );
    const schedule = new Map([
      ['b', { publishAt: 0, activateAt: 0, retireAt: null, removeAt: null }],
    ]);
    assert.throws(
      () => new KeyRing([{ kid: 'a', alg: 'ES256', privateKey: key }], schedule, 'ES256', clock),
      /schedule for unknown kid "b"/,
    );
  });

  test('answers 503 no-active-key for signing when no key has the algorithm, and still verifies', () => {
    const key = newPrivateKey('ES256');
    const keys = new KeyRing(
      [{ kid: 'a', alg: 'ES256', privateKey: key }],
      NO_SCHEDULE,
      'EdDSA',
      new ManualClock(),
    );
    assert.throws(
      () => keys.signingKey,
      (err: unknown) =>
        err instanceof PortariaError &&
        err.code === 'service-unavailable' &&
        err.status === 503 &&
        err.reason === 'no-active-key' &&
        err.detail === 'No signing key is active.',
    );
    assert.equal(keys.verificationKey('a')?.alg, 'ES256');
    assert.equal(keys.activeKeyAgeSeconds(), null);
    assert.deepEqual(
      keys.states().map((k) => k.state),
      ['retiring'],
    );
  });

  test('reports every key active since forever: the signer active, the others retiring', () => {
    assert.deepEqual(
      ring()
        .states()
        .map((k) => [k.kid, k.state, k.publishAt, k.activateAt, k.retireAt, k.removeAt]),
      [
        ['20260101T000000Z-00000003', 'retiring', null, null, null, null],
        ['20260101T000000Z-00000002', 'retiring', null, null, null, null],
        ['20250101T000000Z-00000001', 'active', null, null, null, null],
        ['20240101T000000Z-00000004', 'retiring', null, null, null, null],
      ],
    );
    assert.equal(ring().activeKeyAgeSeconds(), null);
  });
});
