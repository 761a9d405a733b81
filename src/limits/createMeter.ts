/**
 * Builds the quota meter a store setting asks for: `LocalMeter` for `local` (one
 * process; a group's primary owns it and workers use `cluster/ipcMeter.ts`), `RedisMeter`
 * for `redis`. The Redis connection is attempted once before the gateway listens; if
 * Redis is down then, start-up goes on (checks answer `unavailable`, the caller's policy
 * applies) and ioredis keeps reconnecting in the background.
 */
import type { RedisConfig } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import { createRedisClient } from '../redis/redisClient.js';
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
  const redis = createRedisClient(options.redis, { role: 'quota' });
  // Without a listener ioredis prints every connection error; the hooks report transitions.
  let lastError = '';
  redis.on('error', (error: Error) => {
    lastError = error.message;
  });
  let down = false;
  try {
    await redis.connect();
  } catch (error) {
    down = true;
    options.hooks.stateChanged('down', lastError || (error as Error).message);
  }
  const meter = new RedisMeter({
    redis,
    redisConfig: options.redis,
    clock: options.clock,
    hooks: options.hooks,
    down,
  });
  return meter;
}
