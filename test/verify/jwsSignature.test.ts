/**
 * The signature step on its own: real keys for every algorithm a key of ours or of a
 * trusted issuer may use, tokens signed by jose (the signer everyone else uses), and the
 * ways a signature can be wrong.
 */
import assert from 'node:assert/strict';
import { constants, createPublicKey, type KeyObject, sign } from 'node:crypto';
import { describe, test } from 'node:test';
import { SignJWT } from 'jose';
import { ps256PrivateKey } from '../../src/keys/rsaPssKey.js';
import { verifyJwsSignature } from '../../src/verify/jwsSignature.js';
import { newKeyPair } from '../helpers/keyPairs.js';

type Pair = { privateKey: KeyObject; publicKey: KeyObject };
const PAIRS = {
  ES256: () => newKeyPair('ec', { namedCurve: 'P-256' }),
  ES384: () => newKeyPair('ec', { namedCurve: 'P-384' }),
  EdDSA: () => newKeyPair('ed25519'),
  RS256: () => newKeyPair('rsa', { modulusLength: 2048 }),
  PS256: () => newKeyPair('rsa', { modulusLength: 2048 }),
} satisfies Record<string, () => Pair>;

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

function joseToken(alg: string, key: KeyObject, claims: Record<string, unknown> = { sub: 'acme' }) {
  return new SignJWT(claims).setProtectedHeader({ alg, kid: 'k1', typ: 'at+jwt' }).sign(key);
}

/** The token with its signature segment replaced. */
function withSignature(token: string, signature: Buffer): string {
  return `${token.slice(0, token.lastIndexOf('.'))}.${signature.toString('base64url')}`;
}

function signatureOf(token: string): Buffer {
  return Buffer.from(token.slice(token.lastIndexOf('.') + 1), 'base64url');
}

describe('verifyJwsSignature', () => {
  for (const [alg, makePair] of Object.entries(PAIRS)) {
    describe(alg, () => {
      const pair = makePair();
      const stranger = makePair();

      test('a token jose signed with the key verifies', async () => {
        assert.equal(
          verifyJwsSignature(await joseToken(alg, pair.privateKey), alg, pair.publicKey),
          true,
        );
      });

      test('a token signed by another key of the same type does not', async () => {
        const token = await joseToken(alg, stranger.privateKey);
        assert.equal(verifyJwsSignature(token, alg, pair.publicKey), false);
      });

      test('a payload changed after signing does not', async () => {
        const [header, , signature] = (await joseToken(alg, pair.privateKey)).split('.');
        const forged = `${header}.${b64({ sub: 'admin' })}.${signature}`;
        assert.equal(verifyJwsSignature(forged, alg, pair.publicKey), false);
      });

      test('a header changed after signing does not', async () => {
        const [, payload, signature] = (await joseToken(alg, pair.privateKey)).split('.');
        const forged = `${b64({ alg, kid: 'k2', typ: 'at+jwt' })}.${payload}.${signature}`;
        assert.equal(verifyJwsSignature(forged, alg, pair.publicKey), false);
      });

      test('a signature one octet short or long is refused, without an exception', async () => {
        const token = await joseToken(alg, pair.privateKey);
        const signature = signatureOf(token);
        const short = withSignature(token, signature.subarray(0, -1));
        const long = withSignature(token, Buffer.concat([signature, Buffer.of(0)]));
        assert.equal(verifyJwsSignature(short, alg, pair.publicKey), false);
        assert.equal(verifyJwsSignature(long, alg, pair.publicKey), false);
      });

      test('a signature of zeros or of ones, at the right length, does not verify', async () => {
        const token = await joseToken(alg, pair.privateKey);
        const length = signatureOf(token).length;
        for (const fill of [0x00, 0xff]) {
          const forged = withSignature(token, Buffer.alloc(length, fill));
          assert.equal(verifyJwsSignature(forged, alg, pair.publicKey), false, `fill ${fill}`);
        }
      });
    });
  }

  test('an ECDSA signature in DER (not r‖s, RFC 7518 §3.4) does not verify', async () => {
    const { privateKey, publicKey } = PAIRS.ES256();
    const input = `${b64({ alg: 'ES256' })}.${b64({ sub: 'acme' })}`;
    const der = sign('sha256', Buffer.from(input), privateKey);
    assert.equal(
      verifyJwsSignature(`${input}.${der.toString('base64url')}`, 'ES256', publicKey),
      false,
    );
  });

  test('a PS256 signature does not pass as RS256, nor the other way round', async () => {
    const { privateKey, publicKey } = PAIRS.RS256();
    assert.equal(
      verifyJwsSignature(await joseToken('PS256', privateKey), 'RS256', publicKey),
      false,
    );
    assert.equal(
      verifyJwsSignature(await joseToken('RS256', privateKey), 'PS256', publicKey),
      false,
    );
  });

  describe('PS256: only RSASSA-PSS with SHA-256, MGF1-SHA-256 and a 32-octet salt (RFC 7518 §3.5)', () => {
    const rsa = PAIRS.PS256();
    // Our own keys: held as RSASSA-PSS keys restricted to PS256; the issuers': plain RSA.
    const ours = createPublicKey(ps256PrivateKey(rsa.privateKey));
    const input = Buffer.from(`${b64({ alg: 'PS256', kid: 'k1' })}.${b64({ sub: 'acme' })}`);
    const token = (signature: Buffer) => `${input.toString()}.${signature.toString('base64url')}`;
    const pss = (saltLength: number) =>
      sign('sha256', input, {
        key: rsa.privateKey,
        padding: constants.RSA_PKCS1_PSS_PADDING,
        saltLength,
      });
    const cases: [string, Buffer, boolean][] = [
      ['a 32-octet salt (what jose writes)', pss(32), true],
      [
        "Node's default salt, the longest that fits (222 octets)",
        sign('sha256', input, { key: rsa.privateKey, padding: constants.RSA_PKCS1_PSS_PADDING }),
        false,
      ],
      ['a 20-octet salt (RFC 8017 default)', pss(20), false],
      ['no salt', pss(0), false],
      ['a 33-octet salt', pss(33), false],
      [
        'PKCS#1 v1.5 padding (an RS256 signature labelled PS256)',
        sign('sha256', input, rsa.privateKey),
        false,
      ],
      [
        'MGF1 and digest SHA-384',
        sign('sha384', input, {
          key: rsa.privateKey,
          padding: constants.RSA_PKCS1_PSS_PADDING,
          saltLength: 32,
        }),
        false,
      ],
    ];
    for (const [name, signature, valid] of cases) {
      test(`${name}: ${valid ? 'verifies' : 'refused'}, with our key and an issuer's`, () => {
        assert.equal(verifyJwsSignature(token(signature), 'PS256', ours), valid);
        assert.equal(verifyJwsSignature(token(signature), 'PS256', rsa.publicKey), valid);
      });
    }

    test('a token jose signed verifies with our RSASSA-PSS form of the key', async () => {
      assert.equal(
        verifyJwsSignature(await joseToken('PS256', rsa.privateKey), 'PS256', ours),
        true,
      );
    });
  });

  test('a key of another type than the algorithm names is a programming error', async () => {
    const ec = PAIRS.ES256();
    const ed = PAIRS.EdDSA();
    const token = await joseToken('EdDSA', ed.privateKey);
    assert.throws(() => verifyJwsSignature(token, 'EdDSA', ec.publicKey), TypeError);
    assert.throws(() => verifyJwsSignature(token, 'ES256', ed.publicKey), TypeError);
    assert.throws(() => verifyJwsSignature(token, 'HS256', ec.publicKey), TypeError);
  });
});
