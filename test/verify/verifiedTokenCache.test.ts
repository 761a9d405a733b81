/**
 * The verified-token cache never serves a token that full verification would refuse
 * because of a key change: real TokenVerifier, cache, key ring and revocation store,
 * real ES256 keys, a manual clock.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import type { Principal } from '../../src/domain/principal.js';
import { KeyRing } from '../../src/keys/keyRing.js';
import { ManualClock } from '../../src/lib/clock.js';
import { MemoryRevocationStore } from '../../src/revocation/memoryRevocationStore.js';
import { TokenVerifier } from '../../src/verify/tokenVerifier.js';
import { buildIssuerTable } from '../../src/verify/trustedIssuer.js';
import { KEY_LENGTH, VerifiedTokenCache } from '../../src/verify/verifiedTokenCache.js';
import { newKeyPair } from '../helpers/keyPairs.js';
import { signWith } from '../helpers/tokens.js';

const ISSUER = 'https://portaria.test';
const AUDIENCE = 'partner-api';
const T0 = Date.UTC(2026, 0, 1);

function claims(clock: ManualClock, jti: string) {
  const now = Math.floor(clock.now() / 1000);
  return { iss: ISSUER, aud: AUDIENCE, sub: 'acme', iat: now, exp: now + 3600, jti };
}

async function outcome(result: unknown): Promise<string> {
  try {
    await result;
    return 'accepted';
  } catch (error) {
    return `refused ${(error as { reason?: string }).reason}`;
  }
}

describe('verified-token cache and key changes', () => {
  test('a verification in flight during a key reload does not refill the cleared cache', async () => {
    const clock = new ManualClock(T0);
    const k1 = newKeyPair('ec', { namedCurve: 'P-256' });
    let ring = new KeyRing(
      [{ kid: 'k1', alg: 'ES256', privateKey: k1.privateKey }],
      new Map(),
      'ES256',
      clock,
    );
    const cache = new VerifiedTokenCache(100, clock);
    const verifier = new TokenVerifier({
      issuers: buildIssuerTable(
        { issuer: ISSUER, audience: AUDIENCE, clockSkewSeconds: 60 },
        () => ring,
        [],
      ),
      clock,
      cache,
      revocation: new MemoryRevocationStore(clock),
    });
    const token = await signWith(k1.privateKey, 'ES256', claims(clock, 'c-1'), { kid: 'k1' });

    const inFlight = verifier.verify(token); // k1 looked up; the signature check is pending
    // A key reload lands meanwhile (as app.ts applies one): k1 is gone.
    const k2 = newKeyPair('ec', { namedCurve: 'P-256' });
    ring = new KeyRing(
      [{ kid: 'k2', alg: 'ES256', privateKey: k2.privateKey }],
      new Map(),
      'ES256',
      clock,
    );
    cache.clear();
    assert.equal(await outcome(inFlight), 'accepted', 'it began under the old ring');
    assert.equal(cache.size, 0, 'its result is not cached under the new ring');
    assert.equal(await outcome(verifier.verify(token)), 'refused unknown-kid');
  });

  test('two tokens ending alike share a slot: only an exact match is served', () => {
    const clock = new ManualClock(T0);
    const cache = new VerifiedTokenCache(100, clock);
    const end = 'e'.repeat(KEY_LENGTH);
    const first = `a.b.${end}`;
    const second = `x.y.${end}`;
    const principal = (subject: string) =>
      ({ subject, expiresAt: T0 / 1000 + 3600 }) as unknown as Principal;
    cache.set(first, principal('first'), cache.generation);
    assert.equal(cache.get(first)?.subject, 'first');
    assert.equal(cache.get(second), undefined, 'the same end is not the same token');
    cache.set(second, principal('second'), cache.generation);
    assert.equal(cache.get(second)?.subject, 'second');
    assert.equal(cache.get(first), undefined, 'the later verified token took the slot');
    assert.equal(cache.size, 1);
    const short = 'short';
    cache.set(short, principal('short'), cache.generation);
    assert.equal(cache.get(short)?.subject, 'short', 'a token shorter than the key is its own key');
    assert.equal(cache.get('shor'), undefined);
  });
});

describe('verified-token cache: an entry stands for the whole token', () => {
  const clock = new ManualClock(T0);
  const principal = (subject: string) =>
    ({ subject, expiresAt: T0 / 1000 + 3600 }) as unknown as Principal;

  test("a forged header and payload in front of a cached token's signature are not served", async () => {
    const k1 = newKeyPair('ec', { namedCurve: 'P-256' });
    const token = await signWith(k1.privateKey, 'ES256', claims(clock, 'c-1'), { kid: 'k1' });
    const cache = new VerifiedTokenCache(100, clock);
    cache.set(token, principal('acme'), cache.generation);
    const signature = token.slice(token.lastIndexOf('.'));
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const forged = `${b64({ alg: 'ES256', kid: 'k1', typ: 'at+jwt' })}.${b64({ ...claims(clock, 'c-1'), sub: 'admin' })}${signature}`;
    assert.equal(cache.get(forged), undefined);
    const [header, payload] = token.split('.');
    assert.equal(
      cache.get(`${header}.${b64({ sub: 'admin' })}${signature}`),
      undefined,
      'payload only',
    );
    assert.equal(
      cache.get(`${b64({ alg: 'ES256' })}.${payload}${signature}`),
      undefined,
      'header only',
    );
    assert.equal(cache.get(token)?.subject, 'acme', 'the token itself still is');
  });

  test('a token differing from a cached one in a single character is not served', () => {
    const cache = new VerifiedTokenCache(100, clock);
    const token = `aaaa.bbbb.${'c'.repeat(86)}`;
    cache.set(token, principal('acme'), cache.generation);
    for (const other of [`b${token.slice(1)}`, `aaaa.bbbc.${'c'.repeat(86)}`, `${token}c`]) {
      assert.equal(cache.get(other), undefined, other);
    }
    assert.equal(cache.get(token)?.subject, 'acme');
  });

  test('through the verifier: a copied signature under another payload is verified in full and refused', async () => {
    const k1 = newKeyPair('ec', { namedCurve: 'P-256' });
    const ring = new KeyRing(
      [{ kid: 'k1', alg: 'ES256', privateKey: k1.privateKey }],
      new Map(),
      'ES256',
      clock,
    );
    const lookups: boolean[] = [];
    const verifier = new TokenVerifier({
      issuers: buildIssuerTable(
        { issuer: ISSUER, audience: AUDIENCE, clockSkewSeconds: 60 },
        () => ring,
        [],
      ),
      clock,
      cache: new VerifiedTokenCache(100, clock),
      revocation: new MemoryRevocationStore(clock),
      hooks: { cacheLookup: (hit) => lookups.push(hit) },
    });
    const token = await signWith(k1.privateKey, 'ES256', claims(clock, 'c-1'), { kid: 'k1' });
    assert.equal(await outcome(verifier.verify(token)), 'accepted');
    assert.equal(await outcome(verifier.verify(token)), 'accepted');
    const [header, , signature] = token.split('.');
    const payload = Buffer.from(JSON.stringify({ ...claims(clock, 'c-1'), sub: 'admin' })).toString(
      'base64url',
    );
    assert.equal(
      await outcome(verifier.verify(`${header}.${payload}.${signature}`)),
      'refused bad-signature',
    );
    assert.deepEqual(lookups, [false, true, false]);
  });
});

describe('verified-token cache: slots', () => {
  test('ES256 signatures of 10 000 tokens take 10 000 slots', () => {
    const clock = new ManualClock(T0);
    const cache = new VerifiedTokenCache(20_000, clock);
    const principal = { subject: 'acme', expiresAt: T0 / 1000 + 3600 } as unknown as Principal;
    for (let i = 0; i < 10_000; i++) {
      // An ES256 signature segment: 64 random octets, 86 characters.
      const signature = randomBytes(64).toString('base64url');
      cache.set(`a.b.${signature}`, principal, cache.generation);
    }
    // About 2^31 slots: even one shared slot among 10 000 tokens happens in ~2 % of runs.
    assert.ok(cache.size >= 9_998, String(cache.size));
  });
});
