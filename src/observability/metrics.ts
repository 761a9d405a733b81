/**
 * Every Prometheus metric Portaria exposes, in one place. Names are prefixed
 * `portaria_` (the process and Node.js metrics keep their standard names, or take
 * `metrics.processMetricsPrefix`), units are in the names, and every label is bounded: route ids from the
 * config, reason codes and outcomes from closed sets, status classes — never a path,
 * a token or a client-chosen string.
 *
 * Feature modules never import prom-client: `app/createApp.ts` binds their hook interfaces to the
 * functions here.
 *
 * Per-request series (request counts and durations, upstream durations) are counted in
 * plain per-route slots and published when Prometheus scrapes (`collect`), so a request
 * pays array increments, not prom-client's label hashing.
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { FailureReason } from '../errors.js';
import { type HistogramChild, HistogramSeries } from './histogramSeries.js';

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

/**
 * Seconds buckets from 0.5 ms to 60 s: gateway overhead is sub-millisecond, upstreams
 * vary, and a request cut by the default 30 s upstream timeout lands below 60 s, not in
 * +Inf only.
 */
const DURATION_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

/** One process's metrics as prom-client's `getMetricsAsJSON()` gives them (clusterMetrics.ts). */
export type MetricsSnapshot = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

/** The quota step's outcomes (`pipeline/quotaStep.ts`). */
export const QUOTA_OUTCOMES = [
  'allowed',
  'refused',
  'unavailable-open',
  'unavailable-closed',
] as const;
export type QuotaOutcomeLabel = (typeof QUOTA_OUTCOMES)[number];
const QUOTA_OUTCOME_INDEX: Readonly<Record<QuotaOutcomeLabel, number>> = {
  allowed: 0,
  refused: 1,
  'unavailable-open': 2,
  'unavailable-closed': 3,
};

export interface Metrics {
  /** The Prometheus text exposition of every metric, and its content type. */
  exposition(): Promise<{ contentType: string; text: string }>;
  /** Every metric's values, for the primary to merge with the other workers' (workers > 1). */
  snapshot(): Promise<MetricsSnapshot>;
  requestStarted(): void;
  requestFinished(route: string, method: MethodClass, status: StatusClass, seconds: number): void;
  tokenRequest(outcome: string): void;
  /** An OAuth 2.0 endpoint's outcome (`endpoint`: token, revoke, introspect; `outcome`: its `error` code or `issued`, …). */
  oauthRequest(endpoint: string, outcome: string): void;
  /** A token issued to a registered client (per-client series up to `maxClientLabels`). */
  tokenIssuedTo(clientId: string): void;
  authFailure(reason: FailureReason): void;
  cacheLookup(hit: boolean): void;
  /** A full (uncached) token verification succeeded; `ageSeconds` is `now − iat`. */
  tokenVerified(issuer: string, seconds: number, ageSeconds: number): void;
  /** A full token verification failed, by private reason. */
  tokenVerifyFailed(issuer: string, reason: FailureReason, seconds: number): void;
  upstreamResponse(route: string, seconds: number): void;
  upstreamError(route: string, kind: string): void;
  /** Binds a gauge read at scrape time (e.g. cache size). */
  setCacheSizeSource(read: () => number): void;
  /** Binds the count of log writes dropped on a full output backlog, read at scrape time. */
  setLogDropSource(read: () => number): void;
  /** A key set fetch of a trusted external issuer. */
  keySetFetch(issuer: string, trigger: string, outcome: string): void;
  /**
   * A key set fetch of a `private_key_jwt` client (its `jwksUri`), counted with the
   * issuers' as `issuer="client:<id>"` for the first `maxClientLabels` clients seen, then
   * `client:_other` (issuer ids cannot hold `:`).
   */
  clientKeySetFetch(clientId: string, trigger: string, outcome: string): void;
  /** A reload of the clients file, the keys directory or the routes. */
  configReload(source: string, outcome: string): void;
  /**
   * The reloadable sources, loaded at start: each reports a successful last reload and
   * zero failed ones until a reload says otherwise.
   */
  configSources(sources: readonly string[]): void;
  /** Binds the signing-key states and the active key's age, read at scrape time. */
  setSigningKeySource(read: () => SigningKeySnapshot): void;
  /** Binds the external issuers' key set states, read at scrape time. */
  setIssuerSource(read: () => readonly IssuerSnapshot[]): void;
  /** A revocation accepted (durably) through the admin API or the OAuth revocation endpoint. */
  revoked(kind: 'token' | 'client'): void;
  /** Binds the number of revocation entries held, read at scrape time. */
  setRevocationSizeSource(read: () => number): void;
  /** Binds the Redis revocation store's sync age and queue, read at scrape time. */
  setRevocationSyncSource(read: () => RevocationSyncSnapshot): void;
  /** A full synchronisation of the revocation list with Redis ended. */
  revocationSync(outcome: 'ok' | 'error'): void;
  /** A protected request or an introspection refused (503) because the revocation list was stale. */
  revocationStaleRefusal(method: MethodClass): void;
  /** Binds one Redis connection's state (`role`: a fixed name per connection), read at scrape time. */
  addRedisConnectionSource(role: string, connected: () => boolean): void;
  /** A token request refused by a token limit. */
  tokenLimitRefusal(reason: TokenLimitReason): void;
  /**
   * A metered request's quota decision: `policy` a configured name, `route` a route id
   * (both bounded by the configuration), `outcome` a closed set.
   */
  quotaDecision(policy: string, route: string, outcome: QuotaOutcomeLabel): void;
  /** A token-limit check answered locally because Redis could not be used. */
  tokenLimitFallback(check: TokenLimitCheck): void;
  /** A WebSocket tunnel closed by the gateway because its token ended. */
  webSocketClosed(reason: 'token_expired' | 'token_revoked'): void;
  /** Binds the count of open WebSocket tunnels, read at scrape time. */
  setWebSocketTunnelSource(read: () => number): void;
  /** A client-certificate header came from a peer that is not a trusted proxy (ignored). */
  certificateHeaderIgnored(): void;
}

/** Which token limit refused a request. */
export type TokenLimitReason = 'address' | 'client' | 'backoff';
/** Which shared token-limit operation fell back to the local limiter. */
export type TokenLimitCheck = 'address' | 'client' | 'backoff' | 'record';

export interface RevocationSyncSnapshot {
  /** Seconds since the last successful synchronisation; null: never. */
  readonly lagSeconds: number | null;
  /** Revocations queued on disk, waiting for Redis. */
  readonly queued: number;
}

export interface SigningKeySnapshot {
  readonly states: readonly { readonly state: string }[];
  readonly activeAgeSeconds: number | null;
  /** Seconds until the active key's scheduled retirement; null: none scheduled. */
  readonly activeRetiresInSeconds: number | null;
}

export interface IssuerSnapshot {
  readonly id: string;
  readonly usable: boolean;
  readonly ageSeconds: number | null;
  readonly keys: number;
}

const KEY_STATES = ['pending', 'active', 'retiring', 'retired'] as const;

// With several workers (clusterMetrics.ts) counters and histograms are summed, and so is a
// gauge unless it says otherwise: gauges every process reports alike (keys, the
// revocation list, Redis connections) take the max or min, not N times the value, and so
// does the one counter every worker counts alike (config reloads).

/** A fresh registry per app: tests read their own, nothing is global. */
/** Per-route counters: requests by method class × status class, and two histograms. */
class RouteSlot {
  readonly counts = new Float64Array(2 * STATUS_INDEX.length);
  readonly duration: HistogramChild;
  /**
   * Made by the first upstream answer: a route the gateway answers itself (token, jwks,
   * openapi, unmatched) never has one, and publishes no always-empty upstream series.
   */
  upstream: HistogramChild | null = null;
  constructor(duration: HistogramChild) {
    this.duration = duration;
  }
}

const STATUS_INDEX: readonly StatusClass[] = ['1xx', '2xx', '3xx', '4xx', '5xx'];
const METHOD_INDEX: readonly MethodClass[] = ['safe', 'unsafe'];

/** A fresh registry per app: tests read their own, nothing is global. */
export interface MetricsOptions {
  /** Distinct clients given their own `client` label; later ones share `_other`. 0: no per-client series. */
  readonly maxClientLabels: number;
  /** Prefix of prom-client's process and Node.js metrics; '' (default): the standard names. */
  readonly processMetricsPrefix?: string;
}

/** The `client` label value shared by clients beyond `maxClientLabels`. */
export const OTHER_CLIENTS = '_other';

export function createMetrics(options: MetricsOptions = { maxClientLabels: 0 }): Metrics {
  const registry = new Registry();
  const registers = [registry];
  const slots = new Map<string, RouteSlot>();
  let inFlightCount = 0;

  // prom-client's process and Node.js metrics under their standard names (what the stock
  // Node.js dashboards query) unless a prefix is configured. The three
  // `nodejs_active_*_total` gauges break the naming rule (promtool flags a gauge ending in
  // `_total`) and repeat `nodejs_active_*`: left out.
  const prefix = options.processMetricsPrefix ?? '';
  collectDefaultMetrics({ register: registry, prefix });
  for (const kind of ['handles', 'requests', 'resources']) {
    registry.removeSingleMetric(`${prefix}nodejs_active_${kind}_total`);
  }

  new Counter({
    name: 'portaria_http_requests_total',
    help: 'Requests answered on the public listener, by route id, method class and status class.',
    labelNames: ['route', 'method', 'status_class'] as const,
    registers,
    collect() {
      this.reset();
      for (const [route, slot] of slots) {
        for (let m = 0; m < METHOD_INDEX.length; m++) {
          for (let s = 0; s < STATUS_INDEX.length; s++) {
            const n = slot.counts[m * STATUS_INDEX.length + s] as number;
            if (n > 0)
              this.inc({ route, method: METHOD_INDEX[m], status_class: STATUS_INDEX[s] }, n);
          }
        }
      }
    },
  });
  const duration = new HistogramSeries({
    name: 'portaria_http_request_duration_seconds',
    help: 'Time from request start to response end on the public listener, by route id.',
    buckets: DURATION_BUCKETS,
    registry,
  });
  new Gauge({
    name: 'portaria_http_requests_in_flight',
    help: 'Requests being handled on the public listener.',
    registers,
    collect() {
      this.set(inFlightCount);
    },
  });
  const tokens = new Counter({
    name: 'portaria_token_requests_total',
    help: 'Token operation outcomes (issued, invalid_request, invalid_client, error, …).',
    labelNames: ['outcome'] as const,
    registers,
  });
  const oauthRequests = new Counter({
    name: 'portaria_oauth_requests_total',
    help: 'OAuth 2.0 endpoint outcomes, by endpoint (token, …) and outcome (issued, an RFC 6749 error code, rate_limited, …).',
    labelNames: ['endpoint', 'outcome'] as const,
    registers,
  });
  const labelledClients = new Set<string>();
  /** `clientId` while `seen` has room for it (the first `maxClientLabels`), else `_other`. */
  const clientLabel = (seen: Set<string>, clientId: string): string => {
    if (seen.has(clientId)) return clientId;
    if (seen.size >= options.maxClientLabels) return OTHER_CLIENTS;
    seen.add(clientId);
    return clientId;
  };
  /** Clients whose key-set fetches have their own `issuer` label (up to `maxClientLabels`). */
  const keySetClients = new Set<string>();
  const issuedByClient =
    options.maxClientLabels > 0
      ? new Counter({
          name: 'portaria_tokens_issued_by_client_total',
          help: `Tokens issued, by client id: the first ${options.maxClientLabels} clients seen get their own series, later ones share client="${OTHER_CLIENTS}".`,
          labelNames: ['client'] as const,
          registers,
        })
      : null;
  const authFailures = new Counter({
    name: 'portaria_auth_failures_total',
    help: 'Bearer verification refusals on protected routes, by reason code.',
    labelNames: ['reason'] as const,
    registers,
  });
  const cacheLookups = { hit: 0, miss: 0 };
  new Counter({
    name: 'portaria_verify_cache_lookups_total',
    help: 'Verified-token cache lookups, by result (hit or miss).',
    labelNames: ['result'] as const,
    registers,
    collect() {
      this.reset();
      if (cacheLookups.hit > 0) this.inc({ result: 'hit' }, cacheLookups.hit);
      if (cacheLookups.miss > 0) this.inc({ result: 'miss' }, cacheLookups.miss);
    },
  });
  const verifications = new Counter({
    name: 'portaria_token_verifications_total',
    help: 'Full (uncached) bearer token verifications, by issuer id and outcome (valid or the private refusal reason).',
    labelNames: ['issuer', 'outcome'] as const,
    registers,
  });
  const verifyDuration = new Histogram({
    name: 'portaria_token_verify_duration_seconds',
    help: 'Time of a full (uncached) token verification, key lookup and signature included, by issuer id.',
    labelNames: ['issuer'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1, 5],
    registers,
  });
  const tokenAge = new Histogram({
    name: 'portaria_token_clock_skew_seconds',
    help: 'now − iat when a token is first verified, by issuer id: negative values mean the issuer clock runs ahead.',
    labelNames: ['issuer'] as const,
    buckets: [-300, -60, -10, -1, 0, 1, 10, 60, 300, 900, 3600, 86_400],
    registers,
  });
  let readLogDrops: () => number = () => 0;
  new Counter({
    name: 'portaria_log_dropped_writes_total',
    help: 'Log writes (each one or more whole lines) dropped because the reader of the log output fell more than 32 MiB behind.',
    registers,
    collect() {
      this.reset();
      this.inc(readLogDrops());
    },
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
  const upstreamDuration = new HistogramSeries({
    name: 'portaria_upstream_duration_seconds',
    help: 'Time from dispatch to the end of the upstream response, by route id.',
    buckets: DURATION_BUCKETS,
    registry,
  });
  const upstreamErrors = new Counter({
    name: 'portaria_upstream_errors_total',
    help: 'Upstream failures by route id and kind (timeout, refused, reset, error).',
    labelNames: ['route', 'kind'] as const,
    registers,
  });

  const keySetFetches = new Counter({
    name: 'portaria_jwks_fetches_total',
    help: 'Key set fetches of trusted external issuers and of private_key_jwt clients (issuer="client:<id>"), by issuer id, trigger (startup, scheduled, unknown-kid, retry) and outcome.',
    labelNames: ['issuer', 'trigger', 'outcome'] as const,
    registers,
  });
  // Every worker of a group reloads the same files (its own watch, or the SIGHUP passed
  // on): the group's count is one worker's, the most any counted, not N per change.
  const reloads = new Counter({
    name: 'portaria_config_reload_total',
    aggregator: 'max',
    help: 'Reloads of the clients file, the keys directory, the routes and the TLS files, by source and outcome (applied, failed; a change event that left the content as it was is not counted; with workers, the most any worker counted).',
    labelNames: ['source', 'outcome'] as const,
    registers,
  });
  const lastReloadOk = new Gauge({
    name: 'portaria_config_last_reload_successful',
    aggregator: 'min',
    help: 'Whether the last load of each reloadable source succeeded (1) or failed (0, the gateway keeps running the last good one), by source.',
    labelNames: ['source'] as const,
    registers,
  });
  let readSigningKeys: () => SigningKeySnapshot = () => ({
    states: [],
    activeAgeSeconds: null,
    activeRetiresInSeconds: null,
  });
  new Gauge({
    name: 'portaria_signing_keys',
    aggregator: 'max',
    help: 'Signing keys by state (pending, active, retiring, retired).',
    labelNames: ['state'] as const,
    registers,
    collect() {
      const counts = new Map<string, number>(KEY_STATES.map((s) => [s, 0]));
      for (const key of readSigningKeys().states)
        counts.set(key.state, (counts.get(key.state) ?? 0) + 1);
      for (const [state, n] of counts) this.set({ state }, n);
    },
  });
  new Gauge({
    name: 'portaria_signing_key_active_age_seconds',
    aggregator: 'max',
    help: 'Seconds since the active signing key started signing.',
    registers,
    collect() {
      const age = readSigningKeys().activeAgeSeconds;
      if (age === null) this.reset();
      else this.set(age);
    },
  });
  new Gauge({
    name: 'portaria_signing_key_active_retires_in_seconds',
    aggregator: 'min',
    help: 'Seconds until the active signing key is scheduled to retire (absent when no retirement is scheduled).',
    registers,
    collect() {
      const left = readSigningKeys().activeRetiresInSeconds;
      if (left === null) this.reset();
      else this.set(left);
    },
  });
  let readIssuers: () => readonly IssuerSnapshot[] = () => [];
  new Gauge({
    name: 'portaria_jwks_age_seconds',
    aggregator: 'max',
    help: 'Age of the key set held for each trusted external issuer (since its last successful fetch).',
    labelNames: ['issuer'] as const,
    registers,
    collect() {
      this.reset();
      for (const i of readIssuers())
        if (i.ageSeconds !== null) this.set({ issuer: i.id }, i.ageSeconds);
    },
  });
  new Gauge({
    name: 'portaria_jwks_keys',
    aggregator: 'min',
    help: 'Keys held for each trusted external issuer.',
    labelNames: ['issuer'] as const,
    registers,
    collect() {
      this.reset();
      for (const i of readIssuers()) this.set({ issuer: i.id }, i.keys);
    },
  });

  const revocations = new Counter({
    name: 'portaria_revocations_total',
    help: 'Revocations accepted through the admin API or the OAuth revocation endpoint, by kind (token, client).',
    labelNames: ['kind'] as const,
    registers,
  });
  let readRevocationSize: () => number = () => 0;
  new Gauge({
    name: 'portaria_revocation_entries',
    aggregator: 'max',
    help: 'Revocation entries held (tokens and client cut-offs not yet expired).',
    registers,
    collect() {
      this.set(readRevocationSize());
    },
  });
  // Redis revocation store only: without it these gauges have no sample.
  let readRevocationSync: (() => RevocationSyncSnapshot) | null = null;
  new Gauge({
    name: 'portaria_revocation_sync_lag_seconds',
    aggregator: 'max',
    help: 'Age of the revocation list: seconds since its last successful synchronisation with Redis (+Inf before the first).',
    registers,
    collect() {
      const sync = readRevocationSync?.();
      if (sync === undefined) this.reset();
      else this.set(sync.lagSeconds ?? Number.POSITIVE_INFINITY);
    },
  });
  new Gauge({
    name: 'portaria_revocation_queue_entries',
    aggregator: 'max',
    help: 'Revocations accepted while Redis was unreachable, queued on disk until replayed.',
    registers,
    collect() {
      const sync = readRevocationSync?.();
      if (sync === undefined) this.reset();
      else this.set(sync.queued);
    },
  });
  const revocationSyncs = new Counter({
    name: 'portaria_revocation_syncs_total',
    help: 'Full synchronisations of the revocation list with Redis (at start and after each reconnection), by outcome (ok, error).',
    labelNames: ['outcome'] as const,
    registers,
  });
  // Counted in plain arrays and handed to prom-client at scrape time, as the request
  // counter is: `labels(…).inc()` hashes its label values on every metered request.
  const quotaCounts = new Map<string, Map<string, number[]>>();
  new Counter({
    name: 'portaria_quota_decisions_total',
    help: 'Metered requests by quota policy, route and outcome: allowed, refused (429), unavailable-open (the quota store could not answer; let through), unavailable-closed (503).',
    labelNames: ['policy', 'route', 'outcome'] as const,
    registers,
    collect() {
      this.reset();
      for (const [policy, routes] of quotaCounts) {
        for (const [route, counts] of routes) {
          for (let i = 0; i < QUOTA_OUTCOMES.length; i++) {
            const n = counts[i] as number;
            if (n > 0) this.inc({ policy, route, outcome: QUOTA_OUTCOMES[i] }, n);
          }
        }
      }
    },
  });
  const staleRefusals = new Counter({
    name: 'portaria_revocation_stale_refusals_total',
    help: 'Protected requests and introspections refused with 503 because the revocation list was older than revocation.maxSyncLagSeconds, by method class (an introspection is a POST: unsafe).',
    labelNames: ['method'] as const,
    registers,
  });
  const redisConnections = new Map<string, () => boolean>();
  new Gauge({
    name: 'portaria_redis_connected',
    aggregator: 'min',
    help: 'Whether each Redis connection is up (1) or not (0), by role (a fixed name per connection: revocation, revocation-subscriber, limits, replay); with workers, 0 if any is down.',
    labelNames: ['role'] as const,
    registers,
    collect() {
      this.reset();
      for (const [role, connected] of redisConnections) this.set({ role }, connected() ? 1 : 0);
    },
  });

  const limitRefusals = new Counter({
    name: 'portaria_token_limit_refusals_total',
    help: 'Token requests refused with 429 by a token limit, by reason (address, client, backoff).',
    labelNames: ['reason'] as const,
    registers,
  });
  // Every reason from the start, so a rate() over it exists before the first refusal.
  for (const reason of ['address', 'client', 'backoff'] as const) limitRefusals.inc({ reason }, 0);
  const limitFallbacks = new Counter({
    name: 'portaria_token_limit_redis_fallbacks_total',
    help: 'Shared (Redis) token-limit operations answered by the local limiter because Redis could not be used, by check (address, client, backoff, record).',
    labelNames: ['check'] as const,
    registers,
  });

  const certificateHeadersIgnored = new Counter({
    name: 'portaria_client_certificate_headers_ignored_total',
    help: 'Requests whose client-certificate header was ignored because their TCP peer is not in server.trustedProxies (clientCertificate.source: header).',
    registers,
  });
  const tunnelsClosed = new Counter({
    name: 'portaria_websocket_closed_total',
    help: 'WebSocket tunnels the gateway closed because the token that opened them ended, by reason (token_expired, token_revoked).',
    labelNames: ['reason'] as const,
    registers,
  });
  for (const reason of ['token_expired', 'token_revoked'] as const)
    tunnelsClosed.inc({ reason }, 0);
  let readOpenTunnels: () => number = () => 0;
  new Gauge({
    name: 'portaria_websocket_tunnels_open',
    help: 'WebSocket tunnels open now (past their 101, not closed yet).',
    registers,
    collect() {
      this.set(readOpenTunnels());
    },
  });

  const slotOf = (route: string): RouteSlot => {
    let slot = slots.get(route);
    if (slot === undefined) {
      slot = new RouteSlot(duration.child('route', route));
      slots.set(route, slot);
    }
    return slot;
  };

  return {
    async exposition() {
      return { contentType: registry.contentType, text: await registry.metrics() };
    },
    snapshot() {
      return registry.getMetricsAsJSON();
    },
    requestStarted() {
      inFlightCount++;
    },
    requestFinished(route, method, status, seconds) {
      inFlightCount--;
      const slot = slotOf(route);
      const i = (method === 'safe' ? 0 : STATUS_INDEX.length) + STATUS_INDEX.indexOf(status);
      slot.counts[i] = (slot.counts[i] as number) + 1;
      slot.duration.observe(seconds);
    },
    tokenRequest(outcome) {
      tokens.labels(outcome).inc();
    },
    oauthRequest(endpoint, outcome) {
      oauthRequests.labels(endpoint, outcome).inc();
    },
    tokenIssuedTo(clientId) {
      issuedByClient?.labels(clientLabel(labelledClients, clientId)).inc();
    },
    tokenVerified(issuer, seconds, ageSeconds) {
      verifications.labels(issuer, 'valid').inc();
      verifyDuration.labels(issuer).observe(seconds);
      tokenAge.labels(issuer).observe(ageSeconds);
    },
    tokenVerifyFailed(issuer, reason, seconds) {
      verifications.labels(issuer, reason).inc();
      verifyDuration.labels(issuer).observe(seconds);
    },
    authFailure(reason) {
      authFailures.labels(reason).inc();
    },
    cacheLookup(hit) {
      if (hit) cacheLookups.hit++;
      else cacheLookups.miss++;
    },
    upstreamResponse(route, seconds) {
      const slot = slotOf(route);
      slot.upstream ??= upstreamDuration.child('route', route);
      slot.upstream.observe(seconds);
    },
    upstreamError(route, kind) {
      upstreamErrors.labels(route, kind).inc();
    },
    setCacheSizeSource(read) {
      readCacheSize = read;
    },
    setLogDropSource(read) {
      readLogDrops = read;
    },
    keySetFetch(issuer, trigger, outcome) {
      keySetFetches.labels(issuer, trigger, outcome).inc();
    },
    clientKeySetFetch(clientId, trigger, outcome) {
      keySetFetches
        .labels(`client:${clientLabel(keySetClients, clientId)}`, trigger, outcome)
        .inc();
    },
    configSources(sources) {
      for (const source of sources) {
        lastReloadOk.labels(source).set(1);
        for (const outcome of ['applied', 'failed']) reloads.labels(source, outcome).inc(0);
      }
    },
    configReload(source, outcome) {
      reloads.labels(source, outcome).inc();
      if (outcome === 'applied' || outcome === 'failed') {
        lastReloadOk.labels(source).set(outcome === 'applied' ? 1 : 0);
      }
    },
    setSigningKeySource(read) {
      readSigningKeys = read;
    },
    setIssuerSource(read) {
      readIssuers = read;
    },
    revoked(kind) {
      revocations.labels(kind).inc();
    },
    setRevocationSizeSource(read) {
      readRevocationSize = read;
    },
    setRevocationSyncSource(read) {
      readRevocationSync = read;
      // Both outcomes and method classes from the start, so rate() works before the first.
      for (const outcome of ['ok', 'error'] as const) revocationSyncs.inc({ outcome }, 0);
      for (const method of ['safe', 'unsafe'] as const) staleRefusals.inc({ method }, 0);
    },
    revocationSync(outcome) {
      revocationSyncs.labels(outcome).inc();
    },
    revocationStaleRefusal(method) {
      staleRefusals.labels(method).inc();
    },
    addRedisConnectionSource(role, connected) {
      redisConnections.set(role, connected);
    },
    quotaDecision(policy, route, outcome) {
      let routes = quotaCounts.get(policy);
      if (routes === undefined) {
        routes = new Map();
        quotaCounts.set(policy, routes);
      }
      let counts = routes.get(route);
      if (counts === undefined) {
        counts = QUOTA_OUTCOMES.map(() => 0);
        routes.set(route, counts);
      }
      const i = QUOTA_OUTCOME_INDEX[outcome];
      counts[i] = (counts[i] as number) + 1;
    },
    tokenLimitRefusal(reason) {
      limitRefusals.labels(reason).inc();
    },
    tokenLimitFallback(check) {
      limitFallbacks.labels(check).inc();
    },
    webSocketClosed(reason) {
      tunnelsClosed.labels(reason).inc();
    },
    setWebSocketTunnelSource(read) {
      readOpenTunnels = read;
    },
    certificateHeaderIgnored() {
      certificateHeadersIgnored.inc();
    },
  };
}
