/**
 * The signature length the verifier expects before checking a signature, for every
 * algorithm a key of ours or of a trusted issuer may use, with the key as each source
 * builds it: a KeyObject (our key ring, file keys) or a CryptoKey (jose's JWK import).
 * Each expectation is checked against a signature jose really makes.
 */
import assert from 'node:assert/strict';
import { createPublicKey, type KeyObject, type webcrypto } from 'node:crypto';
import { describe, test } from 'node:test';
import { CompactSign, importJWK, type JWK } from 'jose';
import { ps256PrivateKey } from '../../src/keys/rsaPssKey.js';
import { signJws } from '../../src/keys/signJws.js';
import { signatureLength } from '../../src/verify/signatureLength.js';
import { newKeyPair } from '../helpers/keyPairs.js';

async function signatureOctets(privateKey: KeyObject, alg: string): Promise<number> {
  const jws = await new CompactSign(new TextEncoder().encode('{}'))
    .setProtectedHeader({ alg })
    .sign(privateKey);
  return Buffer.from(jws.split('.')[2] as string, 'base64url').length;
}

describe('signatureLength', () => {
  const cases: [string, string, () => KeyObject, number][] = [
    [
      'ES256 with a P-256 key',
      'ES256',
      () => newKeyPair('ec', { namedCurve: 'P-256' }).privateKey,
      64,
    ],
    [
      'ES384 with a P-384 key',
      'ES384',
      () => newKeyPair('ec', { namedCurve: 'P-384' }).privateKey,
      96,
    ],
    ['EdDSA with an Ed25519 key', 'EdDSA', () => newKeyPair('ed25519').privateKey, 64],
    [
      'RS256 with a 2048-bit key',
      'RS256',
      () => newKeyPair('rsa', { modulusLength: 2048 }).privateKey,
      256,
    ],
    [
      'RS256 with a 2056-bit key',
      'RS256',
      () => newKeyPair('rsa', { modulusLength: 2056 }).privateKey,
      257,
    ],
    [
      'PS256 with a 3072-bit key',
      'PS256',
      () => newKeyPair('rsa', { modulusLength: 3072 }).privateKey,
      384,
    ],
  ];
  for (const [name, alg, keyOf, octets] of cases) {
    test(`${name} → ${octets} octets, as a KeyObject and as a CryptoKey`, async () => {
      const privateKey = keyOf();
      assert.equal(await signatureOctets(privateKey, alg), octets, 'what jose signs');
      const publicKey = createPublicKey(privateKey);
      assert.equal(signatureLength(alg, publicKey), octets, 'KeyObject');
      assert.equal(signatureLength(alg, publicKey), octets, 'KeyObject, remembered');
      const jwk = publicKey.export({ format: 'jwk' }) as JWK;
      const cryptoKey = (await importJWK(jwk, alg)) as webcrypto.CryptoKey;
      assert.equal(signatureLength(alg, cryptoKey), octets, 'CryptoKey');
    });
  }

  test('PS256 with our RSASSA-PSS form of a 3072-bit key → 384 octets, what it signs', () => {
    const key = ps256PrivateKey(newKeyPair('rsa', { modulusLength: 3072 }).privateKey);
    assert.equal(signJws('PS256', key, Buffer.from('a.b')).length, 384);
    assert.equal(signatureLength('PS256', createPublicKey(key)), 384);
  });

  test('a key type no algorithm of ours uses is a programming error, not a refusal', () => {
    const { publicKey } = newKeyPair('ec', { namedCurve: 'P-256' });
    assert.throws(() => signatureLength('EdDSA', publicKey), /no signature length known/);
  });
});
