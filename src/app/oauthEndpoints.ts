/**
 * Builds the OAuth 2.0 endpoints' parts from the config and the token operation's own:
 * the client key sets, the assertion replay store (local — a worker's is the primary's —
 * or Redis shared by every replica), the routes the public listener dispatches to, and the RFC 8414 / RFC 9728
 * discovery documents. `close` releases the key sets' timers and the Redis connection
 * (after the drain).
 *
 * The replay store's Redis connection is reported like the revocation store's
 * (`portaria_redis_connected{role="replay"}`, registered here; `/readyz` degraded while
 * it is down: `replayConnected`, for the readiness check).
 */
import { dirname } from 'node:path';
import type { Config } from '../config/types.js';
import { issuerUrl } from '../documents/authorizationServerMetadata.js';
import { OAuthDiscovery } from '../documents/oauthDiscovery.js';
import { JWKS_PATH } from '../documents/openPaths.js';
import { OAuthRoutes } from '../http/oauthRoutes.js';
import type { OAuthTokenRouteDeps } from '../http/oauthTokenRoute.js';
import type { TokenRouteDeps } from '../http/tokenRoute.js';
import type { Clock } from '../lib/clock.js';
import { type AssertionReplayStore, usesReplayStore } from '../oauth/assertionReplayStore.js';
import type { ClientAuthenticationDeps } from '../oauth/clientAuthentication.js';
import { ClientKeys } from '../oauth/clientKeys.js';
import { assertionAudiences } from '../oauth/endpointUrls.js';
import { LocalReplayStore, localReplayStore } from '../oauth/localReplayStore.js';
import { oauthSettingsOf } from '../oauth/oauthSettings.js';
import { RedisReplayStore } from '../oauth/redisReplayStore.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { RouteTable } from '../proxy/routeTable.js';
import { createRedisClient } from '../redis/redisClient.js';
import type { RevocationStore } from '../revocation/revocationStore.js';
import type { DpopNonces } from '../verify/dpopNonces.js';
import type { TokenVerifier } from '../verify/tokenVerifier.js';
import { dpopStepDeps } from './gatewayWiring.js';
import type { LiveState } from './liveState.js';

export interface OAuthEndpoints {
  readonly routes: OAuthRoutes;
  /** The replay store (client assertions, DPoP proofs); null when neither is on. */
  readonly replay: AssertionReplayStore | null;
  /** Whether the replay store's Redis connection is up; null without one (`local`). */
  readonly replayConnected: (() => boolean) | null;
  close(): Promise<void>;
}

export interface OAuthEndpointDeps {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** The live clients (replaced on reload). */
  readonly state: Pick<LiveState, 'clients' | 'authenticate'>;
  /** The contract's operation: the token endpoint shares its limiter, back-off and signer. */
  readonly tokenRoute: TokenRouteDeps;
  /**
   * Revocation and introspection: the edge's verification, our own tokens whatever their
   * audience (`createOwnTokensVerifier`), and the edge's revocation store.
   */
  readonly verifier: Pick<TokenVerifier, 'verify'>;
  readonly revocation: Pick<RevocationStore, 'revokeToken'>;
  /**
   * The edge's revocation freshness (the Redis store, or a worker's mirror of it):
   * introspection refuses while it is stale, as the edge does. Null: another store.
   */
  readonly freshness: { isStale(): boolean } | null;
  /** A worker's: the primary's replay store, used instead of one of its own. */
  readonly sharedReplay?: AssertionReplayStore | undefined;
  /** With `dpop.nonces.enabled`: the gateway's server nonces (one instance, shared with the edge). */
  readonly dpopNonces: DpopNonces | null;
}

/** The discovery documents and challenge parameter; none while the OAuth surface is off. */
export function oauthDiscovery(
  config: Config,
  routes: () => RouteTable,
): OAuthDiscovery | undefined {
  const oauth = oauthSettingsOf(config);
  if (!oauth.enabled) return undefined;
  const issuers = [config.issuer, ...config.issuers.map((issuer) => issuer.issuer)];
  return new OAuthDiscovery({
    server: {
      issuer: config.issuer,
      baseUrl: oauth.publicBaseUrl,
      tokenPath: oauth.tokenPath,
      revocationPath: oauth.revocationPath,
      introspectionPath: oauth.introspectionPath,
      jwksPath: JWKS_PATH,
      authMethods: oauth.authMethods,
      assertionAlgorithms: oauth.assertionAlgorithms,
      certificateBoundTokens: oauth.certificateBoundTokens,
      mtlsBaseUrl: oauth.mtlsBaseUrl,
      dpopAlgorithms: config.dpop.enabled ? config.dpop.algorithms : [],
    },
    // RFC 9728 §2 names authorization servers by their RFC 8414 issuer identifiers.
    authorizationServers: issuers.filter((issuer) => issuerUrl(issuer) !== null),
    routes,
  });
}

export async function createOAuthEndpoints(
  config: Config,
  deps: OAuthEndpointDeps,
): Promise<OAuthEndpoints> {
  const { clock, logger, metrics, state } = deps;
  const shared: Omit<OAuthTokenRouteDeps, 'assertions' | 'audience'> = {
    ...deps.tokenRoute,
    registry: () => state.clients,
    authenticate: () => state.authenticate,
    onOutcome: (outcome) => metrics.oauthRequest('token', outcome),
  };
  const keys = new ClientKeys({
    clock,
    baseDir: dirname(config.clients.file),
    clockSkewSeconds: config.clockSkewSeconds,
    log: (event, detail) => logger.info(detail, `client ${event}`),
    onFetch: (clientId, trigger, outcome) => metrics.clientKeySetFetch(clientId, trigger, outcome),
  });
  const replay = usesReplayStore(config)
    ? (deps.sharedReplay ?? (await openReplayStore(config, clock, logger)))
    : null;
  const revocationStale = staleRule(config, deps.freshness);
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
    token: {
      ...shared,
      ...clientAuthentication,
      audience: config.audience,
      dpop: dpopStepDeps(config, clock, replay, deps.dpopNonces),
    },
    revocation: {
      ...shared,
      ...clientAuthentication,
      verifier: deps.verifier,
      revocation: deps.revocation,
      clockSkewSeconds: config.clockSkewSeconds,
      onRevoked: (clientId, jti) => {
        metrics.revoked('token');
        logger.info({ clientId, jti }, 'token revoked by its client');
      },
      onOutcome: (outcome) => metrics.oauthRequest('revoke', outcome),
    },
    introspection: {
      ...shared,
      ...clientAuthentication,
      verifier: deps.verifier,
      ...(revocationStale === null
        ? {}
        : {
            revocationStale,
            // An introspection is a POST (RFC 7662 §2.1): its method class is `unsafe`,
            // as in portaria_http_requests_total, whichever class's policy refused.
            onStaleRefusal: () => metrics.revocationStaleRefusal('unsafe'),
          }),
      onOutcome: (outcome) => metrics.oauthRequest('introspect', outcome),
    },
  });
  const replayConnected = replay instanceof RedisReplayStore ? () => replay.connected() : null;
  if (replayConnected !== null) metrics.addRedisConnectionSource('replay', replayConnected);
  return {
    routes,
    replay,
    replayConnected,
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
  freshness: { isStale(): boolean } | null,
): (() => boolean) | null {
  const { safe, unsafe } = config.revocation.whenStale;
  if (freshness === null || (safe === 'admit' && unsafe === 'admit')) return null;
  return () => freshness.isStale();
}

async function openReplayStore(
  config: Config,
  clock: Clock,
  logger: Logger,
): Promise<AssertionReplayStore> {
  if (config.oauth.replayStore === 'local') return localReplayStore(config, clock, logger);
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
