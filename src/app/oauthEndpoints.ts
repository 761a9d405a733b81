/**
 * Builds the OAuth 2.0 endpoints' parts from the config and the token operation's own:
 * the client key sets, the assertion replay store (local, or Redis shared by every
 * replica), and the routes the public listener dispatches to. `close` releases the key
 * sets' timers and the Redis connection (after the drain).
 *
 * The replay store's Redis connection is reported like the revocation store's
 * (`portaria_redis_connected{role="replay"}`, `/readyz` degraded while it is down):
 * `replayConnected`, for the composition root to bind.
 */
import { dirname } from 'node:path';
import type { Config } from '../config/types.js';
import { OAuthRoutes } from '../http/oauthRoutes.js';
import type { OAuthTokenRouteDeps } from '../http/oauthTokenRoute.js';
import type { Clock } from '../lib/clock.js';
import type { AssertionReplayStore } from '../oauth/assertionReplayStore.js';
import type { ClientAuthenticationDeps } from '../oauth/clientAuthentication.js';
import { ClientKeys } from '../oauth/clientKeys.js';
import { assertionAudiences } from '../oauth/endpointUrls.js';
import { LocalReplayStore } from '../oauth/localReplayStore.js';
import { RedisReplayStore } from '../oauth/redisReplayStore.js';
import type { Logger } from '../observability/logger.js';
import { createRedisClient } from '../redis/redisClient.js';
import type { RevocationStore } from '../revocation/revocationStore.js';
import type { TokenVerifier } from '../verify/tokenVerifier.js';

export interface OAuthEndpoints {
  readonly routes: OAuthRoutes;
  /** Whether the replay store's Redis connection is up; null without one (`local`). */
  readonly replayConnected: (() => boolean) | null;
  close(): Promise<void>;
}

/** What the token endpoint shares with the contract's operation (and the metrics hooks). */
export type SharedTokenDeps = Omit<OAuthTokenRouteDeps, 'assertions' | 'audience'>;

/** What revocation and introspection add: the edge's verifier and revocation store. */
export interface TokenStateDeps {
  readonly verifier: Pick<TokenVerifier, 'verify'>;
  readonly revocation: Pick<RevocationStore, 'revokeToken'>;
  readonly onRevoked: (clientId: string, tokenId: string) => void;
  /** `metrics.oauthRequest` for the given endpoint. */
  readonly outcome: (endpoint: 'revoke' | 'introspect') => (outcome: string) => void;
  /**
   * The edge's revocation freshness (the Redis store, or a worker's mirror of it):
   * introspection refuses while it is stale, as the edge does. Absent: another store.
   */
  readonly freshness?: { isStale(): boolean };
}

export async function createOAuthEndpoints(
  config: Config,
  clock: Clock,
  logger: Logger,
  shared: SharedTokenDeps,
  tokenState: TokenStateDeps,
): Promise<OAuthEndpoints> {
  const keys = new ClientKeys({
    clock,
    baseDir: dirname(config.clients.file),
    clockSkewSeconds: config.clockSkewSeconds,
    log: (event, detail) => logger.info(detail, `client ${event}`),
  });
  const replay = config.oauth.enabled ? await openReplayStore(config, clock, logger) : null;
  const revocationStale = staleRule(config, tokenState.freshness);
  // Client authentication as every OAuth endpoint uses it (`authenticateOAuthClient`).
  const clientAuthentication: ClientAuthenticationDeps = {
    registry: shared.registry,
    authenticate: shared.authenticate,
    limiter: shared.limiter,
    attempts: shared.attempts,
    onLimited: shared.onLimited,
    assertions: {
      audiences: assertionAudiences(config),
      maxLifetimeSeconds: config.oauth.assertionMaxLifetimeSeconds,
      clockSkewSeconds: config.clockSkewSeconds,
      clock,
      keys,
      replay: replay ?? new LocalReplayStore(clock),
    },
  };
  const routes = new OAuthRoutes(config.oauth, {
    token: { ...shared, ...clientAuthentication, audience: config.audience },
    revocation: {
      ...shared,
      ...clientAuthentication,
      verifier: tokenState.verifier,
      revocation: tokenState.revocation,
      clockSkewSeconds: config.clockSkewSeconds,
      onRevoked: tokenState.onRevoked,
      onOutcome: tokenState.outcome('revoke'),
    },
    introspection: {
      ...shared,
      ...clientAuthentication,
      verifier: tokenState.verifier,
      ...(revocationStale === null ? {} : { revocationStale }),
      onOutcome: tokenState.outcome('introspect'),
    },
  });
  return {
    routes,
    replayConnected: replay instanceof RedisReplayStore ? () => replay.connected() : null,
    async close() {
      keys.close();
      await replay?.close();
    },
  };
}

/**
 * When introspection refuses for a stale revocation list: when the edge refuses a method
 * class then. The resource server's request is unknown to it, so the strictest class
 * decides; with both classes admitted, nothing is refused (docs/oauth.md).
 */
function staleRule(
  config: Config,
  freshness: { isStale(): boolean } | undefined,
): (() => boolean) | null {
  const { safe, unsafe } = config.revocation.whenStale;
  if (freshness === undefined || (safe === 'admit' && unsafe === 'admit')) return null;
  return () => freshness.isStale();
}

async function openReplayStore(
  config: Config,
  clock: Clock,
  logger: Logger,
): Promise<AssertionReplayStore> {
  if (config.oauth.replayStore === 'local') return new LocalReplayStore(clock);
  const redis = createRedisClient(config.redis, { role: 'replay' });
  // Reported once per state change, not per reconnection attempt; a claim while Redis is
  // down answers 503 (fail closed).
  let down = false;
  redis.on('error', (error: Error) => {
    if (down) return;
    down = true;
    logger.warn(
      { error: error.message },
      'oauth replay store: Redis unusable, client assertions are refused',
    );
  });
  redis.on('ready', () => {
    if (down) logger.info('oauth replay store: Redis usable again');
    down = false;
  });
  await redis.connect().catch(() => undefined);
  return new RedisReplayStore(redis, config.redis.keyPrefix, clock, config.redis.commandTimeoutMs);
}
