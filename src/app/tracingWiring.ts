/**
 * OpenTelemetry as the parts see it. The SDK is imported only when `tracing.enabled`, so
 * a gateway with tracing off never loads it; then the hooks below are the metric alone,
 * with no per-call test of whether tracing is on.
 */
import { ConfigError } from '../config/configError.js';
import type { Config, IssuerConfig } from '../config/types.js';
import type { KeySetHooks } from '../issuers/issuerKeySet.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
import type { RevocationStore } from '../revocation/revocationStore.js';

/** Tracing when on (its environment checked as configuration), else null. */
export async function startTracing(config: Config, logger: Logger): Promise<Tracing | null> {
  if (!config.tracing.enabled) return null;
  const { createTracing, tracingEnvironmentProblems } = await import('../observability/tracing.js');
  const problems = tracingEnvironmentProblems();
  if (problems.length > 0) throw new ConfigError(problems);
  return createTracing({
    exportFailed: (error) => logger.warn({ error }, 'tracing: span export failed'),
  });
}

/** An issuer key set's download span; no hook while tracing is off. */
export function keySetFetchTracing(
  tracing: Tracing | null,
  issuer: IssuerConfig,
): Pick<KeySetHooks, 'fetchStarted'> {
  if (tracing === null) return {};
  return {
    fetchStarted: (id, trigger) => tracing.keySetFetch(id, trigger, issuer.jwksUri ?? ''),
  };
}

/** The verifier's cache lookups: counted, and a span event while tracing is on. */
export function cacheLookupHook(metrics: Metrics, tracing: Tracing | null): (hit: boolean) => void {
  if (tracing === null) return (hit) => metrics.cacheLookup(hit);
  return (hit) => {
    metrics.cacheLookup(hit);
    tracing.cacheLookup(hit);
  };
}

/** The verifier's revocation check: the store's, in a span of its own while tracing is on. */
export function tracedRevocationCheck(
  store: RevocationStore,
  tracing: Tracing | null,
): Pick<RevocationStore, 'isRevoked'> {
  if (tracing === null) return store;
  return { isRevoked: (token) => tracing.revocationCheck(store, token) };
}
