/**
 * `private_key_jwt` (RFC 7523 §2.2 and §3, OpenID Connect Core §9): a JWT the client
 * signed with its own key, checked in a fixed order that fails closed —
 *
 *   shape      a compact JWS (three base64url parts)
 *   alg        `none` and HMAC refused before anything else is looked at (RFC 8725 §3.1);
 *              then it must be the client's pinned `assertionAlg`
 *   kid        required: it names the client's key
 *   key        from the client's JWKS file or `jwks_uri` (`ClientKeys`)
 *   signature  jose, with the one algorithm allowed
 *   claims     `iss` = `sub` = the client id; `aud` names the token endpoint URL or the
 *              issuer; `exp` required, not past (skew allowed) and at most
 *              `assertionMaxLifetimeSeconds` (+ skew) ahead; `nbf`, `iat` not ahead
 *              beyond the skew; `jti` required
 *   replay     the `jti` claimed once until `exp` + skew, rounded up to the second
 *              (`AssertionReplayStore`)
 *
 * The unverified `iss` names the client to look up (`assertionSubject`); nothing read
 * before the signature is trusted for anything else. Every refusal is `invalid_client`
 * with the description every refused credential gets; the precise reason is private.
 * A refusal decided before the signature check still spends one, on a decoy key.
 */

import { compactVerify, decodeJwt, decodeProtectedHeader } from 'jose';
import type { ClientRecord } from '../clients/clientRegistry.js';
import { ASSERTION_ALGS, type AssertionAlg } from '../clients/oauthClientFields.js';
import type { FailureReason } from '../errors.js';
import { type Clock, epochSeconds } from '../lib/clock.js';
import type { AssertionReplayStore } from './assertionReplayStore.js';
import { type ClientKeys, ClientKeysUnavailable } from './clientKeys.js';
import { decoyKey } from './decoyKeys.js';
import { credentialsRefused, type OAuthError } from './oauthError.js';

export const JWT_BEARER_ASSERTION = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

export interface AssertionSettings {
  /** Accepted `aud` values: the token endpoint URL and the issuer. */
  readonly audiences: ReadonlySet<string>;
  readonly maxLifetimeSeconds: number;
  readonly clockSkewSeconds: number;
  readonly clock: Clock;
  readonly keys: ClientKeys;
  readonly replay: AssertionReplayStore;
}

const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
const MAX_ASSERTION_LENGTH = 8192;
const MAX_JTI_LENGTH = 256;

export function assertionRefused(reason: FailureReason): OAuthError {
  return credentialsRefused(reason);
}

/**
 * A refusal decided before the signature check (no such client, a client without
 * `private_key_jwt`, another `alg`, an unknown `kid`), made after a signature check all
 * the same, on a decoy key: it then costs what a forged assertion of a real client costs,
 * so its timing does not tell which clients exist or which keys they have.
 */
export async function refusedAfterDecoyCheck(
  assertion: string,
  reason: FailureReason,
): Promise<never> {
  await checkWithDecoy(assertion);
  throw assertionRefused(reason);
}

/**
 * The client id the assertion claims to come from (its unverified `iss`, which must equal
 * its `sub`), after the checks that need no key: shape and `alg`.
 */
export function assertionSubject(assertion: string): string {
  if (assertion.length > MAX_ASSERTION_LENGTH || !COMPACT_JWS.test(assertion)) {
    throw assertionRefused('assertion-malformed');
  }
  let header: ReturnType<typeof decodeProtectedHeader>;
  let claims: ReturnType<typeof decodeJwt>;
  try {
    header = decodeProtectedHeader(assertion);
    claims = decodeJwt(assertion);
  } catch {
    throw assertionRefused('assertion-malformed');
  }
  const alg = header.alg;
  if (typeof alg !== 'string' || alg === 'none' || /^HS/i.test(alg)) {
    throw assertionRefused('assertion-alg');
  }
  if (typeof claims.iss !== 'string' || claims.iss === '' || claims.sub !== claims.iss) {
    throw assertionRefused('assertion-claims');
  }
  return claims.iss;
}

/** Verifies the assertion of `client` (found by `assertionSubject`); throws `OAuthError`. */
export async function verifyClientAssertion(
  assertion: string,
  client: ClientRecord,
  settings: AssertionSettings,
): Promise<void> {
  const header = decodeProtectedHeader(assertion);
  if (header.alg !== client.assertionAlg) return refusedAfterDecoyCheck(assertion, 'assertion-alg');
  if (typeof header.kid !== 'string' || header.kid === '')
    return refusedAfterDecoyCheck(assertion, 'assertion-no-kid');
  let key: Awaited<ReturnType<ClientKeys['keyFor']>>;
  try {
    key = await settings.keys.keyFor(client, header.kid, header.alg);
  } catch (error) {
    if (error instanceof ClientKeysUnavailable) throw assertionRefused('client-keys-unavailable');
    throw error;
  }
  if (key === null) return refusedAfterDecoyCheck(assertion, 'assertion-unknown-key');
  let payload: Uint8Array;
  try {
    ({ payload } = await compactVerify(assertion, key.key, { algorithms: [client.assertionAlg] }));
  } catch {
    throw assertionRefused('assertion-signature');
  }
  const claims = parseClaims(payload);
  const jti = checkClaims(claims, client.id, settings);
  const exp = claims.exp as number;
  // Kept while an assertion could still be accepted: `checkClaims` compares the
  // whole-second now with `exp` + skew, so a fractional `exp` (RFC 7519 §2 NumericDate)
  // is accepted until the next whole second.
  const untilMs = Math.ceil(exp + settings.clockSkewSeconds) * 1000;
  if (!(await settings.replay.claim(client.id, jti, untilMs))) {
    throw assertionRefused('assertion-replayed');
  }
}

/** The signature check of `assertion` with a decoy key of its `alg` (ES256 for any other). */
async function checkWithDecoy(assertion: string): Promise<void> {
  let alg: AssertionAlg = 'ES256';
  try {
    const named = decodeProtectedHeader(assertion).alg;
    if (ASSERTION_ALGS.includes(named as AssertionAlg)) alg = named as AssertionAlg;
  } catch {
    // The shape was checked already; ES256 all the same.
  }
  try {
    await compactVerify(assertion, decoyKey(alg), { algorithms: [alg] });
  } catch {
    // Always refused: no assertion is signed with a decoy key.
  }
}

function parseClaims(payload: Uint8Array): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload));
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      return value as Record<string, unknown>;
    }
  } catch {
    // fall through
  }
  throw assertionRefused('assertion-malformed');
}

/** The claim rules of RFC 7523 §3; returns the `jti`. */
function checkClaims(
  claims: Record<string, unknown>,
  clientId: string,
  settings: AssertionSettings,
): string {
  if (claims.iss !== clientId || claims.sub !== clientId)
    throw assertionRefused('assertion-claims');
  const aud = claims.aud;
  const audiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud : [];
  if (!audiences.some((a) => typeof a === 'string' && settings.audiences.has(a))) {
    throw assertionRefused('assertion-audience');
  }
  const now = epochSeconds(settings.clock);
  const skew = settings.clockSkewSeconds;
  const { exp, nbf, iat, jti } = claims;
  if (typeof exp !== 'number' || !Number.isFinite(exp)) throw assertionRefused('assertion-expired');
  if (exp <= now - skew) throw assertionRefused('assertion-expired');
  if (exp > now + settings.maxLifetimeSeconds + skew) throw assertionRefused('assertion-too-long');
  if (nbf !== undefined && (typeof nbf !== 'number' || nbf > now + skew)) {
    throw assertionRefused('assertion-not-yet-valid');
  }
  if (iat !== undefined && (typeof iat !== 'number' || iat > now + skew)) {
    throw assertionRefused('assertion-not-yet-valid');
  }
  if (typeof jti !== 'string' || jti === '' || jti.length > MAX_JTI_LENGTH) {
    throw assertionRefused('assertion-no-jti');
  }
  return jti;
}
