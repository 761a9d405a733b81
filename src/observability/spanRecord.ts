/**
 * A finished span as plain data: what the request path records instead of calling the
 * SDK, and what crosses to the export thread (`traceExportWorker.ts`), where the SDK
 * makes the span from it. Plain fields only, so the structured clone of `postMessage`
 * copies it as it is.
 */

/** `SpanKind` of `@opentelemetry/api` (the values are the API's, fixed by its 1.x contract). */
export const SPAN_KIND = { internal: 0, server: 1, client: 2 } as const;

export type SpanAttributes = Record<string, string | number | boolean>;

export interface SpanRecord {
  name: string;
  readonly kind: number;
  /** 32 hex digits. */
  readonly traceId: string;
  /** 16 hex digits. */
  readonly spanId: string;
  /** The parent's span id; undefined for a root span. */
  readonly parentSpanId: string | undefined;
  /** The parent is the caller's span (W3C Trace Context), not one of ours. */
  readonly parentRemote: boolean;
  /** The caller's `tracestate`, which every span of its trace carries on. */
  readonly traceState: string | undefined;
  /** Start and end, milliseconds since the epoch (fractions kept). */
  readonly start: number;
  end: number;
  readonly attributes: SpanAttributes;
  /** Span status ERROR. */
  error: boolean;
}

/**
 * Now, in milliseconds since the epoch with sub-millisecond precision (monotonic within
 * this thread; the export thread has a time origin of its own, so times cross as epoch).
 */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}
