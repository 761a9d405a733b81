/**
 * The public listener's request and upgrade handling: one canonical path, then one of
 * four kinds of request —
 *   the token operation (open), the public key set (open), the OpenAPI description
 *   (open), or a protected request: bearer verification → route → route scopes →
 *   forward (HTTP via undici, WebSocket upgrades via proxy/webSocketProxy).
 * Only exact canonical paths reach the open handlers; everything else needs a token.
 *
 * Refusals are PortariaErrors written as problem details; anything else thrown is a
 * bare 500, with the error logged under the request id. The access log line and the
 * request metrics are written once, when the response closes — for an upgrade, once its
 * outcome is known (`upgrade` line: 101, the upstream's refusal relayed, the gateway's
 * own 4xx/5xx, or 499). An upgrade counts in the `unsafe` method class, for the metrics
 * and for `revocation.whenStale`: a tunnel carries writes as well as reads.
 *
 * Shutdown: while draining, an upgrade is refused with 503 (`shutting-down`), checked on
 * arrival and again once its token is verified; a tunnel opened during the drain would
 * keep the stop waiting for the whole grace. A response cut while draining (at the grace
 * limit) is logged with reason `shutdown` and the status sent, or as 499 with reason
 * `shutdown-grace` when nothing was sent.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Config } from '../config/types.js';
import type { Principal } from '../domain/principal.js';
import { parseRequestTarget, type RequestTarget, TOKEN_PATH } from '../domain/requestPath.js';
import { hasScopes } from '../domain/scope.js';
import { type FailureReason, isPortariaError, PortariaError } from '../errors.js';
import type { AccessLog, Logger } from '../observability/logger.js';
import {
  type MethodClass,
  type Metrics,
  methodClass,
  statusClass,
} from '../observability/metrics.js';
import {
  type Forwarder,
  type ForwardFailure,
  isChunkedOnly,
  upstreamCutOf,
} from '../proxy/forwarder.js';
import type { CompiledRoute, RouteTable } from '../proxy/routeTable.js';
import {
  markRequestStart,
  writeSocketProblem,
  writeSocketResponse,
} from '../proxy/socketProblem.js';
import type { UpgradeDone, WebSocketProxy } from '../proxy/webSocketProxy.js';
import { bearerToken } from '../verify/parseAuthorization.js';
import type { TokenVerifier } from '../verify/tokenVerifier.js';
import { chunkedOfferRefused, isDeclinedUpgrade } from './declinedUpgrade.js';
import { reachesHeaderLines, tooManyHeaderLines } from './headerLines.js';
import { instanceOf, pathOnly, sendProblem, sendServerError } from './replies.js';
import { continueBody, type GatewayResponse, RequestScope, requestIdFor } from './requestScope.js';
import { checkSingletonFieldsAndCountAuthorization } from './singletonFields.js';
import type { StaticDocument } from './staticDocument.js';
import { handleTokenRequest, type TokenRouteDeps } from './tokenRoute.js';

export const JWKS_PATH = '/.well-known/jwks.json';
export const OPENAPI_PATH = '/v1/openapi.json';

export interface PublicGatewayDeps {
  readonly config: Config;
  readonly tokenRoute: TokenRouteDeps;
  readonly jwks: StaticDocument;
  readonly openapi: StaticDocument;
  readonly verifier: TokenVerifier;
  /** The current route table (replaced on reload). */
  readonly routes: () => RouteTable;
  readonly forwarder: Forwarder;
  readonly webSockets: WebSocketProxy;
  readonly logger: Logger;
  /** One line per request (no redaction: fixed, non-secret fields only). */
  readonly accessLogger: AccessLog;
  readonly metrics: Metrics;
  /** True once shutdown began: responses then carry `Connection: close`. */
  readonly draining: () => boolean;
  /** True once the shutdown grace ended and the remaining connections are being cut. */
  readonly graceOver?: () => boolean;
  /**
   * Revocation freshness (Redis store): while `isStale()`, an authenticated request of a
   * method class whose policy is `refuse` gets 503 `service-unavailable`. Known
   * revocations are enforced before this, stale or not. Absent: never refused.
   */
  readonly revocationFreshness?: {
    readonly isStale: () => boolean;
    readonly refuse: Readonly<Record<MethodClass, boolean>>;
  };
}

export class PublicGateway {
  readonly #d: PublicGatewayDeps;
  readonly #typeBase: string;
  readonly #maxHeaderLines: number;
  readonly #proto: 'http' | 'https' = 'http';
  /** `revocationFreshness.isStale`, or null when no method class is ever refused. */
  readonly #revocationStale: (() => boolean) | null;

  /** The one `close` listener every response shares (Node calls it with the response as `this`). */
  readonly #onResponseClose: (this: GatewayResponse) => void;
  /** The forwarder's failure callback, shared by every request. */
  readonly #onForwardFailure: ForwardFailure;
  /** Responses whose access line is not written yet; `#idle` waits for none. */
  #open = 0;
  #idle: (() => void) | null = null;

  constructor(deps: PublicGatewayDeps) {
    this.#d = deps;
    this.#typeBase = deps.config.problemTypeBase;
    this.#maxHeaderLines = deps.config.server.maxHeaderLines;
    const fresh = deps.revocationFreshness;
    this.#revocationStale =
      fresh !== undefined && (fresh.refuse.safe || fresh.refuse.unsafe) ? fresh.isStale : null;
    const accessLog = (res: GatewayResponse) => this.#accessLog(res);
    this.#onResponseClose = function (this: GatewayResponse) {
      accessLog(this);
    };
    this.#onForwardFailure = (req, res, error) => this.#fail(req, res as GatewayResponse, error);
  }

  /** `request` listener. */
  readonly handleRequest = (req: IncomingMessage, res: GatewayResponse): void => {
    // A request pipelined behind a response still being sent has no socket yet: it is
    // handled once that response is done and Node hands the socket on. If that response
    // closes the connection (a refusal with `Connection: close`), it never is: nothing of
    // it is forwarded, as RFC 9112 §9.6 wants of requests after a close.
    if (res.socket === null) {
      res.once('socket', () => this.#handle(req, res));
      return;
    }
    this.#handle(req, res);
  };

  /**
   * Starts a request's accounting (a plain request, an upgrade or a CONNECT alike): its
   * clock, method and id, the in-flight gauge and the count `#finished` settles.
   */
  #begin(scope: RequestScope, req: IncomingMessage): void {
    scope.start = performance.now();
    scope.method = req.method ?? '';
    scope.id = requestIdFor(req.headers['x-request-id']);
    this.#d.metrics.requestStarted();
    this.#open++;
  }

  #handle(req: IncomingMessage, res: GatewayResponse): void {
    const scope = res.scope;
    this.#begin(scope, req);
    // X-Request-Id is set by the forwarder's header policy or, for answers of our own,
    // by #own/#fail: a header set here would push Node's writeHead(status, headers) onto
    // its slow merge path for every forwarded response.
    if (this.#d.draining()) res.setHeader('connection', 'close');
    res.on('close', this.#onResponseClose);
    try {
      this.#route(req, res)?.catch((error: unknown) => this.#fail(req, res, error));
    } catch (error) {
      this.#fail(req, res, error);
    }
  }

  /**
   * `checkContinue` listener: a request with `Expect: 100-continue` is handled like any
   * other, and gets its `100 Continue` only if it is accepted, just before its body is
   * read (Node would send it at once, so a refused upload was sent in full first).
   */
  readonly handleContinue = (req: IncomingMessage, res: GatewayResponse): void => {
    res.scope.awaitingContinue = true;
    this.handleRequest(req, res);
  };

  /**
   * Resolves once every response received so far has closed and written its access line
   * (shutdown: the server closed its connections, but Node may emit the responses'
   * `close` events later, and their lines belong before "stopped").
   */
  responsesClosed(): Promise<void> {
    if (this.#open === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const previous = this.#idle;
      this.#idle = () => {
        previous?.();
        resolve();
      };
    });
  }

  /** `connect` listener: CONNECT is refused with 405 problem details on the raw socket. */
  refuseConnect(req: IncomingMessage, socket: Duplex): void {
    socket.on('error', ignoreSocketError);
    markRequestStart(socket);
    // A request like any other for the access log and the metrics.
    const scope = new RequestScope();
    this.#begin(scope, req);
    scope.reason = 'connect';
    const problem = new PortariaError('method-not-allowed', 'CONNECT is not supported.', {
      reason: 'connect',
      headers: { allow: FORWARDED_METHODS },
    });
    const written = writeSocketProblem(socket, problem, `#${scope.id}`, this.#typeBase, scope.id);
    this.#finished(scope, 'unsafe', written ? 405 : 499, false, false);
  }

  /**
   * `upgrade` listener: WebSocket handshakes are authenticated like any request. The
   * access line and request metrics are written by `#upgradeEnded`, once per upgrade.
   */
  readonly handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', ignoreSocketError);
    // A keep-alive socket may have carried earlier responses: ours start here.
    markRequestStart(socket);
    const scope = new RequestScope();
    this.#begin(scope, req);
    let ended = false;
    const done = (status: number, reason: FailureReason | undefined): void => {
      if (ended) return;
      ended = true;
      if (reason !== undefined) scope.reason = reason;
      this.#upgradeEnded(scope, status);
    };
    this.#upgrade(req, socket, head, scope, done).catch((error: unknown) => {
      if (!isPortariaError(error)) {
        // A failure of ours: a bare 500, nothing about it leaves the process (STYLE).
        scope.error = error;
        const written = writeSocketResponse(
          socket,
          500,
          { 'cache-control': 'no-store', 'x-request-id': scope.id },
          Buffer.alloc(0),
        );
        done(written ? 500 : 499, 'upgrade-error');
        return;
      }
      const problem = error;
      const written = writeSocketProblem(
        socket,
        problem,
        instanceOf(pathOnly(req.url), scope.id),
        this.#typeBase,
        scope.id,
      );
      done(written ? problem.status : 499, problem.reason);
    });
  };

  /** Synchronous up to the first I/O: a cached token reaches the forwarder without a tick. */
  #route(req: IncomingMessage, res: GatewayResponse): Promise<void> | undefined {
    if (reachesHeaderLines(req, this.#maxHeaderLines)) throw tooManyHeaderLines();
    const authorizationLines = checkSingletonFieldsAndCountAuthorization(req);
    const transferEncoding = req.headers['transfer-encoding'];
    if (transferEncoding !== undefined) checkTransferCoding(req, transferEncoding);
    const target = parseRequestTarget(req.url ?? '');
    switch (target.path) {
      case TOKEN_PATH:
        this.#own(res, 'token');
        return handleTokenRequest(req, res, this.#d.tokenRoute);
      case JWKS_PATH:
        return this.#document(req, res, 'jwks', this.#d.jwks);
      case OPENAPI_PATH:
        return this.#document(req, res, 'openapi', this.#d.openapi);
    }
    if (!isForwardedMethod(req.method)) throw methodRefused(req.method);
    const principal = this.#authenticate(req, target.search, authorizationLines);
    if (principal instanceof Promise) {
      return principal.then((p) => this.#forward(req, res, target, p));
    }
    this.#forward(req, res, target, principal);
    return undefined;
  }

  #forward(
    req: IncomingMessage,
    res: GatewayResponse,
    target: RequestTarget,
    principal: Principal,
  ): void {
    const scope = res.scope;
    scope.clientId = principal.clientId;
    if (this.#revocationStale?.() === true) this.#refuseWhenStale(methodClass(req.method));
    const route = this.#matchRoute(target.path);
    // Before the scope check: a 403 is logged and counted under the route it was for.
    scope.routeId = route.id;
    checkScopes(route, principal);
    continueBody(res);
    this.#d.forwarder.dispatch(
      req,
      res,
      route,
      target,
      principal,
      { requestId: scope.id, peerAddress: req.socket.remoteAddress, proto: this.#proto },
      this.#onForwardFailure,
    );
  }

  async #upgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    scope: RequestScope,
    done: UpgradeDone,
  ): Promise<void> {
    // No new tunnel during the drain: it would hold the stop for the whole grace.
    if (reachesHeaderLines(req, this.#maxHeaderLines)) throw tooManyHeaderLines();
    if (this.#d.draining()) throw shuttingDown();
    const authorizationLines = checkSingletonFieldsAndCountAuthorization(req);
    const target = parseRequestTarget(req.url ?? '');
    const openRoute = OPEN_ROUTES.get(target.path);
    if (openRoute !== undefined) {
      scope.routeId = openRoute;
      const allow = target.path === TOKEN_PATH ? 'POST' : 'GET, HEAD';
      // The method is one the path takes: only the upgrade is wrong, and a 405 naming
      // that very method would contradict itself. Another method: a 405 names what the
      // path does accept (RFC 9110 §15.5.6).
      if (allow.split(', ').includes(req.method ?? '')) {
        throw new PortariaError(
          'invalid-request',
          'This path does not accept upgrades; send the request without Upgrade.',
          { reason: 'upgrade-on-open-path' },
        );
      }
      throw new PortariaError('method-not-allowed', 'This path does not accept upgrades.', {
        reason: 'upgrade-on-open-path',
        headers: { allow },
      });
    }
    // RFC 6455 §4.1: a handshake is a GET without content. A body would be announced
    // upstream and never sent (the socket becomes the tunnel), stalling until the 504.
    if (hasBody(req)) {
      throw new PortariaError('invalid-request', 'An upgrade request must not carry a body.', {
        reason: 'upgrade-with-body',
      });
    }
    const principal = await this.#authenticate(req, target.search, authorizationLines);
    scope.clientId = principal.clientId;
    if (this.#revocationStale?.() === true) this.#refuseWhenStale(UPGRADE_CLASS);
    const route = this.#matchRoute(target.path);
    scope.routeId = route.id;
    checkScopes(route, principal);
    // The verification may have spanned the start of the drain.
    if (this.#d.draining()) throw shuttingDown();
    this.#d.webSockets.upgrade(
      req,
      socket,
      head,
      route,
      target,
      principal,
      { requestId: scope.id, peerAddress: req.socket.remoteAddress, proto: this.#proto },
      done,
    );
  }

  #authenticate(
    req: IncomingMessage,
    search: string,
    authorizationLines: number,
  ): Principal | Promise<Principal> {
    const token = bearerToken(req.headers.authorization, authorizationLines, search);
    return this.#d.verifier.verify(token);
  }

  /** The revocation list is stale: throws 503 when the method class's policy refuses. */
  #refuseWhenStale(kind: MethodClass): void {
    if (this.#d.revocationFreshness?.refuse[kind] !== true) return;
    this.#d.metrics.revocationStaleRefusal(kind);
    throw new PortariaError(
      'service-unavailable',
      'The revocation list cannot be confirmed as current; retry later.',
      { reason: 'revocation-stale' },
    );
  }

  /** Route lookup after authentication (the route table is not revealed to strangers). */
  #matchRoute(path: string): CompiledRoute {
    const route = this.#d.routes().match(path);
    if (route === null) {
      throw new PortariaError('not-found', 'No route serves this path.', { reason: 'no-route' });
    }
    return route;
  }

  /** The gateway answers this request itself. */
  #document(
    req: IncomingMessage,
    res: GatewayResponse,
    routeId: string,
    document: StaticDocument,
  ): undefined {
    this.#own(res, routeId);
    // A GET or HEAD is served: its pending `100 Continue` goes out first, as Node would
    // send it (Node closes the connection of an Expect request answered without one).
    if (req.method === 'GET' || req.method === 'HEAD') continueBody(res);
    document.serve(req, res);
    return undefined;
  }

  #own(res: GatewayResponse, routeId: string): void {
    res.scope.routeId = routeId;
    res.setHeader('x-request-id', res.scope.id);
  }

  #fail(req: IncomingMessage, res: GatewayResponse, error: unknown): void {
    const scope = res.scope;
    if (!res.headersSent) res.setHeader('x-request-id', scope.id);
    if (isPortariaError(error)) {
      scope.reason = error.reason;
      if (error.status === 401) this.#d.metrics.authFailure(error.reason);
      // A refused request whose body was not read must not leave it on the connection
      // (its bytes would be parsed as the next request). A bodiless request is complete
      // as far as framing goes even before Node has emitted its end.
      const close = !req.complete && hasBody(req);
      sendProblem(res, error, this.#typeBase, instanceOf(pathOnly(req.url), scope.id), close);
      return;
    }
    scope.error = error;
    sendServerError(res);
  }

  /** Writes the access log line and request metrics; runs once per response. */
  #accessLog(res: GatewayResponse): void {
    const scope = res.scope;
    let status = res.statusCode;
    // The client got a truncated message: the line keeps the status sent, as a warning.
    let truncated = false;
    if (!res.writableFinished) {
      // Not finished: the upstream failed mid-response, Node's parser answered on the raw
      // socket (408), the shutdown grace ended, or the client went away (499).
      const cut = upstreamCutOf(res);
      if (cut !== undefined) {
        scope.reason = `upstream-${cut}`;
        truncated = true;
      } else if (scope.socketStatus !== 0) {
        status = scope.socketStatus;
      } else if (this.#d.graceOver?.() === true) {
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

  /** The access line and request metrics of an upgrade, once its outcome is known. */
  #upgradeEnded(scope: RequestScope, status: number): void {
    if (status === 401 && scope.reason !== undefined) this.#d.metrics.authFailure(scope.reason);
    this.#finished(scope, UPGRADE_CLASS, status, false, true);
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
    const seconds = (performance.now() - scope.start) / 1000;
    this.#d.metrics.requestFinished(scope.routeId, kind, statusClass(status), seconds);
    const durationMs = Math.round(seconds * 1e6) / 1e3;
    const failed = status >= 500 || truncated;
    if (failed || upgrade) {
      const line = {
        reqId: scope.id,
        method: scope.method,
        route: scope.routeId,
        status,
        durationMs,
        clientId: scope.clientId,
        reason: scope.reason,
      };
      if (!failed) {
        this.#d.accessLogger.logger.info(line, 'upgrade');
      } else if (scope.error !== undefined) {
        // An unexpected failure of ours is an error; a 5xx the gateway chose (upstream
        // down or slow, revocation list stale, shutting down), the upstream's own 5xx or a
        // response cut short is a warning — one per request during an outage, which the
        // alerts count (portaria_upstream_errors_total), not a fault to page on here.
        this.#d.logger.error(
          { ...line, err: scope.error },
          upgrade ? 'upgrade failed' : 'request failed',
        );
      } else {
        this.#d.logger.warn(line, upgrade ? 'upgrade failed' : 'request failed');
      }
    } else {
      this.#d.accessLogger.request(
        scope.id,
        scope.method,
        scope.routeId,
        status,
        durationMs,
        scope.clientId,
        scope.reason,
      );
    }
    if (--this.#open === 0 && this.#idle !== null) {
      const idle = this.#idle;
      this.#idle = null;
      idle();
    }
  }
}

/** The method class of a WebSocket upgrade: a tunnel carries writes, so `unsafe`. */
const UPGRADE_CLASS: MethodClass = 'unsafe';

/** The open paths' route labels (an upgrade on one is refused: 405, or 400 with the path's own method). */
const OPEN_ROUTES: ReadonlyMap<string, string> = new Map([
  [TOKEN_PATH, 'token'],
  [JWKS_PATH, 'jwks'],
  [OPENAPI_PATH, 'openapi'],
]);

function shuttingDown(): PortariaError {
  return new PortariaError('service-unavailable', 'The gateway is shutting down.', {
    reason: 'shutting-down',
  });
}

/** The token must carry every scope the route requires: else 403 insufficient_scope. */
function checkScopes(route: CompiledRoute, principal: Principal): void {
  if (hasScopes(principal.scopes, route.scopes)) return;
  const needed = route.scopes.join(' ');
  throw new PortariaError(
    'insufficient-scope',
    'The access token lacks a scope this route requires.',
    {
      reason: 'insufficient-scope',
      headers: {
        'www-authenticate': `Bearer realm="portaria", error="insufficient_scope", scope="${needed}"`,
      },
    },
  );
}

function ignoreSocketError(): void {}

/** The methods the gateway forwards (the `Allow` of its 405s for CONNECT and TRACE). */
const FORWARDED_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';

function isForwardedMethod(method: string | undefined): boolean {
  switch (method) {
    case 'GET':
    case 'POST':
    case 'PUT':
    case 'PATCH':
    case 'DELETE':
    case 'HEAD':
    case 'OPTIONS':
      return true;
    default:
      return false;
  }
}

/**
 * Other methods are answered here, never forwarded. TRACE: the upstream would echo the
 * request it received — with the identity headers the gateway set — and no API needs it.
 * WebDAV (PROPFIND, MKCOL, LOCK…), PURGE and the rest of what Node's parser knows: an
 * API behind the gateway has no use for them, and a cache or file server that does must
 * not be reachable with them through it.
 */
function methodRefused(method: string | undefined): PortariaError {
  return new PortariaError(
    'method-not-allowed',
    method === 'TRACE' ? 'TRACE is not supported.' : 'This method is not supported.',
    {
      reason: method === 'TRACE' ? 'trace' : 'method',
      headers: { allow: FORWARDED_METHODS },
    },
  );
}

/**
 * Only the chunked transfer coding is understood (Node decodes it): a request body in
 * another coding (`gzip, chunked`) would reach the upstream or the token operation still
 * encoded, as if it were the content. RFC 9112 §6.1: answer 501.
 */
function checkTransferCoding(req: IncomingMessage, value: string): void {
  // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has faulty framing, and
  // the connection must close after it (a 1.0 sender cannot know chunked; whatever
  // follows on the connection is not to be trusted as the next request).
  if (req.httpVersionMajor === 1 && req.httpVersionMinor === 0) {
    throw new PortariaError(
      'invalid-request',
      'An HTTP/1.0 request must not use Transfer-Encoding.',
      { reason: 'http10-transfer-encoding', headers: { connection: 'close' } },
    );
  }
  // A declined upgrade offer on older Node: no parser left to read a chunked body.
  if (isDeclinedUpgrade(req)) throw chunkedOfferRefused();
  if (isChunkedOnly(value)) return;
  throw new PortariaError('not-implemented', 'Only the chunked transfer coding is supported.', {
    reason: 'transfer-coding',
    headers: { connection: 'close' },
  });
}

function hasBody(req: IncomingMessage): boolean {
  return (
    req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0'
  );
}
