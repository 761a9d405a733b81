/**
 * One request's trace: its SERVER span (HTTP semantic conventions), parented by the
 * caller's `traceparent` (W3C Trace Context), and the children the request path asks
 * for — token verification, the upstream call (CLIENT, whose context goes upstream),
 * the token operation's steps. Attributes carry bounded identifiers only (route id,
 * failure reason, issuer id, client id): never a token, a secret, a header value or a
 * query string.
 *
 * No SDK code runs here. A recorded span is a plain `SpanRecord` (its ids drawn here, so
 * the upstream gets its context at once) handed on when it ends; the SDK makes and
 * exports it in the export thread (`spanHandoff.ts`). A request the sampler does not
 * record costs its ids and nothing more: no record, no child; the upstream gets the
 * caller's `traceparent`/`tracestate` untouched (the upstream's spans stay children of
 * the caller's, since ours will never exist), or, when the caller sent none, one carrying
 * the gateway's decision (sampled flag off) so that a parent-based sampler upstream
 * follows it.
 */
import { isPortariaError } from '../errors.js';
import { epochMs, SPAN_KIND, type SpanRecord } from './spanRecord.js';
import { sampledTrace, type TraceIds } from './traceIds.js';

/** Our attribute names (the `portaria.` namespace, for what the conventions do not name). */
export const ATTR = {
  route: 'portaria.route.id',
  reason: 'portaria.outcome.reason',
  issuer: 'portaria.issuer.id',
  client: 'portaria.client.id',
  cacheHit: 'portaria.token.cache_hit',
  revoked: 'portaria.token.revoked',
  fetchTrigger: 'portaria.jwks.trigger',
  fetchOutcome: 'portaria.jwks.outcome',
  quotaPolicy: 'portaria.quota.policy',
  quotaOutcome: 'portaria.quota.outcome',
} as const;

/** A metered request's quota decision, as the span names it (bounded: a policy name, a fixed outcome). */
export interface TracedQuota {
  readonly policy: { readonly name: string };
  readonly outcome: string;
}

/** The verification running now (set synchronously around it), for hooks called inside it. */
export interface TraceSlot {
  verifying: SpanRecord | null;
}

/** What the server span records of its request (read only for a recorded request). */
export interface RequestStart {
  /** The request target's path, without its query. */
  readonly path: string;
  readonly clientAddress: string | undefined;
  readonly serverAddress: string | undefined;
  readonly serverPort: number | undefined;
  /** `1.1`, `1.0`. */
  readonly protocolVersion: string;
}

/** An upstream call: the trace fields to send and the end of its span. */
export interface UpstreamCall {
  /** The `traceparent` to send, or null: leave the caller's `traceparent`/`tracestate` as they are. */
  readonly traceparent: string | null;
  /** The `tracestate` to send with `traceparent` (none when undefined). */
  readonly tracestate: string | undefined;
  /** The upstream answered `statusCode` (0: nothing), or failed (`errorType`). */
  end(statusCode: number, errorType: string | undefined): void;
}

/** Ends a token-operation step, with the reason it failed. */
export type StepEnd = (failure?: string) => void;

/** What the verification step's result tells the trace (a `Principal` has it). */
export interface TracedPrincipal {
  readonly issuerId: string;
}

/** The caller's span context, from a valid `traceparent`, and the sampler's decision on it. */
export interface CallerTrace {
  readonly traceId: string;
  readonly spanId: string;
  readonly recorded: boolean;
  /** The caller's `tracestate`, as the W3C propagator re-serialises it. */
  readonly traceState: string | undefined;
}

/** What every request's trace shares (built once by `createTracing`). */
export interface TraceRoot {
  readonly ids: TraceIds;
  readonly slot: TraceSlot;
  /** The caller's trace when `traceparent` is valid, decided by the configured sampler; else null. */
  caller(headers: Readonly<Record<string, string | string[] | undefined>>): CallerTrace | null;
  /** A recorded span has ended: on to the export. */
  finish(record: SpanRecord): void;
}

/** Methods RFC 9110 defines and PATCH; any other is `_OTHER` (HTTP semantic conventions). */
const KNOWN_METHODS: ReadonlySet<string> = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'CONNECT',
  'OPTIONS',
  'TRACE',
  'PATCH',
]);

function noStep(): void {}
function noEnd(): void {}

/** The upstream call of an unrecorded request whose caller sent a valid `traceparent`. */
const UNTOUCHED: UpstreamCall = Object.freeze({
  traceparent: null,
  tracestate: undefined,
  end: noEnd,
});

/** Parsed upstream origins (a handful: one per route's upstream). */
const ORIGINS = new Map<string, { address: string; port: number }>();

function originParts(origin: string): { address: string; port: number } {
  let parts = ORIGINS.get(origin);
  if (parts === undefined) {
    const url = new URL(origin);
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    parts = { address: host, port };
    if (ORIGINS.size < 1024) ORIGINS.set(origin, parts);
  }
  return parts;
}

/** A span record of this thread, started now. */
export function startRecord(
  name: string,
  kind: number,
  traceId: string,
  spanId: string,
  parentSpanId: string | undefined,
  parentRemote: boolean,
  traceState: string | undefined,
): SpanRecord {
  return {
    name,
    kind,
    traceId,
    spanId,
    parentSpanId,
    parentRemote,
    traceState,
    start: epochMs(),
    end: 0,
    attributes: {},
    error: false,
  };
}

/** A child of `parent` (same trace and `tracestate`), started now. */
export function childRecord(
  parent: SpanRecord,
  spanId: string,
  name: string,
  kind: number,
): SpanRecord {
  return startRecord(name, kind, parent.traceId, spanId, parent.spanId, false, parent.traceState);
}

export class RequestTrace {
  /** The sampler records this request: its spans are made and exported. */
  readonly recording: boolean;
  /**
   * The trace exists beyond this process — recorded here, or the caller's — so the access
   * line names it. An unrecorded trace the gateway started is known to nobody.
   */
  readonly logged: boolean;
  /** The server span's context as a `traceparent`: `00-<trace id>-<span id>-<flags>`. */
  readonly #traceparent: string;
  /** The caller's trace goes on unrecorded: its fields reach the upstream untouched. */
  readonly #passCallerOn: boolean;
  /** The server span (recorded requests only). */
  readonly #server: SpanRecord | null;
  readonly #root: TraceRoot;
  readonly #method: string;

  /** `describe` gives the request's attributes, called only when the request is recorded. */
  constructor(
    root: TraceRoot,
    requestMethod: string,
    headers: Readonly<Record<string, string | string[] | undefined>>,
    describe: () => RequestStart,
  ) {
    this.#root = root;
    const method = KNOWN_METHODS.has(requestMethod) ? requestMethod : '_OTHER';
    this.#method = method;
    // An invalid `traceparent` starts a new trace (W3C Trace Context §4.3).
    const caller = headers.traceparent === undefined ? null : root.caller(headers);
    let parentSpanId: string | undefined;
    if (caller === null) {
      // Most requests start a trace that is not recorded: ids and decision, nothing else.
      this.#traceparent = root.ids.newTrace();
      this.recording = sampledTrace(this.#traceparent);
      this.logged = this.recording;
      this.#passCallerOn = false;
    } else {
      const flags = caller.recorded ? '01' : '00';
      this.#traceparent = `00-${caller.traceId}-${root.ids.spanId()}-${flags}`;
      this.recording = caller.recorded;
      this.logged = true;
      this.#passCallerOn = !caller.recorded;
      parentSpanId = caller.spanId;
    }
    if (!this.recording) {
      this.#server = null;
      return;
    }
    const server = startRecord(
      method === '_OTHER' ? 'HTTP' : method,
      SPAN_KIND.server,
      this.traceId,
      this.spanId,
      parentSpanId,
      parentSpanId !== undefined,
      caller?.traceState,
    );
    this.#server = server;
    const start = describe();
    const attributes = server.attributes;
    attributes['http.request.method'] = method;
    if (method === '_OTHER') attributes['http.request.method_original'] = requestMethod;
    attributes['url.path'] = start.path;
    attributes['network.protocol.version'] = start.protocolVersion;
    if (start.clientAddress !== undefined) attributes['client.address'] = start.clientAddress;
    if (start.serverAddress !== undefined) attributes['server.address'] = start.serverAddress;
    if (start.serverPort !== undefined) attributes['server.port'] = start.serverPort;
  }

  /** For the access line: the trace id (32 hex digits). */
  get traceId(): string {
    return this.#traceparent.slice(3, 35);
  }

  /** For the access line: the server span's id (16 hex digits). */
  get spanId(): string {
    return this.#traceparent.slice(36, 52);
  }

  /** For the access line: the flags byte, `01` sampled, `00` not. */
  get traceFlags(): string {
    return this.#traceparent.slice(53, 55);
  }

  /**
   * Runs the verification in its span, keeping its synchronous shape (a cached token is
   * answered without a promise). Hooks called inside it (the cache lookup, a key-set
   * download) find the span in the slot.
   */
  verify<T extends TracedPrincipal>(run: () => T | Promise<T>): T | Promise<T> {
    const server = this.#server;
    if (server === null) return run();
    const span = this.#child(server, 'portaria.verify_token', SPAN_KIND.internal);
    const slot = this.#root.slot;
    const previous = slot.verifying;
    slot.verifying = span;
    let result: T | Promise<T>;
    try {
      result = run();
    } catch (error) {
      slot.verifying = previous;
      this.#failed(span, error);
      throw error;
    }
    slot.verifying = previous;
    if (!(result instanceof Promise)) {
      this.#verified(span, result);
      return result;
    }
    return result.then(
      (principal) => {
        this.#verified(span, principal);
        return principal;
      },
      (error: unknown) => {
        this.#failed(span, error);
        throw error;
      },
    );
  }

  /** A span for a token-operation step (`authenticate_client`, `sign`). */
  step(name: string): StepEnd {
    const server = this.#server;
    if (server === null) return noStep;
    const span = this.#child(server, `portaria.token.${name}`, SPAN_KIND.internal);
    return (failure) => {
      if (span.end !== 0) return;
      if (failure !== undefined) {
        span.attributes[ATTR.reason] = failure;
        span.error = true;
      }
      this.#finish(span);
    };
  }

  /**
   * The upstream call's CLIENT span. `url` is the upstream origin's path without the
   * query (`url.full` never carries one here).
   */
  upstream(method: string, origin: string, path: string, routeId: string): UpstreamCall {
    const server = this.#server;
    if (server === null) return this.#untraced();
    const known = KNOWN_METHODS.has(method);
    const span = this.#child(server, known ? method : 'HTTP', SPAN_KIND.client);
    const { address, port } = originParts(origin);
    const attributes = span.attributes;
    attributes['http.request.method'] = known ? method : '_OTHER';
    attributes['server.address'] = address;
    attributes['server.port'] = port;
    attributes['url.full'] = origin + path;
    attributes[ATTR.route] = routeId;
    const finish = (record: SpanRecord) => this.#finish(record);
    return {
      // W3C Trace Context §3.2: the CLIENT span is the upstream's parent, sampled.
      traceparent: `00-${span.traceId}-${span.spanId}-01`,
      tracestate: span.traceState,
      end(statusCode, errorType) {
        if (span.end !== 0) return;
        if (statusCode !== 0) attributes['http.response.status_code'] = statusCode;
        const error = errorType ?? (statusCode >= 400 ? String(statusCode) : undefined);
        if (error !== undefined) {
          attributes['error.type'] = error;
          span.error = true;
        }
        finish(span);
      },
    };
  }

  /** The upstream call of a request not recorded (see the header comment). */
  #untraced(): UpstreamCall {
    if (this.#passCallerOn) return UNTOUCHED;
    return { traceparent: this.#traceparent, tracestate: undefined, end: noEnd };
  }

  /** Ends the server span with the response's status and the request's bounded labels. */
  end(
    status: number,
    routeId: string,
    reason: string | undefined,
    clientId: string | undefined,
    quota: TracedQuota | null = null,
  ): void {
    const server = this.#server;
    if (server === null || server.end !== 0) return;
    const attributes = server.attributes;
    attributes['http.response.status_code'] = status;
    attributes[ATTR.route] = routeId;
    if (routeId !== 'unmatched') {
      attributes['http.route'] = routeId;
      server.name = `${this.#method === '_OTHER' ? 'HTTP' : this.#method} ${routeId}`;
    }
    if (reason !== undefined) attributes[ATTR.reason] = reason;
    if (clientId !== undefined) attributes[ATTR.client] = clientId;
    if (quota !== null) {
      attributes[ATTR.quotaPolicy] = quota.policy.name;
      attributes[ATTR.quotaOutcome] = quota.outcome;
    }
    // A server span is an error for 5xx only: a 4xx is the caller's (HTTP conventions).
    if (status >= 500) {
      attributes['error.type'] = reason ?? String(status);
      server.error = true;
    }
    this.#finish(server);
  }

  #child(server: SpanRecord, name: string, kind: number): SpanRecord {
    return childRecord(server, this.#root.ids.spanId(), name, kind);
  }

  #verified(span: SpanRecord, principal: TracedPrincipal): void {
    span.attributes[ATTR.issuer] = principal.issuerId;
    // The server span names the issuer too (read when it ends).
    (this.#server as SpanRecord).attributes[ATTR.issuer] = principal.issuerId;
    this.#finish(span);
  }

  #failed(span: SpanRecord, error: unknown): void {
    const reason = isPortariaError(error) ? error.reason : 'error';
    span.attributes[ATTR.reason] = reason;
    span.attributes['error.type'] = reason;
    span.error = true;
    this.#finish(span);
  }

  /** Ends a span (each end above returns early for one ended: the SDK ignores a second end). */
  #finish(record: SpanRecord): void {
    record.end = epochMs();
    this.#root.finish(record);
  }
}
