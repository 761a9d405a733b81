/**
 * The admin listener with its handler (/healthz, /readyz, /metrics, the revocation API),
 * as one process and a group's primary both build it: they differ only in where the
 * metrics text, the revocation store and readiness come from.
 */
import type { Server } from 'node:http';
import type { QuotaAdminDeps } from '../admin/adminQuotas.js';
import type { RevocationAdminStore } from '../admin/adminRevocations.js';
import { type AdminDeps, createAdminHandler } from '../admin/adminRoutes.js';
import type { Config } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { revocationHorizon } from './revocationHorizon.js';
import { createAdminListener } from './servers.js';

export interface AdminServerDeps {
  readonly metricsText: AdminDeps['metricsText'];
  readonly ready: AdminDeps['ready'];
  /** Where the revocation API writes (a group's primary: to every worker too). */
  readonly store: RevocationAdminStore;
  /** The revocation API's bearer token; null: the API answers 404. */
  readonly adminToken: string | null;
  readonly clock: Clock;
  readonly metrics: Pick<Metrics, 'revoked'>;
  readonly logger: Logger;
  /** The quota API's reads and resets; absent: no policy, the API answers 404. */
  readonly quotas?: Pick<QuotaAdminDeps, 'usage' | 'reset'> | undefined;
}

export function createAdminServer(config: Config, deps: AdminServerDeps): Server {
  const { clock, metrics, logger } = deps;
  return createAdminListener(
    config,
    createAdminHandler({
      metricsText: deps.metricsText,
      revocations: {
        store: deps.store,
        adminToken: deps.adminToken,
        ...revocationHorizon(config),
        now: () => clock.now(),
        onRevoked: (kind) => metrics.revoked(kind),
        audit: (level, event, detail) => logger[level](detail, event),
      },
      ...(deps.quotas === undefined
        ? {}
        : {
            quotas: {
              ...deps.quotas,
              adminToken: deps.adminToken,
              audit: (level, event, detail) => logger[level](detail, event),
            },
          }),
      problemTypeBase: config.problemTypeBase,
      maxHeaderLines: config.server.maxHeaderLines,
      ready: deps.ready,
    }),
  );
}
