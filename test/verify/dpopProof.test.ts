/**
 * DPoP proofs (RFC 9449 §4.3) made with jose as a client makes them, and the forged,
 * tampered and misdirected ones an attacker would try.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import { calculateJwkThumbprint, exportJWK, type JWK, SignJWT } from 'jose';
import {
  accessTokenHash,
  checkDpopProof,
  DPOP_ALGORITHMS,
  DpopProofError,
  normalisedUri,
  type ProofExpectation,
  ProofKeyCache,
} from '../../src/verify/dpopProof.js';
import { newKeyPair } from '../helpers/keyPairs.js';

const NOW = 1_800_000_000;
const URL = 'https://api.example.com/v1/orders';
const TOKEN = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhY21lIn0.c2ln';

const { privateKey, publicKey } = newKeyPair('ec', { namedCurve: 'P-256' });
const other = newKeyPair('ec', { namedCurve: 'P-256' });

async function proof(
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
  key = privateKey,
): Promise<string> {
  const jwk = await exportJWK(publicKey);
  return new SignJWT({ htm: 'GET', htu: URL, iat: NOW, jti: `j-${Math.random()}`, ...claims })
    .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk, ...header })
    .sign(key);
}

const expect = (more: Partial<ProofExpectation> = {}): ProofExpectation => ({
  method: 'GET',
  url: URL,
  now: NOW,
  windowSeconds: 60,
  algorithms: DPOP_ALGORITHMS,
  ...more,
});

async function refused(promise: Promise<unknown>, reason: string): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof DpopProofError, String(error));
    assert.equal(error.reason, reason);
    return true;
  });
}

function unsigned(header: Record<string, unknown>, claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part(header)}.${part(claims)}.${Buffer.from('sig').toString('base64url')}`;
}

describe('DPoP proofs', () => {
  test('a proof made for this request gives its key thumbprint and jti', async () => {
    const checked = await checkDpopProof(await proof({ jti: 'one' }), expect());
    assert.equal(checked.jti, 'one');
    assert.equal(checked.jkt, await calculateJwkThumbprint(await exportJWK(publicKey), 'sha256'));
  });

  test('the query and fragment of htu are ignored, scheme and host case and the default port normalised', async () => {
    const made = await proof({ htu: 'HTTPS://API.example.com:443/v1/orders' });
    await checkDpopProof(made, expect({ url: `${URL}?page=2#x` }));
    await refused(
      checkDpopProof(await proof({ htu: 'https://api.example.com/v1/Orders' }), expect()),
      'dpop-htu',
    );
    await refused(
      checkDpopProof(await proof({ htu: 'https://evil.example.com/v1/orders' }), expect()),
      'dpop-htu',
    );
    await refused(
      checkDpopProof(await proof({ htu: 'http://api.example.com/v1/orders' }), expect()),
      'dpop-htu',
    );
    assert.equal(normalisedUri('https://user@host/x'), '');
  });

  test('a proof for another method, or made too long ago or ahead, is refused', async () => {
    await refused(checkDpopProof(await proof({ htm: 'POST' }), expect()), 'dpop-htm');
    await refused(checkDpopProof(await proof({ iat: NOW - 61 }), expect()), 'dpop-iat');
    await refused(checkDpopProof(await proof({ iat: NOW + 3600 }), expect()), 'dpop-iat');
    await refused(checkDpopProof(await proof({ iat: '1800000000' }), expect()), 'dpop-iat');
    await refused(checkDpopProof(await proof({ jti: '' }), expect()), 'dpop-jti');
  });

  test('at a resource the proof must name the token (ath)', async () => {
    const ath = accessTokenHash(TOKEN);
    assert.equal(ath, createHash('sha256').update(TOKEN).digest('base64url'));
    await checkDpopProof(await proof({ ath }), expect({ accessToken: TOKEN }));
    await refused(
      checkDpopProof(await proof({ ath: accessTokenHash('x') }), expect({ accessToken: TOKEN })),
      'dpop-ath',
    );
    await refused(checkDpopProof(await proof(), expect({ accessToken: TOKEN })), 'dpop-ath');
  });

  test('forged proofs: none, HS256, a private key in jwk, a jwk that did not sign, wrong typ, huge', async () => {
    const jwk = await exportJWK(publicKey);
    const claims = { htm: 'GET', htu: URL, iat: NOW, jti: 'x' };
    await refused(
      checkDpopProof(unsigned({ alg: 'none', typ: 'dpop+jwt', jwk }, claims), expect()),
      'dpop-alg',
    );
    const hmac = await new SignJWT(claims)
      .setProtectedHeader({
        alg: 'HS256',
        typ: 'dpop+jwt',
        jwk: { kty: 'oct', k: 'c2VjcmV0' } as never,
      })
      .sign(Buffer.from('secret'));
    await refused(checkDpopProof(hmac, expect()), 'dpop-alg');
    const withPrivate = { ...(await exportJWK(privateKey)) } as JWK;
    await refused(checkDpopProof(await proof({}, { jwk: withPrivate }), expect()), 'dpop-jwk');
    // Signed by another key than the one it names: the thief's proof for a stolen key id.
    await refused(
      checkDpopProof(await proof({}, {}, other.privateKey), expect()),
      'dpop-signature',
    );
    await refused(checkDpopProof(await proof({}, { typ: 'JWT' }), expect()), 'dpop-typ');
    await refused(checkDpopProof(await proof({}, { jwk: undefined }), expect()), 'dpop-jwk');
    await refused(
      checkDpopProof(await proof({ pad: 'x'.repeat(5000) }), expect()),
      'dpop-malformed',
    );
    await refused(checkDpopProof('not.a-proof', expect()), 'dpop-malformed');
    const tampered = await proof();
    const [h, p, s] = tampered.split('.');
    const changed = Buffer.from(JSON.stringify({ ...claims, htm: 'GET', jti: 'forged' })).toString(
      'base64url',
    );
    assert.notEqual(changed, p);
    await refused(checkDpopProof(`${h}.${changed}.${s}`, expect()), 'dpop-signature');
    await refused(checkDpopProof(await proof(), expect({ algorithms: ['PS256'] })), 'dpop-alg');
  });

  test('with server nonces, a proof without a current nonce is refused', async () => {
    const current = (nonce: string) => nonce === 'n-1';
    await checkDpopProof(await proof({ nonce: 'n-1' }), expect({ nonceValid: current }));
    await refused(
      checkDpopProof(await proof({ nonce: 'n-0' }), expect({ nonceValid: current })),
      'dpop-nonce',
    );
    await refused(checkDpopProof(await proof(), expect({ nonceValid: current })), 'dpop-nonce');
  });

  test('proofs reusing one key verify from one cached entry, each with its own jti', async () => {
    const keys = new ProofKeyCache(10);
    const jkt = await calculateJwkThumbprint(await exportJWK(publicKey), 'sha256');
    for (const jti of ['a', 'b', 'c']) {
      const checked = await checkDpopProof(await proof({ jti }), expect(), keys);
      assert.deepEqual([checked.jkt, checked.jti], [jkt, jti]);
    }
    assert.equal(keys.size, 1);
    await refused(checkDpopProof(await proof({ htm: 'POST' }), expect(), keys), 'dpop-htm');
    await refused(
      checkDpopProof(await proof({}, {}, other.privateKey), expect(), keys),
      'dpop-signature',
    );
  });

  test('a jwk differing from a cached one by one member is never taken for it', async () => {
    const keys = new ProofKeyCache(10);
    const jwk = await exportJWK(publicKey);
    await checkDpopProof(await proof(), expect(), keys);
    // Signed by the cached key, but naming a jwk whose y is another key's: if the cache
    // matched on x (or kty and crv), this would verify.
    const otherY = (await exportJWK(other.publicKey)).y;
    await refused(
      checkDpopProof(await proof({}, { jwk: { ...jwk, y: otherY } }), expect(), keys),
      'dpop-signature',
    );
    // The private form of the cached key is refused before any lookup.
    await refused(
      checkDpopProof(await proof({}, { jwk: await exportJWK(privateKey) }), expect(), keys),
      'dpop-jwk',
    );
    // An extra member is its own entry (the thumbprint, of the required members, is the same).
    const withKid = await checkDpopProof(
      await proof({}, { jwk: { ...jwk, kid: 'k1' } }),
      expect(),
      keys,
    );
    assert.equal(withKid.jkt, await calculateJwkThumbprint(jwk, 'sha256'));
    assert.equal(keys.size, 2);
    // The other key, signing with its own jwk, gets its own thumbprint.
    const otherJwk = await exportJWK(other.publicKey);
    const theirs = await checkDpopProof(
      await proof({}, { jwk: otherJwk }, other.privateKey),
      expect(),
      keys,
    );
    assert.equal(theirs.jkt, await calculateJwkThumbprint(otherJwk, 'sha256'));
    assert.equal(keys.size, 3);
  });

  test('the key cache never holds more than its capacity', async () => {
    const keys = new ProofKeyCache(3);
    const clients = Array.from({ length: 5 }, () => newKeyPair('ec', { namedCurve: 'P-256' }));
    const signed = async (pair: (typeof clients)[number]) =>
      proof({}, { jwk: await exportJWK(pair.publicKey) }, pair.privateKey);
    for (const pair of clients) {
      await checkDpopProof(await signed(pair), expect(), keys);
      assert.ok(keys.size <= 3);
    }
    assert.equal(keys.size, 3);
    // The first client's key is no longer held: its next proof still verifies.
    const first = clients[0] as (typeof clients)[number];
    const again = await checkDpopProof(await signed(first), expect(), keys);
    assert.equal(
      again.jkt,
      await calculateJwkThumbprint(await exportJWK(first.publicKey), 'sha256'),
    );
    assert.equal(keys.size, 3);
    assert.throws(() => new ProofKeyCache(0), RangeError);
  });
});
