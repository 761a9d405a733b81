/**
 * The SDK's side of tracing, run in the export thread (`traceExportWorker.ts`): one
 * tracer provider with the resource, a batch processor and the OTLP/HTTP (JSON) exporter,
 * all configured by the standard `OTEL_*` variables as the SDK reads them (exporter
 * endpoint, headers, timeout; `OTEL_BSP_*`; `OTEL_SERVICE_NAME`,
 * `OTEL_RESOURCE_ATTRIBUTES`). It makes each recorded span from its `SpanRecord` with the
 * SDK's own `Tracer.startSpan`/`Span.end` — the record's ids, parent, times, attributes
 * and status — so what is exported is what the SDK exports for a live span.
 *
 * Sampling was decided where the request was served (`tracing.ts`): only recorded spans
 * arrive here, so this provider's sampler records all of them.
 */
import {
  createTraceState,
  ROOT_CONTEXT,
  SpanStatusCode,
  TraceFlags,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  type IdGenerator,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { SpanRecord } from './spanRecord.js';

/** The service name when `OTEL_SERVICE_NAME` (or `service.name` in the resource attributes) is unset. */
export const DEFAULT_SERVICE_NAME = 'portaria';

export interface SpanExport {
  /** Makes the recorded spans and queues them for export. */
  add(records: readonly SpanRecord[]): void;
  /** Exports what is queued and stops. */
  shutdown(): Promise<void>;
}

export function createSpanExport(exportFailed?: (message: string) => void): SpanExport {
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: DEFAULT_SERVICE_NAME }))
    .merge(detectResources({ detectors: [envDetector] }));
  const ids = new RecordIds();
  const provider = new BasicTracerProvider({
    resource,
    idGenerator: ids,
    sampler: new AlwaysOnSampler(),
    spanProcessors: [
      new BatchSpanProcessor(reportingFailures(new OTLPTraceExporter(), exportFailed)),
    ],
  });
  const tracer = provider.getTracer('portaria');
  return {
    add(records) {
      for (const record of records) makeSpan(tracer, ids, record);
    },
    shutdown: () => provider.shutdown(),
  };
}

function makeSpan(tracer: Tracer, ids: RecordIds, record: SpanRecord): void {
  ids.traceId = record.traceId;
  ids.spanId = record.spanId;
  const parent =
    record.parentSpanId === undefined
      ? ROOT_CONTEXT
      : trace.setSpanContext(ROOT_CONTEXT, {
          traceId: record.traceId,
          spanId: record.parentSpanId,
          traceFlags: TraceFlags.SAMPLED,
          isRemote: record.parentRemote,
          ...(record.traceState === undefined
            ? {}
            : { traceState: createTraceState(record.traceState) }),
        });
  const span = tracer.startSpan(
    record.name,
    { kind: record.kind, startTime: record.start, attributes: record.attributes },
    parent,
  );
  if (record.error) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end(record.end);
}

/** Hands the SDK the ids of the span it starts next: the ones its record carries. */
class RecordIds implements IdGenerator {
  traceId = '';
  spanId = '';

  generateTraceId(): string {
    return this.traceId;
  }

  generateSpanId(): string {
    return this.spanId;
  }
}

/**
 * The exporter, reporting failed batches (at most one report a minute: during a
 * collector outage every batch fails). The SDK would otherwise drop them silently.
 */
function reportingFailures(
  exporter: SpanExporter,
  report: ((message: string) => void) | undefined,
): SpanExporter {
  if (report === undefined) return exporter;
  let lastReport = Number.NEGATIVE_INFINITY;
  return {
    export(spans: ReadableSpan[], done) {
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS && performance.now() - lastReport > 60_000) {
          lastReport = performance.now();
          report(result.error?.message ?? 'export failed');
        }
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}
