/**
 * One typed scope per request: the only home of per-request state. Created at the edge,
 * filled by the opening steps (target, Authorization) and, being the `AccessRequest` the
 * protected steps read and fill, by those (token, principal, route), handed to the
 * forwarder as its context (which records an upstream cut in it), and read when the
 * response ends (access line and metrics). It lives on the response object
 * (`GatewayResponse`), so the "response closed" listener is one shared function, not a
 * closure per request.
 */
import { randomUUID } from 'node:crypto';
import { type IncomingMessage, ServerResponse } from 'node:http';
import type { ClientCertificate } from '../domain/clientCertificate.js';
import type { DecisionEntry } from '../domain/decisionEntry.js';
import type { Principal } from '../domain/principal.js';
import type { RequestTarget } from '../domain/requestPath.js';
import type { FailureReason } from '../errors.js';
import { type AccessRecord, pathOf } from '../observability/accessLine.js';
import type { MethodClass } from '../observability/metrics.js';
import type { RequestTrace } from '../observability/tracing.js';
import type { AccessRequest, AuthScheme } from '../pipeline/accessRequest.js';
import type { QuotaDecision } from '../pipeline/meteringPolicies.js';
import type { ForwardContext } from '../proxy/forwarder.js';
import type { ForwardedProto } from '../proxy/headers.js';
import type { CompiledRoute } from '../proxy/routeTable.js';
import type { UpstreamErrorKind } from '../proxy/upstreamErrors.js';
import type { RefusalShape } from './replies.js';

export class RequestScope implements ForwardContext, AccessRecord, AccessRequest {
  /** Request id: the caller's valid `X-Request-Id`, or a generated UUID. */
  id = '';
  /** The TCP peer's address. */
  peerAddress: string | undefined = undefined;
  /** The client's address behind the trusted proxies; the peer's when it is not one. */
  clientAddress: string | undefined = undefined;
  /** The request's connection (its byte counters give the access line's sizes). */
  socket: object | null = null;
  /** The raw request target (the access line's path when the path step did not run). */
  url: string | undefined = undefined;
  /** The `User-Agent` header as received. */
  userAgent: string | undefined = undefined;
  proto: ForwardedProto = 'http';
  /** The canonical request target (path step). */
  target: RequestTarget | null = null;
  /** The first `Authorization` value, and how many lines came (singleton-fields step). */
  authorization: string | undefined = undefined;
  authorizationLines = 0;
  /** The client certificate (an opening step: TLS, or a trusted proxy's header); null: none. */
  certificate: ClientCertificate | null = null;
  /** The first `DPoP` proof header and its line count (the DPoP opening step). */
  dpopProof: string | undefined = undefined;
  dpopProofLines = 0;
  /** `scheme://host` as the client used it, for a proof's `htu` (the DPoP opening step). */
  origin = '';
  /** A decision entry's second ask about a refused request (nothing counted, never allowed). */
  secondAsk = false;
  /** The accepted credentials' scheme and token (credentials step). */
  scheme: AuthScheme | undefined = undefined;
  token = '';
  /** The verified token's principal (verification step). */
  principal: Principal | null = null;
  /** The token is bound to the presented certificate (certificate binding step). */
  bound = false;
  /** The token is DPoP-bound and the request's proof holds its key (DPoP step). */
  proven = false;
  /** A second ask's proof was used before (DPoP step). */
  proofSpent = false;
  /** The route that serves the path (route step). */
  route: CompiledRoute | null = null;
  /** The quota step's decision (a metered request). */
  quota: QuotaDecision | null = null;
  /** Fields the gateway adds to the upstream's answer (the RateLimit fields); null: none. */
  addedResponseFields: readonly string[] | null = null;
  /** Why the upstream cut a response short after its head was sent (the forwarder sets it). */
  upstreamCut: UpstreamErrorKind | undefined = undefined;
  /** Bounded route label: a route id or one of the fixed names (token, jwks, …). */
  routeId = 'unmatched';
  method = '';
  /** The method's class (an upgrade: `unsafe`), for the revocation freshness policy. */
  methodClass: MethodClass = 'unsafe';
  /** How a refusal is written: problem details, or RFC 6749 errors at the OAuth endpoints. */
  refusalShape: RefusalShape = 'problem';
  /** `performance.now()` at arrival. */
  start = 0;
  /** Client id of the verified token or of the token request, once known. */
  clientId: string | undefined = undefined;
  /** Private reason of a refusal (log and metric label only). */
  reason: FailureReason | undefined = undefined;
  /** Time from dispatch to the end of the upstream response or its failure (the forwarder sets it). */
  upstreamMs: number | undefined = undefined;
  /** The status the access line reports, the duration and the bytes: set when it is written. */
  status = 0;
  durationMs = 0;
  requestBytes = 0;
  responseBytes = 0;
  /** The unexpected error behind a 500, logged with the request id. */
  error: unknown = undefined;
  /**
   * The client sent `Expect: 100-continue` and waits for `100 Continue` before its body:
   * sent only once the request is accepted, just before the body is read (`continueBody`),
   * so a refused request is answered without the client uploading its body first.
   */
  awaitingContinue = false;
  /**
   * The status of a problem Node's parser had the gateway write on the raw socket while
   * this request was in progress (408: the request took longer than
   * `server.requestTimeoutMs` to arrive); 0 when none. The access line reports it, not 499.
   */
  socketStatus = 0;
  /** The request's trace (server span), when tracing is on. */
  trace: RequestTrace | null = null;
  /** `x-fapi-interaction-id` under profile fapi-br (`interactionIdStep.ts`); else undefined. */
  interactionId: string | undefined = undefined;
  /** The decision entry that asked (`authorizer/`); undefined: a request of the public listener. */
  decision: DecisionEntry | undefined = undefined;

  get requestId(): string {
    return this.id;
  }

  /** The client certificate's SHA-256 in upper-case hex (the access line's), when one came. */
  get certificateSha256(): string | undefined {
    const certificate = this.certificate;
    if (certificate === null) return undefined;
    return Buffer.from(certificate.thumbprint, 'base64url').toString('hex').toUpperCase();
  }

  /** The client certificate's verdict (the access line's), when one came. */
  get certificateVerdict(): string | undefined {
    return this.certificate?.verdict;
  }

  /** The path without the query: the canonical target's, else the raw target's. */
  get urlPath(): string {
    return this.target?.path ?? pathOf(this.url);
  }
}

/** Sends the `100 Continue` a client waits for, once; nothing if it did not ask. */
export function continueBody(res: GatewayResponse): void {
  if (!res.scope.awaitingContinue) return;
  res.scope.awaitingContinue = false;
  res.writeContinue();
}

export class GatewayResponse<
  Request extends IncomingMessage = IncomingMessage,
> extends ServerResponse<Request> {
  readonly scope = new RequestScope();
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Keeps a caller's `X-Request-Id` when it is short and plain, else makes one. */
export function requestIdFor(header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID();
}
