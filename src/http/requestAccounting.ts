/**
 * Request accounting: the access line and the request metrics, written once per request
 * from its scope alone — when the response closes, or for an upgrade once its outcome is
 * known (`upgrade` line: 101, the upstream's refusal relayed, the gateway's own 4xx/5xx,
 * or 499). An upgrade counts in the `unsafe` method class: a tunnel carries writes as
 * well as reads.
 *
 * A response that did not finish was cut: by the upstream after its head (the scope's
 * `upstreamCut`: the status sent, as a warning), by Node's parser answering on the raw
 * socket (`socketStatus`, e.g. 408), by the shutdown grace (`shutdown` with the status
 * sent, or 499 `shutdown-grace` when nothing was), or by the client leaving (499).
 */
import type { IncomingMessage } from 'node:http';
import type { TrustedProxies } from '../lib/trustedProxies.js';
import { accessFieldsObject, roundedMs } from '../observability/accessLine.js';
import type { AccessLog, Logger } from '../observability/logger.js';
import {
  type MethodClass,
  type Metrics,
  methodClass,
  statusClass,
} from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
import type { ForwardedProto } from '../proxy/headers.js';
import { type GatewayResponse, type RequestScope, requestIdFor } from './requestScope.js';
import {
  endRequestTrace,
  loggedTrace,
  startRequestTrace,
  traceLogFields,
} from './requestTracing.js';

/** The method class of a WebSocket upgrade: a tunnel carries writes, so `unsafe`. */
export const UPGRADE_CLASS: MethodClass = 'unsafe';

export interface RequestAccountingDeps {
  readonly logger: Logger;
  /** One line per request (no redaction: fixed, non-secret fields only). */
  readonly accessLogger: AccessLog;
  readonly metrics: Metrics;
  /** True once the shutdown grace ended and the remaining connections are being cut. */
  readonly graceOver?: () => boolean;
  /** `server.trustedProxies`: the access line's `client.address` behind them. */
  readonly trustedProxies?: TrustedProxies;
  /** OpenTelemetry tracing; null or absent when off. */
  readonly tracing?: Tracing | null;
  /** The listener's scheme (`https` with `server.tls`), forwarded as X-Forwarded-Proto. */
  readonly proto?: ForwardedProto;
}

/** A connection's byte counters when its previous request's line was written. */
interface ConnectionBytes {
  read: number;
  written: number;
}

/** The parts of a socket the byte counts read (a `net.Socket` has them). */
interface CountingSocket {
  readonly bytesRead?: number;
  readonly bytesWritten?: number;
}

export class RequestAccounting {
  readonly #deps: RequestAccountingDeps;
  readonly #tracing: Tracing | null;
  readonly #proto: ForwardedProto;
  /** The one `close` listener every response shares (Node calls it with the response as `this`). */
  readonly onResponseClose: (this: GatewayResponse) => void;
  /** Requests whose access line is not written yet; `#idle` waits for none. */
  #open = 0;
  #idle: (() => void) | null = null;
  /**
   * Per connection, its counters at the previous line: a request's bytes are what the
   * connection carried since (keep-alive connections carry several requests).
   */
  readonly #bytes = new WeakMap<object, ConnectionBytes>();

  constructor(deps: RequestAccountingDeps) {
    this.#deps = deps;
    this.#tracing = deps.tracing ?? null;
    this.#proto = deps.proto ?? 'http';
    const closed = (res: GatewayResponse) => this.#responseClosed(res);
    this.onResponseClose = function (this: GatewayResponse) {
      closed(this);
    };
  }

  /**
   * Starts a request's accounting (a plain request, an upgrade or a CONNECT alike): its
   * clock, method, id and peer, the in-flight gauge and the count `#finished` settles.
   */
  begin(scope: RequestScope, req: IncomingMessage, traced = true): void {
    scope.start = performance.now();
    scope.method = req.method ?? '';
    scope.methodClass = methodClass(req.method);
    scope.id = requestIdFor(req.headers['x-request-id']);
    scope.socket = req.socket;
    scope.proto = this.#proto;
    const peer = req.socket.remoteAddress;
    scope.peerAddress = peer;
    scope.clientAddress =
      this.#deps.trustedProxies?.trusts(peer) === true
        ? this.#deps.trustedProxies.hops(peer, req.headers['x-forwarded-for'])[0]
        : peer;
    scope.url = req.url;
    scope.userAgent = req.headers['user-agent'];
    if (traced) this.startTrace(scope, req);
    this.#deps.metrics.requestStarted();
    this.#open++;
  }

  /**
   * Starts the request's server span, once, when tracing is on: at `begin`, or for a
   * decision once the original request is known (its method and target are the span's).
   */
  startTrace(scope: RequestScope, req: IncomingMessage): void {
    if (this.#tracing !== null && scope.trace === null)
      startRequestTrace(this.#tracing, scope, req);
  }

  /**
   * Resolves once every request received so far has written its access line (shutdown:
   * Node may emit the responses' `close` events after the server closed).
   */
  allWritten(): Promise<void> {
    if (this.#open === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const previous = this.#idle;
      this.#idle = () => {
        previous?.();
        resolve();
      };
    });
  }

  /** The line and metrics of an upgrade or a CONNECT, once its outcome is known. */
  upgradeEnded(scope: RequestScope, status: number, kind: MethodClass = UPGRADE_CLASS): void {
    if (status === 401 && scope.reason !== undefined) this.#deps.metrics.authFailure(scope.reason);
    this.#finished(scope, kind, status, false, true);
  }

  /**
   * Starts a decision that comes without an IncomingMessage (Envoy over gRPC): its clock,
   * the in-flight gauge and the count; its entry fills the rest of the scope.
   */
  decisionBegun(scope: RequestScope): void {
    scope.start = performance.now();
    this.#deps.metrics.requestStarted();
    this.#open++;
  }

  /** Such a decision's line and metrics, `status` being the HTTP status it told the proxy. */
  decisionEnded(scope: RequestScope, status: number): void {
    this.#finished(scope, scope.methodClass, status, false, false);
  }

  /** A request refused on the raw socket before it was handled (CONNECT). */
  socketRefused(scope: RequestScope, kind: MethodClass, status: number): void {
    this.#finished(scope, kind, status, false, false);
  }

  #responseClosed(res: GatewayResponse): void {
    const scope = res.scope;
    let status = res.statusCode;
    let truncated = false;
    if (!res.writableFinished) {
      if (scope.upstreamCut !== undefined) {
        scope.reason = `upstream-${scope.upstreamCut}`;
        truncated = true;
      } else if (scope.socketStatus !== 0) {
        status = scope.socketStatus;
      } else if (this.#deps.graceOver?.() === true) {
        // Cut at the grace limit (closeAllConnections): not the client's doing.
        truncated = res.headersSent;
        if (!truncated) status = 499;
        scope.reason = truncated ? 'shutdown' : 'shutdown-grace';
      } else {
        status = 499;
      }
    }
    this.#finished(scope, scope.methodClass, status, truncated, false);
  }

  /**
   * Counts a finished request and writes its line: `request` / `upgrade` in the access
   * log, or `request failed` / `upgrade failed` (5xx, a truncated response) at `warn`, at
   * `error` with the error when the gateway failed unexpectedly.
   */
  #finished(
    scope: RequestScope,
    kind: MethodClass,
    status: number,
    truncated: boolean,
    upgrade: boolean,
  ): void {
    const { metrics, accessLogger, logger } = this.#deps;
    const ms = performance.now() - scope.start;
    metrics.requestFinished(scope.routeId, kind, statusClass(status), ms / 1000);
    scope.status = status;
    scope.durationMs = roundedMs(ms);
    this.#countBytes(scope);
    const failed = status >= 500 || truncated;
    if (scope.trace !== null) endRequestTrace(scope, status);
    if (failed || upgrade) {
      if (!failed) {
        accessLogger.logger.info(
          { ...accessFieldsObject(scope), ...traceLogFields(scope) },
          'upgrade',
        );
      } else if (scope.error !== undefined) {
        // An unexpected failure of ours is an error; a 5xx the gateway chose (upstream
        // down or slow, revocation list stale, shutting down), the upstream's own 5xx or a
        // response cut short is a warning — one per request during an outage, which the
        // alerts count (portaria_upstream_errors_total), not a fault to page on here.
        logger.error(
          { ...accessFieldsObject(scope, scope.error), ...traceLogFields(scope) },
          upgrade ? 'upgrade failed' : 'request failed',
        );
      } else {
        logger.warn(
          { ...accessFieldsObject(scope), ...traceLogFields(scope) },
          upgrade ? 'upgrade failed' : 'request failed',
        );
      }
    } else {
      accessLogger.request(scope, loggedTrace(scope));
    }
    if (--this.#open === 0 && this.#idle !== null) {
      const idle = this.#idle;
      this.#idle = null;
      idle();
    }
  }

  /**
   * The bytes the request's connection carried since its previous request's line: this
   * request's head and body, its response with framing. What a client pipelined or sent
   * after the response (an unread body Node discards) counts for the next request.
   */
  #countBytes(scope: RequestScope): void {
    const socket = scope.socket as CountingSocket | null;
    if (socket === null) return;
    const read = socket.bytesRead ?? 0;
    const written = socket.bytesWritten ?? 0;
    let last = this.#bytes.get(socket);
    if (last === undefined) {
      last = { read: 0, written: 0 };
      this.#bytes.set(socket, last);
    }
    scope.requestBytes = read - last.read;
    scope.responseBytes = written - last.written;
    last.read = read;
    last.written = written;
  }
}
