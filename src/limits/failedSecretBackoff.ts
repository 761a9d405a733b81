/**
 * Failed-secret back-off arithmetic for one (client, source address) pair (the local
 * limiter's, and the rule the Redis script mirrors).
 *
 * The first `freeFailures` wrong secrets cost nothing. Each further failure makes the
 * pair wait `min(maxDelayMs, baseDelayMs × 2^(failures − freeFailures − 1))` from that
 * failure before its next attempt is even looked at. A success forgets the pair; so does
 * `forgetAfterSeconds` without a failure, but never while the pair is still waiting
 * (an entry lives until max(last failure + forgetAfter, end of the wait)).
 */

export interface BackoffRule {
  readonly freeFailures: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly forgetAfterSeconds: number;
}

export interface BackoffState {
  failures: number;
  lastFailureMs: number;
  /** Clock time (ms) before which the pair is refused; 0 when it is not waiting. */
  blockedUntilMs: number;
}

/** When the pair may be forgotten: no failure for forgetAfter, and no wait left. */
export function forgetAtMs(state: BackoffState, rule: BackoffRule): number {
  return Math.max(state.lastFailureMs + rule.forgetAfterSeconds * 1000, state.blockedUntilMs);
}

/** Milliseconds the pair must still wait (0: it may try now). */
export function backoffWaitMs(state: BackoffState | undefined, nowMs: number): number {
  if (state === undefined || state.blockedUntilMs <= nowMs) return 0;
  return state.blockedUntilMs - nowMs;
}

/** The wait imposed by the `failures`-th consecutive failure. */
export function delayAfterFailures(failures: number, rule: BackoffRule): number {
  if (failures <= rule.freeFailures) return 0;
  // 2 ** large is Infinity, and min() brings it back to maxDelayMs.
  return Math.min(rule.maxDelayMs, rule.baseDelayMs * 2 ** (failures - rule.freeFailures - 1));
}

/** The pair's state after one more wrong secret at `nowMs`. */
export function afterFailure(
  previous: BackoffState | undefined,
  rule: BackoffRule,
  nowMs: number,
): BackoffState {
  const fresh = previous === undefined || nowMs >= forgetAtMs(previous, rule);
  const failures = fresh ? 1 : previous.failures + 1;
  const delay = delayAfterFailures(failures, rule);
  const blockedBefore = fresh ? 0 : previous.blockedUntilMs;
  return {
    failures,
    lastFailureMs: nowMs,
    blockedUntilMs: delay === 0 ? blockedBefore : Math.max(blockedBefore, nowMs + delay),
  };
}
