/**
 * Every Prometheus metric Portaria exposes, in one place. Names are prefixed
 * `portaria_`, units are in the names, and every label is bounded: route ids from the
 * config, reason codes and outcomes from closed sets, status classes — never a path,
 * a token or a client-chosen string.
 *
 * Feature modules never import prom-client: `app.ts` binds their hook interfaces to the
 * functions here. Children are created once per label set and kept.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export type MethodClass = 'safe' | 'unsafe';
export type StatusClass = '1xx' | '2xx' | '3xx' | '4xx' | '5xx';

const STATUS_CLASSES: readonly StatusClass[] = ['1xx', '1xx', '2xx', '3xx', '4xx', '5xx'];

export function statusClass(status: number): StatusClass {
  return STATUS_CLASSES[Math.min(5, Math.max(1, Math.floor(status / 100)))] ?? '5xx';
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);
export function methodClass(method: string | undefined): MethodClass {
  return method !== undefined && SAFE_METHODS.has(method) ? 'safe' : 'unsafe';
}

/** Seconds buckets from 0.5 ms to 10 s: gateway overhead is sub-millisecond, upstreams vary. */
const DURATION_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

export interface Metrics {
  /** The Prometheus text exposition of every metric, and its content type. */
  exposition(): Promise<{ contentType: string; text: string }>;
  requestStarted(): void;
  requestFinished(route: string, method: MethodClass, status: StatusClass, seconds: number): void;
  tokenRequest(outcome: string): void;
  authFailure(reason: string): void;
  cacheLookup(hit: boolean): void;
  upstreamResponse(route: string, seconds: number): void;
  upstreamError(route: string, kind: string): void;
  /** Binds a gauge read at scrape time (e.g. cache size). */
  setCacheSizeSource(read: () => number): void;
}

/** A fresh registry per app: tests read their own, nothing is global. */
export function createMetrics(): Metrics {
  const registry = new Registry();
  const registers = [registry];
  const requests = new Counter({
    name: 'portaria_http_requests_total',
    help: 'Requests answered on the public listener, by route id, method class and status class.',
    labelNames: ['route', 'method', 'status_class'] as const,
    registers,
  });
  const duration = new Histogram({
    name: 'portaria_http_request_duration_seconds',
    help: 'Time from request start to response end on the public listener, by route id.',
    labelNames: ['route'] as const,
    buckets: DURATION_BUCKETS,
    registers,
  });
  const inFlight = new Gauge({
    name: 'portaria_http_requests_in_flight',
    help: 'Requests being handled on the public listener.',
    registers,
  });
  const tokens = new Counter({
    name: 'portaria_token_requests_total',
    help: 'Token operation outcomes (issued, invalid_request, invalid_client, error, …).',
    labelNames: ['outcome'] as const,
    registers,
  });
  const authFailures = new Counter({
    name: 'portaria_auth_failures_total',
    help: 'Bearer verification refusals on protected routes, by reason code.',
    labelNames: ['reason'] as const,
    registers,
  });
  const cache = new Counter({
    name: 'portaria_verify_cache_lookups_total',
    help: 'Verified-token cache lookups, by result (hit or miss).',
    labelNames: ['result'] as const,
    registers,
  });
  let readCacheSize: () => number = () => 0;
  new Gauge({
    name: 'portaria_verify_cache_entries',
    help: 'Entries in the verified-token cache.',
    registers,
    collect() {
      this.set(readCacheSize());
    },
  });
  const upstreamDuration = new Histogram({
    name: 'portaria_upstream_duration_seconds',
    help: 'Time until the upstream response headers arrived, by route id.',
    labelNames: ['route'] as const,
    buckets: DURATION_BUCKETS,
    registers,
  });
  const upstreamErrors = new Counter({
    name: 'portaria_upstream_errors_total',
    help: 'Upstream failures by route id and kind (timeout, refused, reset, error).',
    labelNames: ['route', 'kind'] as const,
    registers,
  });

  const requestChildren = new Map<string, Counter.Internal>();
  const durationChildren = new Map<string, Histogram.Internal<'route'>>();
  const upstreamChildren = new Map<string, Histogram.Internal<'route'>>();
  const cacheHit = cache.labels('hit');
  const cacheMiss = cache.labels('miss');

  return {
    async exposition() {
      return { contentType: registry.contentType, text: await registry.metrics() };
    },
    requestStarted() {
      inFlight.inc();
    },
    requestFinished(route, method, status, seconds) {
      inFlight.dec();
      const key = `${route}\0${method}\0${status}`;
      let child = requestChildren.get(key);
      if (child === undefined) {
        child = requests.labels(route, method, status);
        requestChildren.set(key, child);
      }
      child.inc();
      let hist = durationChildren.get(route);
      if (hist === undefined) {
        hist = duration.labels(route);
        durationChildren.set(route, hist);
      }
      hist.observe(seconds);
    },
    tokenRequest(outcome) {
      tokens.labels(outcome).inc();
    },
    authFailure(reason) {
      authFailures.labels(reason).inc();
    },
    cacheLookup(hit) {
      (hit ? cacheHit : cacheMiss).inc();
    },
    upstreamResponse(route, seconds) {
      let hist = upstreamChildren.get(route);
      if (hist === undefined) {
        hist = upstreamDuration.labels(route);
        upstreamChildren.set(route, hist);
      }
      hist.observe(seconds);
    },
    upstreamError(route, kind) {
      upstreamErrors.labels(route, kind).inc();
    },
    setCacheSizeSource(read) {
      readCacheSize = read;
    },
  };
}
