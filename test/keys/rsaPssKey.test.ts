/**
 * Our PS256 keys' one form, an RSASSA-PSS key restricted to PS256, with real keys: made
 * from a plain RSA key or a looser RSASSA-PSS key without changing the key, signing
 * exactly PS256 with the bare KeyObject, and published as the plain RSA JWK.
 */
import assert from 'node:assert/strict';
import { constants, createPublicKey, sign, verify } from 'node:crypto';
import { describe, test } from 'node:test';
import {
  plainRsaPrivateKey,
  plainRsaPublicKey,
  ps256PrivateKey,
} from '../../src/keys/rsaPssKey.js';
import { newKeyPair } from '../helpers/keyPairs.js';
import { newPs256Key } from './keyFixtures.js';

const DATA = Buffer.from('header.payload');
const PS256_DETAILS = {
  hashAlgorithm: 'sha256',
  mgf1HashAlgorithm: 'sha256',
  saltLength: 32,
};

/** Whether `signature` is RSASSA-PSS-SHA256 with a `saltLength`-octet salt under `rsaPublic`. */
function pssWithSalt(
  rsaPublic: ReturnType<typeof createPublicKey>,
  signature: Buffer,
  saltLength: number,
) {
  const key = { key: rsaPublic, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength };
  return verify('sha256', DATA, key, signature);
}

describe('ps256PrivateKey', () => {
  const sources = {
    'a plain RSA key (a JWK file)': () => newKeyPair('rsa', { modulusLength: 2048 }).privateKey,
    'an unrestricted RSASSA-PSS key': () =>
      newKeyPair('rsa-pss', { modulusLength: 2048 }).privateKey,
    'an RSASSA-PSS key allowing salts of 20 octets and more': () =>
      newKeyPair('rsa-pss', { modulusLength: 3072, ...PS256_DETAILS, saltLength: 20 }).privateKey,
  };
  for (const [name, make] of Object.entries(sources)) {
    test(`${name}: the same key, restricted to PS256, whose bare signature is PS256's`, () => {
      const source = make();
      const key = ps256PrivateKey(source);
      assert.equal(key.asymmetricKeyType, 'rsa-pss');
      assert.deepEqual(key.asymmetricKeyDetails, {
        modulusLength: source.asymmetricKeyDetails?.modulusLength,
        publicExponent: 65537n,
        ...PS256_DETAILS,
      });
      const rsaPublic = plainRsaPublicKey(key);
      assert.equal(rsaPublic.asymmetricKeyType, 'rsa');
      const sourcePublic =
        source.asymmetricKeyType === 'rsa' ? createPublicKey(source) : plainRsaPublicKey(source);
      assert.deepEqual(rsaPublic.export({ format: 'jwk' }), sourcePublic.export({ format: 'jwk' }));
      // The bare key signs with a 32-octet salt: verified as exactly that, and not as Node's
      // default for a plain RSA key (the longest salt).
      const signature = sign('sha256', DATA, key);
      assert.equal(pssWithSalt(rsaPublic, signature, 32), true);
      const longest = (source.asymmetricKeyDetails?.modulusLength as number) / 8 - 32 - 2;
      assert.equal(pssWithSalt(rsaPublic, signature, longest), false);
    });
  }

  test('plainRsaPrivateKey gives the same RSA key back', () => {
    const rsa = newKeyPair('rsa', { modulusLength: 2048 }).privateKey;
    const back = plainRsaPrivateKey(ps256PrivateKey(rsa));
    assert.equal(back.asymmetricKeyType, 'rsa');
    assert.deepEqual(back.export({ format: 'jwk' }), rsa.export({ format: 'jwk' }));
  });

  test('a key already in the PS256 form is returned as it is', () => {
    const key = newPs256Key();
    assert.equal(ps256PrivateKey(key), key);
  });

  test('the restricted key refuses PKCS#1 v1.5 padding and another digest', () => {
    const key = ps256PrivateKey(newKeyPair('rsa', { modulusLength: 2048 }).privateKey);
    assert.throws(() => sign('sha256', DATA, { key, padding: constants.RSA_PKCS1_PADDING }));
    assert.throws(() => sign('sha384', DATA, key));
  });

  test('refuses keys that cannot be PS256, saying why', () => {
    const sha384 = newKeyPair('rsa-pss', {
      modulusLength: 2048,
      hashAlgorithm: 'sha384',
      mgf1HashAlgorithm: 'sha384',
      saltLength: 48,
    }).privateKey;
    assert.throws(() => ps256PrivateKey(sha384), {
      message:
        'RSASSA-PSS key restricted to sha384, MGF1 with sha384, salt ≥ 48: not a PS256 key (SHA-256, MGF1 with SHA-256, 32-octet salt)',
    });
    const ec = newKeyPair('ec', { namedCurve: 'P-256' }).privateKey;
    assert.throws(() => ps256PrivateKey(ec), { message: 'a ec key is not an RSA key' });
  });
});
