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
import { VerifiedTokenCache } from '../../src/verify/verifiedTokenCache.js';
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

  test('two tokens ending alike are both held, each served only to itself', () => {
    const clock = new ManualClock(T0);
    const cache = new VerifiedTokenCache(100, clock);
    const end = 'e'.repeat(12);
    const first = `a.b.${end}`;
    const second = `x.y.${end}`;
    const principal = (subject: string) =>
      ({ subject, expiresAt: T0 / 1000 + 3600 }) as unknown as Principal;
    cache.set(first, principal('first'), cache.generation);
    assert.equal(cache.get(first)?.subject, 'first');
    assert.equal(cache.get(second), undefined, 'the same end is not the same token');
    cache.set(second, principal('second'), cache.generation);
    assert.equal(cache.get(second)?.subject, 'second');
    assert.equal(cache.get(first)?.subject, 'first');
    assert.equal(cache.size, 2);
    const short = 'short';
    cache.set(short, principal('short'), cache.generation);
    assert.equal(cache.get(short)?.subject, 'short', 'a short token is its own entry');
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

describe('verified-token cache: entries and eviction', () => {
  const principal = (subject: string, expiresAt = T0 / 1000 + 3600) =>
    ({ subject, expiresAt }) as unknown as Principal;

  test('10 000 distinct tokens take 10 000 entries', () => {
    const clock = new ManualClock(T0);
    const cache = new VerifiedTokenCache(10_000, clock);
    for (let i = 0; i < 10_000; i++) {
      // An ES256 signature segment: 64 random octets, 86 characters.
      const signature = randomBytes(64).toString('base64url');
      cache.set(`a.b.${signature}`, principal(signature), cache.generation);
    }
    assert.equal(cache.size, 10_000);
  });

  test('a full cache evicts the least recently used token; a hit makes a token recent', () => {
    const clock = new ManualClock(T0);
    const cache = new VerifiedTokenCache(3, clock);
    for (const t of ['t1', 't2', 't3']) cache.set(t, principal(t), cache.generation);
    assert.equal(cache.get('t1')?.subject, 't1');
    cache.set('t4', principal('t4'), cache.generation);
    assert.equal(cache.get('t2'), undefined, 'the least recently used went');
    assert.deepEqual(
      ['t1', 't3', 't4'].map((t) => cache.get(t)?.subject),
      ['t1', 't3', 't4'],
    );
    assert.equal(cache.size, 3);
  });

  test('an expired entry is dropped on its lookup and its room reused', () => {
    const clock = new ManualClock(T0);
    const cache = new VerifiedTokenCache(2, clock);
    cache.set('short-lived', principal('s', T0 / 1000 + 10), cache.generation);
    cache.set('long-lived', principal('l'), cache.generation);
    clock.advance(10_000);
    assert.equal(cache.get('short-lived'), undefined);
    assert.equal(cache.size, 1);
    cache.set('next', principal('n'), cache.generation);
    assert.equal(cache.get('long-lived')?.subject, 'l', 'not evicted: the freed room was used');
    assert.equal(cache.get('next')?.subject, 'n');
  });

  test('clear forgets every entry, and a verification begun before it is not stored', () => {
    const clock = new ManualClock(T0);
    const cache = new VerifiedTokenCache(4, clock);
    const before = cache.generation;
    cache.set('a', principal('a'), before);
    cache.clear();
    assert.equal(cache.get('a'), undefined);
    assert.equal(cache.size, 0);
    cache.set('b', principal('b'), before);
    assert.equal(cache.get('b'), undefined, 'stale generation');
    cache.set('b', principal('b'), cache.generation);
    assert.equal(cache.get('b')?.subject, 'b');
  });

  test('under random sets, hits, expiries and evictions it answers as a reference LRU map', () => {
    const clock = new ManualClock(T0);
    const capacity = 64;
    const cache = new VerifiedTokenCache(capacity, clock);
    const reference = new Map<string, number>();
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    for (let step = 0; step < 50_000; step++) {
      const token = `token-${random(200)}`;
      const now = clock.now() / 1000;
      if (random(3) === 0) {
        const exp = now + 1 + random(50);
        cache.set(token, principal(token, exp), cache.generation);
        reference.delete(token);
        reference.set(token, exp);
        if (reference.size > capacity) reference.delete(reference.keys().next().value as string);
      } else {
        const exp = reference.get(token);
        const expected = exp !== undefined && exp > now ? token : undefined;
        reference.delete(token);
        if (expected !== undefined) reference.set(token, exp as number);
        assert.equal(cache.get(token)?.subject, expected, `step ${step}`);
      }
      if (random(20) === 0) clock.advance(1000);
      assert.equal(cache.size, reference.size, `size at step ${step}`);
    }
  });

  test('a cache of size 0 holds nothing', () => {
    const cache = new VerifiedTokenCache(0, new ManualClock(T0));
    cache.set('a', principal('a'), cache.generation);
    assert.equal(cache.get('a'), undefined);
    assert.equal(cache.size, 0);
  });
});
