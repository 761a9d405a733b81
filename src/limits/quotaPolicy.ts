/**
 * A quota policy as the meters use it, compiled once at start and frozen: a token-bucket
 * `rate` and/or a `quota` of requests per calendar window (`quotaWindows.ts`). A request
 * is allowed only when every part has room; a refused request consumes nothing.
 *
 * The name is the policy's key namespace (Redis keys, the name a worker sends the
 * primary) and the item name of its RateLimit fields (`rateLimitFields.ts`), so it is
 * restricted to what needs no escaping anywhere: letters, digits and `-`.
 */
import { isTimeZone, QUOTA_WINDOWS, type QuotaWindow } from './quotaWindows.js';

export interface QuotaRate {
  readonly ratePerSecond: number;
  readonly burst: number;
}

export interface QuotaCount {
  readonly limit: number;
  readonly window: QuotaWindow;
  readonly timeZone: string;
}

export interface QuotaPolicy {
  readonly name: string;
  readonly rate: QuotaRate | null;
  readonly quota: QuotaCount | null;
}

/** What a meter answers for one check or peek. */
export interface MeterReading {
  readonly allowed: boolean;
  /** 0 when allowed; else until every part that refused has room (ms, at least 1). */
  readonly retryAfterMs: number;
  /** The bucket: `remaining` whole tokens, `resetSeconds` until one more (at least 1). */
  readonly rate: {
    readonly limit: number;
    readonly remaining: number;
    readonly resetSeconds: number;
  } | null;
  /** The window's counter: `resetSeconds` until the window ends. */
  readonly quota: {
    readonly limit: number;
    readonly remaining: number;
    readonly resetSeconds: number;
    readonly windowSeconds: number;
  } | null;
  /** The store could not answer (Redis down, primary silent): the caller's policy decides. */
  readonly unavailable?: true;
}

/** The reading of a store that could not answer; `allowed: false` for a caller that forgets to look. */
export const UNAVAILABLE: MeterReading = Object.freeze({
  allowed: false,
  retryAfterMs: 0,
  rate: null,
  quota: null,
  unavailable: true,
});

const POLICY_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

/**
 * Compiles a policy; throws a list-ready message on an invalid one (config validation
 * reports it with its path). At least one part is required.
 */
export function quotaPolicy(
  name: string,
  rate: QuotaRate | null,
  quota: QuotaCount | null,
): QuotaPolicy {
  const problems: string[] = [];
  if (!POLICY_NAME.test(name)) problems.push('name: lowercase letters, digits and -, at most 63');
  if (rate === null && quota === null) problems.push('needs a rate, a quota or both');
  if (rate !== null) {
    if (!(Number.isFinite(rate.ratePerSecond) && rate.ratePerSecond > 0)) {
      problems.push('rate.perSecond: must be a positive number');
    }
    if (!(Number.isInteger(rate.burst) && rate.burst >= 1)) {
      problems.push('rate.burst: must be a positive integer');
    }
  }
  if (quota !== null) {
    if (!(Number.isSafeInteger(quota.limit) && quota.limit >= 1)) {
      problems.push('quota.limit: must be a positive integer');
    }
    if (!QUOTA_WINDOWS.includes(quota.window)) {
      problems.push(`quota.window: one of ${QUOTA_WINDOWS.join(', ')}`);
    }
    if (typeof quota.timeZone !== 'string' || !isTimeZone(quota.timeZone))
      problems.push('quota.timeZone: not a known IANA time zone');
  }
  if (problems.length > 0) throw new Error(`quota policy ${name}: ${problems.join('; ')}`);
  return Object.freeze({
    name,
    rate:
      rate === null
        ? null
        : Object.freeze({ ratePerSecond: rate.ratePerSecond, burst: rate.burst }),
    quota:
      quota === null
        ? null
        : Object.freeze({ limit: quota.limit, window: quota.window, timeZone: quota.timeZone }),
  });
}
