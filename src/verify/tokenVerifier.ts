/**
 * Verifies a bearer JWT in a fixed order that fails closed (RFC 8725 §3):
 *   (verified-token cache) → compact JWS form in canonical base64url → protected header
 *   grammar → `alg` allowlist → issuer by the (unverified) `iss` → the issuer's `alg`
 *   allowlist → key by `kid` from that issuer's key source → signature length for that
 *   key → signature → `typ` and time claims with the issuer's skew → `iss`/`aud` →
 *   (route scopes, by the caller) → revocation, on every request, cached or not.
 *
 * Keys come only from the trusted issuers' own sources (our key ring in memory for our
 * own issuer; a configured key set for an external one): `jwk`, `jku`, `x5u` and `x5c`
 * header parameters are never read (RFC 8725 §3.10), `crit` with any parameter we do
 * not understand is refused (jose), `none` and HMAC algorithms are never in an
 * allowlist (RFC 8725 §3.1). An unknown `iss` is refused before any key is looked up,
 * so it never causes network traffic. Unverified contents may cause an early refusal,
 * never an acceptance: the signature is checked with a key of the issuer the token
 * names, and jose then checks that `iss` again.
 */
import { errors, jwtVerify } from 'jose';
import { isClientId } from '../domain/clientId.js';
import {
  isRevocableId,
  isWellFormedText,
  MAX_TOKEN_ID_LENGTH,
  type Principal,
} from '../domain/principal.js';
import { parseScope } from '../domain/scope.js';
import { type FailureReason, PortariaError } from '../errors.js';
import type { IssuerKey } from '../issuers/issuerKeySet.js';
import { type Clock, epochSeconds } from '../lib/clock.js';
import type { RevocationStore } from '../revocation/revocationStore.js';
import { assertCompactJws, base64urlLength, signatureSegmentLength } from './compactJws.js';
import { invalid, WWW_AUTHENTICATE_INVALID } from './parseAuthorization.js';
import { signatureLength } from './signatureLength.js';
import type { VerifiedTokenCache } from './verifiedTokenCache.js';

/**
 * One public detail for every failure before the signature is proven (unknown issuer,
 * an algorithm that issuer does not use, no or unknown kid, algorithm mismatch, bad
 * signature): distinct messages would let
 * anyone probe which issuers the gateway trusts. The private reason is in the access line.
 */
const UNVERIFIABLE = 'The access token signature could not be verified.';

/** One issuer we accept tokens from, compiled at start (see `trustedIssuer.ts`). */
export interface TrustedIssuer {
  /** Bounded label: `self` for our own issuer, else the configured id. */
  readonly id: string;
  readonly issuer: string;
  readonly audiences: readonly string[];
  readonly algorithms: ReadonlySet<string>;
  readonly clockSkewSeconds: number;
  /** Require `typ: at+jwt` (always for our own tokens). */
  readonly requireTyp: boolean;
  /** Longest accepted `exp − iat`, seconds. */
  readonly maxLifetimeSeconds: number;
  /**
   * The key for `kid` and `alg`: undefined/null when unknown (→ 401); may be a promise
   * (a remote key set fetching); may throw a 503 PortariaError (key set unavailable).
   */
  key(kid: string, alg: string): IssuerKey | null | undefined | Promise<IssuerKey | null>;
}

export interface VerifierHooks {
  cacheLookup?(hit: boolean): void;
  /**
   * A full (uncached) verification succeeded: the issuer id, the time it took, and the
   * token's age at first sight (`now − iat`, negative when the issuer's clock is ahead).
   */
  verified?(issuerId: string, seconds: number, ageSeconds: number): void;
  /** A full verification failed: the issuer id (`unknown` before `iss` is matched) and the private reason. */
  verifyFailed?(issuerId: string, reason: FailureReason, seconds: number): void;
}

export interface TokenVerifierOptions {
  /** Trusted issuers by exact `iss` value. */
  readonly issuers: ReadonlyMap<string, TrustedIssuer>;
  readonly clock: Clock;
  readonly cache: VerifiedTokenCache;
  readonly revocation: RevocationStore;
  readonly hooks?: VerifierHooks;
}

export class TokenVerifier {
  readonly #options: TokenVerifierOptions;

  /** Union of every trusted issuer's algorithms: the first, issuer-independent gate. */
  readonly #algorithms: ReadonlySet<string>;

  constructor(options: TokenVerifierOptions) {
    this.#options = options;
    this.#algorithms = new Set([...options.issuers.values()].flatMap((i) => [...i.algorithms]));
  }

  /**
   * Returns the principal of a valid, unrevoked token, or throws (synchronously for a
   * cached or malformed token, as a rejection otherwise) a 401 PortariaError. A cached
   * token is answered synchronously: the common case allocates no promise.
   */
  verify(token: string): Principal | Promise<Principal> {
    const { cache, hooks } = this.#options;
    const cached = cache.get(token);
    if (cached !== undefined) {
      hooks?.cacheLookup?.(true);
      return this.#notRevoked(cached);
    }
    // Not a compact JWS in its one spelling: refused before it counts as a cache lookup.
    assertCompactJws(token);
    hooks?.cacheLookup?.(false);
    const started = performance.now();
    const generation = cache.generation;
    const seen: { issuerId: string } = { issuerId: 'unknown' };
    return this.#verifyFully(token, seen).then(
      (principal) => {
        hooks?.verified?.(
          principal.issuerId,
          (performance.now() - started) / 1000,
          this.#options.clock.now() / 1000 - principal.issuedAt,
        );
        cache.set(token, principal, generation);
        return this.#notRevoked(principal);
      },
      (error: unknown) => {
        const reason = error instanceof PortariaError ? error.reason : 'error';
        hooks?.verifyFailed?.(seen.issuerId, reason, (performance.now() - started) / 1000);
        throw error;
      },
    );
  }

  #notRevoked(principal: Principal): Principal {
    if (this.#options.revocation.isRevoked(principal)) {
      throw new PortariaError('token-revoked', 'The access token has been revoked.', {
        reason: 'revoked',
        headers: { 'www-authenticate': WWW_AUTHENTICATE_INVALID },
      });
    }
    return principal;
  }

  /** `seen.issuerId` is set once the token's `iss` names a trusted issuer (for metrics). */
  async #verifyFully(token: string, seen: { issuerId: string }): Promise<Principal> {
    const o = this.#options;
    const header = decodeSegment(token, 0, 'header');
    const alg = header.alg;
    if (typeof alg !== 'string' || !this.#algorithms.has(alg)) {
      throw invalid(
        'alg-not-allowed',
        'The access token is not signed with an accepted algorithm.',
      );
    }
    const iss = decodeSegment(token, 1, 'payload').iss;
    const issuer = typeof iss === 'string' ? o.issuers.get(iss) : undefined;
    if (issuer === undefined) throw invalid('unknown-issuer', UNVERIFIABLE);
    seen.issuerId = issuer.id;
    // Per issuer: its own message would tell a trusted issuer from an unknown one.
    if (!issuer.algorithms.has(alg)) throw invalid('alg-not-allowed', UNVERIFIABLE);
    const kid = header.kid;
    if (typeof kid !== 'string') throw invalid('no-kid', UNVERIFIABLE);
    const key = await issuer.key(kid, alg);
    if (key === undefined || key === null) {
      throw invalid('unknown-kid', UNVERIFIABLE);
    }
    if (key.alg !== alg) throw invalid('alg-mismatch', UNVERIFIABLE);
    // Any other length is another spelling or no signature at all; refused before the
    // cryptography, with the shared detail: the key was found, which must not show.
    if (signatureSegmentLength(token) !== base64urlLength(signatureLength(alg, key.key))) {
      throw invalid('non-canonical', UNVERIFIABLE);
    }

    let payload: Record<string, unknown>;
    try {
      const result = await jwtVerify(token, key.key, {
        algorithms: [alg],
        ...(issuer.requireTyp ? { typ: 'at+jwt' } : {}),
        issuer: issuer.issuer,
        audience: issuer.audiences as string[],
        clockTolerance: issuer.clockSkewSeconds,
        currentDate: new Date(o.clock.now()),
        requiredClaims: ['sub', 'exp', 'iat', 'jti'],
      });
      payload = result.payload as Record<string, unknown>;
    } catch (error) {
      throw mapJoseError(error);
    }
    const iat = payload.iat as number;
    if (iat > epochSeconds(o.clock) + issuer.clockSkewSeconds) {
      throw invalid('iat-in-future', 'The access token was issued in the future.');
    }
    const { sub, jti, exp, scope } = payload;
    if (typeof sub !== 'string' || typeof jti !== 'string' || typeof exp !== 'number') {
      throw invalid('bad-claims', 'The access token claims are malformed.');
    }
    // A token valid for longer than its issuer may issue would also outlive revocation
    // entries, whose life is bounded by that maximum.
    if (exp - iat > issuer.maxLifetimeSeconds) {
      throw invalid('lifetime-too-long', 'The access token is valid for longer than accepted.');
    }
    if (scope !== undefined && typeof scope !== 'string') {
      throw invalid('bad-claims', 'The access token claims are malformed.');
    }
    const clientId = typeof payload.client_id === 'string' ? payload.client_id : sub;
    // Every token accepted must be revocable, by jti and by client: its client id is one
    // the registry could hold, so the admin API can name it.
    if (!isRevocableId(jti, MAX_TOKEN_ID_LENGTH) || !isClientId(clientId)) {
      throw invalid('unrevocable-ids', 'The access token claims are malformed.');
    }
    // `sub` goes to the upstream (X-Client-Id by default): it must have a UTF-8 form.
    if (!isWellFormedText(sub))
      throw invalid('bad-claims', 'The access token claims are malformed.');
    const scopeText = scope ?? '';
    return Object.freeze({
      subject: sub,
      clientId,
      scope: scopeText,
      scopes: parseScope(scopeText),
      tokenId: jti,
      issuer: issuer.issuer,
      issuerId: issuer.id,
      issuedAt: iat,
      expiresAt: exp,
      claims: Object.freeze(payload),
    });
  }
}

/** Decodes the JSON object in segment `index` (0 = protected header, 1 = payload) without verifying it. */
function decodeSegment(
  token: string,
  index: 0 | 1,
  name: 'header' | 'payload',
): Record<string, unknown> {
  const first = token.indexOf('.');
  const segment =
    index === 0 ? token.slice(0, first) : token.slice(first + 1, token.indexOf('.', first + 1));
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  } catch {
    throw invalid(`malformed-${name}`, `The access token ${name} is not valid JSON.`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalid(`malformed-${name}`, `The access token ${name} is not a JSON object.`);
  }
  return value as Record<string, unknown>;
}

/** jose's error classes → our public code and a private reason. */
function mapJoseError(error: unknown): PortariaError {
  if (error instanceof errors.JWTExpired) {
    return new PortariaError('token-expired', 'The access token has expired.', {
      reason: 'expired',
      headers: { 'www-authenticate': WWW_AUTHENTICATE_INVALID },
    });
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    const reason = CLAIM_REASONS[error.claim] ?? 'bad-claims';
    return invalid(reason, 'The access token is not valid for this service.');
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return invalid('bad-signature', UNVERIFIABLE);
  }
  if (error instanceof errors.JOSENotSupported) {
    return invalid('unsupported', 'The access token uses an unsupported feature.');
  }
  if (error instanceof errors.JOSEError) {
    return invalid('malformed', 'The access token is malformed.');
  }
  // Not a token problem: let it become a 500.
  throw error;
}

const CLAIM_REASONS: Readonly<Record<string, FailureReason>> = {
  nbf: 'not-yet-valid',
  iss: 'wrong-issuer',
  aud: 'wrong-audience',
  typ: 'wrong-typ',
  iat: 'bad-iat',
  exp: 'bad-exp',
  sub: 'missing-claim',
  jti: 'missing-claim',
};
