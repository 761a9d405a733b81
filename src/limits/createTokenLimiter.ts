/**
 * Builds the token limiter the configuration asks for: none when every limit is off,
 * `LocalTokenLimiter` for `tokenLimits.store: local`, `RedisTokenLimiter` (with a local
 * fallback) for `redis`. The Redis connection is attempted once before the gateway
 * listens; if Redis is down then, start-up goes on with the local fallback and ioredis
 * keeps reconnecting in the background. `close()` releases the connection.
 */
import type { RedisConfig, TokenLimitsConfig } from '../config/types.js';
import type { Clock } from '../lib/clock.js';
import { createRedisClient } from '../redis/redisClient.js';
import { LocalTokenLimiter } from './localTokenLimiter.js';
import { type RedisLimiterHooks, RedisTokenLimiter } from './redisTokenLimiter.js';
import type { TokenLimiter } from './tokenLimiter.js';

export interface TokenLimiterOptions {
  readonly config: TokenLimitsConfig;
  readonly redis: RedisConfig;
  readonly clock: Clock;
  readonly hooks: RedisLimiterHooks;
}

export async function createTokenLimiter(
  options: TokenLimiterOptions,
): Promise<TokenLimiter | null> {
  const { config, clock } = options;
  const anyEnabled =
    config.perAddress.enabled || config.perClient.enabled || config.failedSecretBackoff.enabled;
  if (!anyEnabled) return null;
  const local = new LocalTokenLimiter(config, clock);
  if (config.store === 'local') return local;

  const redis = createRedisClient(options.redis, { role: 'limits' });
  // Without a listener ioredis prints every connection error; the limiter reports the
  // transitions through its hooks instead.
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
  return new RedisTokenLimiter({
    config,
    redisConfig: options.redis,
    redis,
    local,
    clock,
    hooks: options.hooks,
    down,
  });
}
