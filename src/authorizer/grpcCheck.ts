/**
 * Envoy's `ext_authz` over gRPC: `envoy.service.auth.v3.Authorization/Check`. The
 * CheckRequest describes the original request, and the answer is the pipeline's, as on
 * the HTTP entries (`decisionGateway.ts`):
 *
 *   peer        the gRPC peer must be one of `server.trustedProxies`, else a denied 403
 *               `untrusted-peer`;
 *   request     `attributes.request.http`: `method`, `path` (Envoy's path holds the query;
 *               canonicalised as in proxy mode, 400 `invalid-path`), `headers` (keys in
 *               lower case, repeated fields joined by Envoy) or, with Envoy's
 *               `encode_raw_headers`, `header_map`; the Authorization value and its count
 *               from there, `traceparent` for the trace, `x-request-id` as the request id;
 *   certificate `attributes.source.certificate` (URL-encoded PEM, with Envoy's
 *               `include_peer_certificate: true`), read and verified as a proxy's
 *               certificate header (`clientCertificate.source: header`: the same CA and
 *               CRL files), so certificate-bound tokens are checked against it.
 *
 * Every decision is an OK RPC: an allow is `status` OK with `ok_response` (the identity
 * headers, set over whatever the request carried, and the reserved names to remove); a
 * refusal is `status` UNAUTHENTICATED (401), PERMISSION_DENIED (403) or the closest
 * google.rpc code, with `denied_response` holding the HTTP status, the challenge and the
 * problem details Envoy sends the client. A failed RPC is never the way to refuse: Envoy
 * turns it into its own 403 without the challenge, or lets the request through under
 * `failure_mode_allow`. A CheckRequest that cannot be read is a denied 400; an
 * unexpected failure a denied 500 without a body. The access line and metrics are the
 * original request's, marked `portaria.decision.entry: envoy-grpc`.
 */
import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import type { CertificateHeaderReader } from '../certificates/certificateHeaderReader.js';
import { isPortariaError, PortariaError, problemJson } from '../errors.js';
import { tooManyHeaderLines } from '../http/framingChecks.js';
import { instanceOf, pathOnly } from '../http/replies.js';
import type { RequestAccounting } from '../http/requestAccounting.js';
import { RequestScope, requestIdFor } from '../http/requestScope.js';
import { methodClass } from '../observability/metrics.js';
import { originalRequestInto } from './decisionGateway.js';
import { type DecisionEntryDeps, decisionAccounting } from './decisions.js';
import { checkedMethod, originalRefused } from './originalRequest.js';

/** The parts of a CheckRequest read here (proto field names; absent messages null). */
export interface CheckRequest {
  readonly attributes?: {
    readonly source?: PeerAttributes | null;
    readonly request?: {
      readonly http?: HttpAttributes | null;
    } | null;
  } | null;
}

interface PeerAttributes {
  readonly address?: {
    readonly socket_address?: { readonly address?: string } | null;
  } | null;
  readonly certificate?: string;
}

interface HttpAttributes {
  readonly id?: string;
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>> | null;
  readonly header_map?: {
    readonly headers?: readonly {
      readonly key?: string;
      readonly value?: string;
      readonly raw_value?: Buffer;
    }[];
  } | null;
  readonly path?: string;
  readonly host?: string;
  readonly scheme?: string;
  readonly protocol?: string;
}

interface HeaderValueOption {
  readonly header: { readonly key: string; readonly value: string };
  /** Envoys before `append_action` read this (deprecated, default true: append). */
  readonly append: { readonly value: boolean };
  readonly append_action: 'OVERWRITE_IF_EXISTS_OR_ADD';
}

export interface CheckResponse {
  readonly status: { readonly code: number };
  readonly ok_response?: {
    readonly headers: readonly HeaderValueOption[];
    readonly headers_to_remove: readonly string[];
    /** Added to the client's answer (Envoy 1.22+): the RateLimit fields of a metered request. */
    readonly response_headers_to_add?: readonly HeaderValueOption[];
  };
  readonly denied_response?: {
    readonly status: { readonly code: number };
    readonly headers: readonly HeaderValueOption[];
    readonly body: string;
  };
}

/** google.rpc.Code values (google/rpc/code.proto). */
const RPC = {
  ok: 0,
  invalidArgument: 3,
  deadlineExceeded: 4,
  notFound: 5,
  permissionDenied: 7,
  resourceExhausted: 8,
  unimplemented: 12,
  internal: 13,
  unavailable: 14,
  unauthenticated: 16,
} as const;

/** The google.rpc code of a refusal's HTTP status (code.proto's HTTP mapping). */
export function rpcCodeOf(status: number): number {
  switch (status) {
    case 401:
      return RPC.unauthenticated;
    case 403:
      return RPC.permissionDenied;
    case 404:
      return RPC.notFound;
    case 408:
    case 504:
      return RPC.deadlineExceeded;
    case 429:
      return RPC.resourceExhausted;
    case 501:
      return RPC.unimplemented;
    case 502:
    case 503:
      return RPC.unavailable;
    default:
      return status < 500 ? RPC.invalidArgument : RPC.internal;
  }
}

/** A refusal's headers that belong to the HTTP connection, not to Envoy's local reply. */
const HOP_BY_HOP = new Set(['connection']);

/** The name the reader's refusals give the field ("The … header is …"). */
export const CERTIFICATE_FIELD = 'attributes.source.certificate';

export interface GrpcCheckDeps extends DecisionEntryDeps {
  /**
   * With `clientCertificate.source: header`: the reader of `attributes.source.certificate`
   * (URL-encoded PEM, over the same trust as the proxy's header); null: the field is
   * ignored and decisions see no certificate.
   */
  readonly certificate: CertificateHeaderReader | null;
}

export class GrpcCheck {
  readonly #deps: GrpcCheckDeps;
  readonly #accounting: RequestAccounting;

  constructor(deps: GrpcCheckDeps) {
    this.#deps = deps;
    this.#accounting = decisionAccounting(deps);
  }

  /** The `Check` handler. */
  readonly check = (
    call: ServerUnaryCall<CheckRequest, CheckResponse>,
    callback: sendUnaryData<CheckResponse>,
  ): void => {
    const scope = new RequestScope();
    scope.decision = 'envoy-grpc';
    this.#accounting.decisionBegun(scope);
    const answer = (response: CheckResponse, status: number) => {
      // Envoy gave up (its timeout) or the call was cut: nobody got this answer.
      this.#accounting.decisionEnded(scope, call.cancelled ? 499 : status);
      callback(null, response);
    };
    const allowed = (headers: OriginalHeaders) => {
      let response: CheckResponse;
      try {
        response = this.#allow(scope, headers);
      } catch (error) {
        this.#refuse(scope, error, answer);
        return;
      }
      answer(response, 200);
    };
    try {
      const headers = this.#begin(scope, call);
      const waiting = this.#decide(scope, call.request, headers);
      if (waiting !== undefined) {
        waiting.then(
          () => allowed(headers),
          (error: unknown) => this.#refuse(scope, error, answer),
        );
        return;
      }
      allowed(headers);
    } catch (error) {
      this.#refuse(scope, error, answer);
    }
  };

  /** Resolves once every decision received so far has written its access line. */
  responsesClosed(): Promise<void> {
    return this.#accounting.allWritten();
  }

  /**
   * The scope's request fields as the HTTP entries' accounting fills them: id, peer,
   * client address, target as sent, User-Agent, scheme, trace. Never throws: a request
   * that cannot be read is refused by `#decide`, with its line.
   */
  #begin(scope: RequestScope, call: ServerUnaryCall<CheckRequest, CheckResponse>): OriginalHeaders {
    const attributes = call.request?.attributes;
    const http = attributes?.request?.http ?? null;
    const headers = headersOf(http);
    scope.id = requestIdFor(headers['x-request-id']);
    const peer = peerAddressOf(call.getPeer());
    scope.peerAddress = peer;
    const trusted = this.#deps.trustedProxies.trusts(peer);
    const source = attributes?.source?.address?.socket_address?.address;
    scope.clientAddress = trusted && source !== undefined && source !== '' ? source : peer;
    scope.method = typeof http?.method === 'string' ? http.method : '';
    scope.methodClass = methodClass(scope.method);
    scope.url = typeof http?.path === 'string' ? http.path : undefined;
    scope.userAgent = headers['user-agent'];
    scope.proto = http?.scheme === 'https' ? 'https' : 'http';
    const tracing = this.#deps.tracing;
    if (tracing !== null) {
      const protocol = http?.protocol ?? '';
      scope.trace = tracing.startRequest(scope.method, headers, () => ({
        path: pathOnly(scope.url),
        clientAddress: scope.clientAddress,
        serverAddress: undefined,
        serverPort: undefined,
        protocolVersion: protocol.startsWith('HTTP/') ? protocol.slice(5) : protocol,
      }));
    }
    return { all: headers, authorizationLines: authorizationLinesOf(http, headers) };
  }

  #decide(
    scope: RequestScope,
    request: CheckRequest,
    headers: OriginalHeaders,
  ): void | Promise<void> {
    if (!this.#deps.trustedProxies.trusts(scope.peerAddress)) {
      throw new PortariaError(
        'untrusted-peer',
        'Decisions are answered to the trusted proxies only (server.trustedProxies).',
        { reason: 'peer-not-trusted' },
      );
    }
    const http = request?.attributes?.request?.http;
    if (http === undefined || http === null) {
      throw originalRefused('The CheckRequest carries no attributes.request.http.');
    }
    if (fieldCount(headers.all) > this.#deps.maxHeaderLines) throw tooManyHeaderLines();
    scope.authorization = headers.all.authorization;
    scope.authorizationLines = headers.authorizationLines;
    const path = typeof http.path === 'string' ? http.path : '';
    if (path === '') throw originalRefused('The CheckRequest carries no request path.');
    originalRequestInto(scope, {
      method: checkedMethod(typeof http.method === 'string' ? http.method : '', 'The method'),
      target: path,
    });
    const certificate = request.attributes?.source?.certificate;
    const reader = this.#deps.certificate;
    if (reader !== null && typeof certificate === 'string' && certificate !== '') {
      scope.certificate = reader.read(certificate);
    }
    const proof = headers.all.dpop;
    if (this.#deps.dpop === true && proof !== undefined) {
      // Envoy joins repeated fields with `,`, which no compact JWS holds.
      scope.dpopProof = proof;
      scope.dpopProofLines = proof.includes(',') ? 2 : 1;
      const scheme = http.scheme === 'https' ? 'https' : 'http';
      scope.origin =
        typeof http.host === 'string' && http.host !== '' ? `${scheme}://${http.host}` : '';
    }
    return this.#deps.decisions.decide(scope);
  }

  #allow(scope: RequestScope, headers: OriginalHeaders): CheckResponse {
    const decisions = this.#deps.decisions;
    const identity = decisions.identityHeaders(scope);
    const set: HeaderValueOption[] = [];
    for (let i = 0; i < identity.length; i += 2) {
      set.push(overwrite(identity[i] as string, identity[i + 1] as string));
    }
    const fields = decisions.rateLimitHeaders(scope);
    const answer: HeaderValueOption[] = [];
    for (let i = 0; i < fields.length; i += 2) {
      answer.push(overwrite(fields[i] as string, fields[i + 1] as string));
    }
    return {
      status: { code: RPC.ok },
      ok_response: {
        headers: set,
        headers_to_remove: decisions.headersToRemove(identity, Object.keys(headers.all)),
        ...(answer.length === 0 ? {} : { response_headers_to_add: answer }),
      },
    };
  }

  #refuse(
    scope: RequestScope,
    error: unknown,
    answer: (response: CheckResponse, status: number) => void,
  ): void {
    const requestId = overwrite('x-request-id', scope.id);
    const noStore = overwrite('cache-control', 'no-store');
    if (!isPortariaError(error)) {
      scope.error = error;
      answer(denied(RPC.internal, 500, [noStore, requestId], ''), 500);
      return;
    }
    scope.reason = error.reason;
    if (error.status === 401) this.#deps.metrics.authFailure(error.reason);
    const out = [
      overwrite('content-type', 'application/problem+json'),
      noStore,
      // The body echoes request paths and property names: never to be sniffed as HTML.
      overwrite('x-content-type-options', 'nosniff'),
      requestId,
    ];
    if (error.headers) {
      for (const [name, value] of Object.entries(error.headers)) {
        if (!HOP_BY_HOP.has(name)) out.push(overwrite(name, value));
      }
    }
    const { challenge, dpopNonce } = this.#deps.challenge.refusal(error, scope);
    if (challenge !== undefined) out.push(overwrite('www-authenticate', challenge));
    if (dpopNonce !== undefined) out.push(overwrite('dpop-nonce', dpopNonce));
    const body = problemJson(
      error,
      this.#deps.problemTypeBase,
      instanceOf(scope.urlPath, scope.id),
    );
    answer(denied(rpcCodeOf(error.status), error.status, out, body), error.status);
  }
}

/** The original request's headers (lower-case names) and its Authorization count. */
interface OriginalHeaders {
  readonly all: Readonly<Record<string, string>>;
  readonly authorizationLines: number;
}

/**
 * The headers map, or Envoy's `header_map` (`encode_raw_headers: true`), whose repeated
 * fields come as separate entries: joined here with `,` as Envoy joins them in the map.
 */
function headersOf(http: HttpAttributes | null): Record<string, string> {
  const map = http?.headers;
  if (map !== undefined && map !== null && Object.keys(map).length > 0) return map;
  const entries = http?.header_map?.headers;
  const out: Record<string, string> = Object.create(null);
  if (entries === undefined) return out;
  for (const entry of entries) {
    const key = (entry.key ?? '').toLowerCase();
    if (key === '') continue;
    const value =
      entry.raw_value !== undefined && entry.raw_value.length > 0
        ? entry.raw_value.toString('latin1')
        : (entry.value ?? '');
    out[key] = out[key] === undefined ? value : `${out[key]},${value}`;
  }
  return out;
}

/** How many Authorization fields came: one in the map when present; each in `header_map`. */
function authorizationLinesOf(
  http: HttpAttributes | null,
  headers: Readonly<Record<string, string>>,
): number {
  if (headers.authorization === undefined) return 0;
  const entries = http?.headers;
  if (entries !== undefined && entries !== null && Object.keys(entries).length > 0) return 1;
  let lines = 0;
  for (const entry of http?.header_map?.headers ?? []) {
    if ((entry.key ?? '').toLowerCase() === 'authorization') lines++;
  }
  return lines;
}

/** The header fields of the map, as `server.maxHeaderLines` counts them: no pseudo-headers. */
function fieldCount(headers: Readonly<Record<string, string>>): number {
  let count = 0;
  for (const name in headers) if (!name.startsWith(':')) count++;
  return count;
}

/**
 * The address in grpc-js's peer string: `host:port` (an IPv6 host unbracketed or, in
 * some releases, bracketed); undefined when there is none (a Unix socket).
 */
export function peerAddressOf(peer: string): string | undefined {
  const colon = peer.lastIndexOf(':');
  if (colon <= 0) return undefined;
  const host = peer.slice(0, colon);
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** A header Envoy sets, replacing any value of that name (and `append: false` for older Envoys). */
function overwrite(name: string, value: string): HeaderValueOption {
  return {
    header: { key: name.toLowerCase(), value },
    append: { value: false },
    append_action: 'OVERWRITE_IF_EXISTS_OR_ADD',
  };
}

function denied(
  code: number,
  status: number,
  headers: readonly HeaderValueOption[],
  body: string,
): CheckResponse {
  return { status: { code }, denied_response: { status: { code: status }, headers, body } };
}
