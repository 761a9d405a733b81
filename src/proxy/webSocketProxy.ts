/**
 * Tunnels verified WebSocket upgrades (RFC 6455 §4) to the route's upstream with
 * http-proxy.
 *
 * Before proxying, the request's fields go through the same header policy as HTTP
 * requests (identity namespace, `X-Forwarded-*`, `Authorization`), then the upgrade pair
 * `Connection: upgrade` / `Upgrade: websocket` is put back: those are hop-by-hop, but a
 * proxy must carry them for the handshake to reach the upstream. `Sec-WebSocket-*` fields
 * are end-to-end and pass unchanged. The request URL becomes `basePath + path + search`.
 *
 * The handshake must complete within the route's time: we own that timer, because
 * http-proxy has none for upgrades and its socket timeouts surface as resets (a 504 must
 * not look like a 502). After the 101 the tunnel has no time limit.
 *
 * A failure before any byte reached the client is answered with a problem-details 502 or
 * 504 on the raw socket; after that, the client socket is destroyed. No error event is left
 * unhandled: http-proxy errors go to a per-upgrade callback (upgrades are rare next to
 * requests, so a closure each is fine), stray proxy errors to a server-level listener, and
 * the client socket gets an error listener (Node removes its own once it emits `upgrade`).
 */
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import httpProxy from 'http-proxy';
import type { Principal } from '../domain/principal.js';
import type { RequestTarget } from '../domain/requestPath.js';
import { PortariaError } from '../errors.js';
import type { ForwarderHooks } from './forwarder.js';
import type { ForwardedProto, HeaderPolicy } from './headers.js';
import type { CompiledRoute } from './routeTable.js';
import { isSocketPristine, writeSocketProblem } from './socketProblem.js';
import { classifyUpstreamError, upstreamProblem } from './upstreamErrors.js';

export interface WebSocketContext {
  readonly requestId: string;
  readonly clientIp: string;
  readonly proto: ForwardedProto;
}

export interface WebSocketProxyOptions {
  readonly headerPolicy: HeaderPolicy;
  /** Base of problem-details `tipo` URIs (config `problemTypeBase`). */
  readonly problemTypeBase: string;
  readonly hooks?: Pick<ForwarderHooks, 'upstreamError'>;
}

/** Why a tunnel was closed by the gateway (a bounded metric label). */
export type TunnelEnd = 'token_expired' | 'token_revoked';

/** A tunnel the gateway closed: who it was, and why. */
export interface ClosedTunnel {
  readonly requestId: string;
  readonly routeId: string;
  readonly clientId: string;
  readonly reason: TunnelEnd;
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
  ): void;
  /**
   * Closes (both sockets) every tunnel whose token `ended` says is over, and returns
   * them. Runs over the open tunnels only: O(tunnels), no I/O.
   */
  closeEnded(ended: (principal: Principal) => TunnelEnd | null): ClosedTunnel[];
  /** Destroys every open tunnel. */
  close(): void;
}

/** An upgrade the gateway accepted: its client socket's identity and, after the 101, its upstream socket. */
interface Tunnel {
  readonly principal: Principal;
  readonly requestId: string;
  readonly routeId: string;
  upstream: Duplex | null;
}

type ProxyTarget = { protocol: string; hostname: string; host: string; port: string };

function ignoreError(): void {}

/** http-proxy target for an origin, without `url.parse`; IPv6 brackets removed. */
function toProxyTarget(origin: string): ProxyTarget {
  const url = new URL(origin);
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { protocol: url.protocol, hostname, host: url.host, port: url.port };
}

/** The handshake timer: fires once; a no-op if the upstream already answered. */
function onHandshakeTimeout(proxyReq: { destroy(error: Error): void }, socket: Duplex): void {
  if (!isSocketPristine(socket)) return;
  proxyReq.destroy(
    Object.assign(new Error('upstream did not complete the WebSocket handshake'), {
      code: 'ETIMEDOUT',
    }),
  );
}

/** `Upgrade` names websocket (any method: which upgrades the gateway takes up at all). */
export function offersWebSocket(req: IncomingMessage): boolean {
  const tokens = req.headers.upgrade?.toLowerCase().split(',') ?? [];
  return tokens.some((token) => token.trim() === 'websocket');
}

/** A WebSocket handshake this proxy serves (RFC 6455 §4.1: a GET). */
function isWebSocketUpgrade(req: IncomingMessage): boolean {
  return req.method === 'GET' && offersWebSocket(req);
}

export function createWebSocketProxy(opts: WebSocketProxyOptions): WebSocketProxy {
  const policy = opts.headerPolicy;
  const problemTypeBase = opts.problemTypeBase;
  const hooks = opts.hooks;
  const targets = new Map<string, ProxyTarget>();
  const open = new Set<Duplex>();
  const untrack = function (this: Duplex): void {
    open.delete(this);
  };
  /** Client socket → its tunnel, from the accepted upgrade until the socket closes. */
  const tunnels = new Map<Duplex, Tunnel>();
  const forget = function (this: Duplex): void {
    tunnels.delete(this);
  };

  const proxy = httpProxy.createProxyServer({ ws: true, xfwd: false });
  // Errors of calls without a callback (none of ours); without a listener http-proxy throws.
  proxy.on('error', (_error, _req, socket) => {
    socket.destroy();
  });
  proxy.on('proxyReqWs', (proxyReq, _req, socket, options) => {
    if (options.proxyTimeout !== undefined && options.proxyTimeout > 0) {
      setTimeout(onHandshakeTimeout, options.proxyTimeout, proxyReq, socket).unref();
    }
    // Runs before http-proxy's own listener: the pair is known once the tunnel opens.
    proxyReq.once('upgrade', (_res: unknown, proxySocket: Duplex) => {
      const tunnel = tunnels.get(socket);
      if (tunnel !== undefined) tunnel.upstream = proxySocket;
    });
  });
  proxy.on('open', (proxySocket) => {
    open.add(proxySocket);
    proxySocket.once('close', untrack);
  });

  function targetFor(origin: string): ProxyTarget {
    let target = targets.get(origin);
    if (target === undefined) {
      target = toProxyTarget(origin);
      targets.set(origin, target);
    }
    return target;
  }

  return {
    upgrade(req, socket, head, route, target, principal, ctx) {
      socket.on('error', ignoreError);
      const instancia = `${target.path}#${ctx.requestId}`;
      if (!isWebSocketUpgrade(req)) {
        const error = new PortariaError(
          'invalid-request',
          'Only WebSocket upgrades of GET requests are supported.',
          { reason: 'unsupported-upgrade' },
        );
        writeSocketProblem(socket, error, instancia, problemTypeBase);
        return;
      }
      open.add(socket);
      socket.once('close', untrack);
      tunnels.set(socket, {
        principal,
        requestId: ctx.requestId,
        routeId: route.id,
        upstream: null,
      });
      socket.once('close', forget);

      const headers = policy.upstreamRequestHeaders(req.headers, {
        principal,
        requestId: ctx.requestId,
        clientIp: ctx.clientIp,
        host: req.headers.host,
        proto: ctx.proto,
      });
      headers.connection = 'upgrade';
      headers.upgrade = 'websocket';
      req.headers = headers as IncomingHttpHeaders;
      req.url = route.basePath + target.path + target.search;

      const options = { target: targetFor(route.origin), proxyTimeout: route.timeoutMs };
      proxy.ws(req, socket, head, options, (error) => {
        const kind = classifyUpstreamError(error);
        if (!isSocketPristine(socket)) {
          // The tunnel was open (or a refusal relayed): nothing left to say.
          socket.destroy();
          return;
        }
        hooks?.upstreamError?.(route.id, kind);
        writeSocketProblem(socket, upstreamProblem(kind, error), instancia, problemTypeBase);
      });
    },

    closeEnded(ended) {
      const closed: ClosedTunnel[] = [];
      for (const [socket, tunnel] of tunnels) {
        const reason = ended(tunnel.principal);
        if (reason === null) continue;
        tunnels.delete(socket);
        socket.destroy();
        tunnel.upstream?.destroy();
        closed.push({
          requestId: tunnel.requestId,
          routeId: tunnel.routeId,
          clientId: tunnel.principal.clientId,
          reason,
        });
      }
      return closed;
    },

    close() {
      for (const socket of open) socket.destroy();
      open.clear();
      tunnels.clear();
      proxy.close();
    },
  };
}
