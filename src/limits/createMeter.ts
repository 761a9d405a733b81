/**
 * Builds the quota meter a store setting asks for: `LocalMeter` for `local` (one
 * process; a group's primary owns it and workers use `cluster/ipcMeter.ts`), `RedisMeter`
 * for `redis`. The Redis connection is attempted once before the gateway listens; if
 * Redis is down then, start-up goes on (checks answer `unavailable`, the caller's policy
 * applies) and ioredis keeps reconnecting in the background.
 */
import type { RedisConfig } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import { connectOnce } from '../redis/redisClient.js';
import { LocalMeter } from './localMeter.js';
import type { Meter } from './meter.js';
import { RedisMeter, type RedisMeterHooks } from './redisMeter.js';

export interface MeterOptions {
  readonly store: 'local' | 'redis';
  /** `local`: the most (policy, key) entries kept. */
  readonly maxKeys: number;
  readonly redis: RedisConfig;
  readonly clock: Clock;
  readonly hooks: RedisMeterHooks;
}

export async function createMeter(options: MeterOptions): Promise<Meter> {
  if (options.store === 'local') return new LocalMeter(options.maxKeys, options.clock);
  const { redis, down } = await connectOnce(options.redis, { role: 'quota' }, (reason) =>
    options.hooks.stateChanged('down', reason),
  );
  return new RedisMeter({
    redis,
    redisConfig: options.redis,
    clock: options.clock,
    hooks: options.hooks,
    down,
  });
}
