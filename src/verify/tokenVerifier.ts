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
 * not understand is refused (`criticalHeader.ts`), `none` and HMAC algorithms are never
 * in an allowlist (RFC 8725 §3.1). An unknown `iss` is refused before any key is looked
 * up, so it never causes network traffic. Unverified contents may cause an early
 * refusal, never an acceptance: the signature is checked with a key of the issuer the
 * token names (`jwsSignature.ts`), and the claim checks (`registeredClaims.ts`) then
 * compare that `iss` again.
 */
import { isUtf8 } from 'node:buffer';
import { isClientId } from '../domain/clientId.js';
import {
  isRevocableId,
  isWellFormedText,
  MAX_TOKEN_ID_LENGTH,
  type Principal,
} from '../domain/principal.js';
import { type FailureReason, PortariaError } from '../errors.js';
import type { IssuerKey } from '../issuers/issuerKeySet.js';
import { type Clock, epochSeconds } from '../lib/clock.js';
import type { RevocationStore } from '../revocation/revocationStore.js';
import { assertCompactJws, base64urlLength, signatureSegmentLength } from './compactJws.js';
import { checkCriticalHeader, malformed } from './criticalHeader.js';
import { invalid } from './invalidToken.js';
import { verifyJwsSignature } from './jwsSignature.js';
import { checkRegisteredClaims } from './registeredClaims.js';
import { ScopeSets } from './scopeSets.js';
import { signatureLength } from './signatureLength.js';
import { VerifiedPrincipal } from './verifiedPrincipal.js';
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
  /** Any `aud` at all is accepted (see `buildIssuerTable`). */
  readonly anyAudience?: boolean;
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
  /** The revocation check (a store's, or the store's in a traced span). */
  readonly revocation: Pick<RevocationStore, 'isRevoked'>;
  readonly hooks?: VerifierHooks;
}

export class TokenVerifier {
  readonly #options: TokenVerifierOptions;

  /** Union of every trusted issuer's algorithms: the first, issuer-independent gate. */
  readonly #algorithms: ReadonlySet<string>;

  /** Scope sets shared by the principals of tokens with the same `scope`. */
  readonly #scopes = new ScopeSets();

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
    const verified = (principal: Principal): Principal => {
      hooks?.verified?.(
        principal.issuerId,
        (performance.now() - started) / 1000,
        this.#options.clock.now() / 1000 - principal.issuedAt,
      );
      cache.set(token, principal, generation);
      return this.#notRevoked(principal);
    };
    const report = (error: unknown): void => {
      const reason = error instanceof PortariaError ? error.reason : 'error';
      hooks?.verifyFailed?.(seen.issuerId, reason, (performance.now() - started) / 1000);
    };
    const failed = (error: unknown): never => {
      report(error);
      throw error;
    };
    // The signature check is synchronous; only a key set still fetching makes it wait.
    // Either way the caller gets a promise, as for every uncached token.
    let principal: Principal;
    try {
      const header = decodeSegment(token, 0, 'header');
      const alg = this.#allowedAlgorithm(header.value);
      const payload = decodeSegment(token, 1, 'payload');
      const issuer = this.#issuerOf(alg, header.value, payload.value, seen);
      const key = issuer.key(header.value.kid as string, alg);
      if (key instanceof Promise) {
        return key
          .then((found) => this.#afterKey(token, alg, header, payload, issuer, found))
          .then(verified, failed);
      }
      principal = this.#afterKey(token, alg, header, payload, issuer, key);
    } catch (error) {
      report(error);
      return Promise.reject(error);
    }
    try {
      return Promise.resolve(verified(principal));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #notRevoked(principal: Principal): Principal {
    if (this.#options.revocation.isRevoked(principal)) {
      throw new PortariaError('token-revoked', 'The access token has been revoked.', {
        reason: 'revoked',
      });
    }
    return principal;
  }

  /** The header's `alg`, when some trusted issuer uses it. */
  #allowedAlgorithm(header: Record<string, unknown>): string {
    const alg = header.alg;
    if (typeof alg !== 'string' || !this.#algorithms.has(alg)) {
      throw invalid(
        'alg-not-allowed',
        'The access token is not signed with an accepted algorithm.',
      );
    }
    return alg;
  }

  /**
   * Issuer by the unverified `iss`, the issuer's own allowlist, a `kid`. `seen.issuerId`
   * is set once the token's `iss` names a trusted issuer (for metrics).
   */
  #issuerOf(
    alg: string,
    header: Record<string, unknown>,
    payload: Record<string, unknown>,
    seen: { issuerId: string },
  ): TrustedIssuer {
    const iss = payload.iss;
    const issuer = typeof iss === 'string' ? this.#options.issuers.get(iss) : undefined;
    if (issuer === undefined) throw invalid('unknown-issuer', UNVERIFIABLE);
    seen.issuerId = issuer.id;
    // Per issuer: its own message would tell a trusted issuer from an unknown one.
    if (!issuer.algorithms.has(alg)) throw invalid('alg-not-allowed', UNVERIFIABLE);
    if (typeof header.kid !== 'string') throw invalid('no-kid', UNVERIFIABLE);
    return issuer;
  }

  /** key → signature length → header rules → signature → claims → the principal. */
  #afterKey(
    token: string,
    alg: string,
    header: Decoded,
    payload: Decoded,
    issuer: TrustedIssuer,
    key: IssuerKey | null | undefined,
  ): Principal {
    if (key === undefined || key === null) {
      throw invalid('unknown-kid', UNVERIFIABLE);
    }
    if (key.alg !== alg) throw invalid('alg-mismatch', UNVERIFIABLE);
    // Any other length is another spelling or no signature at all; refused before the
    // cryptography, with the shared detail: the key was found, which must not show.
    if (signatureSegmentLength(token) !== base64urlLength(signatureLength(alg, key.key))) {
      throw invalid('non-canonical', UNVERIFIABLE);
    }
    // The header and the payload are UTF-8 JSON (RFC 7515 §5.2 step 3, RFC 7519 §7.2
    // step 10): read leniently to find the issuer, held to it from here on.
    if (!header.utf8) throw malformed();
    const b64 = checkCriticalHeader(header.value);
    if (!verifyJwsSignature(token, alg, key.key)) throw invalid('bad-signature', UNVERIFIABLE);
    if (!b64 || !payload.utf8) throw malformed();
    return this.#principal(header.value, payload.value, issuer);
  }

  /** The claim checks after the signature, then the principal. */
  #principal(
    header: Record<string, unknown>,
    payload: Record<string, unknown>,
    issuer: TrustedIssuer,
  ): Principal {
    const now = epochSeconds(this.#options.clock);
    checkRegisteredClaims(header, payload, issuer, now);
    const iat = payload.iat as number;
    if (iat > now + issuer.clockSkewSeconds) {
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
    const shared = this.#scopes.get(scope ?? '');
    shareStrings(payload, issuer, shared);
    return new VerifiedPrincipal(Object.freeze(payload), issuer, shared);
  }
}

/** A segment's JSON object, and whether its octets were UTF-8. */
interface Decoded {
  readonly value: Record<string, unknown>;
  readonly utf8: boolean;
}

/**
 * Decodes the JSON object in segment `index` (0 = protected header, 1 = payload) without
 * verifying it. Octets that are not UTF-8 are read with replacement characters here and
 * refused once the key is known (`utf8`), where that rule has always applied.
 */
function decodeSegment(token: string, index: 0 | 1, name: 'header' | 'payload'): Decoded {
  const first = token.indexOf('.');
  const segment =
    index === 0 ? token.slice(0, first) : token.slice(first + 1, token.indexOf('.', first + 1));
  const octets = Buffer.from(segment, 'base64url');
  let value: unknown;
  try {
    value = JSON.parse(octets.toString('utf8'));
  } catch {
    throw invalid(`malformed-${name}`, `The access token ${name} is not valid JSON.`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalid(`malformed-${name}`, `The access token ${name} is not a JSON object.`);
  }
  return { value: value as Record<string, unknown>, utf8: isUtf8(octets) };
}

/**
 * Points claims that repeat across tokens at one string each (the issuer's identifier,
 * its audience, the shared scope, `client_id` equal to `sub`): equal values, less memory
 * per cached token.
 */
function shareStrings(
  payload: Record<string, unknown>,
  issuer: TrustedIssuer,
  scope: { readonly text: string },
): void {
  payload.iss = issuer.issuer;
  const aud = payload.aud;
  if (typeof aud === 'string') {
    const same = issuer.audiences.find((a) => a === aud);
    if (same !== undefined) payload.aud = same;
  }
  if (typeof payload.scope === 'string') payload.scope = scope.text;
  if (payload.client_id === payload.sub) payload.client_id = payload.sub;
}
