/**
 * The issued JWT, signed by `crypto.sign`: byte for byte the header and claims jose's
 * SignJWT writes for the same inputs (RFC 9068: typ at+jwt, kid; the same claims in the
 * same order), and verifiable by jose and by a JWKS consumer, for each algorithm we sign
 * with.
 */
import assert from 'node:assert/strict';
import { createPublicKey, type KeyObject } from 'node:crypto';
import { describe, test } from 'node:test';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, SignJWT } from 'jose';
import type { SigningAlgorithm } from '../../src/config/types.js';
import { KeyRing } from '../../src/keys/keyRing.js';
import { ps256PrivateKey } from '../../src/keys/rsaPssKey.js';
import { ManualClock } from '../../src/lib/clock.js';
import { issueAccessToken } from '../../src/token/issueAccessToken.js';
import { newKeyPair } from '../helpers/keyPairs.js';

const ISSUER = 'https://portaria.test';
const AUDIENCE = 'orders-api';
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0, 500);

const KEYS: [SigningAlgorithm, () => KeyObject][] = [
  ['ES256', () => newKeyPair('ec', { namedCurve: 'P-256' }).privateKey],
  ['EdDSA', () => newKeyPair('ed25519').privateKey],
  ['RS256', () => newKeyPair('rsa', { modulusLength: 2048 }).privateKey],
  ['PS256', () => newKeyPair('rsa', { modulusLength: 2048 }).privateKey],
];

describe('issueAccessToken', () => {
  for (const [alg, keyOf] of KEYS) {
    describe(alg, () => {
      const clock = new ManualClock(T0);
      const privateKey = keyOf();
      // The ring holds a PS256 key as the loader does: RSASSA-PSS, restricted to PS256.
      const held = alg === 'PS256' ? ps256PrivateKey(privateKey) : privateKey;
      const ring = new KeyRing([{ kid: 'k-1', alg, privateKey: held }], new Map(), alg, clock);
      const input = { clientId: 'acme ☃', scope: 'orders:read orders:write', lifetimeSeconds: 600 };
      const issued = issueAccessToken(
        ring.signingKey,
        { issuer: ISSUER, audience: AUDIENCE, clock },
        input,
      );

      test('header and claims are the octets jose writes for the same token', async () => {
        const jose = await new SignJWT({ client_id: input.clientId, scope: input.scope })
          .setProtectedHeader({ alg, kid: 'k-1', typ: 'at+jwt' })
          .setIssuer(ISSUER)
          .setSubject(input.clientId)
          .setAudience(AUDIENCE)
          .setIssuedAt(issued.issuedAt)
          .setNotBefore(issued.issuedAt)
          .setExpirationTime(issued.expiresAt)
          .setJti(issued.tokenId)
          .sign(privateKey);
        const ours = issued.token.split('.');
        const theirs = jose.split('.');
        assert.equal(ours[0], theirs[0], 'protected header');
        assert.equal(ours[1], theirs[1], 'claims');
        assert.equal(ours.length, 3);
      });

      test('the header is typ at+jwt with the kid; the claims are the RFC 9068 set', () => {
        assert.deepEqual(decodeProtectedHeader(issued.token), { alg, kid: 'k-1', typ: 'at+jwt' });
        const payload = JSON.parse(
          Buffer.from(issued.token.split('.')[1] as string, 'base64url').toString(),
        );
        const iat = Math.floor(T0 / 1000);
        assert.deepEqual(payload, {
          client_id: 'acme ☃',
          scope: 'orders:read orders:write',
          iss: ISSUER,
          sub: 'acme ☃',
          aud: AUDIENCE,
          iat,
          nbf: iat,
          exp: iat + 600,
          jti: issued.tokenId,
        });
        assert.match(issued.tokenId, /^[A-Za-z0-9_-]{22}$/);
        assert.equal(issued.issuedAt, iat);
        assert.equal(issued.expiresAt, iat + 600);
      });

      test('jose verifies it with the public key and with our published JWKS', async () => {
        const options = {
          issuer: ISSUER,
          audience: AUDIENCE,
          typ: 'at+jwt',
          algorithms: [alg],
          currentDate: new Date(T0),
        };
        const direct = await jwtVerify(issued.token, createPublicKey(privateKey), options);
        assert.equal(direct.payload.sub, 'acme ☃');
        const viaJwks = await jwtVerify(
          issued.token,
          createLocalJWKSet(ring.jwks() as never),
          options,
        );
        assert.equal(viaJwks.payload.jti, issued.tokenId);
      });
    });
  }

  test('two tokens issued in the same second differ (a fresh jti and signature)', () => {
    const clock = new ManualClock(T0);
    const ring = new KeyRing(
      [
        {
          kid: 'k-1',
          alg: 'ES256',
          privateKey: newKeyPair('ec', { namedCurve: 'P-256' }).privateKey,
        },
      ],
      new Map(),
      'ES256',
      clock,
    );
    const settings = { issuer: ISSUER, audience: AUDIENCE, clock };
    const input = { clientId: 'acme', scope: '', lifetimeSeconds: 60 };
    const a = issueAccessToken(ring.signingKey, settings, input);
    const b = issueAccessToken(ring.signingKey, settings, input);
    assert.notEqual(a.tokenId, b.tokenId);
    assert.notEqual(a.token, b.token);
  });

  test('a thousand tokens carry a thousand distinct 128-bit token ids, in and across random batches', () => {
    const clock = new ManualClock(T0);
    const ring = new KeyRing(
      [{ kid: 'k-1', alg: 'EdDSA', privateKey: newKeyPair('ed25519').privateKey }],
      new Map(),
      'EdDSA',
      clock,
    );
    const settings = { issuer: ISSUER, audience: AUDIENCE, clock };
    const input = { clientId: 'acme', scope: '', lifetimeSeconds: 60 };
    const ids = new Set<string>();
    const bytes = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const { tokenId } = issueAccessToken(ring.signingKey, settings, input);
      assert.equal(Buffer.from(tokenId, 'base64url').length, 16);
      assert.equal(Buffer.from(tokenId, 'base64url').toString('base64url'), tokenId);
      ids.add(tokenId);
      // No id shares its first or last 8 bytes with another: no byte run used twice.
      const raw = Buffer.from(tokenId, 'base64url');
      bytes.add(raw.subarray(0, 8).toString('hex'));
      bytes.add(raw.subarray(8).toString('hex'));
    }
    assert.equal(ids.size, 1000);
    assert.equal(bytes.size, 2000);
  });
});
