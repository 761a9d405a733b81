/**
 * Builds the limiter a store setting asks for: `LocalLimiter` for `local`, `RedisLimiter`
 * (with a local fallback) for `redis`. The Redis connection is attempted once before the
 * gateway listens; if Redis is down then, start-up goes on with the local fallback and
 * ioredis keeps reconnecting in the background. `close()` releases the connection.
 * Whether any limit is on, and which families exist, is the caller's to say.
 */
import type { RedisConfig } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import { connectOnce } from '../redis/redisClient.js';
import type { Limiter, LimiterSettings } from './limiter.js';
import { LocalLimiter } from './localLimiter.js';
import { RedisLimiter, type RedisLimiterHooks } from './redisLimiter.js';

export interface LimiterOptions<Label extends string> {
  readonly settings: LimiterSettings;
  readonly store: 'local' | 'redis';
  readonly redis: RedisConfig;
  readonly clock: Clock;
  readonly hooks: RedisLimiterHooks<Label>;
}

export async function createLimiter<Label extends string>(
  options: LimiterOptions<Label>,
): Promise<Limiter<Label>> {
  const { settings, clock } = options;
  const local = new LocalLimiter(settings, clock);
  if (options.store === 'local') return local;

  const { redis, down } = await connectOnce(options.redis, { role: 'limits' }, (reason) =>
    options.hooks.stateChanged('down', reason),
  );
  return new RedisLimiter({
    settings,
    redisConfig: options.redis,
    redis,
    local,
    clock,
    hooks: options.hooks,
    down,
  });
}
