/**
 * The RateLimit header fields of a quota policy and a reading
 * (draft-ietf-httpapi-ratelimit-headers-11): `RateLimit-Policy` states the policies (§3),
 * `RateLimit` the service limits now (§4). Both are Structured Field Lists (RFC 9651
 * §3.1) of String items naming a policy (§3, §4.1), with Integer parameters.
 *
 * One item per part of the policy, named after the policy and the part:
 *
 *   `"<policy>-rate"`   the token bucket: `q` = burst and `w` = the seconds a drained
 *                       bucket takes to fill (§3.1.1, §3.1.3); `r` = whole tokens left,
 *                       `t` = seconds until one more token (§4.1.1, §4.1.2): at `r=0` the
 *                       same as Retry-After, which §6 wants no earlier than `t`.
 *   `"<policy>-quota"`  the window counter: `q` = the limit, `w` = this window's length in
 *                       seconds (a month or a DST day varies); `r` = requests left, `t` =
 *                       seconds until the window ends.
 *
 * No `pk` (§3.1.4, §4.1.3): the partition is the caller's own identity, and naming it would
 * echo a subject into responses. Policy names need no escaping (`quotaPolicy.ts`).
 */
import type { MeterReading, QuotaPolicy } from './quotaPolicy.js';

export interface RateLimitFields {
  readonly policy: string;
  readonly limit: string;
}

/** The two fields' values for `reading`; null when the reading has no part (unavailable). */
export function rateLimitFields(
  policy: QuotaPolicy,
  reading: MeterReading,
): RateLimitFields | null {
  // Formatted on every metered answer (`quotas.headers: always`): plain concatenation, no
  // arrays or join, and `RateLimit-Policy` kept per policy (bench --mode quotas).
  const rate = policy.rate !== null && reading.rate !== null ? reading.rate : null;
  const quota = policy.quota !== null && reading.quota !== null ? reading.quota : null;
  if (rate === null && quota === null) return null;
  let limits = '';
  if (rate !== null) limits = `"${policy.name}-rate";r=${rate.remaining};t=${rate.resetSeconds}`;
  if (quota !== null) {
    const sep = rate === null ? '' : ', ';
    limits += `${sep}"${policy.name}-quota";r=${quota.remaining};t=${quota.resetSeconds}`;
  }
  return {
    policy: policyField(policy, rate !== null, quota?.windowSeconds ?? null),
    limit: limits,
  };
}

/** The last `RateLimit-Policy` value of each policy: it changes only with the window's length. */
const policyFields = new WeakMap<
  QuotaPolicy,
  { readonly rate: boolean; readonly windowSeconds: number | null; readonly value: string }
>();

function policyField(policy: QuotaPolicy, rate: boolean, windowSeconds: number | null): string {
  const last = policyFields.get(policy);
  if (last !== undefined && last.rate === rate && last.windowSeconds === windowSeconds) {
    return last.value;
  }
  let value = '';
  if (rate && policy.rate !== null) {
    const fillSeconds = Math.ceil(policy.rate.burst / policy.rate.ratePerSecond - 1e-9);
    value = `"${policy.name}-rate";q=${policy.rate.burst};w=${Math.max(1, fillSeconds)}`;
  }
  if (windowSeconds !== null && policy.quota !== null) {
    const sep = value === '' ? '' : ', ';
    value += `${sep}"${policy.name}-quota";q=${policy.quota.limit};w=${windowSeconds}`;
  }
  policyFields.set(policy, { rate, windowSeconds, value });
  return value;
}
