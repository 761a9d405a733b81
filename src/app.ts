/**
 * Composition root: builds every piece from the frozen config and wires the hooks to
 * metrics. Tests call `createApp` directly with a port-0 config, a log destination they
 * read, and (where time matters) a manual clock.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createClientAuthenticator } from './clients/authenticateClient.js';
import {
  loadClientRegistry,
  MAX_LIFETIME_SECONDS as MAX_OWN_LIFETIME_SECONDS,
} from './clients/clientRegistry.js';
import { ConfigError } from './config/configError.js';
import type { Config } from './config/types.js';
import { createAdminHandler } from './http/adminRoutes.js';
import { createClientErrorHandler } from './http/clientErrors.js';
import { declinedUpgrades } from './http/declinedUpgrade.js';
import { openApiDocumentFor } from './http/openApiDocument.js';
import { PublicGateway } from './http/publicGateway.js';
import { GatewayResponse } from './http/requestScope.js';
import { StaticDocument } from './http/staticDocument.js';
import { createIssuerKeySet } from './keys/issuerKeySet.js';
import { latePublications } from './keys/latePublication.js';
import { isKeyDirectoryEntry, loadKeyRing } from './keys/loadKeyRing.js';
import { RemoteKeySet } from './keys/remoteKeySet.js';
import { StaticKeySet } from './keys/staticKeySet.js';
import { type Clock, epochSeconds, systemClock } from './lib/clock.js';
import { TrustedProxies } from './lib/trustedProxies.js';
import { unwritableFileReason } from './lib/writableFile.js';
import {
  createLoggers,
  type DestinationStream,
  type Logger,
  prettyDestination,
} from './observability/logger.js';
import { createMetrics } from './observability/metrics.js';
import { createForwarder } from './proxy/forwarder.js';
import { createHeaderPolicy } from './proxy/headers.js';
import { compileRouteTable } from './proxy/routeTable.js';
import { createWebSocketProxy, offersWebSocket } from './proxy/webSocketProxy.js';
import {
  type ContentFingerprint,
  contentFingerprint,
  type EntryFilter,
} from './reload/contentFingerprint.js';
import { type ReloadOutcome, type WatchedSource, watchSource } from './reload/watchedSource.js';
import { LocalRevocationStore } from './revocation/localRevocationStore.js';
import { MemoryRevocationStore } from './revocation/memoryRevocationStore.js';
import {
  type RedisRevocationState,
  RedisRevocationStore,
} from './revocation/redisRevocationStore.js';
import { TokenService } from './token/tokenService.js';
import { createTokenLimiter } from './tokenLimits/createTokenLimiter.js';
import { PairAttempts } from './tokenLimits/pairAttempts.js';
import { RedisTokenLimiter } from './tokenLimits/redisTokenLimiter.js';
import { TokenVerifier } from './verify/tokenVerifier.js';
import { buildIssuerTable } from './verify/trustedIssuer.js';
import { VerifiedTokenCache } from './verify/verifiedTokenCache.js';

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
  /** Revokes a token by id; the entry is kept until `expiresAt` (default: max lifetime). */
  revoke(tokenId: string, expiresAt?: number): Promise<void>;
  /**
   * Graceful stop: readiness turns 503, new connections are refused, in-flight requests
   * get up to `server.shutdownGraceMs` to finish, then remaining connections are cut.
   */
  shutdown(): Promise<void>;
}

export async function createApp(options: AppOptions): Promise<App> {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const destination =
    options.logDestination ?? (config.log.pretty ? await prettyDestination() : undefined);
  const { logger, access, droppedWrites } = createLoggers(config.log.level, destination);
  const metrics = createMetrics({ maxClientLabels: config.metrics.maxClientLabels });
  metrics.setLogDropSource(droppedWrites);

  const issuerSets = config.issuers.map((issuer, index) => ({
    config: issuer,
    everUsable: false,
    keys: createIssuerKeySet(issuer, {
      clock,
      index,
      hooks: {
        fetch: (id, trigger, outcome) => metrics.keySetFetch(id, trigger, outcome),
        // A withdrawn key must not keep verifying through the cache.
        keysRemoved: () => cache.clear(),
      },
      log: (event, detail) => logger.info({ issuer: issuer.id, ...detail }, event),
    }),
  }));
  const clientsSince = sourceBaseline([config.clients.file]);
  const keysSince = sourceBaseline([config.keys.dir], isKeyDirectoryEntry);
  const issuerFilesSince = new Map(
    config.issuers.flatMap((issuer) =>
      issuer.keyFile ? [[issuer.id, sourceBaseline([issuer.keyFile])] as const] : [],
    ),
  );
  // Taken before the loads read: a change landing between the two must not become the
  // baseline (then it would never be reloaded). A failed fingerprint reloads at once.
  await Promise.allSettled([clientsSince, keysSince, ...issuerFilesSince.values()]);
  // Everything start-up reads without side effects, together: every problem in one run.
  const [clients, initialRing, adminToken] = await allOrEveryProblem([
    loadClientRegistry(config.clients.file),
    loadKeyRing(config.keys.dir, config.token.algorithm, clock),
    readAdminToken(config.admin.tokenFile),
    checkRevocationFile(config),
    ...issuerSets.map((s) => s.keys.load()),
  ] as const);
  // Replaced by reloads; every reader goes through these bindings.
  let keyRing = initialRing;
  let clientCount = clients.size;
  let authenticate = createClientAuthenticator(clients, clock);
  // The stores below create files or connections, so they open only once the reads above
  // succeeded: a configuration problem leaves no file and no Redis connection behind.
  // Waits at most redis.connectTimeoutMs for the first full load.
  const redisRevocations =
    config.revocation.store === 'redis'
      ? await RedisRevocationStore.open({
          redis: config.redis,
          clock,
          maxSyncLagSeconds: config.revocation.maxSyncLagSeconds,
          whileRedisDown: config.revocation.whileRedisDown,
          queueFile: config.revocation.queueFile,
          log: (level, event, detail) => logger[level](detail, event),
          onSync: (outcome) => metrics.revocationSync(outcome),
        })
      : null;
  const revocation =
    redisRevocations ??
    (config.revocation.store === 'local'
      ? await LocalRevocationStore.open(config.revocation.file, clock, {
          log: (event, detail) => logger.warn(detail, event),
        })
      : new MemoryRevocationStore(clock));
  metrics.setRevocationSizeSource(() => revocation.size());
  if (redisRevocations !== null) {
    const store = redisRevocations;
    metrics.setRevocationSyncSource(() => {
      const state = store.state();
      return { lagSeconds: state.syncAgeSeconds, queued: state.queued };
    });
    metrics.addRedisConnectionSource('revocation', () => store.state().connected.revocation);
    metrics.addRedisConnectionSource(
      'revocation-subscriber',
      () => store.state().connected['revocation-subscriber'],
    );
  }
  const cache = new VerifiedTokenCache(config.verify.cacheSize, clock);
  metrics.setCacheSizeSource(() => cache.size);
  metrics.setSigningKeySource(() => ({
    states: keyRing.states(),
    activeAgeSeconds: keyRing.activeKeyAgeSeconds(),
    activeRetiresInSeconds: keyRing.activeKeyRetiresInSeconds(),
  }));
  metrics.setIssuerSource(() => issuerSets.map((s) => ({ id: s.config.id, ...s.keys.state() })));
  for (const set of issuerSets) set.keys.start();

  const tokens = new TokenService({
    authenticate: () => authenticate,
    signingKey: () => keyRing.signingKey,
    issuer: config.issuer,
    audience: config.audience,
    defaultLifetimeSeconds: config.token.lifetimeSeconds,
    responseFields: config.token.responseFields,
    clock,
    clientCutoff: (clientId) => revocation.clientCutoff(clientId),
  });
  const verifier = new TokenVerifier({
    issuers: buildIssuerTable(config, () => keyRing, issuerSets),
    clock,
    cache,
    revocation,
    hooks: {
      cacheLookup: (hit) => metrics.cacheLookup(hit),
      verified: (issuer, seconds, age) => metrics.tokenVerified(issuer, seconds, age),
      verifyFailed: (issuer, reason, seconds) => metrics.tokenVerifyFailed(issuer, reason, seconds),
    },
  });

  let routes = compileRouteTable(config);
  const trustedProxies = new TrustedProxies(config.server.trustedProxies);
  const headerPolicy = createHeaderPolicy({
    identityHeaders: config.identityHeaders,
    forwardAuthorization: config.forwardAuthorization,
    trustedProxies,
    forwardCallerHeaders: config.forwardCallerHeaders,
  });
  const forwarder = createForwarder({
    routesOrigins: routes.origins,
    connections: config.upstream.connections,
    headerPolicy,
    hooks: {
      upstreamResponse: (route, ms) => metrics.upstreamResponse(route, ms / 1000),
      upstreamError: (route, kind) => metrics.upstreamError(route, kind),
    },
  });
  const webSockets = createWebSocketProxy({
    headerPolicy,
    problemTypeBase: config.problemTypeBase,
    hooks: { upstreamError: (route, kind) => metrics.upstreamError(route, kind) },
  });

  // Created after every start-up load that can fail, so a failed start leaves no Redis
  // connection reconnecting behind it.
  const limiter = await createTokenLimiter({
    config: config.tokenLimits,
    redis: config.redis,
    clock,
    hooks: {
      fallback: (check) => metrics.tokenLimitFallback(check),
      stateChanged: (state, error) => {
        if (state === 'down')
          logger.warn({ error }, 'token limits: Redis unusable, each replica limits on its own');
        else logger.info('token limits: Redis usable again, limits are shared');
      },
    },
  }).catch(async (error: unknown) => {
    await revocation.close();
    for (const set of issuerSets) set.keys.close();
    throw error;
  });
  if (limiter instanceof RedisTokenLimiter) {
    metrics.addRedisConnectionSource('limits', () => limiter.connected());
  }

  let draining = false;
  /** The shutdown grace ended: what is still open is being cut (access lines say so). */
  let graceOver = false;
  const jwks = new StaticDocument(
    () => keyRing.jwksJson(),
    `public, max-age=${config.keys.jwksMaxAgeSeconds}`,
  );
  const gateway = new PublicGateway({
    config,
    tokenRoute: {
      tokens,
      bodyLimitBytes: config.token.bodyLimitBytes,
      onOutcome: (outcome) => metrics.tokenRequest(outcome),
      onIssued: (clientId) => metrics.tokenIssuedTo(clientId),
      limiter,
      attempts:
        limiter !== null && config.tokenLimits.failedSecretBackoff.enabled
          ? new PairAttempts(
              config.tokenLimits.maxTrackedKeys,
              config.tokenLimits.failedSecretBackoff.forgetAfterSeconds,
              clock,
            )
          : null,
      trustedProxies,
      onLimited: (reason) => metrics.tokenLimitRefusal(reason),
    },
    jwks,
    openapi: StaticDocument.of(
      openApiDocumentFor(config.token.responseFields),
      'public, max-age=3600',
    ),
    verifier,
    routes: () => routes,
    forwarder,
    webSockets,
    logger,
    accessLogger: access,
    metrics,
    draining: () => draining,
    graceOver: () => graceOver,
    ...(redisRevocations === null
      ? {}
      : {
          revocationFreshness: {
            isStale: () => redisRevocations.isStale(),
            refuse: {
              safe: config.revocation.whenStale.safe === 'refuse',
              unsafe: config.revocation.whenStale.unsafe === 'refuse',
            },
          },
        }),
  });

  const publicServer: Server = createServer(
    {
      ServerResponse: GatewayResponse,
      headersTimeout: config.server.headersTimeoutMs,
      requestTimeout: config.server.requestTimeoutMs,
      keepAliveTimeout: config.server.keepAliveTimeoutMs,
      maxHeaderSize: config.server.maxHeaderBytes,
      // The gateway answers a missing Host itself, with problem details (singletonFields.ts).
      requireHostHeader: false,
      // Only WebSocket upgrades are taken up; newer Node sends other offers (h2c) to the
      // request listener (older Node: reparseWithoutUpgrade below). Not in @types/node yet.
      ...{ shouldUpgradeCallback: offersWebSocket },
      // Node checks the header and request timeouts on this timer (default 30 s): tie it
      // to the configured timeout so a slow client is cut close to it.
      connectionsCheckingInterval: Math.min(1000, Math.ceil(config.server.headersTimeoutMs / 2)),
    },
    gateway.handleRequest as Parameters<typeof createServer>[1],
  );
  // Node's count is per listener; lines past it are dropped (Node < 24) or refused.
  publicServer.maxHeadersCount = config.server.maxHeaderLines;
  // The drain needs every connection, idle or not (see stopGracefully).
  const publicConnections = new Set<Socket>();
  publicServer.on('connection', (socket: Socket) => {
    publicConnections.add(socket);
    socket.once('close', () => publicConnections.delete(socket));
  });
  if (config.server.halfClosedRequests === 'answer') answerAfterHalfClose(publicServer);
  // An expectation other than 100-continue is ignored (RFC 9110 §10.1.1 allows it; Node
  // would answer a bare 417): the request is handled like any other, `Expect` not forwarded.
  publicServer.on('checkExpectation', gateway.handleRequest);
  // 100-continue: `100 Continue` only once the request is accepted (handleContinue).
  publicServer.on('checkContinue', gateway.handleContinue);
  // CONNECT (a tunnel request) is no method of this gateway: 405 problem details, not
  // Node's silent close.
  publicServer.on('connect', (req: IncomingMessage, socket: Duplex) =>
    gateway.refuseConnect(req, socket),
  );
  // Older Node emits `upgrade` for offers other than WebSocket too (declinedUpgrade.ts).
  const declined = declinedUpgrades(
    publicServer,
    { request: gateway.handleRequest, expectingContinue: gateway.handleContinue },
    config.server.requestTimeoutMs,
  );
  publicServer.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (offersWebSocket(req)) gateway.handleUpgrade(req, socket, head);
    else declined.answer(req, socket, head);
  });
  publicServer.on(
    'clientError',
    createClientErrorHandler(
      config.problemTypeBase,
      (reason) => logger.info({ reason }, 'request refused by the HTTP parser'),
      (reqId, bytes) => logger.info({ reqId, bytes }, 'bytes after the request ignored'),
    ),
  );
  const horizon = revocationHorizon(config);
  // The public listener's time limits apply here too (Node's defaults would let a client
  // trickle one request for 300 s, holding a socket of the port probes depend on).
  const adminServer = createServer(
    {
      headersTimeout: config.server.headersTimeoutMs,
      requestTimeout: config.server.requestTimeoutMs,
      maxHeaderSize: config.server.maxHeaderBytes,
      connectionsCheckingInterval: Math.min(1000, Math.ceil(config.server.headersTimeoutMs / 2)),
    },
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
      ready: () => readiness(),
    }),
  );
  adminServer.maxHeadersCount = config.server.maxHeaderLines;
  // Always on the admin listener: its answers hold no upstream work to cancel.
  answerAfterHalfClose(adminServer);

  /**
   * Ready: not draining, a signing key active now, every external issuer with usable keys,
   * the Redis revocation list loaded once.
   */
  const readiness = (): { ready: boolean; reason?: string; degraded?: string } => {
    if (draining) return { ready: false, reason: 'shutting down' };
    try {
      void keyRing.signingKey;
    } catch {
      return { ready: false, reason: 'no signing key is active' };
    }
    // Each issuer must have had a usable key set once. A later outage of one issuer's key
    // server is answered with 503 on that issuer's tokens (after maxStalenessSeconds), not
    // by taking every replica out of the load balancer.
    for (const set of issuerSets) {
      if (set.everUsable) continue;
      if (!set.keys.state().usable) {
        return { ready: false, reason: `issuer ${set.config.id} has no usable key set yet` };
      }
      set.everUsable = true;
    }
    // The Redis revocation list must have been loaded once. A later Redis outage keeps the
    // replica ready (the last known list is enforced and revocation.whenStale decides):
    // taking every replica out of the load balancer would turn it into a full outage.
    if (redisRevocations !== null) {
      const state = redisRevocations.state();
      if (!state.loaded) {
        return { ready: false, reason: 'the revocation list has not been loaded from Redis yet' };
      }
      const degraded = revocationDegraded(state);
      if (degraded !== undefined) return { ready: true, degraded };
    }
    return { ready: true };
  };

  const watch = { watch: config.reload.enabled, pollIntervalMs: config.reload.pollIntervalMs };
  const onOutcome = (source: string, outcome: ReloadOutcome, problems: readonly string[]) => {
    metrics.configReload(source, outcome);
    if (outcome === 'failed') {
      logger.error({ source, problems }, 'reload failed: keeping the previous configuration');
    } else if (outcome === 'applied') {
      logger.info({ source }, 'reloaded');
    }
  };
  const sources: WatchedSource[] = [
    watchSource({
      name: 'clients',
      paths: [config.clients.file],
      since: clientsSince,
      load: () => loadClientRegistry(config.clients.file),
      apply: (registry) => {
        authenticate = createClientAuthenticator(registry, clock);
        clientCount = registry.size;
      },
      onOutcome,
      ...watch,
    }),
    watchSource({
      name: 'keys',
      paths: [config.keys.dir],
      // Only the files the loader reads: a clients.json or admin token mounted in the
      // same directory (the chart's Secret) must not reload keys and empty the cache.
      directoryEntries: isKeyDirectoryEntry,
      since: keysSince,
      load: () => loadKeyRing(config.keys.dir, config.token.algorithm, clock),
      apply: (ring) => {
        const maxAgeMs = config.keys.jwksMaxAgeSeconds * 1000;
        for (const key of latePublications(keyRing, ring, clock.now(), maxAgeMs)) {
          logger.warn(
            {
              kid: key.kid,
              activateAt: key.activateAt === null ? null : new Date(key.activateAt).toISOString(),
              jwksMaxAgeSeconds: config.keys.jwksMaxAgeSeconds,
            },
            'signing key published late: verifiers caching the JWKS, and replicas that have not loaded it, may refuse its tokens until they have it',
          );
        }
        keyRing = ring;
        // A key that left the ring must not keep verifying through the cache.
        cache.clear();
      },
      onOutcome,
      ...watch,
    }),
    ...issuerSets
      .filter((s) => s.keys instanceof StaticKeySet)
      .map((s) =>
        watchSource({
          name: `issuer-keys:${s.config.id}`,
          paths: [s.config.keyFile as string],
          since: issuerFilesSince.get(s.config.id),
          load: () => (s.keys as StaticKeySet).reload(),
          apply: () => cache.clear(),
          onOutcome,
          ...watch,
        }),
      ),
  ];
  const configSource = options.configSource;
  if (configSource) {
    sources.push(
      watchSource({
        name: 'routes',
        paths: [configSource.file],
        since: configSource.since,
        load: configSource.reload,
        apply: (next) => {
          routes = compileRouteTable(next);
          forwarder.setOrigins(routes.origins);
          const changed = settingsNeedingRestart(config, next);
          if (changed.length > 0) {
            logger.warn({ settings: changed }, 'these settings change only on restart');
          }
        },
        onOutcome,
        ...watch,
      }),
    );
  }

  metrics.configSources(sources.map((source) => source.name));

  const sweep = setInterval(() => void revocation.sweep(), 60_000);
  sweep.unref();

  // A WebSocket tunnel lives no longer than its token would still be accepted: closed
  // within a second of the token's revocation or (unless configured off) of exp + skew.
  const skewOf = new Map<string, number>([
    ['self', config.clockSkewSeconds],
    ...config.issuers.map((i): [string, number] => [i.id, i.clockSkewSeconds]),
  ]);
  const closeAtExpiry = config.server.closeWebSocketsAtTokenExpiry;
  const closeEndedTunnels = () => {
    const nowSeconds = clock.now() / 1000;
    const closed = webSockets.closeEnded((principal) => {
      if (revocation.isRevoked(principal)) return 'token_revoked';
      const skew = skewOf.get(principal.issuerId) ?? config.clockSkewSeconds;
      return closeAtExpiry && principal.expiresAt + skew <= nowSeconds ? 'token_expired' : null;
    });
    for (const tunnel of closed) {
      metrics.webSocketClosed(tunnel.reason);
      access.logger.info(
        {
          reqId: tunnel.requestId,
          route: tunnel.routeId,
          clientId: tunnel.clientId,
          reason: tunnel.reason,
        },
        'websocket closed',
      );
    }
  };
  // Our published key set also changes by the clock alone (a scheduled publishAt or
  // removeAt passing): a key that left it must not keep verifying through the cache.
  // jwksJson() is one string instance per schedule segment, so this is an identity test.
  let publishedKeys = keyRing.jwksJson();
  const followKeySchedule = () => {
    const now = keyRing.jwksJson();
    if (now === publishedKeys) return;
    publishedKeys = now;
    cache.clear();
  };
  const everySecond = setInterval(() => {
    closeEndedTunnels();
    followKeySchedule();
  }, 1000);
  everySecond.unref();

  /**
   * Graceful stop: readiness turns 503, new connections are refused, in-flight requests
   * get up to `server.shutdownGraceMs`, then the rest is cut and everything closed.
   */
  const stopGracefully = async (): Promise<void> => {
    draining = true;
    logger.info({ graceMs: config.server.shutdownGraceMs }, 'shutting down: draining');
    clearInterval(sweep);
    // `everySecond` keeps running while tunnels drain: a token revoked (or expired) during
    // the grace period still closes its tunnel within a second.
    for (const source of sources) source.close();
    for (const set of issuerSets) set.keys.close();
    // Stop accepting, without http.Server#close's sweep of idle connections: a client
    // told keep-alive may have its next request on the way on one (it would be reset).
    // Every answer from now on says `Connection: close` (and Node closes after it); an
    // idle connection ends when its keep-alive time runs out, as announced to the client
    // in `Keep-Alive: timeout=`; one that never sent a byte, after the same time.
    const closed = new Promise<void>((resolve) =>
      NetServer.prototype.close.call(publicServer, () => resolve()),
    );
    for (const socket of publicConnections) {
      const current = (socket as Socket & { _httpMessage?: unknown })._httpMessage;
      if (current instanceof GatewayResponse && !current.headersSent) {
        current.shouldKeepAlive = false;
      }
    }
    const unusedSweep = setTimeout(() => {
      for (const socket of publicConnections) if (socket.bytesRead === 0) socket.destroy();
    }, config.server.keepAliveTimeoutMs);
    const grace = new Promise<'timeout'>((resolve) =>
      setTimeout(resolve, config.server.shutdownGraceMs, 'timeout').unref(),
    );
    // Upgraded (WebSocket) sockets are not the server's any more: they end at the grace limit.
    if ((await Promise.race([closed, grace])) === 'timeout') {
      logger.warn('grace period over: closing remaining connections');
      graceOver = true;
      publicServer.closeAllConnections();
      webSockets.close();
      declined.closeAll();
      await closed;
    }
    clearTimeout(unusedSweep);
    // http.Server#close now only stops its timeout checks: no connection is left.
    publicServer.close(() => {});
    webSockets.close();
    clearInterval(everySecond);
    await forwarder.close();
    // A closed server no longer enforces its header and request timeouts: an admin
    // connection that never completes a request (a stalled client, a port scanner) would
    // keep close() waiting forever. Idle ones go at once, the rest after a second.
    const adminClosed = new Promise<void>((resolve) => adminServer.close(() => resolve()));
    adminServer.closeIdleConnections();
    const adminGrace = setTimeout(() => adminServer.closeAllConnections(), 1000);
    await adminClosed;
    clearTimeout(adminGrace);
    const queued = redisRevocations?.state().queued ?? 0;
    if (queued > 0) {
      // Acknowledged revocations Redis has not received yet: they survive only in the
      // queue file, replayed at the next start if the data directory outlives the pod.
      logger.error(
        { queued, queueFile: config.revocation.queueFile },
        'shutting down with revocations still queued for Redis',
      );
    }
    await revocation.close();
    await limiter?.close();
    // Node can emit a drained response's 'close' (which writes its access line) after
    // the server closed: wait for those (bounded), so that "stopped" is the last line.
    await Promise.race([
      gateway.responsesClosed(),
      new Promise<void>((resolve) => setTimeout(resolve, 1000).unref()),
    ]);
    access.stopBatching();
    logger.info('stopped');
    // Both loggers share one destination: wait until it has written everything (a pipe
    // or socket, or a file through sonic-boom: `outputDestination`), so an exit right
    // after shutdown neither loses nor reorders the last lines.
    await new Promise<void>((resolve) => logger.flush(() => resolve()));
  };
  let shuttingDown: Promise<void> | undefined;

  return {
    config,
    logger,
    async listen() {
      await listenOn(publicServer, config.server.host, config.server.port, 'server');
      try {
        await listenOn(adminServer, config.admin.host, config.admin.port, 'admin');
      } catch (error) {
        publicServer.close();
        throw error;
      }
      const publicUrl = urlOf(publicServer);
      const adminUrl = urlOf(adminServer);
      logger.info(
        { publicUrl, adminUrl, kid: keyRing.signingKey.kid, clients: clientCount },
        'listening',
      );
      if (config.revocation.store === 'memory') {
        logger.warn(
          { setting: 'revocation.store' },
          'revocations are kept in memory only: a restart forgets them and other replicas never see them (use local or redis outside tests)',
        );
      }
      return { publicUrl, adminUrl };
    },
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
      shuttingDown ??= stopGracefully();
      return shuttingDown;
    },
  };
}

/**
 * How long a token of any trusted issuer can stay valid: the longest lifetime (ours is at
 * most 86,400 s; each external issuer's `maxLifetimeSeconds`) and the largest clock skew.
 * A revocation entry of unknown expiry lives that long, and a client revocation's default
 * cut-off is now + that skew (a token signed by a clock running ahead carries a later iat).
 */
function revocationHorizon(config: Config): {
  maxLifetimeSeconds: number;
  clockSkewSeconds: number;
} {
  return {
    maxLifetimeSeconds: Math.max(
      MAX_OWN_LIFETIME_SECONDS,
      ...config.issuers.map((i) => i.maxLifetimeSeconds),
    ),
    clockSkewSeconds: Math.max(
      config.clockSkewSeconds,
      ...config.issuers.map((i) => i.clockSkewSeconds),
    ),
  };
}

/** Why the Redis revocation list is not current (for /readyz), or undefined when it is. */
function revocationDegraded(state: RedisRevocationState): string | undefined {
  if (state.synced && !state.stale && state.queued === 0) return undefined;
  const age = Math.round(state.syncAgeSeconds ?? 0);
  const queued = state.queued > 0 ? `; ${state.queued} revocation(s) queued for Redis` : '';
  const sync = state.stale
    ? `revocation list stale: last synchronised with Redis ${age} s ago`
    : state.synced
      ? 'revocation list current'
      : `revocation list not synchronised with Redis (last synchronised ${age} s ago)`;
  return sync + queued;
}

/** Shortest admin token accepted: it guards revocations, so it must not be guessable. */
const MIN_ADMIN_TOKEN_LENGTH = 16;

/** The admin API token from `admin.tokenFile`; null (API off) when none is configured. */
async function readAdminToken(file: string | null): Promise<string | null> {
  if (file === null) return null;
  let token: string;
  try {
    token = (await readFile(file, 'utf8')).trim();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError([`admin.tokenFile: cannot read ${file} (${code})`]);
  }
  if (token.length < MIN_ADMIN_TOKEN_LENGTH || !/^[\x21-\x7e]+$/.test(token)) {
    throw new ConfigError([
      `admin.tokenFile: ${file} must hold at least ${MIN_ADMIN_TOKEN_LENGTH} visible ASCII characters`,
    ]);
  }
  return token;
}

/**
 * The file the revocation store will write (the local log, or Redis's durable queue when
 * `whileRedisDown: queue`), checked without creating it: its problem is reported with the
 * others at start. (With `refuse` the queue file is only read, if it exists.)
 */
async function checkRevocationFile(config: Config): Promise<void> {
  const { revocation } = config;
  const [setting, file] =
    revocation.store === 'local'
      ? ['revocation.file', revocation.file]
      : revocation.store === 'redis' && revocation.whileRedisDown === 'queue'
        ? ['revocation.queueFile', revocation.queueFile]
        : [null, null];
  if (setting === null || file === null) return;
  const reason = await unwritableFileReason(file);
  if (reason !== null) throw new ConfigError([`${setting}: cannot open ${file} (${reason})`]);
}

/** Top-level settings a reload cannot apply (only routes and upstream.default reload). */
function settingsNeedingRestart(current: Config, next: Config): string[] {
  const ignored = new Set(['routes', 'upstream']);
  const changed = Object.keys(current).filter(
    (key) =>
      !ignored.has(key) &&
      JSON.stringify(current[key as keyof Config]) !== JSON.stringify(next[key as keyof Config]),
  );
  const { default: _d, ...restNow } = current.upstream;
  const { default: _n, ...restNext } = next.upstream;
  if (JSON.stringify(restNow) !== JSON.stringify(restNext)) changed.push('upstream');
  return changed;
}

/**
 * Awaits start-up loads together and, when several fail with configuration problems,
 * reports all of them at once (like config validation does).
 */
async function allOrEveryProblem<T extends readonly unknown[]>(
  loads: { [K in keyof T]: Promise<T[K]> },
): Promise<T> {
  const settled = await Promise.allSettled(loads);
  const failures = settled.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failures.length === 0) {
    return settled.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
  }
  const reasons = failures.map((f) => f.reason as unknown);
  if (reasons.length > 1 && reasons.every((r) => r instanceof ConfigError)) {
    throw new ConfigError(reasons.flatMap((r) => (r as ConfigError).problems));
  }
  throw reasons[0];
}

/**
 * Listens on `host:port`; an address in use, not allowed or not on this machine is a
 * start-up problem naming the setting (`server` or `admin`) and its variable.
 */
function listenOn(
  server: Server,
  host: string,
  port: number,
  setting: 'server' | 'admin',
): Promise<void> {
  return new Promise((resolve, reject) => {
    const fail = (error: NodeJS.ErrnoException) => {
      const why = LISTEN_ERRORS[error.code ?? ''];
      if (why === undefined) return reject(error);
      const variable = setting === 'server' ? 'PORTARIA_PORT' : 'PORTARIA_ADMIN_PORT';
      reject(
        new ConfigError([
          `${setting}.host/${setting}.port: cannot listen on ${host}:${port}: ${why} (${error.code}); change ${setting}.port (${variable}) or ${setting}.host`,
        ]),
      );
    };
    server.once('error', fail);
    server.listen(port, host, () => {
      server.off('error', fail);
      resolve();
    });
  });
}

const LISTEN_ERRORS: Readonly<Record<string, string>> = {
  EADDRINUSE: 'the address is already in use (another process, or another Portaria)',
  EACCES: 'not permitted (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'no such address on this machine',
};

function urlOf(server: Server): string {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('server is not listening');
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}

/**
 * `server.halfClosedRequests: answer`. A client may send a complete request and then
 * half-close its connection (TCP FIN: `printf … | nc -N`, HTTP/1.0 clients, a balancer
 * passing the FIN on). Node's default (`httpAllowHalfOpen` false) aborts the requests in
 * flight on that FIN and closes the socket, so the upstream carried out a POST whose
 * client never got the answer, logged as 499. A FIN ends only what the client sends, and
 * HAProxy serves such requests by default: with this set, Node keeps the socket
 * writable, sends the answers to the requests already received, and closes the
 * connection after the last one (an idle connection closes at once). A client that
 * resets the connection still aborts its request. The property has been on Node's HTTP
 * server since its first versions, undocumented and untyped; test/gateway/halfClose
 * fails if a Node release drops it.
 */
function answerAfterHalfClose(server: Server): void {
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
}
