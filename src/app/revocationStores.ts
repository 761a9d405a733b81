/**
 * Opens the configured revocation store (`revocation.store`: redis, local or memory) and
 * binds its state to the metrics. Opened only once every start-up read succeeded: a
 * store creates files or connections, and a configuration problem must leave neither
 * behind. The Redis store waits at most `redis.connectTimeoutMs` for its first full load.
 * A worker of a group opens none: it binds its primary's list, mirrored.
 */
import type { Config } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import { LocalRevocationStore } from '../revocation/localRevocationStore.js';
import { MemoryRevocationStore } from '../revocation/memoryRevocationStore.js';
import { RedisRevocationStore } from '../revocation/redisRevocationStore.js';
import type { RevocationRecord } from '../revocation/revocationLogRecord.js';
import type { RevocationStore } from '../revocation/revocationStore.js';

export interface OpenedRevocationStore {
  readonly revocation: RevocationStore;
  /** The same store when it is the Redis one (its state feeds readiness), else null. */
  readonly redis: RedisRevocationStore | null;
}

export async function openRevocationStore(
  config: Config,
  clock: Clock,
  logger: Logger,
  metrics: Metrics,
  /** Redis store: every entry it applies (a group's primary sends them to its workers). */
  onApplied?: (record: RevocationRecord) => void,
): Promise<OpenedRevocationStore> {
  const redis =
    config.revocation.store === 'redis'
      ? await RedisRevocationStore.open({
          redis: config.redis,
          clock,
          maxSyncLagSeconds: config.revocation.maxSyncLagSeconds,
          whileRedisDown: config.revocation.whileRedisDown,
          queueFile: config.revocation.queueFile,
          log: (level, event, detail) => logger[level](detail, event),
          onSync: (outcome) => metrics.revocationSync(outcome),
          ...(onApplied === undefined ? {} : { onApplied }),
        })
      : null;
  const revocation =
    redis ??
    (config.revocation.store === 'local'
      ? await LocalRevocationStore.open(config.revocation.file, clock, {
          log: (event, detail) => logger.warn(detail, event),
        })
      : new MemoryRevocationStore(clock));
  metrics.setRevocationSizeSource(() => revocation.size());
  if (redis !== null) {
    metrics.setRevocationSyncSource(() => {
      const state = redis.state();
      return { lagSeconds: state.syncAgeSeconds, queued: state.queued };
    });
    metrics.addRedisConnectionSource('revocation', () => redis.state().connected.revocation);
    metrics.addRedisConnectionSource(
      'revocation-subscriber',
      () => redis.state().connected['revocation-subscriber'],
    );
  }
  return { revocation, redis };
}

/** A worker's revocation list (the primary's, mirrored), bound to its metrics. */
export function mirroredRevocations(
  revocation: RevocationStore,
  metrics: Metrics,
): OpenedRevocationStore {
  metrics.setRevocationSizeSource(() => revocation.size());
  return { revocation, redis: null };
}
