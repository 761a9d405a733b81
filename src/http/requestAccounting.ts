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
import type { AccessLog, Logger } from '../observability/logger.js';
import {
  type MethodClass,
  type Metrics,
  methodClass,
  statusClass,
} from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
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
  /** OpenTelemetry tracing; null or absent when off. */
  readonly tracing?: Tracing | null;
}

export class RequestAccounting {
  readonly #deps: RequestAccountingDeps;
  readonly #tracing: Tracing | null;
  /** The one `close` listener every response shares (Node calls it with the response as `this`). */
  readonly onResponseClose: (this: GatewayResponse) => void;
  /** Requests whose access line is not written yet; `#idle` waits for none. */
  #open = 0;
  #idle: (() => void) | null = null;

  constructor(deps: RequestAccountingDeps) {
    this.#deps = deps;
    this.#tracing = deps.tracing ?? null;
    const closed = (res: GatewayResponse) => this.#responseClosed(res);
    this.onResponseClose = function (this: GatewayResponse) {
      closed(this);
    };
  }

  /**
   * Starts a request's accounting (a plain request, an upgrade or a CONNECT alike): its
   * clock, method, id and peer, the in-flight gauge and the count `#finished` settles.
   */
  begin(scope: RequestScope, req: IncomingMessage): void {
    scope.start = performance.now();
    scope.method = req.method ?? '';
    scope.id = requestIdFor(req.headers['x-request-id']);
    scope.peerAddress = req.socket.remoteAddress;
    if (this.#tracing !== null) startRequestTrace(this.#tracing, scope, req);
    this.#deps.metrics.requestStarted();
    this.#open++;
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
    this.#finished(scope, methodClass(scope.method), status, truncated, false);
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
    const seconds = (performance.now() - scope.start) / 1000;
    metrics.requestFinished(scope.routeId, kind, statusClass(status), seconds);
    const durationMs = Math.round(seconds * 1e6) / 1e3;
    const failed = status >= 500 || truncated;
    if (scope.trace !== null) endRequestTrace(scope, status);
    if (failed || upgrade) {
      const line = {
        reqId: scope.id,
        method: scope.method,
        route: scope.routeId,
        status,
        durationMs,
        clientId: scope.clientId,
        reason: scope.reason,
        ...traceLogFields(scope),
      };
      if (!failed) {
        accessLogger.logger.info(line, 'upgrade');
      } else if (scope.error !== undefined) {
        // An unexpected failure of ours is an error; a 5xx the gateway chose (upstream
        // down or slow, revocation list stale, shutting down), the upstream's own 5xx or a
        // response cut short is a warning — one per request during an outage, which the
        // alerts count (portaria_upstream_errors_total), not a fault to page on here.
        logger.error({ ...line, err: scope.error }, upgrade ? 'upgrade failed' : 'request failed');
      } else {
        logger.warn(line, upgrade ? 'upgrade failed' : 'request failed');
      }
    } else {
      accessLogger.request(
        scope.id,
        scope.method,
        scope.routeId,
        status,
        durationMs,
        scope.clientId,
        scope.reason,
        loggedTrace(scope),
      );
    }
    if (--this.#open === 0 && this.#idle !== null) {
      const idle = this.#idle;
      this.#idle = null;
      idle();
    }
  }
}
