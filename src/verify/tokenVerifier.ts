/**
 * Verifies a bearer JWT in a fixed order that fails closed (STYLE habit 5):
 *   protected header grammar → `alg` allowlist → key by `kid` from our key ring →
 *   signature → `typ: at+jwt` and time claims with bounded skew → `iss`/`aud` →
 *   (route scopes, by the caller) → revocation, on every request, cached or not.
 *
 * Only our own key ring is consulted: `jwk`, `jku`, `x5u` and `x5c` header parameters
 * are never read (RFC 8725 §3.10), `crit` with any parameter we do not understand is
 * refused (jose), `none` and HMAC algorithms are never in the allowlist (RFC 8725 §3.1).
 * Unverified header contents may cause an early refusal, never an acceptance.
 */
import type { KeyObject, webcrypto } from 'node:crypto';
import { errors, jwtVerify } from 'jose';
import type { Principal } from '../domain/principal.js';
import { parseScope } from '../domain/scope.js';
import { PortariaError } from '../errors.js';
import { type Clock, epochSeconds } from '../lib/clock.js';
import type { RevocationStore } from '../revocation/revocationStore.js';
import { invalid, WWW_AUTHENTICATE_INVALID } from './parseAuthorization.js';
import type { VerifiedTokenCache } from './verifiedTokenCache.js';

/** Asymmetric algorithms we sign and accept; anything else is refused by name. */
const ACCEPTED_ALGORITHMS: ReadonlySet<string> = new Set(['ES256', 'EdDSA', 'RS256']);

export interface VerificationKeys {
  verificationKey(
    kid: string,
  ): { readonly alg: string; readonly key: KeyObject | webcrypto.CryptoKey } | undefined;
}

export interface VerifierHooks {
  cacheLookup?(hit: boolean): void;
}

export interface TokenVerifierOptions {
  readonly keys: () => VerificationKeys;
  readonly issuer: string;
  readonly audience: string;
  readonly clockSkewSeconds: number;
  readonly clock: Clock;
  readonly cache: VerifiedTokenCache;
  readonly revocation: RevocationStore;
  readonly hooks?: VerifierHooks;
}

export class TokenVerifier {
  readonly #options: TokenVerifierOptions;

  constructor(options: TokenVerifierOptions) {
    this.#options = options;
  }

  /**
   * Returns the principal of a valid, unrevoked token, or throws (synchronously for a
   * cached token, as a rejection otherwise) a 401 PortariaError. A cached token is
   * answered synchronously: the common case allocates no promise.
   */
  verify(token: string): Principal | Promise<Principal> {
    const { cache, hooks } = this.#options;
    const cached = cache.get(token);
    hooks?.cacheLookup?.(cached !== undefined);
    if (cached !== undefined) return this.#notRevoked(cached);
    return this.#verifyFully(token).then((principal) => {
      cache.set(token, principal);
      return this.#notRevoked(principal);
    });
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

  async #verifyFully(token: string): Promise<Principal> {
    const o = this.#options;
    const header = decodeProtectedHeader(token);
    const alg = header.alg;
    if (typeof alg !== 'string' || !ACCEPTED_ALGORITHMS.has(alg)) {
      throw invalid(
        'alg-not-allowed',
        'The access token is not signed with an accepted algorithm.',
      );
    }
    const kid = header.kid;
    if (typeof kid !== 'string') throw invalid('no-kid', 'The access token names no key.');
    const key = o.keys().verificationKey(kid);
    if (key === undefined)
      throw invalid('unknown-kid', 'The access token was signed by an unknown key.');
    if (key.alg !== alg)
      throw invalid('alg-mismatch', 'The access token algorithm does not match its key.');

    const now = o.clock.now();
    let payload: Record<string, unknown>;
    try {
      const result = await jwtVerify(token, key.key, {
        algorithms: [alg],
        typ: 'at+jwt',
        issuer: o.issuer,
        audience: o.audience,
        clockTolerance: o.clockSkewSeconds,
        currentDate: new Date(now),
        requiredClaims: ['sub', 'exp', 'iat', 'jti'],
      });
      payload = result.payload as Record<string, unknown>;
    } catch (error) {
      throw mapJoseError(error);
    }
    const iat = payload.iat as number;
    if (iat > epochSeconds(o.clock) + o.clockSkewSeconds) {
      throw invalid('iat-in-future', 'The access token was issued in the future.');
    }
    const { sub, jti, exp, scope } = payload;
    if (typeof sub !== 'string' || typeof jti !== 'string' || typeof exp !== 'number') {
      throw invalid('bad-claims', 'The access token claims are malformed.');
    }
    if (scope !== undefined && typeof scope !== 'string') {
      throw invalid('bad-claims', 'The access token claims are malformed.');
    }
    const clientId = typeof payload.client_id === 'string' ? payload.client_id : sub;
    const scopeText = scope ?? '';
    return Object.freeze({
      subject: sub,
      clientId,
      scope: scopeText,
      scopes: parseScope(scopeText),
      tokenId: jti,
      issuer: payload.iss as string,
      issuedAt: iat,
      expiresAt: exp,
      claims: Object.freeze(payload),
    });
  }
}

function decodeProtectedHeader(token: string): Record<string, unknown> {
  const dot = token.indexOf('.');
  let header: unknown;
  try {
    header = JSON.parse(Buffer.from(token.slice(0, dot), 'base64url').toString('utf8'));
  } catch {
    throw invalid('malformed-header', 'The access token header is not valid JSON.');
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) {
    throw invalid('malformed-header', 'The access token header is not a JSON object.');
  }
  return header as Record<string, unknown>;
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
    return invalid('bad-signature', 'The access token signature is invalid.');
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

const CLAIM_REASONS: Readonly<Record<string, string>> = {
  nbf: 'not-yet-valid',
  iss: 'wrong-issuer',
  aud: 'wrong-audience',
  typ: 'wrong-typ',
  iat: 'bad-iat',
  exp: 'bad-exp',
  sub: 'missing-claim',
  jti: 'missing-claim',
};
