/**
 * The one place a Redis connection is made (ioredis's home). The revocation store, the
 * shared token limits and the replay store each take a client from here: one server by
 * URL, the primary Redis Sentinel names, or a Redis Cluster (`redisConnectionOptions.ts`).
 *
 * Commands never queue while disconnected (`enableOfflineQueue: false`): a caller gets an
 * error at once and applies its own policy (keep enforcing the last known list, fall
 * back, refuse), instead of piling requests up behind a dead connection. Reconnection is
 * automatic with a capped back-off; behind Sentinel it asks the sentinels for the primary
 * again, so a failover is a reconnection. Secrets come from files, never from logs: the
 * URL is not logged by this module.
 */
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { RedisConfig } from '../config/types.js';
import { type RedisAuth, redisConnectionOptions } from './redisConnectionOptions.js';

export { isRedisCluster } from './redisConnectionOptions.js';

export type RedisClient = Redis | Cluster;

export interface RedisClientOptions {
  /** Role in the connection name (`CLIENT SETNAME`), e.g. `revocation`, `limits`, `subscriber`. */
  readonly role: string;
  /** Keep commands queued while connecting (only a subscriber wants this). Default false. */
  readonly offlineQueue?: boolean;
}

/**
 * A client of `options.role` whose first connection is tried once, before the gateway
 * listens: `down` when it failed (`onDown` gets the reason), and ioredis keeps
 * reconnecting in the background. The error listener keeps ioredis from printing every
 * connection error: callers report transitions through their own hooks.
 */
export async function connectOnce(
  config: RedisConfig,
  options: RedisClientOptions,
  onDown: (reason: string) => void,
): Promise<{ readonly redis: RedisClient; readonly down: boolean }> {
  const redis = createRedisClient(config, options);
  let lastError = '';
  redis.on('error', (error: Error) => {
    lastError = error.message;
  });
  try {
    await redis.connect();
    return { redis, down: false };
  } catch (error) {
    onDown(lastError || (error as Error).message);
    return { redis, down: true };
  }
}

/** Capped exponential back-off between reconnection attempts (ms). */
function backoff(attempt: number): number {
  return Math.min(50 * 2 ** Math.min(attempt, 10), 2000);
}

export function createRedisClient(config: RedisConfig, options: RedisClientOptions): RedisClient {
  const { target, auth } = redisConnectionOptions(config);
  const common = {
    ...authOptions(auth),
    connectionName: `portaria-${options.role}`,
    connectTimeout: config.connectTimeoutMs,
    commandTimeout: config.commandTimeoutMs,
    // How long `disconnect()` lets a socket end gracefully before destroying it. ioredis
    // arms this timer even for a socket that already closed (Redis down): bound it, so a
    // closed client does not keep the process alive for the 2 s default.
    disconnectTimeout: config.commandTimeoutMs,
    maxRetriesPerRequest: 1,
  } satisfies RedisOptions;
  const offlineQueue = options.offlineQueue === true;
  if (target.kind === 'cluster') {
    // Pub/sub: a PUBLISH reaches every node's subscribers (Redis Cluster broadcasts it),
    // so the one subscriber connection ioredis keeps, to any node, hears every message.
    return new Cluster(
      target.nodes.map((node) => ({ host: node.host, port: node.port })),
      {
        redisOptions: common,
        enableOfflineQueue: offlineQueue,
        lazyConnect: true,
        slotsRefreshTimeout: config.connectTimeoutMs,
        clusterRetryStrategy: backoff,
      },
    );
  }
  const shared = {
    ...common,
    enableOfflineQueue: offlineQueue,
    lazyConnect: true,
    retryStrategy: backoff,
  } satisfies RedisOptions;
  if (target.kind === 'sentinel') {
    const sentinelAuth = target.sentinelAuth;
    return new Redis({
      ...shared,
      sentinels: target.sentinels.map((node) => ({ host: node.host, port: node.port })),
      name: target.masterName,
      ...(sentinelAuth.username === undefined ? {} : { sentinelUsername: sentinelAuth.username }),
      ...(sentinelAuth.password === undefined ? {} : { sentinelPassword: sentinelAuth.password }),
      ...(sentinelAuth.tls === undefined
        ? {}
        : { sentinelTLS: sentinelAuth.tls, enableTLSForSentinelMode: true }),
      sentinelRetryStrategy: backoff,
      // No `failoverDetector`: its disconnect, arriving while a connection is being
      // re-established, ends that connection for good (seen in the failover test). A
      // failover is noticed as the connection to the old primary closes.
    });
  }
  return new Redis({ ...shared, host: target.node.host, port: target.node.port, db: target.db });
}

function authOptions(auth: RedisAuth): Pick<RedisOptions, 'username' | 'password' | 'tls'> {
  return {
    ...(auth.username === undefined ? {} : { username: auth.username }),
    ...(auth.password === undefined ? {} : { password: auth.password }),
    ...(auth.tls === undefined ? {} : { tls: auth.tls }),
  };
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
