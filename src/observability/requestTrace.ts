/**
 * One request's trace: its SERVER span (HTTP semantic conventions), parented by the
 * caller's `traceparent` (W3C Trace Context), and the children the request path asks
 * for — token verification, the upstream call (CLIENT, whose context goes upstream),
 * the token operation's steps. Attributes carry bounded identifiers only (route id,
 * failure reason, issuer id, client id): never a token, a secret, a header value or a
 * query string.
 *
 * A request the sampler does not record costs its ids and nothing more: a new trace is
 * decided before the SDK is called (`TraceRoot.rootDecision`), no child span is made, and
 * the upstream gets the caller's `traceparent`/`tracestate` untouched (the
 * upstream's spans stay children of the caller's, since ours will never exist), or, when
 * the caller sent none, one carrying the gateway's decision (sampled flag off) so that a
 * parent-based sampler upstream follows it.
 */
import {
  type Context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { W3CTraceContextPropagator } from '@opentelemetry/core';
import { isPortariaError } from '../errors.js';

/** Our attribute names (the `portaria.` namespace, for what the conventions do not name). */
export const ATTR = {
  route: 'portaria.route.id',
  reason: 'portaria.outcome.reason',
  issuer: 'portaria.issuer.id',
  client: 'portaria.client.id',
  cacheHit: 'portaria.token.cache_hit',
  fetchTrigger: 'portaria.jwks.trigger',
  fetchOutcome: 'portaria.jwks.outcome',
} as const;

/** The verification running now (set synchronously around it), for hooks called inside it. */
export interface TraceSlot {
  verifying: Span | null;
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

/** Span options, made once (the SDK only reads them). */
const SERVER = Object.freeze({ kind: SpanKind.SERVER });
const CLIENT = Object.freeze({ kind: SpanKind.CLIENT });

function noStep(): void {}
function noEnd(): void {}

/** The upstream call of an unrecorded request whose caller sent a `traceparent`. */
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

/**
 * What every request's trace shares: the SDK's tracer, the propagator, the slot, and the
 * root sampling decision made before the SDK is touched (`rootDecision`).
 */
export interface TraceRoot {
  readonly tracer: Tracer;
  readonly propagator: W3CTraceContextPropagator;
  readonly slot: TraceSlot;
  /**
   * Draws a new trace's ids and decides it as the configured sampler would decide a span
   * with no parent: not recorded, the `traceparent` naming it (sampled flag off); recorded,
   * null (the SDK's next root span then takes those ids).
   */
  rootDecision(): string | null;
}

export class RequestTrace {
  /** The sampler records this request: its children are made and exported. */
  readonly recording: boolean;
  /**
   * The trace exists beyond this process — recorded here, or the caller's — so the access
   * line names it. An unrecorded trace the gateway started is known to nobody.
   */
  readonly logged: boolean;
  /** The server span; null for an unrecorded trace started here (the SDK never saw it). */
  readonly #span: Span | null;
  /** Without a span: the `traceparent` of the trace (`00-<trace id>-<span id>-00`). */
  readonly #traceparent: string;
  /** The server span as a parent (made for recorded requests only). */
  readonly #context: Context;
  readonly #root: TraceRoot;
  readonly #method: string;
  readonly #callerSentTraceparent: boolean;
  #issuerId: string | undefined = undefined;

  /** `describe` gives the request's attributes, called only when the request is recorded. */
  constructor(
    root: TraceRoot,
    requestMethod: string,
    headers: Readonly<Record<string, string | string[] | undefined>>,
    describe: () => RequestStart,
  ) {
    this.#root = root;
    this.#callerSentTraceparent = headers.traceparent !== undefined;
    const method = KNOWN_METHODS.has(requestMethod) ? requestMethod : '_OTHER';
    this.#method = method;
    let parent = ROOT_CONTEXT;
    if (this.#callerSentTraceparent) {
      parent = root.propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
    } else {
      // Most requests start a trace that is not recorded: decided without the SDK, which
      // would spend a span object, a sampler call and two hex conversions on each.
      const unrecorded = root.rootDecision();
      if (unrecorded !== null) {
        this.#span = null;
        this.#traceparent = unrecorded;
        this.recording = false;
        this.logged = false;
        this.#context = ROOT_CONTEXT;
        return;
      }
    }
    const span = root.tracer.startSpan(method === '_OTHER' ? 'HTTP' : method, SERVER, parent);
    this.#span = span;
    this.#traceparent = '';
    this.recording = span.isRecording();
    this.logged = this.recording || this.#callerSentTraceparent;
    if (!this.recording) {
      this.#context = ROOT_CONTEXT;
      return;
    }
    this.#context = trace.setSpan(ROOT_CONTEXT, span);
    const start = describe();
    span.setAttribute('http.request.method', method);
    if (method === '_OTHER') span.setAttribute('http.request.method_original', requestMethod);
    span.setAttribute('url.path', start.path);
    span.setAttribute('network.protocol.version', start.protocolVersion);
    if (start.clientAddress !== undefined) span.setAttribute('client.address', start.clientAddress);
    if (start.serverAddress !== undefined) span.setAttribute('server.address', start.serverAddress);
    if (start.serverPort !== undefined) span.setAttribute('server.port', start.serverPort);
  }

  /** For the access line: the trace id (32 hex digits). */
  get traceId(): string {
    return this.#span === null ? this.#traceparent.slice(3, 35) : this.#span.spanContext().traceId;
  }

  /** For the access line: the server span's id (16 hex digits). */
  get spanId(): string {
    return this.#span === null ? this.#traceparent.slice(36, 52) : this.#span.spanContext().spanId;
  }

  /** For the access line: the flags byte, `01` sampled, `00` not. */
  get traceFlags(): string {
    if (this.#span === null) return '00';
    return (this.#span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0 ? '00' : '01';
  }

  /**
   * Runs the verification in its span, keeping its synchronous shape (a cached token is
   * answered without a promise). Hooks called inside it (the cache lookup, a key-set
   * download) find the span in the slot.
   */
  verify<T extends TracedPrincipal>(run: () => T | Promise<T>): T | Promise<T> {
    if (!this.recording) return run();
    const span = this.#root.tracer.startSpan('portaria.verify_token', undefined, this.#context);
    const slot = this.#root.slot;
    const previous = slot.verifying;
    slot.verifying = span;
    let result: T | Promise<T>;
    try {
      result = run();
    } catch (error) {
      slot.verifying = previous;
      endFailed(span, error);
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
        endFailed(span, error);
        throw error;
      },
    );
  }

  #verified(span: Span, principal: TracedPrincipal): void {
    this.#issuerId = principal.issuerId;
    span.setAttribute(ATTR.issuer, principal.issuerId);
    span.end();
  }

  /** A span for a token-operation step (`authenticate_client`, `sign`). */
  step(name: string): StepEnd {
    if (!this.recording) return noStep;
    const span = this.#root.tracer.startSpan(`portaria.token.${name}`, undefined, this.#context);
    return (failure) => {
      if (failure !== undefined) {
        span.setAttribute(ATTR.reason, failure);
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    };
  }

  /**
   * The upstream call's CLIENT span. `url` is the upstream origin's path without the
   * query (`url.full` never carries one here).
   */
  upstream(method: string, origin: string, path: string, routeId: string): UpstreamCall {
    if (!this.recording) return this.#untraced();
    const span = this.#root.tracer.startSpan(
      KNOWN_METHODS.has(method) ? method : 'HTTP',
      CLIENT,
      this.#context,
    );
    const { address, port } = originParts(origin);
    span.setAttribute('http.request.method', KNOWN_METHODS.has(method) ? method : '_OTHER');
    span.setAttribute('server.address', address);
    span.setAttribute('server.port', port);
    span.setAttribute('url.full', origin + path);
    span.setAttribute(ATTR.route, routeId);
    const carrier: Record<string, string> = {};
    this.#root.propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, defaultTextMapSetter);
    return {
      traceparent: carrier.traceparent ?? null,
      tracestate: carrier.tracestate,
      end(statusCode, errorType) {
        if (statusCode !== 0) span.setAttribute('http.response.status_code', statusCode);
        const error = errorType ?? (statusCode >= 400 ? String(statusCode) : undefined);
        if (error !== undefined) {
          span.setAttribute('error.type', error);
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
      },
    };
  }

  /** The upstream call of a request not recorded (see the header comment). */
  #untraced(): UpstreamCall {
    if (this.#callerSentTraceparent) return UNTOUCHED;
    // W3C Trace Context §3.2: version 00, the server span's ids, its flags (not sampled).
    const traceparent =
      this.#span === null
        ? this.#traceparent
        : `00-${this.traceId}-${this.spanId}-${this.traceFlags}`;
    return { traceparent, tracestate: undefined, end: noEnd };
  }

  /** Ends the server span with the response's status and the request's bounded labels. */
  end(
    status: number,
    routeId: string,
    reason: string | undefined,
    clientId: string | undefined,
  ): void {
    const span = this.#span;
    if (!this.recording || span === null) return;
    span.setAttribute('http.response.status_code', status);
    span.setAttribute(ATTR.route, routeId);
    if (routeId !== 'unmatched') {
      span.setAttribute('http.route', routeId);
      span.updateName(`${this.#method === '_OTHER' ? 'HTTP' : this.#method} ${routeId}`);
    }
    if (reason !== undefined) span.setAttribute(ATTR.reason, reason);
    if (clientId !== undefined) span.setAttribute(ATTR.client, clientId);
    if (this.#issuerId !== undefined) span.setAttribute(ATTR.issuer, this.#issuerId);
    // A server span is an error for 5xx only: a 4xx is the caller's (HTTP conventions).
    if (status >= 500) {
      span.setAttribute('error.type', reason ?? String(status));
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end();
  }
}

function endFailed(span: Span, error: unknown): void {
  const reason = isPortariaError(error) ? error.reason : 'error';
  span.setAttribute(ATTR.reason, reason);
  span.setAttribute('error.type', reason);
  span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}
