/**
 * The quota policies as the quota step applies them (`quotaStep.ts`), compiled from
 * `quotas.policies` at start and on every reload of the configuration, and what the step
 * decides about a request (kept on the request for its answer, access line and span).
 */
import type { QuotasConfig } from '../config/types.js';
import { type MeterReading, type QuotaPolicy, quotaPolicy } from '../limits/quotaPolicy.js';

/** A policy as the step applies it: what it meters and whose counters. */
export interface MeteringPolicy {
  readonly policy: QuotaPolicy;
  readonly perRoute: boolean;
  /** The claim naming the partner; null: the client id. */
  readonly claim: string | null;
}

/** What the step decided: the access line's `portaria.quota.outcome`, the metric's label. */
export type QuotaOutcome = 'allowed' | 'refused' | 'unavailable-open' | 'unavailable-closed';

/** A metered request's decision, kept on the request for the answer and the access line. */
export interface QuotaDecision {
  readonly policy: QuotaPolicy;
  readonly outcome: QuotaOutcome;
  /** null when the store could not answer. */
  readonly reading: MeterReading | null;
}

/** `quotas.policies` compiled: a bucket's burst defaults to one second's rate (at least 1). */
export function meteringPolicies(quotas: QuotasConfig): ReadonlyMap<string, MeteringPolicy> {
  const compiled = new Map<string, MeteringPolicy>();
  for (const [name, settings] of Object.entries(quotas.policies)) {
    const rate =
      settings.rate === undefined
        ? null
        : {
            ratePerSecond: settings.rate.perSecond,
            burst: settings.rate.burst ?? Math.max(1, Math.ceil(settings.rate.perSecond)),
          };
    const quota =
      settings.quota === undefined
        ? null
        : {
            limit: settings.quota.limit,
            window: settings.quota.window,
            timeZone: settings.quota.timeZone,
          };
    compiled.set(
      name,
      Object.freeze({
        policy: quotaPolicy(name, rate, quota),
        perRoute: settings.per === 'client-route',
        claim: settings.claim,
      }),
    );
  }
  return compiled;
}
