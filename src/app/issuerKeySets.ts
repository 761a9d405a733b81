/**
 * One key set per configured external issuer (`issuers`), bound to the metrics, tracing
 * and logger. Made before the start-up reads, of which each set's `load()` is one; the
 * downloads begin only when the app calls `start()`.
 */
import type { Config, IssuerConfig } from '../config/types.js';
import { createIssuerKeySet, type IssuerKeySet } from '../issuers/issuerKeySet.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
import type { VerifiedTokenCache } from '../verify/verifiedTokenCache.js';
import { keySetFetchTracing } from './tracingWiring.js';

export interface IssuerSet {
  readonly config: IssuerConfig;
  readonly keys: IssuerKeySet;
}

export interface IssuerSetDeps {
  readonly clock: Clock;
  readonly metrics: Metrics;
  readonly tracing: Tracing | null;
  readonly logger: Logger;
  readonly cache: Pick<VerifiedTokenCache, 'clear'>;
}

export function createIssuerSets(config: Config, deps: IssuerSetDeps): IssuerSet[] {
  const { clock, metrics, tracing, logger, cache } = deps;
  return config.issuers.map((issuer, index) => ({
    config: issuer,
    keys: createIssuerKeySet(issuer, {
      clock,
      index,
      hooks: {
        fetch: (id, trigger, outcome) => metrics.keySetFetch(id, trigger, outcome),
        ...keySetFetchTracing(tracing, issuer),
        // A withdrawn key must not keep verifying through the cache.
        keysRemoved: () => cache.clear(),
      },
      log: (event, detail) => logger.info({ issuer: issuer.id, ...detail }, event),
    }),
  }));
}
