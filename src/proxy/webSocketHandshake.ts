/**
 * The upstream side of a WebSocket handshake. http-proxy's `ws` pass, kept for piping the
 * tunnel, would keep its request after the client left, write the upstream's 101 fields
 * unfiltered and relay a refusal raw (hop-by-hop fields, a de-chunked body still labelled
 * chunked), and has no option against any of it; so these listeners replace its own on the
 * request it makes (`proxyReqWs`):
 *
 *   101      the upstream's end-to-end fields, `X-Request-Id` and the upgrade pair, then
 *            both sockets piped; a switch to anything but websocket is a 502
 *   refusal  read whole (at most `RELAYED_BODY_LIMIT`, within the route's time) and
 *            written with an exact `Content-Length` and `Connection: close` (RFC 9112
 *            §9.6: the client asked for another protocol, nothing else follows); a
 *            larger body is a 502, never relayed truncated
 *   failure  a 502/504 problem while nothing reached the client, else the socket cut
 *
 * `test/e2e/webSocketEdges.test.ts` fails if an http-proxy release changes those listeners.
 */
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Principal } from '../domain/principal.js';
import type { FailureReason } from '../errors.js';
import type { ForwarderHooks } from './forwarder.js';
import type { HeaderPolicy } from './headers.js';
import type { CompiledRoute } from './routeTable.js';
import { isSocketPristine, writeSocketProblem, writeSocketResponse } from './socketProblem.js';
import { classifyUpstreamError, upstreamProblem } from './upstreamErrors.js';
import { namesWebSocket } from './webSocketUpgrade.js';

/**
 * How an upgrade ended, reported once: the status the client got (101, the upstream's
 * relayed status, the problem the gateway wrote, or 499: gone before any answer) and the
 * private reason, if any (`upstream-timeout`, `revoked`, `shutdown-grace`, …).
 */
export type UpgradeDone = (status: number, reason: FailureReason | undefined) => void;

/** Largest body of a non-101 answer relayed to the client (a refusal's body is small). */
export const RELAYED_BODY_LIMIT = 64 * 1024;

/** An upgrade the gateway accepted, from `upgrade` until its client socket closes. */
export interface Tunnel {
  readonly principal: Principal;
  readonly requestId: string;
  readonly routeId: string;
  readonly route: CompiledRoute;
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

export interface HandshakeRelay {
  /** Reports the outcome once. */
  settle(tunnel: Tunnel, status: number, reason: FailureReason | undefined): void;
  /** Drops the handshake's upstream side (request, answer, timer); the tunnel's socket stays. */
  abandonHandshake(tunnel: Tunnel): void;
  /** The exchange with the upstream failed before the upgrade completed. */
  failed(tunnel: Tunnel, error: unknown): void;
  /** The route's time ran out before the handshake completed (a `setTimeout` callback). */
  onHandshakeTimeout(tunnel: Tunnel): void;
  /** A non-101 answer: read it whole (bounded), then relay it well framed and close. */
  relayRefusal(tunnel: Tunnel, res: IncomingMessage): void;
  /** The upstream switched protocols (the request's 'upgrade' event). */
  openTunnel(tunnel: Tunnel, res: IncomingMessage, upstream: Duplex): void;
}

export function ignoreError(): void {}

function codedError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

/** Built once per proxy: the functions close over its policy, not over a request. */
export function createHandshakeRelay(
  policy: HeaderPolicy,
  problemTypeBase: string,
  hooks: Pick<ForwarderHooks, 'upstreamError'> | undefined,
): HandshakeRelay {
  function settle(tunnel: Tunnel, status: number, reason: FailureReason | undefined): void {
    const done = tunnel.done;
    if (done === null) return;
    tunnel.done = null;
    done(status, reason);
  }

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
    writeSocketProblem(socket, problem, tunnel.instancia, problemTypeBase, {
      requestId: tunnel.requestId,
    });
    settle(tunnel, problem.status, problem.reason);
  }

  function onHandshakeTimeout(tunnel: Tunnel): void {
    tunnel.timer = null;
    failed(tunnel, codedError('upstream did not complete the WebSocket handshake', 'ETIMEDOUT'));
  }

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
   * Runs before http-proxy's own listener, which then writes the 101 with `res.headers`
   * and pipes the sockets: here the fields are replaced by the filtered ones, and an
   * upstream socket nobody wants is destroyed first (its 101 then goes into a closed
   * socket and the pipe ends at once).
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
    // client socket destroys the upstream one (the proxy's clientClosed).
    upstream.once('error', () => socket.destroy());
    settle(tunnel, 101, undefined);
  }

  return { settle, abandonHandshake, failed, onHandshakeTimeout, relayRefusal, openTunnel };
}
