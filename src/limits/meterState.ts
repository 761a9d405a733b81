/**
 * The arithmetic of one policy's counters for one key, shared by `LocalMeter` and the
 * readings `RedisMeter` builds (its Lua script, `quotaScripts.ts`, mirrors `bringUpToDate`
 * and the decision exactly).
 *
 * The bucket refills lazily as `tokenBucket.ts` does (a clock that moved backwards
 * refills nothing); the window counter counts the requests of the window that started at
 * `windowStartMs`, so a counter of an earlier window reads as zero. A full bucket and an
 * unused window are the same as no state at all, which is what lets the stores forget.
 */
import type { MeterReading, QuotaPolicy } from './quotaPolicy.js';
import type { WindowSpan } from './quotaWindows.js';

export interface MeterState {
  tokens: number;
  updatedMs: number;
  windowStartMs: number;
  count: number;
}

/** The state at `nowMs` (refilled, rolled over), as a new value; `state` may be absent. */
export function bringUpToDate(
  policy: QuotaPolicy,
  state: MeterState | undefined,
  span: WindowSpan | null,
  nowMs: number,
): MeterState {
  const burst = policy.rate?.burst ?? 0;
  const windowStartMs = span?.startMs ?? 0;
  if (state === undefined) return { tokens: burst, updatedMs: nowMs, windowStartMs, count: 0 };
  let { tokens, updatedMs } = state;
  if (policy.rate !== null && nowMs > updatedMs) {
    tokens = Math.min(burst, tokens + ((nowMs - updatedMs) * policy.rate.ratePerSecond) / 1000);
    updatedMs = nowMs;
  }
  const count = state.windowStartMs === windowStartMs ? state.count : 0;
  return { tokens, updatedMs, windowStartMs, count };
}

/** Whether every part of `policy` has room for one more request in `state`. */
export function hasRoom(policy: QuotaPolicy, state: MeterState): boolean {
  return (
    (policy.rate === null || state.tokens >= 1) &&
    (policy.quota === null || state.count < policy.quota.limit)
  );
}

/** Takes one request from an up-to-date state with room (in place). */
export function consume(policy: QuotaPolicy, state: MeterState): void {
  if (policy.rate !== null) state.tokens -= 1;
  if (policy.quota !== null) state.count += 1;
}

/** The reading of an up-to-date state (after the request was consumed when `allowed`). */
export function readingOf(
  policy: QuotaPolicy,
  state: Pick<MeterState, 'tokens' | 'count'>,
  span: WindowSpan | null,
  nowMs: number,
  allowed: boolean,
): MeterReading {
  let retryAfterMs = 0;
  let rate: MeterReading['rate'] = null;
  let quota: MeterReading['quota'] = null;
  if (policy.rate !== null) {
    const { ratePerSecond, burst } = policy.rate;
    const tokens = Math.max(0, Math.min(burst, state.tokens));
    if (!allowed && tokens < 1) {
      // The epsilon keeps floating-point dust from adding a millisecond (as tokenBucket.ts).
      retryAfterMs = Math.max(1, Math.ceil(((1 - tokens) * 1000) / ratePerSecond - 1e-9));
    }
    const remaining = Math.floor(tokens + 1e-9);
    // Until `remaining` grows by one: within it the client can use no more than `remaining`
    // (draft-ietf-httpapi-ratelimit-headers §4.1.2), and it equals Retry-After at zero.
    const nextToken = remaining >= burst ? 1 : remaining + 1 - tokens;
    rate = {
      limit: burst,
      remaining,
      resetSeconds: Math.max(1, Math.ceil(nextToken / ratePerSecond - 1e-9)),
    };
  }
  if (policy.quota !== null && span !== null) {
    const { limit } = policy.quota;
    const remaining = Math.max(0, limit - state.count);
    const untilEnd = Math.max(1, span.endMs - nowMs);
    if (!allowed && remaining === 0) retryAfterMs = Math.max(retryAfterMs, untilEnd);
    quota = {
      limit,
      remaining,
      resetSeconds: Math.ceil(untilEnd / 1000),
      windowSeconds: Math.round((span.endMs - span.startMs) / 1000),
    };
  }
  return { allowed, retryAfterMs, rate, quota };
}
