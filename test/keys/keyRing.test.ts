import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KeyRing } from '../../src/keys/keyRing.js';
import { newPrivateKey } from './keyFixtures.js';

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

function ring(): KeyRing {
  return new KeyRing(
    [
      { kid: '20250101T000000Z-00000001', alg: 'ES256', privateKey: newPrivateKey('ES256') },
      { kid: '20260101T000000Z-00000002', alg: 'EdDSA', privateKey: newPrivateKey('EdDSA') },
      { kid: '20260101T000000Z-00000003', alg: 'RS256', privateKey: newPrivateKey('RS256') },
      { kid: '20240101T000000Z-00000004', alg: 'ES256', privateKey: newPrivateKey('ES256') },
    ],
    'ES256',
  );
}

describe('KeyRing', () => {
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

  test('refuses duplicate kids and a missing signer', () => {
    const key = newPrivateKey('ES256');
    assert.throws(
      () =>
        new KeyRing(
          [
            { kid: 'a', alg: 'ES256', privateKey: key },
            { kid: 'a', alg: 'ES256', privateKey: key },
          ],
          'ES256',
        ),
      /duplicate kid "a"/,
    );
    assert.throws(
      () => new KeyRing([{ kid: 'a', alg: 'ES256', privateKey: key }], 'EdDSA'),
      /no EdDSA key/,
    );
  });
});
