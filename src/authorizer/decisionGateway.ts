/**
 * The HTTP decision listener (`mode: authorizer` or `both`, `authorizer.port`): the
 * proxy in front asks whether a request may pass, and the answer is the pipeline's —
 *
 *   GET /nginx      nginx `auth_request`, the original method and URI in the headers
 *                   `authorizer.originalMethodHeader` / `originalUriHeader`
 *   GET /traefik    Traefik `forwardAuth`: `X-Forwarded-Method`, `X-Forwarded-Uri`
 *   ANY /envoy/…    Envoy's HTTP `ext_authz` (`path_prefix: /envoy`): the original
 *                   method, and the original target after the prefix
 *
 * each one: peer trusted (else 403 `untrusted-peer`: only `server.trustedProxies` may say
 * what the original request was) → header lines → singleton fields (the Authorization
 * value and its line count) → the original request (400 when missing or repeated; its
 * target canonicalised as in proxy mode, 400 `invalid-path`) → the client certificate
 * from the proxy's header (`clientCertificate.source: header`) → the protected steps
 * (`decisions.ts`) → the answer: 200 with the identity headers (and for Envoy
 * `x-envoy-auth-headers-to-remove`; a cacheable nginx answer also `X-Accel-Expires`, for
 * nginx's proxy cache), or the refusal as in proxy mode — problem details with the
 * challenge, never cacheable. The access line and metrics are the original
 * request's (its method, route and path), marked `portaria.decision.entry`. Under
 * `profile: fapi-br` every answer echoes the original `x-fapi-interaction-id` (or one
 * generated), as the public listener's do.
 */
import type { IncomingMessage } from 'node:http';
import type { CertificateHeaderReader } from '../certificates/certificateHeaderReader.js';
import type { AuthorizerConfig } from '../config/types.js';
import { parseRequestTarget } from '../domain/requestPath.js';
import { isPortariaError, PortariaError } from '../errors.js';
import { certificateHeaderStep } from '../http/certificateHeaderStep.js';
import { dpopHeaderStep } from '../http/dpopHeaderStep.js';
import { echoInteractionId, interactionIdStep } from '../http/interactionIdStep.js';
import { headerLines, type OpeningStep, singletonFields } from '../http/openingSteps.js';
import { instanceOf, sendRefusal, sendServerError } from '../http/replies.js';
import type { RequestAccounting } from '../http/requestAccounting.js';
import type { GatewayResponse, RequestScope } from '../http/requestScope.js';
import { methodClass } from '../observability/metrics.js';
import { proofReplayed } from '../pipeline/dpopProofStep.js';
import { cacheControlFor, type DecisionEntryDeps, decisionAccounting } from './decisions.js';
import {
  type DecisionEntry,
  ENVOY_PREFIX,
  envoyOriginal,
  nginxOriginal,
  type OriginalRequest,
  traefikOriginal,
} from './originalRequest.js';

/**
 * Set by the proxy when it asks again about a request refused a moment ago, to hand the
 * client the refusal's answer (nginx's `error_page`, docs/examples): such an ask uses no
 * quota and is never allowed — when every step passes, 401 for a proof its first ask
 * spent, else a 503 to retry (the refusal no longer holds).
 */
export const SECOND_ASK_HEADER = 'x-portaria-second-ask';

/** 503 to a second ask every step passed: the first ask's refusal no longer holds. */
const refusalLapsed = (): PortariaError =>
  new PortariaError('service-unavailable', 'The request was refused a moment ago; retry it.', {
    reason: 'refusal-lapsed',
    headers: { 'retry-after': '1' },
  });

/** Envoy's HTTP filter removes the headers this response header names (comma-separated). */
const ENVOY_HEADERS_TO_REMOVE = 'x-envoy-auth-headers-to-remove';

export interface DecisionGatewayDeps extends DecisionEntryDeps {
  readonly authorizer: AuthorizerConfig;
  /** True once shutdown began: answers then carry `Connection: close`. */
  readonly draining: () => boolean;
  /** With `clientCertificate.source: header`: the proxy's certificate header. */
  readonly certificateHeader?: CertificateHeaderReader;
  /**
   * `profile: fapi-br`: the original request's `x-fapi-interaction-id` (checked, or one
   * generated) is echoed in every answer, for the proxy to pass on (`auth_request_set`).
   */
  readonly interactionId?: boolean;
}

export class DecisionGateway {
  readonly #deps: DecisionGatewayDeps;
  readonly #accounting: RequestAccounting;
  readonly #before: readonly OpeningStep[];
  readonly #certificate: OpeningStep | null;
  readonly #dpop: OpeningStep | null;

  constructor(deps: DecisionGatewayDeps) {
    this.#deps = deps;
    this.#accounting = decisionAccounting(deps);
    this.#before = [
      ...(deps.interactionId === true ? [interactionIdStep] : []),
      headerLines(deps.maxHeaderLines),
      singletonFields,
    ];
    // The proxy is trusted (checked first): its X-Forwarded-Proto/-Host name the origin.
    this.#dpop = deps.dpop === true ? dpopHeaderStep(deps.trustedProxies, 'http') : null;
    this.#certificate =
      deps.certificateHeader === undefined
        ? null
        : certificateHeaderStep({
            reader: deps.certificateHeader,
            trustedProxies: deps.trustedProxies,
            ignored: () => deps.metrics.certificateHeaderIgnored(),
          });
  }

  /** `request` listener. */
  readonly handleRequest = (req: IncomingMessage, res: GatewayResponse): void => {
    const scope = res.scope;
    // The span starts once the original request is known (its method and target).
    this.#accounting.begin(scope, req, false);
    if (this.#deps.draining()) res.setHeader('connection', 'close');
    res.on('close', this.#accounting.onResponseClose);
    // A decision reads no body: whatever came is discarded, not left on the connection.
    req.resume();
    try {
      const waiting = this.#decide(req, res);
      if (waiting !== undefined) {
        // An answer that fails midway is failed too, never an unhandled rejection.
        waiting.then(() => this.#allow(req, res)).catch((error: unknown) => this.#fail(res, error));
        return;
      }
      this.#allow(req, res);
    } catch (error) {
      this.#fail(res, error);
    }
  };

  /** Resolves once every decision received so far has written its access line. */
  responsesClosed(): Promise<void> {
    return this.#accounting.allWritten();
  }

  #decide(req: IncomingMessage, res: GatewayResponse): void | Promise<void> {
    const scope = res.scope;
    if (!this.#deps.trustedProxies.trusts(scope.peerAddress)) {
      throw new PortariaError(
        'untrusted-peer',
        'Decisions are answered to the trusted proxies only (server.trustedProxies).',
        { reason: 'peer-not-trusted' },
      );
    }
    const entry = entryOf(req.url ?? '');
    if (entry === null) {
      throw new PortariaError('not-found', 'No decision entry has this path.', {
        reason: 'no-decision-entry',
      });
    }
    scope.decision = entry;
    scope.secondAsk = req.headers[SECOND_ASK_HEADER] !== undefined;
    for (const step of this.#before) step(req, scope);
    originalRequestInto(scope, this.#original(entry, req));
    this.#accounting.startTrace(scope, req);
    this.#certificate?.(req, scope);
    this.#dpop?.(req, scope);
    return this.#deps.decisions.decide(scope);
  }

  #original(entry: DecisionEntry, req: IncomingMessage): OriginalRequest {
    const { authorizer } = this.#deps;
    switch (entry) {
      case 'nginx':
        return nginxOriginal(req, authorizer.originalMethodHeader, authorizer.originalUriHeader);
      case 'traefik':
        return traefikOriginal(req);
      default:
        return envoyOriginal(req);
    }
  }

  #allow(req: IncomingMessage, res: GatewayResponse): void {
    const scope = res.scope;
    if (scope.secondAsk) {
      // The first ask was refused and nothing of it passed: allowing now would hand the
      // client an empty 200 for a request never forwarded. Its proof replayed, or the
      // refusal lapsed between the asks (a bucket refilled, a revocation list caught up).
      this.#fail(res, scope.proofSpent ? proofReplayed() : refusalLapsed());
      return;
    }
    const decisions = this.#deps.decisions;
    const identity = decisions.identityHeaders(scope);
    for (let i = 0; i < identity.length; i += 2) {
      res.setHeader(identity[i] as string, identity[i + 1] as string);
    }
    if (scope.decision === 'envoy') {
      const remove = decisions.headersToRemove(identity, Object.keys(req.headers));
      if (remove.length > 0) res.setHeader(ENVOY_HEADERS_TO_REMOVE, remove.join(','));
    }
    // For the client's answer: nginx's auth_request_set + add_header, Envoy's
    // allowed_client_headers_on_success (docs/examples).
    const fields = decisions.rateLimitHeaders(scope);
    for (let i = 0; i < fields.length; i += 2) {
      res.setHeader(fields[i] as string, fields[i + 1] as string);
    }
    const seconds = decisions.cacheSeconds(scope);
    // nginx's proxy cache stores no `private` answer but follows X-Accel-Expires over
    // Cache-Control — when it comes first (nginx before 1.23 reads them in order).
    if (scope.decision === 'nginx' && seconds >= 1) res.setHeader('x-accel-expires', seconds);
    res.setHeader('cache-control', cacheControlFor(seconds));
    // A cached decision is the decision for these credentials only.
    res.setHeader('vary', 'Authorization');
    res.setHeader('x-request-id', scope.id);
    echoInteractionId(res);
    res.setHeader('content-length', 0);
    res.statusCode = 200;
    res.end();
  }

  #fail(res: GatewayResponse, error: unknown): void {
    const scope = res.scope;
    if (!res.headersSent) res.setHeader('x-request-id', scope.id);
    echoInteractionId(res);
    if (!isPortariaError(error)) {
      scope.error = error;
      this.#accounting.startTrace(scope, res.req);
      sendServerError(res);
      return;
    }
    scope.reason = error.reason;
    // Refused before the original request was read: the span is the decision request's.
    this.#accounting.startTrace(scope, res.req);
    if (error.status === 401) this.#deps.metrics.authFailure(error.reason);
    sendRefusal(
      res,
      error,
      this.#deps.problemTypeBase,
      instanceOf(scope.urlPath, scope.id),
      this.#deps.challenge.refusal(error, scope),
    );
  }
}

/** The entry a decision request's path names, or null. */
function entryOf(url: string): DecisionEntry | null {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (path === '/nginx') return 'nginx';
  if (path === '/traefik') return 'traefik';
  if (url.startsWith(`${ENVOY_PREFIX}/`)) return 'envoy';
  return null;
}

/**
 * The original request in the scope, in place of the decision request's: its method (and
 * class, for the revocation freshness policy) and its canonical target, which the access
 * line, the metrics and the route step read.
 */
export function originalRequestInto(scope: RequestScope, original: OriginalRequest): void {
  scope.method = original.method;
  scope.methodClass = methodClass(original.method);
  scope.url = original.target;
  scope.target = parseRequestTarget(original.target);
}
