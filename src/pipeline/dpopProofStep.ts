/**
 * The DPoP step of RFC 9449 §7.1, after verification and beside certificate binding, on
 * every request — the verified-token cache keeps the token's verification, never this:
 *
 *   - a token bound to a key (`cnf.jkt`, §6.1) must come with the `DPoP` scheme and one
 *     `DPoP` proof made for this request (`verify/dpopProof.ts`: method, URI, time, the
 *     token's hash in `ath`) and signed by that very key (its thumbprint is `cnf.jkt`);
 *     sent as `Bearer` it is refused (§7.2: downgrading a bound token defeats the binding);
 *   - the `DPoP` scheme with a token bound to no key is refused, and so is a `Bearer` token
 *     sent beside a proof (the client meant a binding the token does not have);
 *   - the proof's `jti` is claimed once in the replay store (local, or Redis shared by every
 *     replica, §11.1), for twice the proof window: a replayed proof is refused.
 *
 * With server nonces on (§9), the proof must carry a current one: else 401 with the
 * challenge's `use_dpop_nonce` and a fresh nonce in `DPoP-Nonce` (`http/challenge.ts`).
 *
 * Refusals: 401 `dpop-proof-invalid` (the challenge says `invalid_dpop_proof`, or
 * `use_dpop_nonce`) for a proof that fails, 401 `token-invalid` for a token presented the
 * wrong way.
 */
import type { Principal } from '../domain/principal.js';
import { type FailureReason, PortariaError } from '../errors.js';
import { type Clock, epochSeconds } from '../lib/clock.js';
import type { DpopNonces } from '../verify/dpopNonces.js';
import { checkDpopProof, type DpopAlgorithm, DpopProofError } from '../verify/dpopProof.js';
import { invalid } from '../verify/invalidToken.js';
import type { AccessRequest } from './accessRequest.js';
import type { Step } from './runSteps.js';

/** A proof's `jti` claimed once (the client assertions' replay store, its own key space). */
export interface ProofReplay {
  claim(keyId: string, jti: string, untilMs: number): boolean | Promise<boolean>;
}

export interface DpopStepDeps {
  readonly algorithms: readonly DpopAlgorithm[];
  readonly windowSeconds: number;
  readonly replay: ProofReplay;
  readonly clock: Clock;
  /** With `dpop.nonces.enabled`: proofs must carry a current server nonce (RFC 9449 §8). */
  readonly nonces: DpopNonces | null;
}

/** base64url of a SHA-256: 43 characters (RFC 7638 thumbprint, RFC 9449 §6.1). */
const THUMBPRINT = /^[A-Za-z0-9_-]{43}$/;

/** The `jkt` a token is bound to; undefined for none; throws for a malformed one. */
export function boundKeyOf(principal: Principal): string | undefined {
  const cnf = principal.claims.cnf;
  if (cnf === null || typeof cnf !== 'object' || Array.isArray(cnf)) return undefined;
  const jkt = (cnf as Record<string, unknown>).jkt;
  if (jkt === undefined) return undefined;
  if (typeof jkt !== 'string' || !THUMBPRINT.test(jkt))
    throw invalid('bad-cnf', 'The access token is not valid.');
  return jkt;
}

export function proofRefused(reason: FailureReason, detail: string): PortariaError {
  return new PortariaError('dpop-proof-invalid', detail, { reason });
}

/**
 * With DPoP off, only the refusal of a key-bound token (an external issuer's): without its
 * proof checked, accepting it as a bearer token would drop the binding.
 */
export const dpopOff: Step<AccessRequest> = {
  name: 'dpop proof',
  run(request) {
    const principal = request.principal as Principal;
    if (principal.claims.cnf === undefined || boundKeyOf(principal) === undefined) return;
    throw invalid('dpop-as-bearer', 'DPoP-bound access tokens are not accepted here.');
  },
};

/** 401 `dpop-replayed`: the proof's `jti` was used before (RFC 9449 §11.1). */
export function proofReplayed(): PortariaError {
  return proofRefused('dpop-replayed', 'This DPoP proof was used before.');
}

export function dpopProofStep(deps: DpopStepDeps): Step<AccessRequest> {
  const { algorithms, windowSeconds, replay, clock, nonces } = deps;
  const nonceValid = nonces === null ? undefined : (nonce: string) => nonces.accepts(nonce);
  // Synchronous up to the replay claim: a promise only when the store answers with one
  // (Redis, the primary's store over IPC), none with the local store.
  const check = (request: AccessRequest, jkt: string): void | Promise<void> => {
    const now = epochSeconds(clock);
    let proof: ReturnType<typeof checkDpopProof>;
    try {
      proof = checkDpopProof(request.dpopProof as string, {
        method: request.method,
        url: request.origin + (request.target?.path ?? ''),
        now,
        windowSeconds,
        algorithms,
        accessToken: request.token,
        ...(nonceValid === undefined ? {} : { nonceValid }),
      });
    } catch (error) {
      if (error instanceof DpopProofError) throw proofRefused(error.reason, error.message);
      throw error;
    }
    if (proof.jkt !== jkt) {
      throw proofRefused(
        'dpop-key-mismatch',
        'The DPoP proof is signed by another key than the token is bound to.',
      );
    }
    const claimed = replay.claim(`dpop:${jkt}`, proof.jti, (now + 2 * windowSeconds) * 1000);
    const settle = (fresh: boolean): void => {
      // A second ask repeats its first ask's proof, which that ask may have spent before a
      // later step refused it: the later step's refusal is the answer, and only when no
      // step refuses is the spent proof (docs/authorizer.md, the double ask).
      if (!fresh && request.secondAsk) request.proofSpent = true;
      else if (!fresh) throw proofReplayed();
      request.proven = true;
    };
    return typeof claimed === 'boolean' ? settle(claimed) : claimed.then(settle);
  };
  return {
    name: 'dpop proof',
    run(request) {
      const principal = request.principal as Principal;
      const jkt = principal.claims.cnf === undefined ? undefined : boundKeyOf(principal);
      if (request.scheme === 'bearer') {
        if (jkt !== undefined) {
          throw invalid(
            'dpop-as-bearer',
            'A DPoP-bound access token must be sent with the DPoP scheme.',
          );
        }
        if (request.dpopProofLines > 0) {
          throw invalid(
            'bearer-with-proof',
            'A DPoP proof came with a token that is not DPoP-bound.',
          );
        }
        return undefined;
      }
      if (jkt === undefined) {
        throw invalid('dpop-not-bound', 'The access token is not DPoP-bound: send it as Bearer.');
      }
      if (request.dpopProofLines !== 1 || request.dpopProof === undefined) {
        throw proofRefused(
          request.dpopProofLines > 1 ? 'dpop-proof-repeated' : 'dpop-proof-missing',
          'Send exactly one DPoP proof header.',
        );
      }
      return check(request, jkt);
    },
  };
}
