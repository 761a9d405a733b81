/**
 * The request's trace, from its scope: started with the request's accounting, ended with
 * its access line, whose trace fields it gives. Only called when tracing is on (the
 * accounting holds `null` otherwise and checks that alone).
 */
import type { IncomingMessage } from 'node:http';
import type { RequestTrace, Tracing } from '../observability/tracing.js';
import { pathOnly } from './replies.js';
import type { RequestScope } from './requestScope.js';

/** Starts the request's server span, its parent the caller's `traceparent`. */
export function startRequestTrace(
  tracing: Tracing,
  scope: RequestScope,
  req: IncomingMessage,
): void {
  scope.trace = tracing.startRequest(scope.method, req.headers, () => ({
    // The scope's target as received: the request's, or a decision's original one.
    path: pathOnly(scope.url),
    clientAddress: scope.clientAddress ?? scope.peerAddress,
    serverAddress: req.socket.localAddress,
    serverPort: req.socket.localPort,
    protocolVersion: req.httpVersion,
  }));
}

/** Ends the server span with the status the access line reports. */
export function endRequestTrace(scope: RequestScope, status: number): void {
  scope.trace?.end(status, scope.routeId, scope.reason, scope.clientId, scope.quota);
}

/** The trace the access line names: one recorded here or the caller's (`RequestTrace.logged`). */
export function loggedTrace(scope: RequestScope): RequestTrace | null {
  const trace = scope.trace;
  return trace?.logged === true ? trace : null;
}

/** The access line's trace fields (the names OpenTelemetry's pino instrumentation writes). */
export function traceLogFields(
  scope: RequestScope,
): { trace_id: string; span_id: string; trace_flags: string } | undefined {
  const trace = loggedTrace(scope);
  if (trace === null) return undefined;
  return { trace_id: trace.traceId, span_id: trace.spanId, trace_flags: trace.traceFlags };
}
