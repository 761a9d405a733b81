/**
 * DPoP proofs (RFC 9449 §4.3) made with jose as a client makes them, and the forged,
 * tampered and misdirected ones an attacker would try.
 */
import assert from 'node:assert/strict';
import { createHash, type KeyObject, sign } from 'node:crypto';
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

async function refused(check: () => Promise<unknown>, reason: string): Promise<void> {
  await assert.rejects(check, (error: unknown) => {
    assert.ok(error instanceof DpopProofError, String(error));
    assert.equal(error.reason, reason);
    return true;
  });
}

function unsigned(header: Record<string, unknown>, claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part(header)}.${part(claims)}.${Buffer.from('sig').toString('base64url')}`;
}

/** A proof signed as written, by Node (for forms jose will not produce): r‖s for ECDSA unless `der`. */
function signedAs(
  header: Record<string, unknown>,
  claims: Record<string, unknown>,
  key: KeyObject,
  digest: string | null,
  dsaEncoding: 'ieee-p1363' | 'der' = 'ieee-p1363',
): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${part(header)}.${part(claims)}`;
  const signature = sign(digest, Buffer.from(input), { key, dsaEncoding });
  return `${input}.${signature.toString('base64url')}`;
}

const freshClaims = () => ({ htm: 'GET', htu: URL, iat: NOW, jti: `j-${Math.random()}` });

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
      async () =>
        checkDpopProof(await proof({ htu: 'https://api.example.com/v1/Orders' }), expect()),
      'dpop-htu',
    );
    await refused(
      async () =>
        checkDpopProof(await proof({ htu: 'https://evil.example.com/v1/orders' }), expect()),
      'dpop-htu',
    );
    await refused(
      async () =>
        checkDpopProof(await proof({ htu: 'http://api.example.com/v1/orders' }), expect()),
      'dpop-htu',
    );
    assert.equal(normalisedUri('https://user@host/x'), '');
  });

  test('a proof for another method, or made too long ago or ahead, is refused', async () => {
    await refused(async () => checkDpopProof(await proof({ htm: 'POST' }), expect()), 'dpop-htm');
    await refused(async () => checkDpopProof(await proof({ iat: NOW - 61 }), expect()), 'dpop-iat');
    await refused(
      async () => checkDpopProof(await proof({ iat: NOW + 3600 }), expect()),
      'dpop-iat',
    );
    await refused(
      async () => checkDpopProof(await proof({ iat: '1800000000' }), expect()),
      'dpop-iat',
    );
    await refused(async () => checkDpopProof(await proof({ jti: '' }), expect()), 'dpop-jti');
  });

  test('at a resource the proof must name the token (ath)', async () => {
    const ath = accessTokenHash(TOKEN);
    assert.equal(ath, createHash('sha256').update(TOKEN).digest('base64url'));
    await checkDpopProof(await proof({ ath }), expect({ accessToken: TOKEN }));
    await refused(
      async () =>
        checkDpopProof(await proof({ ath: accessTokenHash('x') }), expect({ accessToken: TOKEN })),
      'dpop-ath',
    );
    await refused(
      async () => checkDpopProof(await proof(), expect({ accessToken: TOKEN })),
      'dpop-ath',
    );
  });

  test('forged proofs: none, HS256, a private key in jwk, a jwk that did not sign, wrong typ, huge', async () => {
    const jwk = await exportJWK(publicKey);
    const claims = { htm: 'GET', htu: URL, iat: NOW, jti: 'x' };
    await refused(
      async () => checkDpopProof(unsigned({ alg: 'none', typ: 'dpop+jwt', jwk }, claims), expect()),
      'dpop-alg',
    );
    const hmac = await new SignJWT(claims)
      .setProtectedHeader({
        alg: 'HS256',
        typ: 'dpop+jwt',
        jwk: { kty: 'oct', k: 'c2VjcmV0' } as never,
      })
      .sign(Buffer.from('secret'));
    await refused(async () => checkDpopProof(hmac, expect()), 'dpop-alg');
    const withPrivate = { ...(await exportJWK(privateKey)) } as JWK;
    await refused(
      async () => checkDpopProof(await proof({}, { jwk: withPrivate }), expect()),
      'dpop-jwk',
    );
    // Signed by another key than the one it names: the thief's proof for a stolen key id.
    await refused(
      async () => checkDpopProof(await proof({}, {}, other.privateKey), expect()),
      'dpop-signature',
    );
    await refused(
      async () => checkDpopProof(await proof({}, { typ: 'JWT' }), expect()),
      'dpop-typ',
    );
    await refused(
      async () => checkDpopProof(await proof({}, { jwk: undefined }), expect()),
      'dpop-jwk',
    );
    await refused(
      async () => checkDpopProof(await proof({ pad: 'x'.repeat(5000) }), expect()),
      'dpop-malformed',
    );
    await refused(async () => checkDpopProof('not.a-proof', expect()), 'dpop-malformed');
    const tampered = await proof();
    const [h, p, s] = tampered.split('.');
    const changed = Buffer.from(JSON.stringify({ ...claims, htm: 'GET', jti: 'forged' })).toString(
      'base64url',
    );
    assert.notEqual(changed, p);
    await refused(async () => checkDpopProof(`${h}.${changed}.${s}`, expect()), 'dpop-signature');
    await refused(
      async () => checkDpopProof(await proof(), expect({ algorithms: ['PS256'] })),
      'dpop-alg',
    );
  });

  test('with server nonces, a proof without a current nonce is refused', async () => {
    const current = (nonce: string) => nonce === 'n-1';
    await checkDpopProof(await proof({ nonce: 'n-1' }), expect({ nonceValid: current }));
    await refused(
      async () => checkDpopProof(await proof({ nonce: 'n-0' }), expect({ nonceValid: current })),
      'dpop-nonce',
    );
    await refused(
      async () => checkDpopProof(await proof(), expect({ nonceValid: current })),
      'dpop-nonce',
    );
  });

  test('proofs reusing one key verify from one cached entry, each with its own jti', async () => {
    const keys = new ProofKeyCache(10);
    const jkt = await calculateJwkThumbprint(await exportJWK(publicKey), 'sha256');
    for (const jti of ['a', 'b', 'c']) {
      const checked = await checkDpopProof(await proof({ jti }), expect(), keys);
      assert.deepEqual([checked.jkt, checked.jti], [jkt, jti]);
    }
    assert.equal(keys.size, 1);
    await refused(
      async () => checkDpopProof(await proof({ htm: 'POST' }), expect(), keys),
      'dpop-htm',
    );
    await refused(
      async () => checkDpopProof(await proof({}, {}, other.privateKey), expect(), keys),
      'dpop-signature',
    );
  });

  test('a cached header is refused once its alg leaves the allowlist (a reload narrowed it)', async () => {
    const keys = new ProofKeyCache(10);
    await checkDpopProof(await proof(), expect(), keys);
    assert.equal(keys.size, 1);
    await refused(
      async () => checkDpopProof(await proof(), expect({ algorithms: ['EdDSA', 'PS256'] }), keys),
      'dpop-alg',
    );
    // Back on the allowlist, the same header verifies from its entry again.
    const again = await checkDpopProof(await proof({ jti: 'z' }), expect(), keys);
    assert.equal(again.jti, 'z');
  });

  test('a jwk differing from a cached one by one member is never taken for it', async () => {
    const keys = new ProofKeyCache(10);
    const jwk = await exportJWK(publicKey);
    await checkDpopProof(await proof(), expect(), keys);
    // Signed by the cached key, but naming a jwk whose y is another key's: if the cache
    // matched on x (or kty and crv), this would verify.
    const otherY = (await exportJWK(other.publicKey)).y;
    await refused(
      async () => checkDpopProof(await proof({}, { jwk: { ...jwk, y: otherY } }), expect(), keys),
      'dpop-signature',
    );
    // The private form of the cached key is refused before any lookup.
    await refused(
      async () =>
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

  test('EdDSA (Ed25519) and RS256 proofs verify, their thumbprints as RFC 7638 computes them', async () => {
    const keys = new ProofKeyCache(10);
    for (const [alg, pair] of [
      ['EdDSA', newKeyPair('ed25519')],
      ['RS256', newKeyPair('rsa', { modulusLength: 2048 })],
      ['PS256', newKeyPair('rsa', { modulusLength: 2048 })],
    ] as const) {
      const jwk = await exportJWK(pair.publicKey);
      const made = await new SignJWT(freshClaims())
        .setProtectedHeader({ alg, typ: 'dpop+jwt', jwk })
        .sign(pair.privateKey);
      const checked = checkDpopProof(made, expect(), keys);
      assert.equal(checked.jkt, await calculateJwkThumbprint(jwk, 'sha256'), alg);
      // The cached key verifies the next proof, and a tampered one still fails.
      const next = await new SignJWT(freshClaims())
        .setProtectedHeader({ alg, typ: 'dpop+jwt', jwk })
        .sign(pair.privateKey);
      assert.equal(checkDpopProof(next, expect(), keys).jkt, checked.jkt);
      const [h, , sig] = next.split('.');
      const forged = Buffer.from(JSON.stringify({ ...freshClaims(), jti: 'forged' })).toString(
        'base64url',
      );
      await refused(
        async () => checkDpopProof(`${h}.${forged}.${sig}`, expect(), keys),
        'dpop-signature',
      );
    }
  });

  test('a crit header is refused: a proof has no extension we understand (RFC 7515 §4.1.11)', async () => {
    const jwk = await exportJWK(publicKey);
    // jose itself signs and would verify crit b64 (RFC 7797): not here.
    const b64 = await new SignJWT(freshClaims())
      .setProtectedHeader({ alg: 'ES256', typ: 'dpop+jwt', jwk, crit: ['b64'], b64: true })
      .sign(privateKey);
    await refused(async () => checkDpopProof(b64, expect()), 'dpop-malformed');
    const unknown = signedAs(
      { alg: 'ES256', typ: 'dpop+jwt', jwk, crit: ['urn:example:x'], 'urn:example:x': 1 },
      freshClaims(),
      privateKey,
      'sha256',
    );
    await refused(async () => checkDpopProof(unknown, expect()), 'dpop-malformed');
    // The same proof without crit verifies: the refusal is the header's, not the signer's.
    const plain = signedAs(
      { alg: 'ES256', typ: 'dpop+jwt', jwk },
      freshClaims(),
      privateKey,
      'sha256',
    );
    checkDpopProof(plain, expect());
  });

  test('an alg that does not fit the key type or size is refused before the signature', async () => {
    const rsa = newKeyPair('rsa', { modulusLength: 2048 });
    const rsaJwk = await exportJWK(rsa.publicKey);
    // ES256 naming an RSA key, signed RS256 by it.
    const es256Rsa = signedAs(
      { alg: 'ES256', typ: 'dpop+jwt', jwk: rsaJwk },
      freshClaims(),
      rsa.privateKey,
      'sha256',
    );
    await refused(async () => checkDpopProof(es256Rsa, expect()), 'dpop-alg');
    // RS256 naming the EC key, signed by it.
    const rs256Ec = signedAs(
      { alg: 'RS256', typ: 'dpop+jwt', jwk: await exportJWK(publicKey) },
      freshClaims(),
      privateKey,
      'sha256',
    );
    await refused(async () => checkDpopProof(rs256Ec, expect()), 'dpop-alg');
    // ES384 with a P-256 key.
    const es384P256 = signedAs(
      { alg: 'ES384', typ: 'dpop+jwt', jwk: await exportJWK(publicKey) },
      freshClaims(),
      privateKey,
      'sha384',
    );
    await refused(async () => checkDpopProof(es384P256, expect()), 'dpop-alg');
    // RSA under 2048 bits (RFC 7518 §3.3), refused as the token verifier refuses it.
    const short = newKeyPair('rsa', { modulusLength: 1024 });
    const rs256Short = signedAs(
      { alg: 'RS256', typ: 'dpop+jwt', jwk: await exportJWK(short.publicKey) },
      freshClaims(),
      short.privateKey,
      'sha256',
    );
    await refused(async () => checkDpopProof(rs256Short, expect()), 'dpop-alg');
    // EdDSA naming an X25519 key (an OKP that cannot sign).
    // Any 32 octets are an X25519 public key (RFC 7748 §5).
    const x25519 = { kty: 'OKP', crv: 'X25519', x: Buffer.alloc(32, 9).toString('base64url') };
    const edX = signedAs(
      { alg: 'EdDSA', typ: 'dpop+jwt', jwk: x25519 },
      freshClaims(),
      newKeyPair('ed25519').privateKey,
      null,
    );
    await refused(async () => checkDpopProof(edX, expect()), 'dpop-alg');
  });

  test('a signature in another spelling or of the wrong length for ES256 is refused', async () => {
    const jwk = await exportJWK(publicKey);
    const header = { alg: 'ES256', typ: 'dpop+jwt', jwk };
    const made = signedAs(header, freshClaims(), privateKey, 'sha256');
    checkDpopProof(made, expect());
    // 64 octets are 86 characters, the last one's low 4 bits unused: set one, and a
    // lenient decoder reads the very same signature (RFC 4648 §3.5).
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(made.slice(-1));
    const respelled = made.slice(0, -1) + alphabet[last | 1];
    assert.notEqual(respelled, made);
    assert.deepEqual(
      Buffer.from(respelled.split('.')[2] as string, 'base64url'),
      Buffer.from(made.split('.')[2] as string, 'base64url'),
    );
    await refused(async () => checkDpopProof(respelled, expect()), 'dpop-malformed');
    // The signature as DER (what a careless signer sends) and r‖s with an extra octet.
    const der = signedAs(header, freshClaims(), privateKey, 'sha256', 'der');
    await refused(async () => checkDpopProof(der, expect()), 'dpop-signature');
    const [h, p, sig] = made.split('.');
    const longer = Buffer.concat([Buffer.from(sig as string, 'base64url'), Buffer.alloc(1)]);
    await refused(
      async () => checkDpopProof(`${h}.${p}.${longer.toString('base64url')}`, expect()),
      'dpop-signature',
    );
  });
});
