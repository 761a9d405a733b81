/**
 * Per-partner quotas (docs/quotas.md): the policies as the quota step applies them, the
 * meter holding their counters, and the step's dependencies over the live state. No
 * policy configured: no meter, no step (the protected list is one step shorter).
 *
 * The meter: `quotas.store: local` is this process's `LocalMeter`, or in a worker its
 * primary's over IPC (one set of counters for the group, as the token limits); `redis` is
 * one Lua script per check, shared by every replica (`limits/redisMeter.ts`).
 */

import type { QuotaAdminDeps, QuotaUsage } from '../admin/adminQuotas.js';
import type { Config } from '../config/types.js';
import { PortariaError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { createMeter } from '../limits/createMeter.js';
import type { Meter } from '../limits/meter.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { type MeteringPolicy, meteringPolicies } from '../pipeline/meteringPolicies.js';
import { meterKey, type QuotaStepDeps } from '../pipeline/quotaStep.js';
import { compileRouteTable } from '../proxy/routeTable.js';
import type { LiveState } from './liveState.js';

/** Whether any policy is configured: else nothing is metered and no meter is opened. */
export function metersRequests(config: Pick<Config, 'quotas'>): boolean {
  return Object.keys(config.quotas.policies).length > 0;
}

/**
 * The meter of `quotas.store` (a worker with local counters: its primary's, `shared`);
 * null when nothing is metered. Redis transitions are logged and shown as
 * `portaria_redis_connected{role="quota"}`.
 */
export async function openMeter(
  config: Pick<Config, 'quotas' | 'redis'>,
  deps: {
    readonly clock: Clock;
    readonly logger: Logger;
    readonly metrics: Pick<Metrics, 'addRedisConnectionSource'>;
    readonly shared?: Meter | undefined;
  },
): Promise<Meter | null> {
  if (!metersRequests(config)) return null;
  if (config.quotas.store === 'local' && deps.shared !== undefined) return deps.shared;
  let connected = true;
  const meter = await createMeter({
    store: config.quotas.store,
    maxKeys: config.quotas.maxTrackedKeys,
    redis: config.redis,
    clock: deps.clock,
    hooks: {
      stateChanged: (state, error) => {
        connected = state === 'up';
        if (state === 'down') {
          deps.logger.error(
            { error, whenRedisDown: config.quotas.whenRedisDown },
            'quota store unusable: metered requests follow quotas.whenRedisDown',
          );
        } else deps.logger.info('quota store usable again');
      },
    },
  });
  if (config.quotas.store === 'redis') {
    deps.metrics.addRedisConnectionSource('quota', () => connected);
  }
  return meter;
}

/** The quota step's dependencies over the live state (policies and clients reload). */
export function quotaStepDeps(
  config: Pick<Config, 'quotas'>,
  state: Pick<LiveState, 'clients' | 'quotaPolicies'>,
  meter: Meter,
  metrics: Pick<Metrics, 'quotaDecision'>,
): QuotaStepDeps {
  return {
    meter,
    policies: () => state.quotaPolicies,
    clientQuota: (clientId) => state.clients.get(clientId)?.quota ?? undefined,
    whenStoreDown: config.quotas.whenRedisDown,
    fieldsOnRefusal: config.quotas.headers !== 'off',
    onDecision: (policy, route, outcome) => metrics.quotaDecision(policy, route, outcome),
  };
}

/**
 * The admin quota API over `meter` (adminQuotas.ts): a subject's counters are every
 * policy's key for it, per route for `per: client-route` policies (the routes of
 * `routeIds`). Listed: the counters in use (a full bucket and an unused window are the
 * same as none).
 */
export function quotaAdmin(
  meter: Meter,
  policies: () => ReadonlyMap<string, MeteringPolicy>,
  routeIds: () => readonly string[],
): Pick<QuotaAdminDeps, 'usage' | 'reset'> {
  const keysOf = (subject: string) => {
    const keys: { metering: MeteringPolicy; route: string | null; key: string }[] = [];
    for (const metering of policies().values()) {
      for (const route of metering.perRoute ? routeIds() : [null]) {
        keys.push({ metering, route, key: meterKey(subject, route) });
      }
    }
    return keys;
  };
  return {
    async usage(subject) {
      const usage: QuotaUsage[] = [];
      for (const { metering, route, key } of keysOf(subject)) {
        const reading = await meter.peek(metering.policy, key);
        if (reading.unavailable === true) throw storeUnavailable();
        const inUse =
          (reading.rate !== null && reading.rate.remaining < reading.rate.limit) ||
          (reading.quota !== null && reading.quota.remaining < reading.quota.limit);
        if (inUse) {
          usage.push({
            policy: metering.policy.name,
            route,
            rate: reading.rate,
            quota: reading.quota,
          });
        }
      }
      return usage;
    },
    async reset(subject) {
      const keys = keysOf(subject);
      try {
        for (const { metering, key } of keys) await meter.reset(metering.policy, key);
      } catch {
        throw storeUnavailable();
      }
      return keys.length;
    },
  };
}

function storeUnavailable(): PortariaError {
  return new PortariaError('service-unavailable', 'The quota store cannot answer; retry later.', {
    reason: 'quota-store-unavailable',
  });
}

/**
 * The admin quota API of a group's primary, which applies no reload itself (its workers
 * do): with `reread` (the configuration file read again) each call sees the policies and
 * routes the workers reloaded; a file that does not read or validate leaves the last good
 * ones, as it leaves the workers'. Without it (no file), the start's.
 */
export function quotaAdminOfConfig(
  config: Config,
  meter: Meter,
  reread?: () => Promise<Config>,
): Pick<QuotaAdminDeps, 'usage' | 'reset'> {
  let policies = meteringPolicies(config.quotas);
  let routes = routeIdsOf(config);
  const admin = quotaAdmin(
    meter,
    () => policies,
    () => routes,
  );
  if (reread === undefined) return admin;
  const refresh = async (): Promise<void> => {
    try {
      const next = await reread();
      policies = meteringPolicies(next.quotas);
      routes = routeIdsOf(next);
    } catch {
      // The workers refuse the same file and keep their last good configuration.
    }
  };
  return {
    async usage(subject) {
      await refresh();
      return admin.usage(subject);
    },
    async reset(subject) {
      await refresh();
      return admin.reset(subject);
    },
  };
}

function routeIdsOf(config: Config): string[] {
  return compileRouteTable(config).routes.map((route) => route.id);
}
