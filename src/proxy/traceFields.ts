/**
 * The W3C Trace Context fields of an upstream request (`traceparent`, `tracestate`),
 * when tracing is on: the upstream call's own context replaces the caller's, so the
 * upstream's spans are children of the gateway's CLIENT span. Tracing off, the caller's
 * fields pass through as any other header and nothing here runs.
 */
import type { HeaderList, OutgoingHeaders } from './headers.js';

/** An upstream call as the tracer (observability) starts it, seen from here. */
export interface UpstreamCall {
  /** The `traceparent` to send, or null: leave the caller's `traceparent`/`tracestate` as they are. */
  readonly traceparent: string | null;
  /** The `tracestate` to send with it (none when undefined). */
  readonly tracestate: string | undefined;
  /** The upstream answered `statusCode` (0: nothing), or the exchange failed (`errorType`). */
  end(statusCode: number, errorType: string | undefined): void;
}

/** Starts the upstream call's span; `path` never carries the query. */
export interface UpstreamTracer {
  upstream(method: string, origin: string, path: string, routeId: string): UpstreamCall;
}

const TRACEPARENT = 'traceparent';
const TRACESTATE = 'tracestate';

/** Replaces the trace fields of a flat header list with the call's (in place). */
export function setTraceFields(list: HeaderList, call: UpstreamCall): void {
  if (call.traceparent === null) return;
  for (let i = list.length - 2; i >= 0; i -= 2) {
    const name = list[i];
    if (name === TRACEPARENT || name === TRACESTATE) list.splice(i, 2);
  }
  list.push(TRACEPARENT, call.traceparent);
  if (call.tracestate !== undefined) list.push(TRACESTATE, call.tracestate);
}

/** `setTraceFields` for the object form (WebSocket upgrades). */
export function setTraceHeaders(headers: OutgoingHeaders, call: UpstreamCall): void {
  if (call.traceparent === null) return;
  headers[TRACEPARENT] = call.traceparent;
  if (call.tracestate === undefined) delete headers[TRACESTATE];
  else headers[TRACESTATE] = call.tracestate;
}
