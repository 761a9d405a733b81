/**
 * The drain, in order:
 * 1. draining: /readyz turns 503, every answer from now on says `Connection: close`
 *    (those of requests in flight too, unless their head is already out); reload
 *    watches, issuer key fetches and the revocation sweep stop;
 * 2. the public listener stops accepting, without http.Server#close's sweep of idle
 *    connections: a client told keep-alive may have its next request on the way on one.
 *    An idle connection ends when its keep-alive time runs out (announced to the client
 *    in `Keep-Alive: timeout=`) or after its next answer; one that never sent a byte,
 *    after the same time;
 * 3. at `server.shutdownGraceMs` whatever is left is cut: connections, WebSocket tunnels,
 *    declined upgrade offers (access lines then say `shutdown` / `shutdown-grace`);
 * 4. the upstream pools, then the admin listener (idle connections at once, the rest
 *    after a second: a closed server no longer enforces its timeouts), the revocation
 *    store (revocations still queued for Redis are logged) and the token limiter close;
 * 5. the access lines of responses Node closes late are waited for (bounded), buffered
 *    spans are exported (bounded), then "stopped", and the log destination is flushed so
 *    an exit loses no line.
 */
import type { Server } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import type { Config } from '../config/types.js';
import { GatewayResponse } from '../http/requestScope.js';
import type { AccessLog, Logger } from '../observability/logger.js';
import type { Tracing } from '../observability/tracing.js';
import type { Forwarder } from '../proxy/forwarder.js';
import type { WebSocketProxy } from '../proxy/webSocketProxy.js';
import type { RevocationStore } from '../revocation/revocationStore.js';
import type { Housekeeping } from './housekeeping.js';
import type { LiveState } from './liveState.js';
import type { PublicListener } from './servers.js';

export interface DrainDeps {
  readonly config: Config;
  readonly state: Pick<LiveState, 'draining' | 'graceOver'>;
  readonly logger: Logger;
  readonly access: AccessLog;
  readonly publicListener: PublicListener;
  /** Null in a worker of a group: the primary has the admin listener. */
  readonly adminServer: Server | null;
  /** The decision listeners (`mode: authorizer` or `both`); null: none. */
  readonly authorizer: { close(graceMs: number): Promise<void> } | null;
  readonly webSockets: WebSocketProxy;
  readonly forwarder: Forwarder;
  readonly housekeeping: Housekeeping;
  /** Reload watches and issuer key sets: closed first. */
  readonly watchers: readonly { close(): void }[];
  readonly revocation: RevocationStore;
  /** Revocations acknowledged but not yet in Redis (0 without the Redis store). */
  readonly queuedRevocations: () => number;
  readonly limiter: { close(): Promise<void> } | null;
  /** Resolves once every response received so far has written its access line. */
  readonly responsesClosed: () => Promise<void>;
  /** OpenTelemetry tracing (null when off): its buffered spans are exported last. */
  readonly tracing: Tracing | null;
}

/** Longest wait for the last spans' export: the drain's cleanup must stay short. */
const SPAN_FLUSH_MS = 2000;

export async function drain(deps: DrainDeps): Promise<void> {
  const { config, state, logger, publicListener, webSockets } = deps;
  const { server, connections, declined } = publicListener;
  state.draining = true;
  logger.info({ graceMs: config.server.shutdownGraceMs }, 'shutting down: draining');
  deps.housekeeping.stopSweep();
  for (const watcher of deps.watchers) watcher.close();
  // Decisions hold no upstream work: those in flight end within the grace like requests.
  const decisionsClosed = deps.authorizer?.close(config.server.shutdownGraceMs);

  const closed = new Promise<void>((resolve) =>
    NetServer.prototype.close.call(server, () => resolve()),
  );
  for (const socket of connections) {
    const current = (socket as Socket & { _httpMessage?: unknown })._httpMessage;
    if (current instanceof GatewayResponse && !current.headersSent) {
      current.shouldKeepAlive = false;
    }
  }
  const unusedSweep = setTimeout(() => {
    for (const socket of connections) if (socket.bytesRead === 0) socket.destroy();
  }, config.server.keepAliveTimeoutMs);
  const grace = new Promise<'timeout'>((resolve) =>
    setTimeout(resolve, config.server.shutdownGraceMs, 'timeout').unref(),
  );
  // Upgraded (WebSocket) sockets are not the server's any more: they end at the grace limit.
  if ((await Promise.race([closed, grace])) === 'timeout') {
    logger.warn('grace period over: closing remaining connections');
    state.graceOver = true;
    server.closeAllConnections();
    webSockets.close();
    declined.closeAll();
    await closed;
  }
  clearTimeout(unusedSweep);
  // http.Server#close now only stops its timeout checks: no connection is left.
  server.close(() => {});
  webSockets.close();
  deps.housekeeping.stop();
  await deps.forwarder.close();

  const admin = deps.adminServer;
  if (admin !== null) {
    const adminClosed = new Promise<void>((resolve) => admin.close(() => resolve()));
    admin.closeIdleConnections();
    const adminGrace = setTimeout(() => admin.closeAllConnections(), 1000);
    await adminClosed;
    clearTimeout(adminGrace);
  }
  await decisionsClosed;
  const queued = deps.queuedRevocations();
  if (queued > 0) {
    // Acknowledged revocations Redis has not received yet: they survive only in the
    // queue file, replayed at the next start if the data directory outlives the pod.
    logger.error(
      { queued, queueFile: config.revocation.queueFile },
      'shutting down with revocations still queued for Redis',
    );
  }
  await deps.revocation.close();
  await deps.limiter?.close();
  await Promise.race([
    deps.responsesClosed(),
    new Promise<void>((resolve) => setTimeout(resolve, 1000).unref()),
  ]);
  deps.access.stopBatching();
  // After every access line: the last requests' spans have ended.
  await deps.tracing?.shutdown(SPAN_FLUSH_MS);
  logger.info('stopped');
  await new Promise<void>((resolve) => logger.flush(() => resolve()));
}
