/**
 * Composition root: builds every part from the frozen config, wires the hooks to metrics,
 * and returns the app. Each room of `app/` holds one job: the listeners (servers.ts), the
 * /readyz policy (readiness.ts), what reloads apply (reloads.ts), the timers
 * (housekeeping.ts), the drain (shutdown.ts), start-up reads (startupChecks.ts), the
 * revocation store (revocationStores.ts). Tests call
 * `createApp` directly with a port-0 config, a log destination they read, and (where time
 * matters) a manual clock.
 */
import { createClientAuthenticator } from '../clients/authenticateClient.js';
import { loadClientRegistry } from '../clients/clientRegistry.js';
import { ConfigError } from '../config/configError.js';
import type { Config } from '../config/types.js';
import { createAdminHandler } from '../http/adminRoutes.js';
import { OAuthDiscovery } from '../http/oauthDiscovery.js';
import { openApiDocumentFor } from '../http/openApiDocument.js';
import { JWKS_PATH, PublicGateway } from '../http/publicGateway.js';
import { StaticDocument } from '../http/staticDocument.js';
import { createIssuerKeySet } from '../issuers/issuerKeySet.js';
import { RemoteKeySet } from '../issuers/remoteKeySet.js';
import { isKeyDirectoryEntry, loadKeyRing } from '../keys/loadKeyRing.js';
import { type Clock, epochSeconds, systemClock } from '../lib/clock.js';
import { TrustedProxies } from '../lib/trustedProxies.js';
import { issuerUrl } from '../oauth/authorizationServerMetadata.js';
import { oauthSettingsOf } from '../oauth/oauthSettings.js';
import {
  createLoggers,
  type DestinationStream,
  type Logger,
  prettyDestination,
} from '../observability/logger.js';
import { createMetrics, type Metrics, type MetricsSnapshot } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
import { createForwarder } from '../proxy/forwarder.js';
import { createHeaderPolicy } from '../proxy/headers.js';
import { compileRouteTable, type RouteTable } from '../proxy/routeTable.js';
import { createWebSocketProxy } from '../proxy/webSocketProxy.js';
import {
  type ContentFingerprint,
  contentFingerprint,
  type EntryFilter,
} from '../reload/contentFingerprint.js';
import type { RedisRevocationStore } from '../revocation/redisRevocationStore.js';
import type { RevocationStore } from '../revocation/revocationStore.js';
import { TokenService } from '../token/tokenService.js';
import { createTokenLimiter } from '../tokenLimits/createTokenLimiter.js';
import { NO_LIMITS } from '../tokenLimits/noLimits.js';
import { PairAttempts } from '../tokenLimits/pairAttempts.js';
import { RedisTokenLimiter } from '../tokenLimits/redisTokenLimiter.js';
import type { LimitReason, TokenLimiter } from '../tokenLimits/tokenLimiter.js';
import { TokenVerifier } from '../verify/tokenVerifier.js';
import { buildIssuerTable } from '../verify/trustedIssuer.js';
import { VerifiedTokenCache } from '../verify/verifiedTokenCache.js';
import { startHousekeeping } from './housekeeping.js';
import type { LiveState } from './liveState.js';
import { createOAuthEndpoints } from './oauthEndpoints.js';
import { createReadiness, type Readiness } from './readiness.js';
import { watchReloadSources } from './reloads.js';
import { revocationHorizon } from './revocationHorizon.js';
import { openRevocationStore } from './revocationStores.js';
import { createAdminListener, createPublicListener, listenOn, urlOf } from './servers.js';
import { drain } from './shutdown.js';
import { allOrEveryProblem, checkRevocationFile, readAdminToken } from './startupChecks.js';

export interface AppOptions {
  readonly config: Config;
  readonly clock?: Clock;
  /** Where JSON log lines go (default: stdout). */
  readonly logDestination?: DestinationStream;
  /**
   * The configuration file and how to read it again, for route reloads. Absent in demo
   * mode (there is no file); the clients file and keys directory reload regardless.
   */
  readonly configSource?: {
    readonly file: string;
    readonly reload: () => Promise<Config>;
    /** `sourceBaseline([file])`, taken before the config was loaded. */
    readonly since?: Promise<ContentFingerprint>;
  };
  /**
   * A worker of a group (`server.workers` > 1, cluster/joinCluster.ts): the primary owns
   * the admin listener, the revocation store and the local token limits, so the worker
   * takes these parts from it and has no admin listener. Absent: one process, as ever.
   */
  readonly worker?: WorkerParts;
}

export interface WorkerParts {
  /** The primary's revocation list, mirrored. */
  readonly revocation: RevocationStore;
  /** With the Redis store: whether the primary's list is stale (revocation.whenStale). */
  readonly revocationFreshness?: { isStale(): boolean };
  /** The primary's token limits; undefined: made here (Redis, or every limit off). */
  readonly limiter?: TokenLimiter;
  /** Log writes dropped (the log output is the primary's). */
  readonly logDrops: () => number;
}

/**
 * The content fingerprint of a reloadable source, taken BEFORE its first load: the reload
 * watch compares against it, so a change made while the gateway starts (it may wait
 * seconds for Redis between loading a file and watching it) is reloaded, not missed.
 */
export function sourceBaseline(
  paths: readonly string[],
  entries?: EntryFilter,
): Promise<ContentFingerprint> {
  const print = contentFingerprint(paths, entries);
  // Handled here too: a start that fails before the watch is set up must not leave an
  // unhandled rejection behind.
  print.catch(() => undefined);
  return print;
}

export interface App {
  readonly config: Config;
  readonly logger: Logger;
  /** Starts both listeners; resolves with the bound addresses. */
  listen(): Promise<{ publicUrl: string; adminUrl: string }>;
  /** Reloads the clients file, the keys directory, key files and the routes now (SIGHUP). */
  reload(): Promise<void>;
  /** The /readyz policy's answer now (the primary asks its workers). */
  readiness(): Readiness;
  /** Every metric's values (the primary merges its workers'). */
  metricsSnapshot(): Promise<MetricsSnapshot>;
  /** Revokes a token by id; the entry is kept until `expiresAt` (default: max lifetime). */
  revoke(tokenId: string, expiresAt?: number): Promise<void>;
  /**
   * Graceful stop: readiness turns 503, new connections are refused, in-flight requests
   * get up to `server.shutdownGraceMs` to finish, then remaining connections are cut.
   */
  shutdown(): Promise<void>;
}

const audiencesByTable = new WeakMap<RouteTable, readonly string[]>();

/** Our tokens' accepted audiences: the gateway's, and each route's (RFC 8707). */
function ownAudiences(audience: string, table: RouteTable): readonly string[] {
  let audiences = audiencesByTable.get(table);
  if (audiences === undefined) {
    audiences = [...new Set([audience, ...table.routes.flatMap((route) => route.audiences)])];
    audiencesByTable.set(table, audiences);
  }
  return audiences;
}

/** The discovery documents and challenge parameter; none while the OAuth surface is off. */
function oauthDiscovery(config: Config, routes: () => RouteTable): OAuthDiscovery | undefined {
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
    },
    // RFC 9728 §2 names authorization servers by their RFC 8414 issuer identifiers.
    authorizationServers: issuers.filter((issuer) => issuerUrl(issuer) !== null),
    routes,
  });
}

export async function createApp(options: AppOptions): Promise<App> {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const destination =
    options.logDestination ?? (config.log.pretty ? await prettyDestination() : undefined);
  const { logger, access, droppedWrites } = createLoggers(config.log.level, destination);
  const metrics = createMetrics({
    maxClientLabels: config.metrics.maxClientLabels,
    processMetricsPrefix: config.metrics.processMetricsPrefix,
  });
  metrics.setLogDropSource(options.worker?.logDrops ?? droppedWrites);
  const worker = options.worker;
  // Loaded only when on: with tracing off the OpenTelemetry SDK is not even imported.
  let tracing: Tracing | null = null;
  if (config.tracing.enabled) {
    const { createTracing, tracingEnvironmentProblems } = await import(
      '../observability/tracing.js'
    );
    const problems = tracingEnvironmentProblems();
    if (problems.length > 0) throw new ConfigError(problems);
    tracing = createTracing({
      exportFailed: (error) => logger.warn({ error }, 'tracing: span export failed'),
    });
  }

  const issuerSets = config.issuers.map((issuer, index) => ({
    config: issuer,
    keys: createIssuerKeySet(issuer, {
      clock,
      index,
      hooks: {
        fetch: (id, trigger, outcome) => metrics.keySetFetch(id, trigger, outcome),
        ...(tracing === null
          ? {}
          : {
              fetchStarted: (id, trigger) => tracing.keySetFetch(id, trigger, issuer.jwksUri ?? ''),
            }),
        // A withdrawn key must not keep verifying through the cache.
        keysRemoved: () => cache.clear(),
      },
      log: (event, detail) => logger.info({ issuer: issuer.id, ...detail }, event),
    }),
  }));
  const since = {
    clients: sourceBaseline([config.clients.file]),
    keys: sourceBaseline([config.keys.dir], isKeyDirectoryEntry),
    issuerFiles: new Map(
      config.issuers.flatMap((issuer) =>
        issuer.keyFile ? [[issuer.id, sourceBaseline([issuer.keyFile])] as const] : [],
      ),
    ),
  };
  // Taken before the loads read: a change landing between the two must not become the
  // baseline (then it would never be reloaded). A failed fingerprint reloads at once.
  await Promise.allSettled([since.clients, since.keys, ...since.issuerFiles.values()]);
  // Everything start-up reads without side effects, together: every problem in one run.
  const [clients, initialRing, adminToken] = await allOrEveryProblem([
    loadClientRegistry(config.clients.file),
    loadKeyRing(config.keys.dir, config.token.algorithm, clock),
    worker ? Promise.resolve(null) : readAdminToken(config.admin.tokenFile),
    worker ? Promise.resolve() : checkRevocationFile(config),
    ...issuerSets.map((s) => s.keys.load()),
  ] as const);
  const { revocation, redis: redisRevocations } = worker
    ? mirroredRevocations(worker.revocation, metrics)
    : await openRevocationStore(config, clock, logger, metrics);
  const state: LiveState = {
    keyRing: initialRing,
    authenticate: createClientAuthenticator(clients, clock),
    clients,
    clientCount: clients.size,
    routes: compileRouteTable(config),
    draining: false,
    graceOver: false,
  };
  const cache = new VerifiedTokenCache(config.verify.cacheSize, clock);
  metrics.setCacheSizeSource(() => cache.size);
  metrics.setSigningKeySource(() => ({
    states: state.keyRing.states(),
    activeAgeSeconds: state.keyRing.activeKeyAgeSeconds(),
    activeRetiresInSeconds: state.keyRing.activeKeyRetiresInSeconds(),
  }));
  metrics.setIssuerSource(() => issuerSets.map((s) => ({ id: s.config.id, ...s.keys.state() })));
  for (const set of issuerSets) set.keys.start();

  const tokens = new TokenService({
    authenticate: () => state.authenticate,
    signingKey: () => state.keyRing.signingKey,
    issuer: config.issuer,
    audience: config.audience,
    defaultLifetimeSeconds: config.token.lifetimeSeconds,
    responseFields: config.token.responseFields,
    clock,
    clientCutoff: (clientId) => revocation.clientCutoff(clientId),
  });
  const verifier = new TokenVerifier({
    issuers: buildIssuerTable(
      config,
      () => state.keyRing,
      issuerSets,
      () => ownAudiences(config.audience, state.routes),
    ),
    clock,
    cache,
    revocation,
    hooks: {
      cacheLookup:
        tracing === null
          ? (hit) => metrics.cacheLookup(hit)
          : (hit) => {
              metrics.cacheLookup(hit);
              tracing.cacheLookup(hit);
            },
      verified: (issuer, seconds, age) => metrics.tokenVerified(issuer, seconds, age),
      verifyFailed: (issuer, reason, seconds) => metrics.tokenVerifyFailed(issuer, reason, seconds),
    },
  });

  const trustedProxies = new TrustedProxies(config.server.trustedProxies);
  const headerPolicy = createHeaderPolicy({
    identityHeaders: config.identityHeaders,
    forwardAuthorization: config.forwardAuthorization,
    trustedProxies,
    forwardCallerHeaders: config.forwardCallerHeaders,
  });
  const forwarder = createForwarder({
    routesOrigins: state.routes.origins,
    connections: config.upstream.connections,
    headerPolicy,
    hooks: {
      upstreamResponse: (route, ms) => metrics.upstreamResponse(route, ms / 1000),
      upstreamError: (route, kind) => metrics.upstreamError(route, kind),
    },
  });
  const discovery = oauthDiscovery(config, () => state.routes);
  const webSockets = createWebSocketProxy({
    headerPolicy,
    problemTypeBase: config.problemTypeBase,
    hooks: { upstreamError: (route, kind) => metrics.upstreamError(route, kind) },
    ...(discovery === undefined
      ? {}
      : {
          challenge: (problem, route) => discovery.withResourceMetadata(problem, undefined, route),
        }),
  });
  metrics.setWebSocketTunnelSource(() => webSockets.openTunnels());

  // Created after every start-up load that can fail, so a failed start leaves no Redis
  // connection reconnecting behind it.
  const limiter =
    worker?.limiter ??
    (await createTokenLimiter({
      config: config.tokenLimits,
      redis: config.redis,
      clock,
      hooks: {
        fallback: (check) => metrics.tokenLimitFallback(check),
        stateChanged: (limitState, error) => {
          if (limitState === 'down')
            logger.warn({ error }, 'token limits: Redis unusable, each replica limits on its own');
          else logger.info('token limits: Redis usable again, limits are shared');
        },
      },
    }).catch(async (error: unknown) => {
      await revocation.close();
      for (const set of issuerSets) set.keys.close();
      throw error;
    }));
  if (limiter instanceof RedisTokenLimiter) {
    metrics.addRedisConnectionSource('limits', () => limiter.connected());
  }

  const freshness = redisRevocations ?? worker?.revocationFreshness ?? null;
  const tokenRoute = {
    tokens,
    bodyLimitBytes: config.token.bodyLimitBytes,
    onOutcome: (outcome: string) => metrics.tokenRequest(outcome),
    onIssued: (clientId: string) => metrics.tokenIssuedTo(clientId),
    limiter: limiter ?? NO_LIMITS,
    attempts:
      limiter !== null && config.tokenLimits.failedSecretBackoff.enabled
        ? new PairAttempts(
            config.tokenLimits.maxTrackedKeys,
            config.tokenLimits.failedSecretBackoff.forgetAfterSeconds,
            clock,
          )
        : null,
    trustedProxies,
    onLimited: (reason: LimitReason) => metrics.tokenLimitRefusal(reason),
  };
  // The OAuth endpoints share the token operation's limiter, back-off and signer.
  const oauth = await createOAuthEndpoints(
    config,
    clock,
    logger,
    {
      ...tokenRoute,
      registry: () => state.clients,
      authenticate: () => state.authenticate,
      onOutcome: (outcome) => metrics.oauthRequest('token', outcome),
      onAuthFailure: (reason) => metrics.authFailure(reason),
    },
    {
      verifier,
      revocation,
      onRevoked: (clientId, jti) => {
        metrics.revoked('token');
        logger.info({ clientId, jti }, 'token revoked by its client');
      },
      outcome: (endpoint) => (outcome) => metrics.oauthRequest(endpoint, outcome),
    },
  );
  const gateway = new PublicGateway({
    config,
    tokenRoute,
    oauth: oauth.routes,
    jwks: new StaticDocument(
      () => state.keyRing.jwksJson(),
      `public, max-age=${config.keys.jwksMaxAgeSeconds}`,
    ),
    openapi: StaticDocument.of(
      openApiDocumentFor(config.token.responseFields, config.oauth.enabled ? config.oauth : null),
      'public, max-age=3600',
    ),
    ...(discovery === undefined ? {} : { discovery }),
    verifier,
    routes: () => state.routes,
    forwarder,
    webSockets,
    logger,
    accessLogger: access,
    metrics,
    draining: () => state.draining,
    graceOver: () => state.graceOver,
    tracing,
    ...(freshness === null
      ? {}
      : {
          revocationFreshness: {
            isStale: () => freshness.isStale(),
            refuse: {
              safe: config.revocation.whenStale.safe === 'refuse',
              unsafe: config.revocation.whenStale.unsafe === 'refuse',
            },
          },
        }),
  });

  const publicListener = createPublicListener(config, gateway, logger);
  const horizon = revocationHorizon(config);
  const readiness = createReadiness({
    state,
    issuerSets,
    ...(redisRevocations === null ? {} : { redisState: () => redisRevocations.state() }),
  });
  const adminServer = worker
    ? null
    : createAdminListener(
        config,
        createAdminHandler({
          metricsText: () => metrics.exposition(),
          revocations: {
            store: revocation,
            adminToken,
            ...horizon,
            now: () => clock.now(),
            onRevoked: (kind) => metrics.revoked(kind),
            audit: (level, event, detail) => logger[level](detail, event),
          },
          problemTypeBase: config.problemTypeBase,
          maxHeaderLines: config.server.maxHeaderLines,
          ready: readiness,
        }),
      );
  const sources = watchReloadSources({
    config,
    clock,
    state,
    cache,
    forwarder,
    logger,
    metrics,
    issuerSets,
    since,
    ...(options.configSource === undefined ? {} : { configSource: options.configSource }),
  });
  const housekeeping = startHousekeeping({
    config,
    clock,
    state,
    revocation,
    cache,
    webSockets,
    metrics,
    access,
  });
  let shuttingDown: Promise<void> | undefined;

  return {
    config,
    logger,
    async listen() {
      await listenOn(publicListener.server, config.server.host, config.server.port, 'server');
      try {
        if (adminServer !== null) {
          await listenOn(adminServer, config.admin.host, config.admin.port, 'admin');
        }
      } catch (error) {
        publicListener.server.close();
        throw error;
      }
      const publicUrl = urlOf(publicListener.server);
      // A worker has none: the primary's admin listener serves the group.
      const adminUrl = adminServer === null ? '' : urlOf(adminServer);
      logger.info(
        { publicUrl, adminUrl, kid: state.keyRing.signingKey.kid, clients: state.clientCount },
        'listening',
      );
      if (config.routes.length === 0 && config.upstream.default === null) {
        logger.warn(
          { setting: 'routes' },
          'no routes and no upstream.default: every request but the token operation gets 404 (add routes to the configuration)',
        );
      }
      if (config.revocation.store === 'memory' && worker === undefined) {
        logger.warn(
          { setting: 'revocation.store' },
          'revocations are kept in memory only: a restart forgets them and other replicas never see them (use local or redis outside tests)',
        );
      }
      return { publicUrl, adminUrl };
    },
    readiness: readiness,
    metricsSnapshot: () => metrics.snapshot(),
    async reload() {
      const remote = issuerSets.flatMap((s) => (s.keys instanceof RemoteKeySet ? [s.keys] : []));
      await Promise.all([
        ...sources.map((source) => source.trigger('signal')),
        ...remote.map((set) => set.refreshNow('scheduled')),
      ]);
    },
    revoke(tokenId, expiresAt) {
      return revocation.revokeToken(
        tokenId,
        // As the admin API's default: the latest any token issued so far is accepted.
        expiresAt ??
          epochSeconds(clock) + horizon.maxLifetimeSeconds + 2 * horizon.clockSkewSeconds,
      );
    },
    shutdown() {
      // Every caller (a second signal, the test harness) waits for the one drain.
      shuttingDown ??= drain({
        config,
        state,
        logger,
        access,
        publicListener,
        adminServer,
        webSockets,
        forwarder,
        housekeeping,
        watchers: [...sources, ...issuerSets.map((set) => set.keys)],
        revocation,
        queuedRevocations: () => redisRevocations?.state().queued ?? 0,
        limiter,
        responsesClosed: () => gateway.responsesClosed(),
        tracing,
      }).then(() => oauth.close());
      return shuttingDown;
    },
  };
}

/** A worker's revocation list (the primary's, mirrored), bound to its metrics. */
function mirroredRevocations(
  revocation: RevocationStore,
  metrics: Metrics,
): { revocation: RevocationStore; redis: RedisRevocationStore | null } {
  metrics.setRevocationSizeSource(() => revocation.size());
  return { revocation, redis: null };
}
