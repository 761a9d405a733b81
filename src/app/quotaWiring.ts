/**
 * Per-partner quotas (docs/quotas.md): the policies as the quota step applies them, the
 * meter holding their counters, and the step's dependencies over the live state. No
 * policy configured: no meter, no step (the protected list is one step shorter).
 *
 * The meter: `quotas.store: local` is this process's `LocalMeter`, or in a worker its
 * primary's over IPC (one set of counters for the group, as the token limits); `redis` is
 * one Lua script per check, shared by every replica (`limits/redisMeter.ts`).
 */
import type { Config } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import { createMeter } from '../limits/createMeter.js';
import type { Meter } from '../limits/meter.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { QuotaStepDeps } from '../pipeline/quotaStep.js';
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
