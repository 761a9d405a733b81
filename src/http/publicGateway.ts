/**
 * The public listener's entries and dispatch. Every request first gets its scope and its
 * accounting, runs the opening steps (`openingSteps.ts`: framing, singleton fields, one
 * canonical target), and is then one of four kinds —
 *   the token operation (open), the OAuth 2.0 endpoints (open, `oauthRoutes.ts`), the
 *   public key set, the OpenAPI description and the discovery documents (open,
 *   `documents/`), or a protected request: the protected steps
 *   (`pipeline/protectedSteps.ts`) over the request scope,
 *   then the entry's own last step — forward (HTTP via undici) or open a tunnel
 *   (WebSocket upgrades via proxy/webSocketProxy).
 * Only exact canonical paths reach the open handlers; everything else needs a token.
 *
 * Refusals are PortariaErrors, written in the shape the kind chose (problem details; RFC
 * 6749 errors at the OAuth endpoints) with the challenge `challenge.ts` derives from
 * them; anything else thrown is a bare 500, with the error logged under the request id
 * (requestAccounting.ts writes the lines).
 *
 * Shutdown: while draining, an upgrade is refused with 503 (`shutting-down`), checked on
 * arrival and again once its token is verified; a tunnel opened during the drain would
 * keep the stop waiting for the whole grace.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { CertificateHeaderReader } from '../certificates/certificateHeaderReader.js';
import type { Config } from '../config/types.js';
import type { OAuthDiscovery } from '../documents/oauthDiscovery.js';
import { JWKS_PATH, OPENAPI_PATH } from '../documents/openPaths.js';
import type { StaticDocument } from '../documents/staticDocument.js';
import { TOKEN_PATH } from '../domain/requestPath.js';
import { type FailureReason, isPortariaError, PortariaError } from '../errors.js';
import type { AccessLog, Logger } from '../observability/logger.js';
import type { MethodClass, Metrics } from '../observability/metrics.js';
import type { Tracing } from '../observability/tracing.js';
import type { ClientRequiresBinding } from '../pipeline/certificateBinding.js';
import type { DpopStepDeps } from '../pipeline/dpopProofStep.js';
import { type ProtectedStep, protectedSteps } from '../pipeline/protectedSteps.js';
import { answerFields, type QuotaStepDeps } from '../pipeline/quotaStep.js';
import { runSteps } from '../pipeline/runSteps.js';
import type { Forwarder, ForwardFailure } from '../proxy/forwarder.js';
import type { RouteTable } from '../proxy/routeTable.js';
import {
  markRequestStart,
  writeSocketProblem,
  writeSocketResponse,
} from '../proxy/socketProblem.js';
import type { UpgradeDone, WebSocketProxy } from '../proxy/webSocketProxy.js';
import type { PeerCertificates } from '../tls/peerCertificate.js';
import type { TokenVerifier } from '../verify/tokenVerifier.js';
import { certificateHeaderStep } from './certificateHeaderStep.js';
import { basicChallenge, type EdgeChallenge } from './challenge.js';
import { clientCertificateStep } from './clientCertificateStep.js';
import { dpopHeaderStep } from './dpopHeaderStep.js';
import { checkUpgradeWithoutBody, hasBody } from './framingChecks.js';
import { echoInteractionId, interactionIdStep } from './interactionIdStep.js';
import { FORWARDED_METHODS, isForwardedMethod, methodRefused } from './methodRule.js';
import type { OAuthRoutes } from './oauthRoutes.js';
import {
  type OpeningStep,
  type OpeningSteps,
  openingSteps,
  runOpeningSteps,
} from './openingSteps.js';
import { BodyTooLarge } from './readBoundedBody.js';
import { instanceOf, pathOnly, sendRefusal, sendServerError } from './replies.js';
import { RequestAccounting, UPGRADE_CLASS } from './requestAccounting.js';
import { continueBody, type GatewayResponse, RequestScope } from './requestScope.js';
import { serveDocument } from './serveDocument.js';
import { handleTokenRequest, type TokenRouteDeps } from './tokenRoute.js';
import { refuseUpgradeOn, refuseUpgradeOnOpenPath, shuttingDown } from './upgradeRefusals.js';

export interface PublicGatewayDeps {
  readonly config: Config;
  readonly tokenRoute: TokenRouteDeps;
  /** The OAuth 2.0 endpoints (absent: none). */
  readonly oauth?: OAuthRoutes;
  readonly jwks: StaticDocument;
  readonly openapi: StaticDocument;
  /** RFC 8414 / RFC 9728 documents and challenge parameter; absent: the OAuth surface is off. */
  readonly discovery?: OAuthDiscovery;
  /** The edge's `WWW-Authenticate` challenges (with `resource_metadata` while OAuth is on). */
  readonly challenge: EdgeChallenge;
  readonly verifier: TokenVerifier;
  /** The current route table (replaced on reload). */
  readonly routes: () => RouteTable;
  /** See `ProtectedStepsDeps.clientRequiresBinding`. */
  readonly clientRequiresBinding?: ClientRequiresBinding;
  /** See `ProtectedStepsDeps.clientRequiresSenderConstrained`. */
  readonly clientRequiresSenderConstrained?: ClientRequiresBinding;
  readonly forwarder: Forwarder;
  readonly webSockets: WebSocketProxy;
  /** With `dpop.enabled`: DPoP proofs read and checked (`pipeline/dpopProofStep.ts`). */
  readonly dpop?: DpopStepDeps;
  /** With quota policies: the quota step's parts (`pipeline/quotaStep.ts`). */
  readonly quota?: QuotaStepDeps;
  /** `quotas.headers: always`: an allowed metered answer carries the RateLimit fields too. */
  readonly rateLimitFieldsAlways?: boolean;
  /** False with `mode: authorizer`: a protected request gets 404 `decisions-only`. Default true. */
  readonly forwards?: boolean;
  readonly logger: Logger;
  /** One line per request (no redaction: fixed, non-secret fields only). */
  readonly accessLogger: AccessLog;
  readonly metrics: Metrics;
  /** True once shutdown began: responses then carry `Connection: close`. */
  readonly draining: () => boolean;
  /** True once the shutdown grace ended and the remaining connections are being cut. */
  readonly graceOver?: () => boolean;
  /** See `ProtectedStepsDeps.revocationFreshness`. */
  readonly revocationFreshness?: {
    readonly isStale: () => boolean;
    readonly refuse: Readonly<Record<MethodClass, boolean>>;
  };
  /** OpenTelemetry tracing; null or absent when off. */
  readonly tracing?: Tracing | null;
  /** Client certificates from the TLS connection (`clientCertificate.source: tls`); absent: none read. */
  readonly certificates?: PeerCertificates;
  /** With `clientCertificate.source: header`: the reader of the proxy's certificate header. */
  readonly certificateHeader?: CertificateHeaderReader;
}

export class PublicGateway {
  readonly #deps: PublicGatewayDeps;
  readonly #typeBase: string;
  readonly #opening: OpeningSteps;
  readonly #protected: readonly ProtectedStep[];
  readonly #challenge: EdgeChallenge;
  readonly #accounting: RequestAccounting;
  /** The forwarder's failure callback, shared by every request. */
  readonly #onForwardFailure: ForwardFailure;

  constructor(deps: PublicGatewayDeps) {
    this.#deps = deps;
    this.#typeBase = deps.config.problemTypeBase;
    this.#opening = openingSteps(
      deps.config.server.maxHeaderLines,
      this.#certificateStep(),
      deps.config.profile === 'fapi-br' ? interactionIdStep : null,
      deps.dpop === undefined
        ? null
        : dpopHeaderStep(
            deps.tokenRoute.trustedProxies,
            deps.config.server.tls.enabled ? 'https' : 'http',
          ),
    );
    this.#protected = protectedSteps({
      verifier: deps.verifier,
      ownAudience: deps.config.audience,
      routes: deps.routes,
      ...(deps.clientRequiresBinding === undefined
        ? {}
        : { clientRequiresBinding: deps.clientRequiresBinding }),
      ...(deps.clientRequiresSenderConstrained === undefined
        ? {}
        : { clientRequiresSenderConstrained: deps.clientRequiresSenderConstrained }),
      ...(deps.dpop === undefined ? {} : { dpop: deps.dpop }),
      ...(deps.quota === undefined ? {} : { quota: deps.quota }),
      onStaleRefusal: (kind) => deps.metrics.revocationStaleRefusal(kind),
      ...(deps.revocationFreshness === undefined
        ? {}
        : { revocationFreshness: deps.revocationFreshness }),
    });
    this.#challenge = deps.challenge;
    this.#accounting = new RequestAccounting({
      logger: deps.logger,
      accessLogger: deps.accessLogger,
      metrics: deps.metrics,
      trustedProxies: deps.tokenRoute.trustedProxies,
      ...(deps.graceOver === undefined ? {} : { graceOver: deps.graceOver }),
      tracing: deps.tracing ?? null,
      proto: deps.config.server.tls.enabled ? 'https' : 'http',
    });
    this.#onForwardFailure = (req, res, error) => this.#fail(req, res as GatewayResponse, error);
  }

  /**
   * The certificate opening step of `clientCertificate.source`: from a trusted proxy's
   * header, or from the TLS connection (in `require` mode open only to the served
   * documents); null: none.
   */
  #certificateStep(): OpeningStep | null {
    const { certificates, certificateHeader, metrics } = this.#deps;
    if (certificateHeader !== undefined) {
      return certificateHeaderStep({
        reader: certificateHeader,
        trustedProxies: this.#deps.tokenRoute.trustedProxies,
        ignored: () => metrics.certificateHeaderIgnored(),
      });
    }
    if (certificates === undefined) return null;
    if (this.#deps.config.server.tls.clientCertificates !== 'require') {
      return clientCertificateStep(certificates, null);
    }
    const discovery = this.#deps.discovery;
    return clientCertificateStep(
      certificates,
      (path) =>
        path === JWKS_PATH || path === OPENAPI_PATH || discovery?.document(path) !== undefined,
    );
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
   * `checkContinue` listener: a request with `Expect: 100-continue` is handled like any
   * other, and gets its `100 Continue` only if it is accepted, just before its body is
   * read (Node would send it at once, so a refused upload was sent in full first).
   */
  readonly handleContinue = (req: IncomingMessage, res: GatewayResponse): void => {
    res.scope.awaitingContinue = true;
    this.handleRequest(req, res);
  };

  /** Resolves once every request received so far has written its access line. */
  responsesClosed(): Promise<void> {
    return this.#accounting.allWritten();
  }

  #handle(req: IncomingMessage, res: GatewayResponse): void {
    this.#accounting.begin(res.scope, req);
    // X-Request-Id is set by the forwarder's header policy or, for answers of our own,
    // by #servedHere/#fail: a header set here would push Node's writeHead(status, headers)
    // onto its slow merge path for every forwarded response.
    if (this.#deps.draining()) res.setHeader('connection', 'close');
    res.on('close', this.#accounting.onResponseClose);
    try {
      this.#dispatch(req, res)?.catch((error: unknown) => this.#fail(req, res, error));
    } catch (error) {
      this.#fail(req, res, error);
    }
  }

  /** opening steps → one of the four kinds. Synchronous up to the first I/O. */
  #dispatch(req: IncomingMessage, res: GatewayResponse): Promise<void> | undefined {
    const scope = res.scope;
    runOpeningSteps(this.#opening.request, req, scope);
    echoInteractionId(res);
    const path = (scope.target as NonNullable<RequestScope['target']>).path;
    const oauth = this.#deps.oauth?.get(path);
    if (oauth !== undefined) {
      this.#servedHere(res, oauth.routeId);
      scope.refusalShape = 'oauth';
      return oauth.handle(req, res);
    }
    switch (path) {
      case TOKEN_PATH:
        // X-Request-Id goes in the token answer's one writeHead, or in #fail's refusal.
        res.scope.routeId = 'token';
        return handleTokenRequest(req, res, this.#deps.tokenRoute);
      case JWKS_PATH:
        return this.#document(req, res, 'jwks', this.#deps.jwks);
      case OPENAPI_PATH:
        return this.#document(req, res, 'openapi', this.#deps.openapi);
    }
    const discovery = this.#deps.discovery?.document(path);
    if (discovery !== undefined) return this.#document(req, res, 'discovery', discovery);
    if (!isForwardedMethod(req.method)) throw methodRefused(req.method);
    if (this.#deps.forwards === false) throw decisionsOnly();
    const admitted = runSteps(this.#protected, scope);
    if (admitted !== undefined) return admitted.then(() => this.#forward(req, res));
    this.#forward(req, res);
    return undefined;
  }

  /** The HTTP entry's last step: forward to the route's upstream. */
  #forward(req: IncomingMessage, res: GatewayResponse): void {
    const scope = res.scope;
    continueBody(res);
    if (scope.quota !== null && this.#deps.rateLimitFieldsAlways === true) {
      const fields = answerFields(scope);
      if (fields !== null) {
        scope.addedResponseFields = ['ratelimit-policy', fields.policy, 'ratelimit', fields.limit];
      }
    }
    this.#deps.forwarder.dispatch(
      req,
      res,
      scope.route as NonNullable<RequestScope['route']>,
      scope.target as NonNullable<RequestScope['target']>,
      scope.principal as NonNullable<RequestScope['principal']>,
      scope,
      this.#onForwardFailure,
    );
  }

  /** `connect` listener: CONNECT is refused with 405 problem details on the raw socket. */
  refuseConnect(req: IncomingMessage, socket: Duplex): void {
    socket.on('error', ignoreSocketError);
    markRequestStart(socket);
    // A request like any other for the access log and the metrics.
    const scope = new RequestScope();
    this.#accounting.begin(scope, req);
    scope.reason = 'connect';
    const problem = new PortariaError('method-not-allowed', 'CONNECT is not supported.', {
      reason: 'connect',
      headers: { allow: FORWARDED_METHODS },
    });
    const written = writeSocketProblem(socket, problem, `#${scope.id}`, this.#typeBase, {
      requestId: scope.id,
    });
    this.#accounting.socketRefused(scope, 'unsafe', written ? 405 : 499);
  }

  /**
   * `upgrade` listener: WebSocket handshakes are authenticated like any request. The
   * access line and request metrics are written once per upgrade, once its outcome is known.
   */
  readonly handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', ignoreSocketError);
    // A keep-alive socket may have carried earlier responses: ours start here.
    markRequestStart(socket);
    const scope = new RequestScope();
    this.#accounting.begin(scope, req);
    scope.methodClass = UPGRADE_CLASS;
    let ended = false;
    const done = (status: number, reason: FailureReason | undefined): void => {
      if (ended) return;
      ended = true;
      if (reason !== undefined) scope.reason = reason;
      this.#accounting.upgradeEnded(scope, status);
    };
    this.#upgrade(req, socket, head, scope, done).catch((error: unknown) => {
      if (!isPortariaError(error)) {
        // A failure of ours: a bare 500, nothing about it leaves the process.
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
      const written = writeSocketProblem(
        socket,
        error,
        instanceOf(pathOnly(req.url), scope.id),
        this.#typeBase,
        {
          requestId: scope.id,
          ...this.#challenge.refusal(error, scope),
          interactionId: scope.interactionId,
        },
      );
      done(written ? error.status : 499, error.reason);
    });
  };

  /** drain → opening steps → (open paths refused) → the protected steps → the tunnel. */
  async #upgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    scope: RequestScope,
    done: UpgradeDone,
  ): Promise<void> {
    // No new tunnel during the drain: it would hold the stop for the whole grace.
    if (this.#deps.draining()) throw shuttingDown();
    runOpeningSteps(this.#opening.upgrade, req, scope);
    const target = scope.target as NonNullable<RequestScope['target']>;
    refuseUpgradeOnOpenPath(req, target.path, scope, this.#deps.oauth?.get(target.path));
    if (this.#deps.discovery?.document(target.path) !== undefined) {
      refuseUpgradeOn(req, 'discovery', 'GET, HEAD', scope);
    }
    checkUpgradeWithoutBody(req);
    if (this.#deps.forwards === false) throw decisionsOnly();
    await runSteps(this.#protected, scope);
    // The verification may have spanned the start of the drain.
    if (this.#deps.draining()) throw shuttingDown();
    this.#deps.webSockets.upgrade(
      req,
      socket,
      head,
      scope.route as NonNullable<RequestScope['route']>,
      target,
      scope.principal as NonNullable<RequestScope['principal']>,
      scope,
      done,
    );
  }

  /** The gateway answers this request itself. */
  #document(
    req: IncomingMessage,
    res: GatewayResponse,
    routeId: string,
    document: StaticDocument,
  ): undefined {
    this.#servedHere(res, routeId);
    // A GET or HEAD is served: its pending `100 Continue` goes out first, as Node would
    // send it (Node closes the connection of an Expect request answered without one).
    if (req.method === 'GET' || req.method === 'HEAD') continueBody(res);
    serveDocument(req, res, document);
    return undefined;
  }

  /** Labels a request the gateway answers itself and gives it its `X-Request-Id`. */
  #servedHere(res: GatewayResponse, routeId: string): void {
    res.scope.routeId = routeId;
    res.setHeader('x-request-id', res.scope.id);
  }

  /** Writes a refusal in the shape its kind chose, with its challenge; anything else is a 500. */
  #fail(req: IncomingMessage, res: GatewayResponse, error: unknown): void {
    const scope = res.scope;
    if (!res.headersSent) res.setHeader('x-request-id', scope.id);
    echoInteractionId(res);
    if (!isPortariaError(error)) {
      scope.error = error;
      sendServerError(res);
      return;
    }
    scope.reason = error.reason;
    if (error.status === 401) this.#deps.metrics.authFailure(error.reason);
    // A refused request whose body was not read must not leave it on the connection
    // (its bytes would be parsed as the next request). A bodiless request is complete
    // as far as framing goes even before Node has emitted its end.
    const close = error instanceof BodyTooLarge || (!req.complete && hasBody(req));
    sendRefusal(res, error, this.#typeBase, instanceOf(pathOnly(req.url), scope.id), {
      shape: scope.refusalShape,
      ...(scope.refusalShape === 'oauth'
        ? { challenge: basicChallenge(error, scope.authorization) }
        : this.#challenge.refusal(error, scope)),
      close,
    });
  }
}

function ignoreSocketError(): void {}

/** `mode: authorizer`: nothing is forwarded; the proxy in front asks for decisions instead. */
function decisionsOnly(): PortariaError {
  return new PortariaError(
    'not-found',
    'This gateway forwards nothing: the proxy in front asks it for decisions.',
    { reason: 'decisions-only' },
  );
}
