/**
 * DPoP at the token endpoints (RFC 9449 §5), the contract's operation and `/oauth2/token`
 * alike: a `DPoP` header on the token request is one proof made for this POST to this
 * URL (`verify/dpopProof.ts`; no `ath`: there is no token yet), single-use, and the token
 * issued is bound to its key (`cnf.jkt`, `token_type: DPoP`). No header: a bearer token,
 * as ever. A proof that fails is refused with 400 — RFC 6749 `invalid_dpop_proof` at
 * the OAuth endpoint, problem details `invalid-request` at the contract's operation —
 * before the client's credentials are looked at. With server nonces on (§8), a proof
 * without a current nonce is answered `use_dpop_nonce` with one in `DPoP-Nonce`.
 */
import { type FailureReason, PortariaError } from '../errors.js';
import { epochSeconds } from '../lib/clock.js';
import { OAuthError } from '../oauth/oauthError.js';
import type { DpopStepDeps } from '../pipeline/dpopProofStep.js';
import { checkDpopProof, DpopProofError } from '../verify/dpopProof.js';
import type { RequestScope } from './requestScope.js';

export type IssuanceShape = 'oauth' | 'problem';

function refused(shape: IssuanceShape, reason: FailureReason, detail: string): PortariaError {
  return shape === 'oauth'
    ? new OAuthError('invalid_dpop_proof', detail, { reason })
    : new PortariaError('invalid-request', detail, { reason });
}

/** No current nonce in the proof (§8.1): `use_dpop_nonce`, with a fresh one in `DPoP-Nonce`. */
function nonceRequired(shape: IssuanceShape, nonce: string, detail: string): PortariaError {
  const headers = { 'dpop-nonce': nonce };
  return shape === 'oauth'
    ? new OAuthError('use_dpop_nonce', detail, { reason: 'dpop-nonce', headers })
    : new PortariaError('invalid-request', detail, { reason: 'dpop-nonce', headers });
}

/** The key thumbprint the token is to be bound to, or undefined without a proof. */
export async function issuanceKey(
  scope: RequestScope,
  dpop: DpopStepDeps | undefined,
  shape: IssuanceShape,
): Promise<string | undefined> {
  if (dpop === undefined || scope.dpopProof === undefined) return undefined;
  if (scope.dpopProofLines !== 1) {
    throw refused(shape, 'dpop-proof-repeated', 'Send exactly one DPoP proof header.');
  }
  const now = epochSeconds(dpop.clock);
  const nonces = dpop.nonces;
  try {
    const proof = checkDpopProof(scope.dpopProof, {
      method: scope.method,
      url: scope.origin + (scope.target?.path ?? ''),
      now,
      windowSeconds: dpop.windowSeconds,
      algorithms: dpop.algorithms,
      ...(nonces === null ? {} : { nonceValid: (nonce: string) => nonces.accepts(nonce) }),
    });
    const untilMs = (now + 2 * dpop.windowSeconds) * 1000;
    if (!(await dpop.replay.claim(`dpop:${proof.jkt}`, proof.jti, untilMs))) {
      throw refused(shape, 'dpop-replayed', 'This DPoP proof was used before.');
    }
    return proof.jkt;
  } catch (error) {
    if (error instanceof DpopProofError) {
      if (error.reason === 'dpop-nonce' && nonces !== null) {
        throw nonceRequired(shape, nonces.current(), error.message);
      }
      throw refused(shape, error.reason, error.message);
    }
    throw error;
  }
}
