/**
 * The parameters Node's `crypto.sign`/`crypto.verify` need per JWS algorithm, with real
 * keys: each algorithm's signature is one jose verifies, and a key of another type is a
 * programming error, never a signature over the wrong primitive.
 */
import assert from 'node:assert/strict';
import { createPublicKey, createSecretKey, type KeyObject, sign } from 'node:crypto';
import { describe, test } from 'node:test';
import { compactVerify } from 'jose';
import { plainRsaPublicKey } from '../../src/keys/rsaPssKey.js';
import { signatureParameters } from '../../src/keys/signatureParameters.js';
import { newKeyPair } from '../helpers/keyPairs.js';
import { newPs256Key } from './keyFixtures.js';

const P256 = newKeyPair('ec', { namedCurve: 'P-256' });
const P384 = newKeyPair('ec', { namedCurve: 'P-384' });
const P521 = newKeyPair('ec', { namedCurve: 'P-521' });
const ED25519 = newKeyPair('ed25519');
const RSA2048 = newKeyPair('rsa', { modulusLength: 2048 });
const RSA1024 = newKeyPair('rsa', { modulusLength: 1024 });

const PS256_KEY = newPs256Key();
const PSS_SHA384 = newKeyPair('rsa-pss', {
  modulusLength: 2048,
  hashAlgorithm: 'sha384',
  mgf1HashAlgorithm: 'sha384',
  saltLength: 48,
});
const PSS_SALT64 = newKeyPair('rsa-pss', {
  modulusLength: 2048,
  hashAlgorithm: 'sha256',
  mgf1HashAlgorithm: 'sha256',
  saltLength: 64,
});

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A compact JWS over `{}` signed the way `signJws` does: with the key argument. */
function signedBare(alg: string, privateKey: KeyObject): string {
  const input = `${b64({ alg })}.${b64({})}`;
  const { digest, keyArgument } = signatureParameters(alg, privateKey);
  return `${input}.${sign(digest, Buffer.from(input), keyArgument).toString('base64url')}`;
}

/** A compact JWS over `{}` signed with the parameters under test. */
function signed(alg: string, privateKey: KeyObject): string {
  const input = `${b64({ alg })}.${b64({})}`;
  const { digest, key } = signatureParameters(alg, privateKey);
  return `${input}.${sign(digest, Buffer.from(input), key).toString('base64url')}`;
}

describe('signatureParameters', () => {
  const keys: [string, { privateKey: KeyObject }][] = [
    ['ES256', P256],
    ['ES384', P384],
    ['ES512', P521],
    ['EdDSA', ED25519],
    ['RS256', RSA2048],
    ['RS384', RSA2048],
    ['RS512', RSA2048],
    ['PS256', RSA2048],
    ['PS384', RSA2048],
    ['PS512', RSA2048],
  ];
  for (const [alg, pair] of keys) {
    test(`${alg}: the signature made with them is one jose verifies`, async () => {
      const token = signed(alg, pair.privateKey);
      const publicKey = createPublicKey(pair.privateKey);
      const { protectedHeader } = await compactVerify(token, publicKey, { algorithms: [alg] });
      assert.equal(protectedHeader.alg, alg);
    });
  }

  test('worked out once per key: the same object for the same key and algorithm', () => {
    const publicKey = createPublicKey(P256.privateKey);
    assert.equal(signatureParameters('ES256', publicKey), signatureParameters('ES256', publicKey));
  });

  test('the bare KeyObject is the key argument wherever no option is needed (Node 24 pays for an options object)', () => {
    for (const [alg, key] of [
      ['ES256', P256.publicKey],
      ['ES512', P521.publicKey],
      ['EdDSA', ED25519.publicKey],
      ['RS256', RSA2048.publicKey],
    ] as const) {
      assert.equal(signatureParameters(alg, key).keyArgument, key, alg);
    }
    const pss = signatureParameters('PS256', RSA2048.publicKey);
    assert.equal(pss.keyArgument, pss.key);
    // An RSASSA-PSS key restricted to PS256 carries its parameters: OpenSSL needs no option.
    const restricted = createPublicKey(PS256_KEY);
    assert.equal(signatureParameters('PS256', restricted).keyArgument, restricted);
    const unrestricted = newKeyPair('rsa-pss', { modulusLength: 2048 }).publicKey;
    const loose = signatureParameters('PS256', unrestricted);
    assert.equal(loose.keyArgument, loose.key);
  });

  test('PS256 with our RSASSA-PSS key: the bare-key signature is one jose verifies with the published RSA key', async () => {
    const token = signedBare('PS256', PS256_KEY);
    const published = createPublicKey({
      key: plainRsaPublicKey(PS256_KEY).export({ format: 'jwk' }),
      format: 'jwk',
    });
    const { protectedHeader } = await compactVerify(token, published, { algorithms: ['PS256'] });
    assert.equal(protectedHeader.alg, 'PS256');
  });

  const mismatches: [string, string, KeyObject][] = [
    ['ES256 with a P-384 key', 'ES256', P384.publicKey],
    ['ES384 with a P-256 key', 'ES384', P256.publicKey],
    ['ES256 with an Ed25519 key', 'ES256', ED25519.publicKey],
    ['EdDSA with a P-256 key', 'EdDSA', P256.publicKey],
    ['RS256 with a P-256 key', 'RS256', P256.publicKey],
    ['RS256 with an Ed25519 key', 'RS256', ED25519.publicKey],
    ['PS256 with a P-256 key', 'PS256', P256.publicKey],
    ['RS256 with a 1024-bit RSA key', 'RS256', RSA1024.publicKey],
    ['PS256 with a 1024-bit RSA key', 'PS256', RSA1024.publicKey],
    ['RS256 with an RSASSA-PSS key', 'RS256', createPublicKey(PS256_KEY)],
    ['PS384 with an RSASSA-PSS key restricted to PS256', 'PS384', createPublicKey(PS256_KEY)],
    ['PS256 with an RSASSA-PSS key restricted to SHA-384', 'PS256', PSS_SHA384.publicKey],
    [
      'PS256 with an RSASSA-PSS key whose salt is at least 64 octets',
      'PS256',
      PSS_SALT64.publicKey,
    ],
    ['HS256 with a secret key', 'HS256', createSecretKey(Buffer.alloc(32, 1))],
    ['ES256 with a secret key', 'ES256', createSecretKey(Buffer.alloc(32, 1))],
    ['none', 'none', P256.publicKey],
  ];
  for (const [name, alg, key] of mismatches) {
    test(`${name} is a programming error (TypeError)`, () => {
      assert.throws(() => signatureParameters(alg, key), TypeError);
    });
  }

  test('a key remembered for one algorithm is still refused for another', () => {
    const publicKey = createPublicKey(P256.privateKey);
    signatureParameters('ES256', publicKey);
    assert.throws(() => signatureParameters('ES384', publicKey), TypeError);
  });
});
