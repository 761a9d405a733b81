/**
 * Composition root: builds every part from the frozen config, in the order below, and
 * returns the app. Each step is a room of `app/` with one job: logs and metrics, tracing,
 * the issuers' key sets, the reload baselines, the start-up reads, the revocation store,
 * the verifier, forwarding, the token operation and its limits, the OAuth endpoints, the
 * public gateway, the listeners (with the public one's TLS files), reloads, timers and
 * the drain. Tests call `createApp`
 * directly with a port-0 config, a log destination they read, and (where time matters) a
 * manual clock.
 */
import { readAdminToken } from '../config/adminTokenFile.js';
import type { Config } from '../config/types.js';
import { EdgeChallenge } from '../http/challenge.js';
import { RemoteKeySet } from '../issuers/remoteKeySet.js';
import { type Clock, epochSeconds, systemClock } from '../lib/clock.js';
import type { Limiter } from '../limits/limiter.js';
import type { Meter } from '../limits/meter.js';
import type { AssertionReplayStore } from '../oauth/assertionReplayStore.js';
import type { DestinationStream, Logger } from '../observability/logger.js';
import type { MetricsSnapshot } from '../observability/metrics.js';
import { loadProfiledClients, loadProfiledKeyRing } from '../profile/profileLoads.js';
import type { ContentFingerprint } from '../reload/contentFingerprint.js';
import type { RevocationStore } from '../revocation/revocationStore.js';
import { ServerTls } from '../tls/serverTls.js';
import { loadTlsMaterial, tlsSettingsOf } from '../tls/tlsMaterial.js';
import { dpopNoncesOf } from '../verify/dpopNonces.js';
import { VerifiedTokenCache } from '../verify/verifiedTokenCache.js';
import { createAdminServer } from './adminServer.js';
import { createAuthorizer } from './authorizerWiring.js';
import { certificateHeaderReader, headerCertificateTrust } from './certificateHeaderWiring.js';
import { createForwarding } from './forwardingWiring.js';
import { createGateway, dpopStepDeps } from './gatewayWiring.js';
import { startHousekeeping } from './housekeeping.js';
import { createIssuerSets } from './issuerKeySets.js';
import { listenBoth } from './listening.js';
import { initialLiveState } from './liveState.js';
import { openLogsAndMetrics } from './logsAndMetrics.js';
import { createOAuthEndpoints, oauthDiscovery } from './oauthEndpoints.js';
import { openMeter, quotaAdmin, quotaStepDeps } from './quotaWiring.js';
import { createReadiness, type Readiness } from './readiness.js';
import { takeReloadBaselines } from './reloadBaselines.js';
import { watchReloadSources } from './reloads.js';
import { revocationHorizon } from './revocationHorizon.js';
import { mirroredRevocations, openRevocationStore } from './revocationStores.js';
import { createPublicListener } from './servers.js';
import { drain } from './shutdown.js';
import { allOrEveryProblem, checkRevocationFile } from './startupChecks.js';
import { openTokenLimiter, tokenRouteDeps } from './tokenRouteWiring.js';
import { startTracing } from './tracingWiring.js';
import { createOwnTokensVerifier, createVerifier } from './verifierWiring.js';

export { sourceBaseline } from './reloadBaselines.js';

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
   * the admin listener, the revocation store, the local token limits and the local
   * assertion replay store, so the worker
   * takes these parts from it and has no admin listener. Absent: one process, as ever.
   */
  readonly worker?: WorkerParts;
}

export interface WorkerParts {
  /** The primary's revocation list, mirrored. */
  readonly revocation: RevocationStore;
  /** With the Redis store: whether the primary's list is stale (revocation.whenStale). */
  readonly revocationFreshness?: { isStale(): boolean };
  /** The primary's token limiter; undefined: made here (Redis, or every limit off). */
  readonly limiter?: Limiter;
  /** The primary's quota meter (local counters); undefined: made here (Redis, or no policy). */
  readonly meter?: Meter;
  /** The primary's assertion replay store; undefined: made here (Redis, or the surface off). */
  readonly replay?: AssertionReplayStore;
  /** Log writes dropped (the log output is the primary's). */
  readonly logDrops: () => number;
  /** Its node:cluster id, written as `worker` in each of its log lines. */
  readonly workerId: number;
}

export interface App {
  readonly config: Config;
  readonly logger: Logger;
  /**
   * Starts the listeners; resolves with the bound addresses (`authorizerUrl` and
   * `grpcUrl` are '' without a decision listener of that kind).
   */
  listen(): Promise<{
    publicUrl: string;
    adminUrl: string;
    authorizerUrl: string;
    grpcUrl: string;
  }>;
  /** Reloads the clients file, the keys directory, key files, the routes and TLS files now (SIGHUP). */
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

export async function createApp(options: AppOptions): Promise<App> {
  const { config, worker } = options;
  const clock = options.clock ?? systemClock;
  const { logger, access, metrics } = await openLogsAndMetrics(
    config,
    options.logDestination,
    worker,
  );
  const tracing = await startTracing(config, logger);
  const cache = new VerifiedTokenCache(config.verify.cacheSize, clock);
  metrics.setCacheSizeSource(() => cache.size);
  const issuerSets = createIssuerSets(config, { clock, metrics, tracing, logger, cache });
  const since = await takeReloadBaselines(config);
  // Everything start-up reads without side effects, together: every problem in one run.
  const [clients, initialRing, adminToken, , tlsMaterial, certificateTrust] =
    await allOrEveryProblem([
      loadProfiledClients(config),
      loadProfiledKeyRing(config, clock),
      worker ? Promise.resolve(null) : readAdminToken(config.admin.tokenFile),
      worker ? Promise.resolve() : checkRevocationFile(config),
      config.server.tls.enabled ? loadTlsMaterial(tlsSettingsOf(config)) : Promise.resolve(null),
      headerCertificateTrust(config),
      ...issuerSets.map((s) => s.keys.load()),
    ] as const);
  const { revocation, redis: redisRevocations } = worker
    ? mirroredRevocations(worker.revocation, metrics)
    : await openRevocationStore(config, clock, logger, metrics);
  const state = initialLiveState(config, clock, clients, initialRing);
  metrics.setSigningKeySource(() => ({
    states: state.keyRing.states(),
    activeAgeSeconds: state.keyRing.activeKeyAgeSeconds(),
    activeRetiresInSeconds: state.keyRing.activeKeyRetiresInSeconds(),
  }));
  metrics.setIssuerSource(() => issuerSets.map((s) => ({ id: s.config.id, ...s.keys.state() })));
  for (const set of issuerSets) set.keys.start();

  const verifier = createVerifier(config, {
    clock,
    state,
    issuerSets,
    cache,
    revocation,
    metrics,
    tracing,
  });
  const discovery = oauthDiscovery(config, () => state.routes);
  const dpopNonces = dpopNoncesOf(config.dpop, clock);
  const challenge = EdgeChallenge.of(
    discovery,
    config.dpop.enabled ? config.dpop.algorithms : [],
    dpopNonces,
  );
  const forwarding = createForwarding(config, { state, metrics, challenge });
  // Opened after every start-up load that can fail, so a failed start leaves no Redis
  // connection reconnecting behind it; a failure here closes what was opened before.
  const limiter = await openTokenLimiter(config, {
    clock,
    logger,
    metrics,
    shared: worker?.limiter,
  }).catch(async (error: unknown) => {
    await revocation.close();
    for (const set of issuerSets) set.keys.close();
    throw error;
  });
  const tokenRoute = tokenRouteDeps(config, {
    clock,
    state,
    revocation,
    limiter,
    trustedProxies: forwarding.trustedProxies,
    metrics,
  });
  const freshness = redisRevocations ?? worker?.revocationFreshness ?? null;
  const oauth = await createOAuthEndpoints(config, {
    clock,
    logger,
    metrics,
    state,
    tokenRoute,
    verifier: createOwnTokensVerifier(config, {
      clock,
      state,
      issuerSets,
      revocation,
      metrics,
      tracing,
    }),
    revocation,
    freshness,
    sharedReplay: worker?.replay,
    dpopNonces,
  });
  const certificateHeader = certificateHeaderReader(config, certificateTrust, clock);
  const dpop = dpopStepDeps(config, clock, oauth.replay, dpopNonces);
  const meter = await openMeter(config, { clock, logger, metrics, shared: worker?.meter });
  const quota = meter === null ? undefined : quotaStepDeps(config, state, meter, metrics);
  const gateway = createGateway(config, {
    dpop,
    quota,
    state,
    tokenRoute: dpop === undefined ? tokenRoute : { ...tokenRoute, dpop },
    oauth: oauth.routes,
    discovery,
    challenge,
    verifier,
    forwarding,
    logger,
    access,
    metrics,
    tracing,
    freshness,
    certificateHeader,
  });

  const authorizer = createAuthorizer(config, {
    dpop,
    quota,
    clock,
    state,
    verifier,
    challenge,
    trustedProxies: forwarding.trustedProxies,
    logger,
    access,
    metrics,
    tracing,
    freshness,
    certificateHeader,
    certificateTrust,
  });

  const serverTls = tlsMaterial === null ? null : new ServerTls(tlsSettingsOf(config), tlsMaterial);
  const publicListener = createPublicListener(config, gateway, logger, serverTls);
  const readiness = createReadiness({
    state,
    issuerSets,
    ...(redisRevocations === null ? {} : { redisState: () => redisRevocations.state() }),
    ...(oauth.replayConnected === null ? {} : { replayConnected: oauth.replayConnected }),
  });
  const adminServer = worker
    ? null
    : createAdminServer(config, {
        metricsText: () => metrics.exposition(),
        ready: readiness,
        store: revocation,
        adminToken,
        clock,
        metrics,
        logger,
        quotas:
          meter === null
            ? undefined
            : quotaAdmin(
                meter,
                () => state.quotaPolicies,
                () => state.routes.routes.map((route) => route.id),
              ),
      });
  const sources = watchReloadSources({
    config,
    clock,
    state,
    cache,
    forwarder: forwarding.forwarder,
    logger,
    metrics,
    issuerSets,
    since,
    ...(options.configSource === undefined ? {} : { configSource: options.configSource }),
    ...(serverTls === null ? {} : { tls: serverTls }),
  });
  const housekeeping = startHousekeeping({
    config,
    clock,
    state,
    revocation,
    cache,
    webSockets: forwarding.webSockets,
    metrics,
    access,
  });
  const horizon = revocationHorizon(config);
  let shuttingDown: Promise<void> | undefined;

  return {
    config,
    logger,
    async listen() {
      const urls = await listenBoth(config, {
        publicServer: publicListener.server,
        adminServer,
        tls: serverTls,
        clock,
        state,
        logger,
        worker: worker !== undefined,
      });
      if (authorizer === null) return { ...urls, authorizerUrl: '', grpcUrl: '' };
      const decisionUrls = await authorizer.listen().catch((error: unknown) => {
        publicListener.server.close();
        adminServer?.close();
        throw error;
      });
      logger.info({ mode: config.mode, ...decisionUrls }, 'answering decisions');
      return { ...urls, ...decisionUrls };
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
        authorizer,
        webSockets: forwarding.webSockets,
        forwarder: forwarding.forwarder,
        housekeeping,
        watchers: [...sources, ...issuerSets.map((set) => set.keys)],
        revocation,
        queuedRevocations: () => redisRevocations?.state().queued ?? 0,
        limiter,
        responsesClosed: () => gateway.responsesClosed(),
        tracing,
      })
        .then(() => oauth.close())
        .then(() => meter?.close());
      return shuttingDown;
    },
  };
}
