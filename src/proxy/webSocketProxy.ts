/**
 * Tunnels verified WebSocket upgrades (RFC 6455 §4) to the route's upstream.
 *
 * Before proxying, the request's fields go through the same header policy as HTTP
 * requests (identity namespace, `X-Forwarded-*`, `Authorization`), then the upgrade pair
 * `Connection: upgrade` / `Upgrade: websocket` is put back: those are hop-by-hop, but a
 * proxy must carry them for the handshake to reach the upstream. `Sec-WebSocket-*` fields
 * are end-to-end and pass unchanged. The request URL becomes `basePath + path + search`.
 *
 * http-proxy's `ws` pass makes the handshake request and, after a 101, pipes the two
 * sockets (its WebSocket support is why it is here). Left alone it keeps the upstream
 * request after the client left, pipes a late 101 into a dead socket, writes the
 * upstream's 101 fields unfiltered, and relays a refusal raw — hop-by-hop fields and a
 * de-chunked body still labelled chunked. So the request it makes is ours too (its
 * `proxyReqWs` event): our 'upgrade' listener runs before its own and replaces the 101's
 * fields by the filtered ones before it writes them (or destroys an upstream socket
 * nobody wants), its 'response' listener is replaced by ours right after `ws` returns,
 * and we abort the request when the client leaves or the time is up:
 *
 * - **101**: the client gets `101 Switching Protocols` with the upstream's end-to-end
 *   fields (the response header policy), `X-Request-Id`, and `Connection: Upgrade` /
 *   `Upgrade: websocket`; then both sockets are piped. An upstream switching to anything
 *   but websocket is an invalid answer (502).
 * - **Any other answer** (a refusal): read whole, up to `RELAYED_BODY_LIMIT` and within
 *   the route's time, then written with the upstream's status, its end-to-end fields, an
 *   exact `Content-Length`, `X-Request-Id` and `Connection: close`, and the connection is
 *   closed (RFC 9112 §9.6): the client asked for another protocol, nothing else follows.
 *   A larger body is refused with 502 rather than relayed truncated.
 * - **Failure** before any byte reached the client: problem-details 502 or 504 on the raw
 *   socket; after that, the client socket is destroyed.
 *
 * Timers and races. The handshake — the relayed refusal's body included — must complete
 * within the route's time: we own that timer (a 504 must not look like a 502), and it
 * aborts the upstream request whatever became of the client. After the 101 the tunnel has
 * no time limit. A client socket that closes before the upgrade completed aborts the
 * upstream request at once; an upstream 101 arriving after the client left is closed, never
 * piped. `closeEnded` answers a tunnel still in its handshake with the 401 the verifier
 * would give now (the token was revoked or expired meanwhile) and aborts its upstream
 * request; once `close` ran (the shutdown grace ended), every upgrade is refused with 503.
 *
 * Every upgrade handed to `upgrade` reports its outcome once through `done` (the access
 * line): 101, the relayed status, the status of the problem written, or 499 when the
 * client was gone before any answer (reason `shutdown-grace` when `close` cut it).
 *
 * No error event is left unhandled: both sockets and the upstream request get error
 * listeners (Node removes its own from the client socket once it emits `upgrade`).
 */
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import httpProxy from 'http-proxy';
import type { Principal } from '../domain/principal.js';
import type { RequestTarget } from '../domain/requestPath.js';
import { type FailureReason, PortariaError } from '../errors.js';
import type { ForwarderHooks } from './forwarder.js';
import type { ForwardedProto, HeaderPolicy } from './headers.js';
import type { CompiledRoute } from './routeTable.js';
import { isSocketPristine, writeSocketProblem, writeSocketResponse } from './socketProblem.js';
import { classifyUpstreamError, upstreamProblem } from './upstreamErrors.js';

export interface WebSocketContext {
  readonly requestId: string;
  /** The TCP peer's address (`req.socket.remoteAddress`). */
  readonly peerAddress: string | undefined;
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

/**
 * How an upgrade ended, reported once: the status the client got (101, the upstream's
 * relayed status, the problem the gateway wrote, or 499: gone before any answer) and the
 * private reason, if any (`upstream-timeout`, `revoked`, `shutdown-grace`, …).
 */
export type UpgradeDone = (status: number, reason: FailureReason | undefined) => void;

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
}

/** Largest body of a non-101 answer relayed to the client (a refusal's body is small). */
export const RELAYED_BODY_LIMIT = 64 * 1024;

/** An upgrade the gateway accepted, from `upgrade` until its client socket closes. */
interface Tunnel {
  readonly principal: Principal;
  readonly requestId: string;
  readonly routeId: string;
  readonly instancia: string;
  /** The path and query the upstream gets: `basePath + path + search`, as checked. */
  readonly path: string;
  readonly socket: Duplex;
  /** The handshake request, until the upstream switched protocols or the upgrade ended. */
  request: ClientRequest | null;
  /** The upstream's non-101 answer being read. */
  response: IncomingMessage | null;
  timer: NodeJS.Timeout | null;
  /** The upstream socket, once it switched protocols. */
  upstream: Duplex | null;
  /** Reports the outcome; null once reported. */
  done: UpgradeDone | null;
}

type ProxyTarget = { protocol: string; hostname: string; host: string; port: string };

function ignoreError(): void {}
function ignoreOutcome(): void {}

/** http-proxy target for an origin, without `url.parse`; IPv6 brackets removed. */
function toProxyTarget(origin: string): ProxyTarget {
  const url = new URL(origin);
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { protocol: url.protocol, hostname, host: url.host, port: url.port };
}

/**
 * `Upgrade` names websocket in an HTTP/1.1 request (any method: which upgrades the gateway
 * takes up at all). In an HTTP/1.0 request the field is ignored, as RFC 9110 §7.8
 * requires: the request is answered as the plain request it also is.
 */
export function offersWebSocket(req: IncomingMessage): boolean {
  if (req.httpVersionMajor === 1 && req.httpVersionMinor === 0) return false;
  return namesWebSocket(req.headers.upgrade);
}

function namesWebSocket(upgrade: string | undefined): boolean {
  const tokens = upgrade?.toLowerCase().split(',') ?? [];
  return tokens.some((token) => token.trim() === 'websocket');
}

/** A WebSocket handshake this proxy serves (RFC 6455 §4.1: a GET). */
function isWebSocketUpgrade(req: IncomingMessage): boolean {
  return req.method === 'GET' && offersWebSocket(req);
}

function codedError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

/** The refusal the verifier would give now to an upgrade whose token ended mid-handshake. */
function endedProblem(reason: TunnelEnd): PortariaError {
  // Same code, detail, reason and challenge as verify/tokenVerifier.ts (proxy may not import it).
  const headers = { 'www-authenticate': 'Bearer realm="portaria", error="invalid_token"' };
  return reason === 'token_revoked'
    ? new PortariaError('token-revoked', 'The access token has been revoked.', {
        reason: 'revoked',
        headers,
      })
    : new PortariaError('token-expired', 'The access token has expired.', {
        reason: 'expired',
        headers,
      });
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

  function targetFor(origin: string): ProxyTarget {
    let target = targets.get(origin);
    if (target === undefined) {
      target = toProxyTarget(origin);
      targets.set(origin, target);
    }
    return target;
  }

  function settle(tunnel: Tunnel, status: number, reason: FailureReason | undefined): void {
    const done = tunnel.done;
    if (done === null) return;
    tunnel.done = null;
    done(status, reason);
  }

  /** Drops the handshake's upstream side (request, answer, timer); the tunnel's socket stays. */
  function abandonHandshake(tunnel: Tunnel): void {
    if (tunnel.timer !== null) {
      clearTimeout(tunnel.timer);
      tunnel.timer = null;
    }
    tunnel.response?.destroy();
    tunnel.response = null;
    tunnel.request?.destroy();
    tunnel.request = null;
  }

  /** The exchange with the upstream failed before the upgrade completed. */
  function failed(tunnel: Tunnel, error: unknown): void {
    abandonHandshake(tunnel);
    if (tunnel.done === null) return;
    const socket = tunnel.socket;
    if (!isSocketPristine(socket)) {
      socket.destroy();
      settle(tunnel, 499, undefined);
      return;
    }
    const kind = classifyUpstreamError(error);
    hooks?.upstreamError?.(tunnel.routeId, kind);
    const problem = upstreamProblem(kind, error);
    writeSocketProblem(socket, problem, tunnel.instancia, problemTypeBase, tunnel.requestId);
    settle(tunnel, problem.status, problem.reason);
  }

  function onHandshakeTimeout(tunnel: Tunnel): void {
    tunnel.timer = null;
    failed(tunnel, codedError('upstream did not complete the WebSocket handshake', 'ETIMEDOUT'));
  }

  /** The client socket closed: nothing of the handshake is wanted any more. */
  function clientClosed(tunnel: Tunnel): void {
    tunnels.delete(tunnel.socket);
    abandonHandshake(tunnel);
    tunnel.upstream?.destroy();
    settle(tunnel, 499, closed ? 'shutdown-grace' : undefined);
  }

  /** A non-101 answer: read it whole (bounded), then relay it well framed and close. */
  function relayRefusal(tunnel: Tunnel, res: IncomingMessage): void {
    if (tunnel.done === null) {
      res.destroy();
      return;
    }
    // A 101 Node did not take as an upgrade (no `Connection: upgrade`): switching
    // protocols without saying so is an invalid answer, not one to relay (502).
    if ((res.statusCode ?? 0) < 200) {
      res.destroy();
      failed(tunnel, codedError('upstream answered 1xx without an upgrade', 'ERR_BAD_UPGRADE'));
      return;
    }
    tunnel.response = res;
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > RELAYED_BODY_LIMIT) {
        failed(tunnel, codedError('upstream refusal body too large', 'ERR_BODY_TOO_LARGE'));
        return;
      }
      chunks.push(chunk);
    });
    res.on('error', (error) => failed(tunnel, error));
    res.on('end', () => {
      if (tunnel.done === null) return;
      const status = res.statusCode ?? 502;
      const fields = policy.downstreamResponseHeaders(res.headers, tunnel.requestId);
      abandonHandshake(tunnel);
      if (!isSocketPristine(tunnel.socket)) {
        tunnel.socket.destroy();
        settle(tunnel, 499, undefined);
        return;
      }
      writeSocketResponse(tunnel.socket, status, fields, Buffer.concat(chunks, size));
      settle(tunnel, status, undefined);
    });
  }

  /**
   * The upstream switched protocols. Runs before http-proxy's own listener, which then
   * writes the 101 with `res.headers` and pipes the sockets: here the fields are replaced
   * by the filtered ones, and an upstream socket nobody wants is destroyed first (its
   * 101 then goes into a closed socket and the pipe ends at once).
   */
  function openTunnel(tunnel: Tunnel, res: IncomingMessage, upstream: Duplex): void {
    upstream.on('error', ignoreError);
    tunnel.request = null;
    if (tunnel.done === null || tunnel.socket.destroyed) {
      upstream.destroy();
      abandonHandshake(tunnel);
      return;
    }
    if (!namesWebSocket(res.headers.upgrade)) {
      upstream.destroy();
      failed(tunnel, codedError('upstream switched to another protocol', 'ERR_BAD_UPGRADE'));
      return;
    }
    abandonHandshake(tunnel);
    const socket = tunnel.socket;
    tunnel.upstream = upstream;
    const fields = policy.downstreamResponseHeaders(res.headers, tunnel.requestId);
    fields.connection = 'Upgrade';
    fields.upgrade = 'websocket';
    res.headers = fields as IncomingHttpHeaders;
    // A reset upstream ends the tunnel (a clean end is carried by the pipe); a closed
    // client socket destroys the upstream one (clientClosed).
    upstream.once('error', () => socket.destroy());
    settle(tunnel, 101, undefined);
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
        const written = writeSocketProblem(
          socket,
          refusal,
          instancia,
          problemTypeBase,
          ctx.requestId,
        );
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
        requestId: ctx.requestId,
        peerAddress: ctx.peerAddress,
        host: req.headers.host,
        proto: ctx.proto,
      });
      headers.connection = 'upgrade';
      headers.upgrade = 'websocket';
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
          const written = writeSocketProblem(
            socket,
            problem,
            tunnel.instancia,
            problemTypeBase,
            tunnel.requestId,
          );
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
