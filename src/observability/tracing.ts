/**
 * OpenTelemetry tracing (the SDK's only home): one tracer provider per app, a batch
 * processor exporting OTLP over HTTP (JSON), the W3C Trace Context propagator. Built only
 * when `tracing.enabled` is on; off, the app holds `null` and no code of this module runs.
 *
 * The SDK reads the standard `OTEL_*` variables itself, once, when this is built: the
 * exporter's endpoint, headers and timeout (`OTEL_EXPORTER_OTLP_[TRACES_]*`), the sampler
 * (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`), the batch processor (`OTEL_BSP_*`)
 * and the resource (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`); the service name
 * defaults to `portaria`. Nothing global is registered (no global provider, propagator
 * or context manager): parents are passed explicitly, so several apps can share a process.
 *
 * Spans and their attributes: docs/tracing.md. Per request: `requestTrace.ts`.
 */
import { randomFillSync } from 'node:crypto';
import {
  type Context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import {
  ExportResultCode,
  getNumberFromEnv,
  getStringFromEnv,
  W3CTraceContextPropagator,
} from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type IdGenerator,
  RandomIdGenerator,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import {
  ATTR,
  type RequestStart,
  RequestTrace,
  type TraceRoot,
  type TraceSlot,
} from './requestTrace.js';

export { type RequestStart, RequestTrace } from './requestTrace.js';

/** The service name when `OTEL_SERVICE_NAME` (or `service.name` in the resource attributes) is unset. */
export const DEFAULT_SERVICE_NAME = 'portaria';

export interface TracingOptions {
  /** An export batch failed (the collector down or refusing): the caller logs it. */
  readonly exportFailed?: (message: string) => void;
}

export interface Tracing {
  /**
   * The server span of a request, its parent taken from the caller's `traceparent`;
   * `describe` is called for a recorded request only.
   */
  startRequest(
    method: string,
    headers: Readonly<Record<string, string | string[] | undefined>>,
    describe: () => RequestStart,
  ): RequestTrace;
  /**
   * A key-set download starts: a CLIENT span, the child of the verification running now
   * (the download an unknown `kid` triggered) or a root span (scheduled, start-up).
   * Returns the function that ends it with the fetch's outcome.
   */
  keySetFetch(issuerId: string, trigger: string, uri: string): (outcome: string) => void;
  /** The verified-token cache answered the verification running now. */
  cacheLookup(hit: boolean): void;
  /** Exports what is buffered and stops; waits at most `timeoutMs`. */
  shutdown(timeoutMs: number): Promise<void>;
}

/** The sampler names of the OpenTelemetry SDK configuration (`OTEL_TRACES_SAMPLER`). */
const SAMPLERS: readonly string[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

/**
 * What the SDK would replace by a default without a word: an unknown sampler becomes
 * `parentbased_always_on` (every request recorded), a bad ratio 1, an unusable endpoint
 * fails every export. Checked at start, so a typo stops the process instead. Endpoint
 * values are not repeated (they may carry credentials).
 */
export function tracingEnvironmentProblems(): string[] {
  const problems: string[] = [];
  const sampler = getStringFromEnv('OTEL_TRACES_SAMPLER');
  if (sampler !== undefined && !SAMPLERS.includes(sampler)) {
    problems.push(
      `OTEL_TRACES_SAMPLER: must be one of ${SAMPLERS.join(', ')} (got ${JSON.stringify(sampler)})`,
    );
  }
  const ratio = getStringFromEnv('OTEL_TRACES_SAMPLER_ARG');
  if (sampler?.endsWith('traceidratio') === true && ratio !== undefined) {
    const value = Number(ratio);
    if (!Number.isFinite(value) || value < 0 || value > 1) {
      problems.push(
        `OTEL_TRACES_SAMPLER_ARG: must be a ratio from 0 to 1 (got ${JSON.stringify(ratio)})`,
      );
    }
  }
  for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']) {
    const url = getStringFromEnv(name);
    if (url === undefined) continue;
    const protocol = URL.canParse(url) ? new URL(url).protocol : '';
    if (protocol !== 'http:' && protocol !== 'https:') {
      problems.push(`${name}: must be an http:// or https:// URL`);
    }
  }
  return problems;
}

export function createTracing(options: TracingOptions = {}): Tracing {
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: DEFAULT_SERVICE_NAME }))
    .merge(detectResources({ detectors: [envDetector] }));
  const exporter = reportingFailures(new OTLPTraceExporter(), options.exportFailed);
  const ids = new RootIds(rootSamplingBound());
  const provider = new BasicTracerProvider({
    resource,
    idGenerator: ids,
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('portaria');
  const slot: TraceSlot = { verifying: null };
  const root: TraceRoot = {
    tracer,
    propagator: new W3CTraceContextPropagator(),
    slot,
    rootDecision: () => ids.decide(),
  };
  let stopped: Promise<void> | undefined;

  return {
    startRequest(method, headers, describe) {
      return new RequestTrace(root, method, headers, describe);
    },

    keySetFetch(issuerId, trigger, uri) {
      const parent: Context =
        slot.verifying === null ? ROOT_CONTEXT : trace.setSpan(ROOT_CONTEXT, slot.verifying);
      const span = tracer.startSpan('portaria.jwks.fetch', { kind: SpanKind.CLIENT }, parent);
      if (span.isRecording()) {
        span.setAttribute(ATTR.issuer, issuerId);
        span.setAttribute(ATTR.fetchTrigger, trigger);
        // The configuration refuses a `jwksUri` with a query or fragment.
        span.setAttribute('url.full', uri);
      }
      return (outcome) => endFetch(span, outcome);
    },

    cacheLookup(hit) {
      slot.verifying?.setAttribute(ATTR.cacheHit, hit);
    },

    shutdown(timeoutMs) {
      stopped ??= Promise.race([
        provider.shutdown().catch(() => undefined),
        new Promise<void>((resolve) => setTimeout(resolve, timeoutMs).unref()),
      ]);
      return stopped;
    },
  };
}

/**
 * The bound under which the configured sampler records a span with no parent: the rule of
 * the SDK's `TraceIdRatioBasedSampler` (the four 32-bit words of the trace id XORed, below
 * `ratio × 0xffffffff`), `always_on` a ratio of 1 and `always_off` 0, read from the same
 * variables with the same defaults as the SDK's own sampler (which still decides every
 * span with a parent).
 */
export function rootSamplingBound(): number {
  const sampler = getStringFromEnv('OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on';
  let ratio = 1;
  if (sampler === 'always_off' || sampler === 'parentbased_always_off') ratio = 0;
  else if (sampler === 'traceidratio' || sampler === 'parentbased_traceidratio') {
    const value = getNumberFromEnv('OTEL_TRACES_SAMPLER_ARG');
    ratio = value === undefined || value < 0 || value > 1 ? 1 : value;
  }
  return ratio === 1 ? 0x1_0000_0000 : Math.floor(ratio * 0xffffffff);
}

/** A trace id and a span id: 16 + 8 random bytes. */
const ID_BYTES = 24;
/** Random bytes for this many new traces, drawn at once (one system call, not six `Math.random`s a request). */
const POOL_TRACES = 128;

/**
 * The ids of new traces, drawn and decided before the SDK is called (`decide`); the SDK's
 * id generator, which hands a recorded trace's drawn ids to the root span started next
 * (so that its sampler, seeing the same trace id, reaches the same decision).
 */
class RootIds implements IdGenerator {
  readonly #bound: number;
  readonly #random = new RandomIdGenerator();
  readonly #pool = Buffer.alloc(ID_BYTES * POOL_TRACES);
  #next = this.#pool.length;
  #traceId: string | null = null;
  #spanId: string | null = null;

  constructor(bound: number) {
    this.#bound = bound;
  }

  /** The unrecorded trace's `traceparent`, or null: recorded, its ids kept for the SDK. */
  decide(): string | null {
    const pool = this.#pool;
    if (this.#next === pool.length) {
      randomFillSync(pool);
      this.#next = 0;
    }
    const at = this.#next;
    this.#next = at + ID_BYTES;
    const w0 = pool.readUInt32BE(at);
    const w1 = pool.readUInt32BE(at + 4);
    const w2 = pool.readUInt32BE(at + 8);
    let w3 = pool.readUInt32BE(at + 12);
    // All-zero ids are invalid (W3C Trace Context §3.2.2.3, §3.2.2.4).
    if ((w0 | w1 | w2 | w3) === 0) {
      pool[at + 15] = 1;
      w3 = 1;
    }
    if ((pool.readUInt32BE(at + 16) | pool.readUInt32BE(at + 20)) === 0) pool[at + 23] = 1;
    const hex = pool.toString('hex', at, at + ID_BYTES);
    if ((w0 ^ w1 ^ w2 ^ w3) >>> 0 < this.#bound) {
      this.#traceId = hex.slice(0, 32);
      this.#spanId = hex.slice(32);
      return null;
    }
    return `00-${hex.slice(0, 32)}-${hex.slice(32)}-00`;
  }

  generateTraceId(): string {
    const id = this.#traceId;
    if (id === null) return this.#random.generateTraceId();
    this.#traceId = null;
    return id;
  }

  generateSpanId(): string {
    const id = this.#spanId;
    if (id === null) return this.#random.generateSpanId();
    this.#spanId = null;
    return id;
  }
}

function endFetch(span: Span, outcome: string): void {
  if (span.isRecording()) {
    span.setAttribute(ATTR.fetchOutcome, outcome);
    if (outcome !== 'ok') {
      span.setAttribute('error.type', outcome);
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
  }
  span.end();
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
