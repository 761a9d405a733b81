/**
 * OpenTelemetry tracing (with `traceExport.ts`, the SDK's only home). Built only when
 * `tracing.enabled` is on; off, the app holds `null` and no code of this module runs.
 *
 * Split in two threads. Here, on the request path: the sampling decision, the ids, the
 * W3C Trace Context propagator reading the caller's `traceparent`, and each recorded span
 * as a plain record. In the export thread (`spanHandoff.ts`, `traceExportWorker.ts`): the
 * SDK makes those spans and exports them over OTLP/HTTP (JSON). Why: docs/tracing.md,
 * "Cost".
 *
 * The standard `OTEL_*` variables are read once, when this is built: the sampler
 * (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`) here, with the SDK's own sampler
 * classes and rules; the exporter's endpoint, headers and timeout
 * (`OTEL_EXPORTER_OTLP_[TRACES_]*`), the batch processor (`OTEL_BSP_*`) and the resource
 * (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`; the service name defaults to
 * `portaria`) by the SDK in the export thread. Nothing global is registered (no global
 * provider, propagator or context manager), so several apps can share a process.
 *
 * Spans and their attributes: docs/tracing.md. Per request: `requestTrace.ts`.
 */
import {
  defaultTextMapGetter,
  isSpanContextValid,
  ROOT_CONTEXT,
  SamplingDecision,
  SpanKind,
  trace,
} from '@opentelemetry/api';
import { getNumberFromEnv, getStringFromEnv, W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  type Sampler,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import {
  ATTR,
  childRecord,
  type RequestStart,
  RequestTrace,
  startRecord,
  type TraceRoot,
  type TraceSlot,
} from './requestTrace.js';
import { createSpanHandoff } from './spanHandoff.js';
import { epochMs, SPAN_KIND, type SpanRecord } from './spanRecord.js';
import { sampledTrace, TraceIds } from './traceIds.js';

export { type RequestStart, RequestTrace } from './requestTrace.js';

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
  /**
   * Runs the revocation check of the verification running now: in a span of its own,
   * its child, when that verification is recorded.
   */
  revocationCheck<T>(store: { isRevoked(token: T): boolean }, token: T): boolean;
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
  const handoff = createSpanHandoff(options.exportFailed);
  const ids = new TraceIds(rootSamplingBound());
  const sampler = samplerFromEnvironment();
  const propagator = new W3CTraceContextPropagator();
  const slot: TraceSlot = { verifying: null };
  const root: TraceRoot = {
    ids,
    slot,
    caller(headers) {
      const context = propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
      const parent = trace.getSpanContext(context);
      if (parent === undefined || !isSpanContextValid(parent)) return null;
      const { decision } = sampler.shouldSample(
        context,
        parent.traceId,
        'HTTP',
        SpanKind.SERVER,
        {},
        [],
      );
      return {
        traceId: parent.traceId,
        spanId: parent.spanId,
        recorded: decision === SamplingDecision.RECORD_AND_SAMPLED,
        traceState: parent.traceState?.serialize(),
      };
    },
    finish: (record) => handoff.finish(record),
  };
  const endSpan = (record: SpanRecord): void => {
    record.end = epochMs();
    handoff.finish(record);
  };

  return {
    startRequest(method, headers, describe) {
      return new RequestTrace(root, method, headers, describe);
    },

    keySetFetch(issuerId, trigger, uri) {
      const parent = slot.verifying;
      let span: SpanRecord;
      if (parent !== null) {
        span = childRecord(parent, ids.spanId(), 'portaria.jwks.fetch', SPAN_KIND.client);
      } else {
        const traceparent = ids.newTrace();
        if (!sampledTrace(traceparent)) return noFetchEnd;
        const traceId = traceparent.slice(3, 35);
        const spanId = traceparent.slice(36, 52);
        span = startRecord(
          'portaria.jwks.fetch',
          SPAN_KIND.client,
          traceId,
          spanId,
          undefined,
          false,
          undefined,
        );
      }
      span.attributes[ATTR.issuer] = issuerId;
      span.attributes[ATTR.fetchTrigger] = trigger;
      // The configuration refuses a `jwksUri` with a query or fragment.
      span.attributes['url.full'] = uri;
      return (outcome) => {
        if (span.end !== 0) return; // ended once, as the SDK ends a span
        span.attributes[ATTR.fetchOutcome] = outcome;
        if (outcome !== 'ok') {
          span.attributes['error.type'] = outcome;
          span.error = true;
        }
        endSpan(span);
      };
    },

    cacheLookup(hit) {
      const verifying = slot.verifying;
      if (verifying !== null) verifying.attributes[ATTR.cacheHit] = hit;
    },

    revocationCheck(store, token) {
      const parent = slot.verifying;
      if (parent === null) return store.isRevoked(token);
      const span = childRecord(
        parent,
        ids.spanId(),
        'portaria.revocation.check',
        SPAN_KIND.internal,
      );
      try {
        const revoked = store.isRevoked(token);
        span.attributes[ATTR.revoked] = revoked;
        return revoked;
      } catch (error) {
        span.attributes['error.type'] = 'error';
        span.error = true;
        throw error;
      } finally {
        endSpan(span);
      }
    },

    shutdown(timeoutMs) {
      return handoff.shutdown(timeoutMs);
    },
  };
}

function noFetchEnd(): void {}

/** `OTEL_TRACES_SAMPLER_ARG` as the SDK reads it for the ratio samplers (1 when unusable). */
function samplerRatio(): number {
  const value = getNumberFromEnv('OTEL_TRACES_SAMPLER_ARG');
  return value === undefined || value < 0 || value > 1 ? 1 : value;
}

/**
 * The configured sampler, built from the SDK's sampler classes by the SDK's rules
 * (default `parentbased_always_on`): it decides a request whose caller sent a
 * `traceparent`.
 */
export function samplerFromEnvironment(): Sampler {
  switch (getStringFromEnv('OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on') {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(samplerRatio());
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(samplerRatio()) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/**
 * The bound under which the configured sampler records a span with no parent: the rule of
 * the SDK's `TraceIdRatioBasedSampler` (the four 32-bit words of the trace id XORed, below
 * `ratio × 0xffffffff`), `always_on` a ratio of 1 and `always_off` 0, read from the same
 * variables with the same defaults as `samplerFromEnvironment`.
 */
export function rootSamplingBound(): number {
  const sampler = getStringFromEnv('OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on';
  let ratio = 1;
  if (sampler === 'always_off' || sampler === 'parentbased_always_off') ratio = 0;
  else if (sampler === 'traceidratio' || sampler === 'parentbased_traceidratio') {
    ratio = samplerRatio();
  }
  return ratio === 1 ? 0x1_0000_0000 : Math.floor(ratio * 0xffffffff);
}
