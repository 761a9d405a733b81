/**
 * Composition root: builds every piece from the frozen config and wires the hooks to
 * metrics. Tests call `createApp` directly with a port-0 config, a log destination they
 * read, and (where time matters) a manual clock.
 */
import { createServer, type Server } from 'node:http';
import { createClientAuthenticator } from './clients/authenticateClient.js';
import { loadClientRegistry } from './clients/clientRegistry.js';
import { ConfigError } from './config/configError.js';
import type { Config } from './config/types.js';
import { createAdminHandler } from './http/adminRoutes.js';
import { createClientErrorHandler } from './http/clientErrors.js';
import { openApiDocument } from './http/openApiDocument.js';
import { PublicGateway } from './http/publicGateway.js';
import { GatewayResponse } from './http/requestScope.js';
import { StaticDocument } from './http/staticDocument.js';
import { loadKeyRing } from './keys/loadKeyRing.js';
import { type Clock, epochSeconds, systemClock } from './lib/clock.js';
import { createLoggers, type DestinationStream, type Logger } from './observability/logger.js';
import { createMetrics } from './observability/metrics.js';
import { createForwarder } from './proxy/forwarder.js';
import { createHeaderPolicy } from './proxy/headers.js';
import { compileRouteTable } from './proxy/routeTable.js';
import { createWebSocketProxy } from './proxy/webSocketProxy.js';
import { MemoryRevocationStore } from './revocation/memoryRevocationStore.js';
import { TokenService } from './token/tokenService.js';
import { TokenVerifier } from './verify/tokenVerifier.js';
import { VerifiedTokenCache } from './verify/verifiedTokenCache.js';

export interface AppOptions {
  readonly config: Config;
  readonly clock?: Clock;
  /** Where JSON log lines go (default: stdout). */
  readonly logDestination?: DestinationStream;
}

export interface App {
  readonly config: Config;
  readonly logger: Logger;
  /** Starts both listeners; resolves with the bound addresses. */
  listen(): Promise<{ publicUrl: string; adminUrl: string }>;
  /** Revokes a token by id; the entry is kept until `expiresAt` (default: max lifetime). */
  revoke(tokenId: string, expiresAt?: number): Promise<void>;
  /**
   * Graceful stop: readiness turns 503, new connections are refused, in-flight requests
   * get up to `server.shutdownGraceMs` to finish, then remaining connections are cut.
   */
  shutdown(): Promise<void>;
}

/** Revocation entries of unknown expiry are kept for the longest possible token life. */
const MAX_LIFETIME_SECONDS = 86_400;

export async function createApp(options: AppOptions): Promise<App> {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const { logger, access } = createLoggers(config.log.level, options.logDestination);
  const metrics = createMetrics();

  const [clients, keyRing] = await allOrEveryProblem([
    loadClientRegistry(config.clients.file),
    loadKeyRing(config.keys.dir, config.token.algorithm),
  ] as const);
  const authenticate = createClientAuthenticator(clients, clock);
  const revocation = new MemoryRevocationStore(clock);
  const cache = new VerifiedTokenCache(config.verify.cacheSize, clock);
  metrics.setCacheSizeSource(() => cache.size);

  const tokens = new TokenService({
    authenticate: () => authenticate,
    signingKey: () => keyRing.signingKey,
    issuer: config.issuer,
    audience: config.audience,
    defaultLifetimeSeconds: config.token.lifetimeSeconds,
    responseFields: config.token.responseFields,
    clock,
  });
  const verifier = new TokenVerifier({
    keys: () => keyRing,
    issuer: config.issuer,
    audience: config.audience,
    clockSkewSeconds: config.clockSkewSeconds,
    clock,
    cache,
    revocation,
    hooks: { cacheLookup: (hit) => metrics.cacheLookup(hit) },
  });

  const routes = compileRouteTable(config);
  const headerPolicy = createHeaderPolicy({
    identityHeaders: config.identityHeaders,
    forwardAuthorization: config.forwardAuthorization,
    trustForwardedHeaders: config.server.trustForwardedHeaders,
  });
  const origins = new Set<string>(config.routes.map((r) => new URL(r.upstream).origin));
  if (config.upstream.default) origins.add(new URL(config.upstream.default.upstream).origin);
  const forwarder = createForwarder({
    routesOrigins: [...origins],
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

  let draining = false;
  const jwks = new StaticDocument(keyRing.jwks(), 'public, max-age=300');
  const gateway = new PublicGateway({
    config,
    tokenRoute: {
      tokens,
      bodyLimitBytes: config.token.bodyLimitBytes,
      onOutcome: (outcome) => metrics.tokenRequest(outcome),
    },
    jwks: () => jwks,
    openapi: new StaticDocument(openApiDocument, 'public, max-age=3600'),
    verifier,
    routes,
    forwarder,
    webSockets,
    logger,
    accessLogger: access,
    metrics,
    draining: () => draining,
  });

  const publicServer: Server = createServer(
    {
      ServerResponse: GatewayResponse,
      headersTimeout: config.server.headersTimeoutMs,
      requestTimeout: config.server.requestTimeoutMs,
      keepAliveTimeout: config.server.keepAliveTimeoutMs,
      maxHeaderSize: config.server.maxHeaderBytes,
      // Node checks the header and request timeouts on this timer (default 30 s): tie it
      // to the configured timeout so a slow client is cut close to it.
      connectionsCheckingInterval: Math.min(1000, Math.ceil(config.server.headersTimeoutMs / 2)),
    },
    gateway.handleRequest as Parameters<typeof createServer>[1],
  );
  publicServer.on('upgrade', gateway.handleUpgrade);
  publicServer.on(
    'clientError',
    createClientErrorHandler(config.problemTypeBase, (reason) =>
      logger.info({ reason }, 'request refused by the HTTP parser'),
    ),
  );
  const adminServer = createServer(
    createAdminHandler({
      metricsText: () => metrics.exposition(),
      problemTypeBase: config.problemTypeBase,
      ready: () => (draining ? { ready: false, reason: 'shutting down' } : { ready: true }),
    }),
  );

  const sweep = setInterval(() => revocation.sweep(), 60_000);
  sweep.unref();

  return {
    config,
    logger,
    async listen() {
      await listenOn(publicServer, config.server.host, config.server.port);
      await listenOn(adminServer, config.admin.host, config.admin.port);
      const publicUrl = urlOf(publicServer);
      const adminUrl = urlOf(adminServer);
      logger.info(
        { publicUrl, adminUrl, kid: keyRing.signingKey.kid, clients: clients.size },
        'listening',
      );
      return { publicUrl, adminUrl };
    },
    revoke(tokenId, expiresAt) {
      return revocation.revokeToken(
        tokenId,
        expiresAt ?? epochSeconds(clock) + MAX_LIFETIME_SECONDS,
      );
    },
    async shutdown() {
      if (draining) return;
      draining = true;
      logger.info({ graceMs: config.server.shutdownGraceMs }, 'shutting down: draining');
      clearInterval(sweep);
      const closed = new Promise<void>((resolve) => publicServer.close(() => resolve()));
      // A keep-alive connection busy when the drain began goes idle later: close it then.
      publicServer.closeIdleConnections();
      const idleSweep = setInterval(() => publicServer.closeIdleConnections(), 50);
      const grace = new Promise<'timeout'>((resolve) =>
        setTimeout(resolve, config.server.shutdownGraceMs, 'timeout').unref(),
      );
      // Upgraded (WebSocket) sockets are not the server's any more: they end at the grace limit.
      if ((await Promise.race([closed, grace])) === 'timeout') {
        logger.warn('grace period over: closing remaining connections');
        publicServer.closeAllConnections();
        webSockets.close();
        await closed;
      }
      clearInterval(idleSweep);
      webSockets.close();
      await forwarder.close();
      await new Promise<void>((resolve) => adminServer.close(() => resolve()));
      adminServer.closeAllConnections();
      await revocation.close();
      logger.info('stopped');
      access.flush();
      logger.flush();
    },
  };
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

function listenOn(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function urlOf(server: Server): string {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('server is not listening');
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${host}:${address.port}`;
}
