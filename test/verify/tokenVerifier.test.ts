/**
 * The token verifier on its own, through its interface: real ES256/EdDSA/RS256 tokens
 * signed with jose, our key ring for our own issuer and a key file for a partner issuer,
 * the in-memory revocation store, the verified-token cache and a manual clock. Each
 * refusal is named by its private reason (the metric label and access-line field).
 */
import assert from 'node:assert/strict';
import { type KeyObject, sign } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import type { Principal } from '../../src/domain/principal.js';
import { PortariaError } from '../../src/errors.js';
import { StaticKeySet } from '../../src/issuers/staticKeySet.js';
import { KeyRing } from '../../src/keys/keyRing.js';
import { epochSeconds, ManualClock } from '../../src/lib/clock.js';
import { MemoryRevocationStore } from '../../src/revocation/memoryRevocationStore.js';
import { TokenVerifier } from '../../src/verify/tokenVerifier.js';
import { buildIssuerTable } from '../../src/verify/trustedIssuer.js';
import { VerifiedTokenCache } from '../../src/verify/verifiedTokenCache.js';
import { issuerConfig } from '../helpers/jwksServer.js';
import { newKeyPair } from '../helpers/keyPairs.js';
import { signWith } from '../helpers/tokens.js';

const ISSUER = 'https://portaria.test';
const AUDIENCE = 'orders-api';
const SKEW = 60;
const PARTNER = 'https://idp.partner.test';
const PARTNER_AUDIENCE = 'partner-api';
const PARTNER_SKEW = 30;
const T0 = Date.UTC(2026, 0, 1);
const UNVERIFIABLE = 'The access token signature could not be verified.';

const OWN = newKeyPair('ec', { namedCurve: 'P-256' });
const PARTNER_KEY = newKeyPair('ec', { namedCurve: 'P-256' });
const STRANGER = newKeyPair('ec', { namedCurve: 'P-256' });
const ED25519 = newKeyPair('ed25519');

interface Verifying {
  readonly clock: ManualClock;
  readonly verifier: TokenVerifier;
  readonly revocation: MemoryRevocationStore;
  readonly cache: VerifiedTokenCache;
  /** Each verification's cache lookup: true for a hit. */
  readonly lookups: boolean[];
  /** Each failed full verification: `<issuer id> <reason>`. */
  readonly failures: string[];
  /** Each successful full verification: `<issuer id> <age in seconds>`. */
  readonly verified: string[];
  /** How many times our own issuer's key ring was asked for a key. */
  ownKeyLookups(): number;
}

/** A verifier trusting our own issuer (key ring: `k1`, ES256) and a partner (key file: `p1`, ES256 only). */
async function verifying(t: TestContext, options: { loadPartner?: boolean } = {}) {
  const clock = new ManualClock(T0);
  const ring = new KeyRing(
    [{ kid: 'k1', alg: 'ES256', privateKey: OWN.privateKey }],
    new Map(),
    'ES256',
    clock,
  );
  const dir = await mkdtemp(join(tmpdir(), 'portaria-verifier-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const keyFile = join(dir, 'partner-jwks.json');
  const jwk = { ...PARTNER_KEY.publicKey.export({ format: 'jwk' }), kid: 'p1' };
  await writeFile(keyFile, JSON.stringify({ keys: [jwk] }));
  const partnerConfig = issuerConfig({
    issuer: PARTNER,
    keyFile,
    audiences: [PARTNER_AUDIENCE],
    algorithms: ['ES256'],
    clockSkewSeconds: PARTNER_SKEW,
    requireTyp: false,
    maxLifetimeSeconds: 3600,
  });
  const partnerKeys = new StaticKeySet(partnerConfig);
  if (options.loadPartner !== false) await partnerKeys.load();
  let ownKeyLookups = 0;
  const issuers = buildIssuerTable({
    issuer: ISSUER,
    audience: AUDIENCE,
    clockSkewSeconds: SKEW,
  }, () => {
    ownKeyLookups++;
    return ring;
  }, [{ config: partnerConfig, keys: partnerKeys }]);
  const revocation = new MemoryRevocationStore(clock);
  const cache = new VerifiedTokenCache(100, clock);
  const lookups: boolean[] = [];
  const failures: string[] = [];
  const verified: string[] = [];
  const verifier = new TokenVerifier({
    issuers,
    clock,
    cache,
    revocation,
    hooks: {
      cacheLookup: (hit) => lookups.push(hit),
      verifyFailed: (issuerId, reason) => failures.push(`${issuerId} ${reason}`),
      verified: (issuerId, _seconds, age) => verified.push(`${issuerId} ${age}`),
    },
  });
  return {
    clock,
    verifier,
    revocation,
    cache,
    lookups,
    failures,
    verified,
    ownKeyLookups: () => ownKeyLookups,
  } satisfies Verifying;
}

/** Claims of a valid token of ours at the clock's time; `undefined` removes a claim. */
function ownClaims(clock: ManualClock, overrides: Record<string, unknown> = {}) {
  const now = epochSeconds(clock);
  return {
    iss: ISSUER,
    sub: 'acme',
    client_id: 'acme',
    aud: AUDIENCE,
    iat: now,
    nbf: now,
    exp: now + 600,
    jti: 'token-1',
    scope: 'orders:read orders:write',
    ...overrides,
  };
}

function partnerClaims(clock: ManualClock, overrides: Record<string, unknown> = {}) {
  return ownClaims(clock, { iss: PARTNER, aud: PARTNER_AUDIENCE, ...overrides });
}

/** Our token: ES256 under `k1`, `typ: at+jwt`; `header` adds or (with `undefined`) removes members. */
function ownToken(claims: Record<string, unknown>, header: Record<string, unknown> = {}) {
  return signWith(OWN.privateKey, 'ES256', claims, { kid: 'k1', ...header });
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** ES256 over exactly the header and payload given, past jose's own checks (e.g. `crit`). */
function rawEs256(key: KeyObject, header: unknown, claims: unknown): string {
  const input = `${b64(header)}.${b64(claims)}`;
  const signature = sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

/** `accepted <subject>`, or `refused <code> <reason>`; sync throws and rejections alike. */
async function outcome(verifier: TokenVerifier, token: string): Promise<string> {
  try {
    return `accepted ${(await verifier.verify(token)).subject}`;
  } catch (error) {
    assert.ok(error instanceof PortariaError, String(error));
    return `refused ${error.code} ${error.reason}`;
  }
}

/** The refusal's public detail (the problem's `detalhe`). */
async function detailOf(verifier: TokenVerifier, token: string): Promise<string> {
  try {
    await verifier.verify(token);
  } catch (error) {
    assert.ok(error instanceof PortariaError);
    return error.detail;
  }
  assert.fail('accepted');
}

/** Replaces the last character of the token's signature segment. */
function withLastCharacter(token: string, next: (last: string) => string): string {
  return token.slice(0, -1) + next(token.slice(-1));
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

describe('TokenVerifier', () => {
  test('a valid token of ours yields its principal, with client_id, scopes and every claim', async (t) => {
    const v = await verifying(t);
    const claims = ownClaims(v.clock, { sub: 'user-7', client_id: 'acme' });
    const principal = (await v.verifier.verify(await ownToken(claims))) as Principal;
    assert.equal(principal.subject, 'user-7');
    assert.equal(principal.clientId, 'acme');
    assert.equal(principal.scope, 'orders:read orders:write');
    assert.deepEqual([...principal.scopes], ['orders:read', 'orders:write']);
    assert.equal(principal.tokenId, 'token-1');
    assert.equal(principal.issuer, ISSUER);
    assert.equal(principal.issuerId, 'self');
    assert.equal(principal.issuedAt, claims.iat);
    assert.equal(principal.expiresAt, claims.exp);
    assert.deepEqual(principal.claims, claims);
    assert.ok(Object.isFrozen(principal) && Object.isFrozen(principal.claims));
  });

  test('without client_id the client is the sub, and without scope the scopes are empty', async (t) => {
    const v = await verifying(t);
    const token = await ownToken(ownClaims(v.clock, { client_id: undefined, scope: undefined }));
    const principal = await v.verifier.verify(token);
    assert.equal(principal.clientId, 'acme');
    assert.equal(principal.scope, '');
    assert.equal(principal.scopes.size, 0);
  });

  test("a partner's token is verified with the partner's key, audience and rules (typ not required)", async (t) => {
    const v = await verifying(t);
    const token = await signWith(PARTNER_KEY.privateKey, 'ES256', partnerClaims(v.clock), {
      kid: 'p1',
      typ: undefined,
    });
    const principal = await v.verifier.verify(token);
    assert.equal(principal.issuerId, 'partner');
    assert.equal(principal.issuer, PARTNER);
    assert.deepEqual(v.verified, ['partner 0']);
  });

  describe('refusals, each named by its reason', () => {
    /** [input, token made at the clock's time, expected outcome] */
    const cases: [string, (clock: ManualClock) => Promise<string> | string, string][] = [
      // The compact form and its one spelling.
      ['two segments', () => 'eyJhbGciOiJFUzI1NiJ9.e30', 'refused token-invalid malformed'],
      ['a JWE shape (five segments)', () => 'a.b.c.d.e', 'refused token-invalid malformed'],
      [
        'padding in a segment',
        async (c) => `${await ownToken(ownClaims(c))}==`,
        'refused token-invalid malformed',
      ],
      [
        'a space inside the token (two tokens in one header)',
        async (c) => `${await ownToken(ownClaims(c))} a.b.c`,
        'refused token-invalid malformed',
      ],
      [
        'a signature ending in a character with an unused bit set',
        async (c) =>
          withLastCharacter(
            await ownToken(ownClaims(c)),
            (last) => ALPHABET[ALPHABET.indexOf(last) + 1] as string,
          ),
        'refused token-invalid non-canonical',
      ],
      [
        'a signature two characters short (canonical, but not 64 octets)',
        async (c) => (await ownToken(ownClaims(c))).slice(0, -2),
        'refused token-invalid non-canonical',
      ],
      // The protected header.
      [
        'a protected header that is not JSON',
        async (c) => `${Buffer.from('{alg').toString('base64url')}.${b64(ownClaims(c))}.c2ln`,
        'refused token-invalid malformed-header',
      ],
      [
        'a protected header that is a JSON array',
        (c) => `${b64(['ES256'])}.${b64(ownClaims(c))}.c2ln`,
        'refused token-invalid malformed-header',
      ],
      [
        'a payload that is not a JSON object',
        () => `${b64({ alg: 'ES256', kid: 'k1' })}.${b64('claims')}.c2ln`,
        'refused token-invalid malformed-payload',
      ],
      // The algorithm allowlists.
      [
        'alg none',
        (c) => `${b64({ alg: 'none', kid: 'k1', typ: 'at+jwt' })}.${b64(ownClaims(c))}.c2ln`,
        'refused token-invalid alg-not-allowed',
      ],
      [
        'alg HS256',
        (c) => `${b64({ alg: 'HS256', kid: 'k1', typ: 'at+jwt' })}.${b64(ownClaims(c))}.c2ln`,
        'refused token-invalid alg-not-allowed',
      ],
      [
        'no alg',
        (c) => `${b64({ kid: 'k1', typ: 'at+jwt' })}.${b64(ownClaims(c))}.c2ln`,
        'refused token-invalid alg-not-allowed',
      ],
      [
        'an algorithm we accept that the named issuer does not use (RS256 naming the partner)',
        (c) => `${b64({ alg: 'RS256', kid: 'p1' })}.${b64(partnerClaims(c))}.c2ln`,
        'refused token-invalid alg-not-allowed',
      ],
      // The issuer and its key.
      [
        'an iss no trusted issuer has',
        async (c) => ownToken(ownClaims(c, { iss: 'https://evil.test' })),
        'refused token-invalid unknown-issuer',
      ],
      [
        'no iss',
        async (c) => ownToken(ownClaims(c, { iss: undefined })),
        'refused token-invalid unknown-issuer',
      ],
      [
        'no kid',
        async (c) => ownToken(ownClaims(c), { kid: undefined }),
        'refused token-invalid no-kid',
      ],
      [
        'a kid our key ring does not hold',
        async (c) => ownToken(ownClaims(c), { kid: 'k2' }),
        'refused token-invalid unknown-kid',
      ],
      [
        "a kid of ours under the partner's iss",
        async (c) => ownToken(partnerClaims(c)),
        'refused token-invalid unknown-kid',
      ],
      [
        'EdDSA under the kid of our ES256 key',
        async (c) => signWith(ED25519.privateKey, 'EdDSA', ownClaims(c), { kid: 'k1' }),
        'refused token-invalid alg-mismatch',
      ],
      // The signature.
      [
        'a signature by a key we do not hold, under our kid',
        async (c) => signWith(STRANGER.privateKey, 'ES256', ownClaims(c), { kid: 'k1' }),
        'refused token-invalid bad-signature',
      ],
      [
        'a payload changed after signing',
        async (c) => {
          const [header, , signature] = (await ownToken(ownClaims(c))).split('.');
          return `${header}.${b64(ownClaims(c, { scope: 'admin' }))}.${signature}`;
        },
        'refused token-invalid bad-signature',
      ],
      [
        'a crit header parameter we do not understand',
        (c) =>
          rawEs256(
            OWN.privateKey,
            { alg: 'ES256', kid: 'k1', typ: 'at+jwt', crit: ['exp-hint'], 'exp-hint': 1 },
            ownClaims(c),
          ),
        'refused token-invalid unsupported',
      ],
      // typ (RFC 9068 §4: required for our own tokens).
      [
        'typ JWT on a token of ours',
        async (c) => ownToken(ownClaims(c), { typ: 'JWT' }),
        'refused token-invalid wrong-typ',
      ],
      [
        'no typ on a token of ours',
        async (c) => ownToken(ownClaims(c), { typ: undefined }),
        'refused token-invalid wrong-typ',
      ],
      // Time claims, with the issuer's skew (60 s for ours, 30 s for the partner).
      [
        'exp exactly the skew ago',
        async (c) =>
          ownToken(ownClaims(c, { iat: epochSeconds(c) - 600, exp: epochSeconds(c) - SKEW })),
        'refused token-expired expired',
      ],
      [
        'exp within the skew ago',
        async (c) =>
          ownToken(ownClaims(c, { iat: epochSeconds(c) - 600, exp: epochSeconds(c) - SKEW + 1 })),
        'accepted acme',
      ],
      [
        'nbf beyond the skew ahead',
        async (c) => ownToken(ownClaims(c, { nbf: epochSeconds(c) + SKEW + 1 })),
        'refused token-invalid not-yet-valid',
      ],
      [
        'nbf within the skew ahead',
        async (c) => ownToken(ownClaims(c, { nbf: epochSeconds(c) + SKEW })),
        'accepted acme',
      ],
      [
        'iat beyond the skew ahead',
        async (c) => ownToken(ownClaims(c, { iat: epochSeconds(c) + SKEW + 1, nbf: undefined })),
        'refused token-invalid iat-in-future',
      ],
      [
        'iat within the skew ahead',
        async (c) => ownToken(ownClaims(c, { iat: epochSeconds(c) + SKEW, nbf: undefined })),
        'accepted acme',
      ],
      [
        "a partner's iat beyond the partner's skew ahead (within ours)",
        (c) =>
          signWith(
            PARTNER_KEY.privateKey,
            'ES256',
            partnerClaims(c, { iat: epochSeconds(c) + PARTNER_SKEW + 1, nbf: undefined }),
            { kid: 'p1' },
          ),
        'refused token-invalid iat-in-future',
      ],
      [
        'a lifetime (exp − iat) over 24 hours on a token of ours',
        async (c) => ownToken(ownClaims(c, { exp: epochSeconds(c) + 86_401 })),
        'refused token-invalid lifetime-too-long',
      ],
      [
        "a lifetime over the partner's maximum (1 hour)",
        (c) =>
          signWith(
            PARTNER_KEY.privateKey,
            'ES256',
            partnerClaims(c, { exp: epochSeconds(c) + 3601 }),
            { kid: 'p1' },
          ),
        'refused token-invalid lifetime-too-long',
      ],
      // iss and aud.
      [
        'another audience',
        async (c) => ownToken(ownClaims(c, { aud: 'other-api' })),
        'refused token-invalid wrong-audience',
      ],
      [
        "the partner's audience on a token of ours",
        async (c) => ownToken(ownClaims(c, { aud: PARTNER_AUDIENCE })),
        'refused token-invalid wrong-audience',
      ],
      [
        'no aud',
        async (c) => ownToken(ownClaims(c, { aud: undefined })),
        'refused token-invalid wrong-audience',
      ],
      [
        'our audience among others',
        async (c) => ownToken(ownClaims(c, { aud: ['other-api', AUDIENCE] })),
        'accepted acme',
      ],
      // Required claims and their types.
      [
        'no jti',
        async (c) => ownToken(ownClaims(c, { jti: undefined })),
        'refused token-invalid missing-claim',
      ],
      [
        'no sub',
        async (c) => ownToken(ownClaims(c, { sub: undefined })),
        'refused token-invalid missing-claim',
      ],
      [
        'no exp',
        async (c) => ownToken(ownClaims(c, { exp: undefined })),
        'refused token-invalid bad-exp',
      ],
      [
        'no iat',
        async (c) => ownToken(ownClaims(c, { iat: undefined })),
        'refused token-invalid bad-iat',
      ],
      [
        'a numeric jti',
        async (c) => ownToken(ownClaims(c, { jti: 7 })),
        'refused token-invalid bad-claims',
      ],
      [
        'a scope that is an array',
        async (c) => ownToken(ownClaims(c, { scope: ['orders:read'] })),
        'refused token-invalid bad-claims',
      ],
      [
        'a sub with a lone surrogate beside a valid client_id',
        async (c) => ownToken(ownClaims(c, { sub: 'acme\udc00' })),
        'refused token-invalid bad-claims',
      ],
      // Ids a revocation could not name.
      [
        'a jti over 512 characters',
        async (c) => ownToken(ownClaims(c, { jti: 'j'.repeat(513) })),
        'refused token-invalid unrevocable-ids',
      ],
      [
        'a jti of exactly 512 characters',
        async (c) => ownToken(ownClaims(c, { jti: 'j'.repeat(512) })),
        'accepted acme',
      ],
      [
        'a jti with a control character',
        async (c) => ownToken(ownClaims(c, { jti: 'a\u0000b' })),
        'refused token-invalid unrevocable-ids',
      ],
      [
        'a client_id over 256 UTF-8 bytes',
        async (c) => ownToken(ownClaims(c, { client_id: '客'.repeat(86) })),
        'refused token-invalid unrevocable-ids',
      ],
      [
        'no client_id and a sub that is no client id',
        async (c) => ownToken(ownClaims(c, { client_id: undefined, sub: 'a\nb' })),
        'refused token-invalid unrevocable-ids',
      ],
    ];
    for (const [input, make, expected] of cases) {
      test(`${input} → ${expected}`, async (t) => {
        const v = await verifying(t);
        assert.equal(await outcome(v.verifier, await make(v.clock)), expected);
      });
    }
  });

  test('every refusal before the signature is proven has one public detail', async (t) => {
    const v = await verifying(t);
    const c = v.clock;
    for (const token of [
      `${b64({ alg: 'RS256', kid: 'p1' })}.${b64(partnerClaims(c))}.c2ln`,
      await ownToken(ownClaims(c, { iss: 'https://evil.test' })),
      await ownToken(ownClaims(c), { kid: undefined }),
      await ownToken(ownClaims(c), { kid: 'k2' }),
      await signWith(ED25519.privateKey, 'EdDSA', ownClaims(c), { kid: 'k1' }),
      (await ownToken(ownClaims(c))).slice(0, -2),
      await signWith(STRANGER.privateKey, 'ES256', ownClaims(c), { kid: 'k1' }),
    ]) {
      assert.equal(await detailOf(v.verifier, token), UNVERIFIABLE, token);
    }
  });

  test('a malformed token is refused synchronously, before it counts as a cache lookup', async (t) => {
    const v = await verifying(t);
    assert.throws(() => v.verifier.verify('not-a-jwt'), { code: 'token-invalid' });
    assert.deepEqual(v.lookups, []);
    assert.deepEqual(v.failures, []);
  });

  describe('the fixed order', () => {
    /** [faults, token, the reason of the earliest fault] */
    const cases: [string, (clock: ManualClock) => Promise<string> | string, string][] = [
      [
        'alg none and an unknown issuer: the algorithm first',
        (c) => `${b64({ alg: 'none' })}.${b64(ownClaims(c, { iss: 'https://evil.test' }))}.c2ln`,
        'alg-not-allowed',
      ],
      [
        'an unknown issuer and no kid: the issuer first',
        async (c) => ownToken(ownClaims(c, { iss: 'https://evil.test' }), { kid: undefined }),
        'unknown-issuer',
      ],
      [
        'an unknown kid on an expired token for another audience: the key first',
        async (c) =>
          ownToken(
            ownClaims(c, {
              aud: 'other',
              iat: epochSeconds(c) - 7200,
              exp: epochSeconds(c) - 3600,
            }),
            { kid: 'k2' },
          ),
        'unknown-kid',
      ],
      [
        'a bad signature on an expired token with the wrong typ: the signature first',
        async (c) =>
          signWith(
            STRANGER.privateKey,
            'ES256',
            ownClaims(c, { iat: epochSeconds(c) - 7200, exp: epochSeconds(c) - 3600 }),
            { kid: 'k1', typ: 'JWT' },
          ),
        'bad-signature',
      ],
      [
        'an unrevocable jti on an expired token: the time claims first',
        async (c) =>
          ownToken(
            ownClaims(c, {
              jti: 'j'.repeat(513),
              iat: epochSeconds(c) - 7200,
              exp: epochSeconds(c) - 3600,
            }),
          ),
        'expired',
      ],
    ];
    for (const [faults, make, reason] of cases) {
      test(faults, async (t) => {
        const v = await verifying(t);
        const result = await outcome(v.verifier, await make(v.clock));
        assert.equal(result.split(' ').at(-1), reason);
      });
    }

    test('an unknown issuer is refused without asking any key source', async (t) => {
      const v = await verifying(t);
      const token = await ownToken(ownClaims(v.clock, { iss: 'https://evil.test' }));
      assert.equal(await outcome(v.verifier, token), 'refused token-invalid unknown-issuer');
      assert.equal(v.ownKeyLookups(), 0);
      assert.deepEqual(v.failures, ['unknown unknown-issuer']);
    });

    test('a revoked token that has also expired is refused as expired: revocation comes last', async (t) => {
      const v = await verifying(t);
      const c = v.clock;
      const token = await ownToken(
        ownClaims(c, { iat: epochSeconds(c) - 7200, exp: epochSeconds(c) - 3600 }),
      );
      await v.revocation.revokeToken('token-1', epochSeconds(c) + 600);
      assert.equal(await outcome(v.verifier, token), 'refused token-expired expired');
    });
  });

  describe('revocation', () => {
    test('a token revoked by its jti is refused, and another token of its client is not', async (t) => {
      const v = await verifying(t);
      const revoked = await ownToken(ownClaims(v.clock, { jti: 'token-1' }));
      const other = await ownToken(ownClaims(v.clock, { jti: 'token-2' }));
      await v.revocation.revokeToken('token-1', epochSeconds(v.clock) + 600);
      assert.equal(await outcome(v.verifier, revoked), 'refused token-revoked revoked');
      assert.equal(await outcome(v.verifier, other), 'accepted acme');
    });

    test("revoking a client refuses its tokens issued at or before the cut-off, not later ones or other clients'", async (t) => {
      const v = await verifying(t);
      const before = await ownToken(ownClaims(v.clock, { jti: 'before' }));
      const otherClient = await ownToken(
        ownClaims(v.clock, { jti: 'other', sub: 'globex', client_id: 'globex' }),
      );
      await v.revocation.revokeClient('acme', epochSeconds(v.clock), epochSeconds(v.clock) + 600);
      v.clock.advance(1000);
      const after = await ownToken(ownClaims(v.clock, { jti: 'after' }));
      assert.equal(await outcome(v.verifier, before), 'refused token-revoked revoked');
      assert.equal(await outcome(v.verifier, after), 'accepted acme');
      assert.equal(await outcome(v.verifier, otherClient), 'accepted globex');
    });

    test('revocation by client goes by client_id, not sub', async (t) => {
      const v = await verifying(t);
      const token = await ownToken(ownClaims(v.clock, { sub: 'user-7', client_id: 'acme' }));
      await v.revocation.revokeClient('acme', epochSeconds(v.clock), epochSeconds(v.clock) + 600);
      assert.equal(await outcome(v.verifier, token), 'refused token-revoked revoked');
    });

    test('a cached token is served from the cache and still refused once revoked', async (t) => {
      const v = await verifying(t);
      const token = await ownToken(ownClaims(v.clock));
      assert.equal(await outcome(v.verifier, token), 'accepted acme');
      assert.equal(await outcome(v.verifier, token), 'accepted acme');
      await v.revocation.revokeToken('token-1', epochSeconds(v.clock) + 600);
      assert.throws(() => v.verifier.verify(token), { code: 'token-revoked', reason: 'revoked' });
      assert.deepEqual(v.lookups, [false, true, true], 'the refusal came from a cache hit');
    });
  });

  describe('the verified-token cache', () => {
    test('a token verified once is answered from the cache, synchronously', async (t) => {
      const v = await verifying(t);
      const token = await ownToken(ownClaims(v.clock));
      const first = v.verifier.verify(token);
      assert.ok(first instanceof Promise);
      const principal = await first;
      assert.equal(v.verifier.verify(token), principal);
      assert.deepEqual(v.lookups, [false, true]);
      assert.deepEqual(v.verified, ['self 0'], 'one full verification');
    });

    test('a refused token is not cached: each attempt is verified in full', async (t) => {
      const v = await verifying(t);
      const token = await ownToken(ownClaims(v.clock, { aud: 'other-api' }));
      await outcome(v.verifier, token);
      await outcome(v.verifier, token);
      assert.deepEqual(v.lookups, [false, false]);
      assert.deepEqual(v.failures, ['self wrong-audience', 'self wrong-audience']);
    });

    test('a cached token past its exp (and the skew) is verified again and refused as expired', async (t) => {
      const v = await verifying(t);
      const token = await ownToken(ownClaims(v.clock));
      assert.equal(await outcome(v.verifier, token), 'accepted acme');
      v.clock.advance((600 + SKEW) * 1000);
      assert.equal(await outcome(v.verifier, token), 'refused token-expired expired');
      assert.deepEqual(v.lookups, [false, false]);
    });

    test("the verified hook reports the token's age at first sight", async (t) => {
      const v = await verifying(t);
      const token = await ownToken(ownClaims(v.clock));
      v.clock.advance(42_000);
      await v.verifier.verify(token);
      assert.deepEqual(v.verified, ['self 42']);
    });
  });

  test('a partner whose key file is not loaded yet answers 503 issuer-unavailable, not a token refusal', async (t) => {
    const v = await verifying(t, { loadPartner: false });
    const token = await signWith(PARTNER_KEY.privateKey, 'ES256', partnerClaims(v.clock), {
      kid: 'p1',
    });
    assert.equal(
      await outcome(v.verifier, token),
      'refused issuer-unavailable issuer-keys-missing',
    );
    assert.deepEqual(v.failures, ['partner issuer-keys-missing']);
  });
});
