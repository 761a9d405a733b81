/**
 * The one place a Redis connection is made (ioredis's home). The revocation store and
 * the shared token limits each take a client from here.
 *
 * Commands never queue while disconnected (`enableOfflineQueue: false`): a caller gets an
 * error at once and applies its own policy (keep enforcing the last known list, fall
 * back, refuse), instead of piling requests up behind a dead connection. Reconnection is
 * automatic with a capped back-off. The password comes from `redis.passwordFile`, never
 * from logs: the URL is not logged by this module.
 */
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { ConfigError } from '../config/configError.js';
import type { RedisConfig } from '../config/types.js';

export type RedisClient = Redis;

export interface RedisClientOptions {
  /** Role in the connection name (`CLIENT SETNAME`), e.g. `revocation`, `limits`, `subscriber`. */
  readonly role: string;
  /** Keep commands queued while connecting (only a subscriber wants this). Default false. */
  readonly offlineQueue?: boolean;
}

export function createRedisClient(config: RedisConfig, options: RedisClientOptions): RedisClient {
  if (config.url === null) throw new Error('redis.url is not set');
  const password = config.passwordFile ? readPassword(config.passwordFile) : undefined;
  return new Redis(config.url, {
    ...(password === undefined ? {} : { password }),
    connectionName: `portaria-${options.role}`,
    connectTimeout: config.connectTimeoutMs,
    commandTimeout: config.commandTimeoutMs,
    // How long `disconnect()` lets a socket end gracefully before destroying it. ioredis
    // arms this timer even for a socket that already closed (Redis down): bound it, so a
    // closed client does not keep the process alive for the 2 s default.
    disconnectTimeout: config.commandTimeoutMs,
    enableOfflineQueue: options.offlineQueue === true,
    maxRetriesPerRequest: 1,
    lazyConnect: true,
    retryStrategy: (attempt) => Math.min(50 * 2 ** Math.min(attempt, 10), 2000),
  });
}

/** The password file's content, trimmed; a problem names the file, never its content. */
function readPassword(file: string): string {
  let password: string;
  try {
    password = readFileSync(file, 'utf8').trim();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError([`redis.passwordFile: cannot read ${file} (${code})`]);
  }
  if (password === '') throw new ConfigError([`redis.passwordFile: ${file} is empty`]);
  return password;
}

/**
 * QUIT when connected, bounded by `withinMs` (a Redis that stopped answering must not
 * hold up shutdown), then drop the socket regardless.
 */
export async function quitWithin(client: RedisClient, withinMs: number): Promise<void> {
  if (client.status === 'ready') {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, withinMs);
      timer.unref();
    });
    await Promise.race([client.quit().catch(() => {}), bound]);
    clearTimeout(timer);
  }
  client.disconnect();
}
