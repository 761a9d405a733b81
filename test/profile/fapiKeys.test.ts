/** `profile/fapiKeys.ts`: the active signing key under fapi-br, whichever way the ring was built. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../../src/config/configError.js';
import { KeyRing } from '../../src/keys/keyRing.js';
import { ps256PrivateKey } from '../../src/keys/rsaPssKey.js';
import { ManualClock } from '../../src/lib/clock.js';
import { fapiKeyProblems, keyRingUnderProfile } from '../../src/profile/fapiKeys.js';
import { newKeyPair } from '../helpers/keyPairs.js';

const clock = new ManualClock(Date.UTC(2026, 0, 1));

function ringOf(alg: 'PS256' | 'ES256', privateKey = defaultKey(alg)): KeyRing {
  return new KeyRing([{ kid: 'k1', alg, privateKey }], new Map(), alg, clock);
}

function defaultKey(alg: 'PS256' | 'ES256') {
  return alg === 'ES256'
    ? newKeyPair('ec', { namedCurve: 'P-256' }).privateKey
    : ps256PrivateKey(newKeyPair('rsa-pss', { modulusLength: 2048 }).privateKey);
}

describe('the signing keys under profile fapi-br', () => {
  test('a PS256 key of 2048 bits passes', () => {
    assert.deepEqual(fapiKeyProblems(ringOf('PS256')), []);
  });

  test('an active key of another algorithm is named', () => {
    assert.deepEqual(fapiKeyProblems(ringOf('ES256')), [
      'keys.dir: the active key k1 signs ES256; under profile fapi-br it must be PS256',
    ]);
  });

  test('an RSA key under 2048 bits is named', () => {
    const small = ps256PrivateKey(newKeyPair('rsa-pss', { modulusLength: 1024 }).privateKey);
    assert.deepEqual(fapiKeyProblems(ringOf('PS256', small)), [
      'keys.dir: the active key k1 has 1024 bits; under profile fapi-br an RSA key has at least 2048',
    ]);
  });

  test('the ring is refused with a ConfigError under fapi-br only', () => {
    const ring = ringOf('ES256');
    assert.equal(keyRingUnderProfile(ring, 'none', 'keys.dir (k)'), ring);
    assert.throws(() => keyRingUnderProfile(ring, 'fapi-br', 'keys.dir (k)'), ConfigError);
  });
});
