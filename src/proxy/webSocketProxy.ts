/**
 * Tunnels verified WebSocket upgrades (RFC 6455 §4) to the route's upstream, and keeps the
 * registry of tunnels: from the accepted upgrade until the client socket closes, so that
 * `closeEnded` can end those whose token is over and `close` can cut them all. The request
 * goes through the HTTP header policy, then gets its upgrade pair back (hop-by-hop, but the
 * handshake needs it); `Sec-WebSocket-*` fields are end-to-end and pass unchanged.
 *
 * The handshake, a relayed refusal's body included, must complete within the route's
 * time: the timer is ours (a 504 must not look like a 502) and aborts the upstream request
 * whatever became of the client. After the 101 a tunnel has no time limit. A client that
 * leaves before the 101 aborts the upstream request, and a 101 arriving after the client
 * left is closed, never piped. Every upgrade reports its outcome once through `done` (101, the
 * relayed status, the problem's status, or 499), and both sockets and the upstream
 * request carry error listeners (Node removes its own from the client socket once it
 * emits `upgrade`). The handshake's upstream side: `webSocketHandshake.ts`.
 */
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import httpProxy from 'http-proxy';
import type { ClientCertificate } from '../domain/clientCertificate.js';
import type { Principal } from '../domain/principal.js';
import type { RequestTarget } from '../domain/requestPath.js';
import { PortariaError } from '../errors.js';
import type { ForwarderHooks } from './forwarder.js';
import type { ForwardedProto, HeaderPolicy } from './headers.js';
import type { CompiledRoute } from './routeTable.js';
import { writeSocketProblem } from './socketProblem.js';
import { setTraceHeaders, type UpstreamTracer } from './traceFields.js';
import { type ClosedTunnel, endedProblem, type TunnelEnd } from './tunnelEnd.js';
import {
  createHandshakeRelay,
  ignoreError,
  type Tunnel,
  type UpgradeDone,
} from './webSocketHandshake.js';
import { isWebSocketUpgrade } from './webSocketUpgrade.js';

export type { ClosedTunnel, TunnelEnd } from './tunnelEnd.js';
export { RELAYED_BODY_LIMIT, type UpgradeDone } from './webSocketHandshake.js';
export { offersWebSocket } from './webSocketUpgrade.js';

export interface WebSocketContext {
  readonly requestId: string;
  /** The TCP peer's address (`req.socket.remoteAddress`). */
  readonly peerAddress: string | undefined;
  readonly proto: ForwardedProto;
  /** The client certificate (for the `certificate.*` identity headers); null: none. */
  readonly certificate?: ClientCertificate | null;
  /** `x-fapi-interaction-id` under profile fapi-br, for the upstream (`headers.ts`). */
  readonly interactionId?: string | undefined;
  /** The request's trace when tracing is on (the handshake gets a CLIENT span). */
  readonly trace?: UpstreamTracer | null;
}

export interface WebSocketProxyOptions {
  readonly headerPolicy: HeaderPolicy;
  /** Base of problem-details `tipo` URIs (config `problemTypeBase`). */
  readonly problemTypeBase: string;
  readonly hooks?: Pick<ForwarderHooks, 'upstreamError'>;
  /** The challenge of the 401 an upgrade whose token ended mid-handshake gets. */
  readonly challenge?: (problem: PortariaError, route: CompiledRoute) => string | undefined;
}

export interface WebSocketProxy {
  upgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    route: CompiledRoute,
    target: RequestTarget,
    principal: Principal,
    ctx: WebSocketContext,
    done?: UpgradeDone,
  ): void;
  /**
   * Closes (both sockets) every open tunnel whose token `ended` says is over, and returns
   * them; an upgrade of such a token still in its handshake is answered 401 instead (and
   * is no closed tunnel: it never opened). O(tunnels), no I/O.
   */
  closeEnded(ended: (principal: Principal) => TunnelEnd | null): ClosedTunnel[];
  /** Destroys every tunnel, open or in its handshake; later upgrades are refused (503). */
  close(): void;
  /** Tunnels open now (past their 101, not closed yet). O(tunnels): read at scrape time. */
  openTunnels(): number;
}

type ProxyTarget = { protocol: string; hostname: string; host: string; port: string };

function ignoreOutcome(): void {}

/** http-proxy target for an origin, without `url.parse`; IPv6 brackets removed. */
function toProxyTarget(origin: string): ProxyTarget {
  const url = new URL(origin);
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { protocol: url.protocol, hostname, host: url.host, port: url.port };
}

export function createWebSocketProxy(opts: WebSocketProxyOptions): WebSocketProxy {
  const policy = opts.headerPolicy;
  const problemTypeBase = opts.problemTypeBase;
  const hooks = opts.hooks;
  const targets = new Map<string, ProxyTarget>();
  /** Client socket → its tunnel, from the accepted upgrade until the socket closes. */
  const tunnels = new Map<Duplex, Tunnel>();
  /** `close` ran: the shutdown grace is over. */
  let closed = false;
  const { settle, abandonHandshake, failed, onHandshakeTimeout, relayRefusal, openTunnel } =
    createHandshakeRelay(policy, problemTypeBase, hooks);

  function targetFor(origin: string): ProxyTarget {
    let target = targets.get(origin);
    if (target === undefined) {
      target = toProxyTarget(origin);
      targets.set(origin, target);
    }
    return target;
  }

  /** The client socket closed: nothing of the handshake is wanted any more. */
  function clientClosed(tunnel: Tunnel): void {
    tunnels.delete(tunnel.socket);
    abandonHandshake(tunnel);
    tunnel.upstream?.destroy();
    settle(tunnel, 499, closed ? 'shutdown-grace' : undefined);
  }

  const proxy = httpProxy.createProxyServer({ ws: true, xfwd: false });
  // Errors of calls without a callback (none of ours); without a listener http-proxy throws.
  proxy.on('error', (_error, _req, socket) => {
    socket.destroy();
  });
  // Emitted synchronously inside `proxy.ws`, before http-proxy adds its own listeners.
  proxy.on('proxyReqWs', (proxyReq, _req, socket) => {
    const tunnel = tunnels.get(socket);
    if (tunnel === undefined || tunnel.done === null) {
      proxyReq.destroy();
      return;
    }
    tunnel.request = proxyReq;
    // http-proxy joins the target path with its `urlJoin`, which rewrites `http:/` inside
    // a path to `http://`: the upstream would get another path than the one checked. The
    // request line is not written yet; it carries ours.
    proxyReq.path = tunnel.path;
    proxyReq.on('upgrade', (res: IncomingMessage, upstream: Duplex) =>
      openTunnel(tunnel, res, upstream),
    );
  });

  return {
    upgrade(req, socket, head, route, target, principal, ctx, done) {
      socket.on('error', ignoreError);
      const instancia = `${target.path}#${ctx.requestId}`;
      let refusal: PortariaError | null = null;
      if (closed) {
        refusal = new PortariaError('service-unavailable', 'The gateway is shutting down.', {
          reason: 'shutting-down',
        });
      } else if (!isWebSocketUpgrade(req)) {
        refusal = new PortariaError(
          'invalid-request',
          'Only WebSocket upgrades of GET requests are supported.',
          { reason: 'unsupported-upgrade' },
        );
      }
      if (refusal !== null) {
        const written = writeSocketProblem(socket, refusal, instancia, problemTypeBase, {
          requestId: ctx.requestId,
        });
        done?.(written ? refusal.status : 499, refusal.reason);
        return;
      }
      if (socket.destroyed || !socket.writable) {
        // The client went away while the upgrade was being checked: nothing to contact.
        socket.destroy();
        done?.(499, undefined);
        return;
      }
      const tunnel: Tunnel = {
        principal,
        requestId: ctx.requestId,
        routeId: route.id,
        route,
        instancia,
        path: route.basePath + target.path + target.search,
        socket,
        request: null,
        response: null,
        timer: null,
        upstream: null,
        done: done ?? ignoreOutcome,
      };
      tunnels.set(socket, tunnel);
      socket.once('close', () => clientClosed(tunnel));
      // The server's sockets allow half-open: a client that ends its side (FIN) before
      // the 101 has left as surely as one that reset; once the tunnel is open, the pipe
      // carries the end.
      socket.once('end', () => {
        if (tunnel.done !== null) socket.destroy();
      });

      const headers = policy.upstreamRequestHeaders(req.headers, {
        principal,
        certificate: ctx.certificate ?? null,
        requestId: ctx.requestId,
        peerAddress: ctx.peerAddress,
        host: req.headers.host,
        proto: ctx.proto,
        interactionId: ctx.interactionId,
      });
      headers.connection = 'upgrade';
      headers.upgrade = 'websocket';
      const call = ctx.trace?.upstream('GET', route.origin, route.basePath + target.path, route.id);
      if (call !== undefined) {
        setTraceHeaders(headers, call);
        // The handshake's span ends with its outcome (101, a refusal, a failure).
        const outcome = tunnel.done;
        tunnel.done = (status, reason) => {
          call.end(
            status === 499 ? 0 : status,
            reason ?? (status === 499 ? 'client_gone' : undefined),
          );
          outcome?.(status, reason);
        };
      }
      req.headers = headers as IncomingHttpHeaders;
      req.url = tunnel.path;
      if (route.timeoutMs > 0) {
        tunnel.timer = setTimeout(onHandshakeTimeout, route.timeoutMs, tunnel);
        tunnel.timer.unref();
      }
      // http-proxy puts `head` back on the socket, makes the request (`proxyReqWs` above)
      // and, after the 101, pipes the sockets; its errors come to this callback.
      proxy.ws(req, socket, head, { target: targetFor(route.origin) }, (error) =>
        failed(tunnel, error),
      );
      // `ws` ran synchronously: its request exists and carries its listeners. Its
      // 'response' listener would relay a refusal raw, and the ws pass has no option to
      // leave that to the caller: it is replaced by ours.
      const request = tunnel.request as ClientRequest | null;
      if (request !== null) {
        request.removeAllListeners('response');
        request.on('response', (res: IncomingMessage) => relayRefusal(tunnel, res));
      }
    },

    openTunnels() {
      let open = 0;
      for (const tunnel of tunnels.values()) if (tunnel.done === null) open++;
      return open;
    },

    closeEnded(ended) {
      const closedTunnels: ClosedTunnel[] = [];
      for (const [socket, tunnel] of tunnels) {
        const reason = ended(tunnel.principal);
        if (reason === null) continue;
        tunnels.delete(socket);
        if (tunnel.done !== null) {
          // Still in its handshake: refused as the verifier would refuse the token now.
          abandonHandshake(tunnel);
          const problem = endedProblem(reason);
          const written = writeSocketProblem(socket, problem, tunnel.instancia, problemTypeBase, {
            requestId: tunnel.requestId,
            challenge: opts.challenge?.(problem, tunnel.route),
          });
          settle(tunnel, written ? problem.status : 499, problem.reason);
          continue;
        }
        socket.destroy();
        tunnel.upstream?.destroy();
        closedTunnels.push({
          requestId: tunnel.requestId,
          routeId: tunnel.routeId,
          clientId: tunnel.principal.clientId,
          reason,
        });
      }
      return closedTunnels;
    },

    close() {
      closed = true;
      for (const tunnel of tunnels.values()) {
        // Synchronously: the access lines of cut handshakes come before "stopped".
        clientClosed(tunnel);
        tunnel.socket.destroy();
      }
      tunnels.clear();
      proxy.close();
    },
  };
}
