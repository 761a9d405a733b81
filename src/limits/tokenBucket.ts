/**
 * Token-bucket arithmetic (the local limiter's, and the rule the Redis script mirrors).
 *
 * A bucket holds up to `burst` tokens and gains `ratePerSecond` tokens per second; a
 * request takes one token or is refused. Refill is lazy: it is computed from the time
 * since the bucket was last touched, on access, so nothing runs between requests and a
 * manual clock drives it completely. A clock that moved backwards refills nothing.
 */

export interface BucketRule {
  readonly ratePerSecond: number;
  readonly burst: number;
}

export interface BucketState {
  tokens: number;
  /** Clock time (ms) the tokens were last brought up to date. */
  updatedMs: number;
}

/** A bucket seen for the first time: full. */
export function fullBucket(rule: BucketRule, nowMs: number): BucketState {
  return { tokens: rule.burst, updatedMs: nowMs };
}

/**
 * Takes one token from `state` (updated in place). Returns 0 when the request may pass,
 * else the milliseconds until a token is available (at least 1).
 */
export function takeToken(state: BucketState, rule: BucketRule, nowMs: number): number {
  if (nowMs > state.updatedMs) {
    const added = ((nowMs - state.updatedMs) * rule.ratePerSecond) / 1000;
    state.tokens = Math.min(rule.burst, state.tokens + added);
    state.updatedMs = nowMs;
  }
  if (state.tokens >= 1) {
    state.tokens -= 1;
    return 0;
  }
  // The epsilon keeps floating-point dust (1.0000000000000009 ms) from adding a millisecond.
  return Math.max(1, Math.ceil(((1 - state.tokens) * 1000) / rule.ratePerSecond - 1e-9));
}
