/**
 * Client authentication within the token endpoints' limits, the one sequence the
 * contract's operation and the OAuth 2.0 endpoints share (so guesses spread over both
 * count together), in order:
 *
 *   pair back-off   (client, address) still waiting after wrong secrets: 429
 *                   `failed-secret-backoff`; also whether the pair is known
 *   one at a time   a pair whose last check here failed has one check in flight
 *                   (`PairAttempts`); a concurrent one: 429, Retry-After 1
 *   client bucket   the client's bucket for its known pairs, or the one for its other
 *                   addresses: 429 `rate-limit-client`
 *   check           the caller's credential check
 *   record          a refusal of the credentials counts towards the back-off, an
 *                   acceptance forgets the pair's failures and makes it known; any other
 *                   error (503, 500) records nothing
 *
 * The pair is released only after its outcome is recorded, so the next check sees the
 * new wait. The address limit is not here: each endpoint takes it before reading the body.
 * A limiter's value is used as is and only a promise awaited, so with local limits the
 * check starts in the same turn. The check and its input are passed apart (the check
 * built once per caller), so a request builds no closure.
 */
import { isPortariaError } from '../errors.js';
import { pairKey } from './limitKeys.js';
import type { AttemptOutcome, PairAttempts } from './pairAttempts.js';
import { type LimitRefusals, refuseIfWaiting } from './refuseIfWaiting.js';
import type { TokenEndpointLimits } from './tokenEndpointLimits.js';

export interface LimitedAuthenticationDeps extends LimitRefusals {
  /** The token endpoints' limits; `NO_TOKEN_LIMITS` when every limit is off. */
  readonly limiter: TokenEndpointLimits;
  /** One check at a time for a pair that failed lately; null when the back-off is off. */
  readonly attempts: PairAttempts | null;
}

/**
 * A caller's credential check, built once: resolves, or throws — a refusal of the
 * credentials is `invalid-client` (401; `invalid_client` at the OAuth endpoints), the
 * only error recorded as a failure.
 */
export type CredentialCheck<Input, Deps, Result> = (input: Input, deps: Deps) => Promise<Result>;

function refusesCredentials(error: unknown): boolean {
  return isPortariaError(error) && error.code === 'invalid-client';
}

export async function authenticateWithinLimits<
  Input,
  Deps extends LimitedAuthenticationDeps,
  Result,
>(
  clientId: string,
  address: string,
  check: CredentialCheck<Input, Deps, Result>,
  input: Input,
  deps: Deps,
): Promise<Result> {
  const { limiter } = deps;
  const pairCheck = limiter.checkPair(clientId, address);
  const { waitMs, known } = 'then' in pairCheck ? await pairCheck : pairCheck;
  refuseIfWaiting(waitMs, 'backoff', deps);
  const pair = pairKey(clientId, address);
  if (deps.attempts?.begin(pair) === false) refuseIfWaiting(1000, 'backoff', deps);
  let outcome: AttemptOutcome = 'unchecked';
  try {
    const clientWait = limiter.takeClient(clientId, known);
    refuseIfWaiting(typeof clientWait === 'number' ? clientWait : await clientWait, 'client', deps);
    let result: Result;
    try {
      result = await check(input, deps);
    } catch (error) {
      if (refusesCredentials(error)) {
        outcome = 'failed';
        await limiter.recordFailure(clientId, address);
      }
      throw error;
    }
    outcome = 'succeeded';
    const recorded = limiter.recordSuccess(clientId, address);
    if (recorded !== undefined) await recorded;
    return result;
  } finally {
    deps.attempts?.end(pair, outcome);
  }
}
