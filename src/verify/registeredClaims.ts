/**
 * The claim checks that follow a valid signature, in this order (each failure named by
 * its private reason):
 *
 *   typ      `at+jwt` when the issuer requires it (RFC 9068 §2.1, §4), compared as a media
 *            type: case-insensitive, `application/` implied (RFC 7515 §4.1.9)   wrong-typ
 *   present  iss, aud, jti, iat, exp, sub — the first one missing names the reason
 *   iss      exactly the issuer's identifier (RFC 7519 §4.1.1)               wrong-issuer
 *   aud      one of the issuer's audiences, or an array holding one (§4.1.3) wrong-audience
 *            (any audience at all when the rules say so: our own tokens at the
 *            introspection and revocation endpoints)
 *   iat      a number (§4.1.6)                                                bad-iat
 *   nbf      a number, not after now + skew (§4.1.5)                          not-yet-valid
 *   exp      a number (§4.1.4)                                                bad-exp
 *            after now − skew                                                 expired
 *
 * These are the rules, order and outcomes jose's `jwtVerify` applied with the options the
 * verifier gave it; the verifier's own rules (iat not in the future, the lifetime, the
 * claims' types and ids) follow.
 */
import { type FailureReason, PortariaError } from '../errors.js';
import { invalid } from './invalidToken.js';

/** What the checks need of a trusted issuer. */
export interface ClaimRules {
  readonly issuer: string;
  readonly audiences: readonly string[];
  readonly clockSkewSeconds: number;
  readonly requireTyp: boolean;
  /** Any non-empty `aud` is accepted: `audiences` is not consulted. */
  readonly anyAudience?: boolean;
}

/** In the order checked: the first absent claim gives its reason. */
const REQUIRED: readonly (readonly [string, FailureReason])[] = [
  ['iss', 'wrong-issuer'],
  ['aud', 'wrong-audience'],
  ['jti', 'missing-claim'],
  ['iat', 'bad-iat'],
  ['exp', 'bad-exp'],
  ['sub', 'missing-claim'],
];

const NOT_FOR_US = 'The access token is not valid for this service.';

/** Throws the first failed check's refusal; `now` in seconds since the epoch. */
export function checkRegisteredClaims(
  header: Readonly<Record<string, unknown>>,
  claims: Readonly<Record<string, unknown>>,
  rules: ClaimRules,
  now: number,
): void {
  if (rules.requireTyp && !isAccessTokenTyp(header.typ)) throw invalid('wrong-typ', NOT_FOR_US);
  for (const [claim, reason] of REQUIRED) {
    if (!Object.hasOwn(claims, claim)) throw invalid(reason, NOT_FOR_US);
  }
  if (claims.iss !== rules.issuer) throw invalid('wrong-issuer', NOT_FOR_US);
  const audienceOk =
    rules.anyAudience === true ? isAudience(claims.aud) : hasAudience(claims.aud, rules.audiences);
  if (!audienceOk) throw invalid('wrong-audience', NOT_FOR_US);
  const skew = rules.clockSkewSeconds;
  if (typeof claims.iat !== 'number') throw invalid('bad-iat', NOT_FOR_US);
  const nbf = claims.nbf;
  if (nbf !== undefined && (typeof nbf !== 'number' || nbf > now + skew)) {
    throw invalid('not-yet-valid', NOT_FOR_US);
  }
  const exp = claims.exp;
  if (typeof exp !== 'number') throw invalid('bad-exp', NOT_FOR_US);
  if (exp <= now - skew) throw expired();
}

/** `at+jwt`, `application/at+jwt`, in any case (RFC 9068 §2.1; RFC 2045 §5.1). */
function isAccessTokenTyp(typ: unknown): boolean {
  if (typeof typ !== 'string') return false;
  const lower = typ.toLowerCase();
  return lower === 'at+jwt' || lower === 'application/at+jwt';
}

function hasAudience(aud: unknown, audiences: readonly string[]): boolean {
  if (typeof aud === 'string') return audiences.includes(aud);
  return Array.isArray(aud) && audiences.some((a) => aud.includes(a));
}

/** A string, or a non-empty array of strings (RFC 7519 §4.1.3). */
function isAudience(aud: unknown): boolean {
  if (typeof aud === 'string') return true;
  return Array.isArray(aud) && aud.length > 0 && aud.every((a) => typeof a === 'string');
}

function expired(): PortariaError {
  return new PortariaError('token-expired', 'The access token has expired.', {
    reason: 'expired',
  });
}
