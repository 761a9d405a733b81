/**
 * The validated, frozen configuration every module receives. Built once at start by
 * `loadConfig.ts` (file + environment) and `validateConfig.ts` (all problems at once);
 * nothing reads `process.env` after that. Each setting here is one in `schema.ts`
 * (`demo` aside: it comes from the command line); test/config/configTypes.test.ts
 * fails when the two drift.
 */

export type SigningAlgorithm = 'ES256' | 'EdDSA' | 'RS256' | 'PS256';
export const SIGNING_ALGORITHMS: readonly SigningAlgorithm[] = ['ES256', 'EdDSA', 'RS256', 'PS256'];

export type ResponseFieldSet = 'reference' | 'guide';

export interface ListenerConfig {
  readonly host: string;
  readonly port: number;
}

export interface ServerConfig extends ListenerConfig {
  /** Time allowed to receive the complete request headers (slowloris guard). */
  readonly headersTimeoutMs: number;
  /** Time allowed to receive the complete request, body included. */
  readonly requestTimeoutMs: number;
  /** How long an idle keep-alive connection is kept open. */
  readonly keepAliveTimeoutMs: number;
  /** Largest total size of request headers, bytes (Node's `maxHeaderSize`). */
  readonly maxHeaderBytes: number;
  /**
   * Most header lines in one request; a request that reaches it is refused with 431 and
   * its connection closed (Node drops lines past its count: see `reachesHeaderLines` in
   * http/framingChecks.ts).
   */
  readonly maxHeaderLines: number;
  /** On SIGTERM: how long in-flight requests may take before connections are cut. */
  readonly shutdownGraceMs: number;
  /**
   * Addresses, CIDRs or range names (`loopback`, `linklocal`, `uniquelocal`) of the
   * proxies in front of the gateway. The client's address is the first `X-Forwarded-For`
   * hop from the right that is not one of them (the peer, when the peer is not); only a
   * trusted peer's `X-Forwarded-Proto/-Host` are kept. Empty: every peer is the client.
   */
  readonly trustedProxies: readonly string[];
  /**
   * Close a WebSocket tunnel when the token that opened it expires. A tunnel whose token
   * is revoked is closed either way.
   */
  readonly closeWebSocketsAtTokenExpiry: boolean;
  /**
   * A client that half-closes its connection (TCP FIN) after sending its request:
   * `answer` sends the answer, then closes (HAProxy's default); `abort` takes the FIN for
   * the client leaving, cancels the upstream request and logs 499 (nginx's default).
   */
  readonly halfClosedRequests: 'answer' | 'abort';
  /**
   * Worker processes sharing the public listener (docs/workers.md): 1 runs the gateway
   * in this one process; `auto`, the CPUs available to it (cgroup quota included).
   */
  readonly workers: number | 'auto';
  /** TLS on the public listener (off: plain HTTP). */
  readonly tls: ServerTlsConfig;
}

/** `server.tls`: the public listener's TLS (the admin listener stays plain HTTP). */
export interface ServerTlsConfig {
  readonly enabled: boolean;
  /** PEM: the server certificate, then the intermediates a client needs to reach its root. */
  readonly certFile: string | null;
  /** PEM: its private key (unencrypted). */
  readonly keyFile: string | null;
  readonly minVersion: 'TLSv1.2' | 'TLSv1.3';
  /**
   * `default`: Node's cipher suites, TLS 1.3 preferred; `fapi`: TLS 1.2 only with the four
   * suites of FAPI 1.0 Advanced §8.5 (RSA certificates), TLS 1.3 as by default.
   */
  readonly policy: 'default' | 'fapi';
  /**
   * Client certificates in the handshake: `off` (none asked for), `request` (asked for,
   * verified when given), `require` (every request but the public documents refused
   * without a verified one, with problem details).
   */
  readonly clientCertificates: 'off' | 'request' | 'require';
}

/** `clientCertificate`: where a client certificate comes from and what verifies it. */
export interface ClientCertificateConfig {
  /**
   * `none`; `tls`: the public listener's handshake (`server.tls.clientCertificates`);
   * `header`: a trusted proxy's header.
   */
  readonly source: 'none' | 'tls' | 'header';
  /**
   * PEM bundles of the CAs client certificates must chain to (absolute paths): the TLS
   * handshake's, and a header certificate's re-check (empty there: the proxy's check is
   * trusted).
   */
  readonly caFiles: readonly string[];
  /** PEM CRLs; given, every CA in a chain needs a current one (docs/security.md). */
  readonly crlFiles: readonly string[];
  /** `source: header`: the trusted proxy's header. */
  readonly header: {
    /** `rfc9440` (Client-Cert), `xfcc` (Envoy), `nginx` ($ssl_client_escaped_cert). */
    readonly format: 'rfc9440' | 'xfcc' | 'nginx';
    /** The certificate field's name, lower case: the format's default unless set. */
    readonly name: string;
  };
}

export interface TokenConfig {
  /** Default access-token lifetime, seconds (a client may override it). */
  readonly lifetimeSeconds: number;
  readonly algorithm: SigningAlgorithm;
  /** `reference` (token_de_acesso, …) or `guide` (accesstoken, …). */
  readonly responseFields: ResponseFieldSet;
  /** Largest accepted token-request body, bytes. */
  readonly bodyLimitBytes: number;
}

export interface VerifyConfig {
  /** Verified-token cache capacity (entries). 0 disables the cache. */
  readonly cacheSize: number;
}

/** One quota policy (docs/quotas.md). */
export interface QuotaPolicyConfig {
  readonly rate?: { readonly perSecond: number; readonly burst?: number };
  readonly quota?: {
    readonly limit: number;
    readonly window: 'minute' | 'hour' | 'day' | 'month';
    readonly timeZone: string;
  };
  /** Whose counters: the partner's over every route, or per route too. */
  readonly per: 'client' | 'client-route';
  /** The claim naming the partner; null: the client id. */
  readonly claim: string | null;
}

/** Per-partner rate limits and quotas on API routes (docs/quotas.md). */
export interface QuotasConfig {
  readonly store: 'local' | 'redis';
  readonly whenRedisDown: 'open' | 'closed';
  readonly headers: 'always' | 'refusals' | 'off';
  /** The most counters the local store keeps. */
  readonly maxTrackedKeys: number;
  readonly policies: Readonly<Record<string, QuotaPolicyConfig>>;
}

/** DPoP (RFC 9449), docs/dpop.md. */
export interface DpopConfig {
  /** Accept DPoP proofs at the token endpoints and DPoP tokens at the edge. */
  readonly enabled: boolean;
  readonly algorithms: readonly ('ES256' | 'ES384' | 'EdDSA' | 'PS256' | 'RS256')[];
  /** How far a proof's `iat` may be from now, either way. */
  readonly proofWindowSeconds: number;
  /** Server-provided nonces (RFC 9449 §8). */
  readonly nonces: {
    readonly enabled: boolean;
    /** The shared HMAC secret; null: a random one per process group. */
    readonly secretFile: string | null;
    /** How long one nonce slot lasts (a nonce is accepted for one to two of them). */
    readonly lifetimeSeconds: number;
  };
}

export type GatewayMode = 'proxy' | 'authorizer' | 'both';

/** The decision listeners (docs/authorizer.md). */
export interface AuthorizerConfig extends ListenerConfig {
  /** Envoy ext_authz v3 over gRPC (same host as the HTTP decision listener). */
  readonly grpc: { readonly enabled: boolean; readonly port: number };
  /** Where nginx `auth_request` sends the original method and URI. */
  readonly originalMethodHeader: string;
  readonly originalUriHeader: string;
  readonly cacheDecisions: {
    readonly enabled: boolean;
    /** The longest an allow decision may be cached: how long a revoked token may still pass. */
    readonly maxAgeSeconds: number;
  };
}

export interface RouteConfig {
  /** Bounded identifier used in metrics and logs. */
  readonly id: string;
  /** Canonical path prefix, matched on segment boundaries (`/v1/orders` matches `/v1/orders/1`, not `/v1/ordersX`). */
  readonly prefix: string;
  /**
   * Upstream origin (`http://host:port`), optionally with a base path that replaces nothing:
   * the request path is appended as is. Null only with `mode: authorizer` (nothing forwarded).
   */
  readonly upstream: string | null;
  /** Scopes a token must carry for this route. */
  readonly scopes: readonly string[];
  /** Time allowed for the upstream's response headers, and between body chunks. */
  readonly timeoutMs: number;
  /** An `aud` value the token must carry for this route (RFC 8707), or null: any accepted. */
  readonly audience: string | null;
  /** Only certificate-bound tokens (RFC 8705 §3) pass: a plain bearer token gets 401 (default false). */
  readonly requireCertificateBound?: boolean;
  /**
   * Only sender-constrained tokens pass: DPoP-bound (RFC 9449) with their proof, or bound to
   * the certificate presented (RFC 8705); a bearer token gets 401 (default false).
   */
  readonly requireSenderConstrained?: boolean;
  /** The quota policy metering this route (`quotas.policies`); absent: none. */
  readonly quota?: string;
}

export interface UpstreamConfig {
  /** Route used when no prefix matches; null → 404 for unmatched paths. */
  readonly default: {
    /** Null only with `mode: authorizer`. */
    readonly upstream: string | null;
    readonly scopes: readonly string[];
    readonly timeoutMs: number;
    readonly requireCertificateBound?: boolean;
    readonly requireSenderConstrained?: boolean;
    readonly quota?: string;
  } | null;
  /** Default timeout for routes that name none. */
  readonly timeoutMs: number;
  /** Keep-alive connections per upstream origin. */
  readonly connections: number;
}

export type ExternalAlgorithm = 'ES256' | 'ES384' | 'EdDSA' | 'RS256' | 'PS256';

export interface IssuerConfig {
  /** Bounded identifier for metrics and logs. */
  readonly id: string;
  /** Exact `iss` value. */
  readonly issuer: string;
  /** Remote JWKS (exactly one of jwksUri and keyFile). */
  readonly jwksUri: string | null;
  /** An `http:` jwksUri on a host other than loopback is accepted only with this set. */
  readonly allowPlainHttp: boolean;
  /** Local JWKS or PEM public key file. */
  readonly keyFile: string | null;
  /** Accepted `aud` values (a token must carry one of them). */
  readonly audiences: readonly string[];
  readonly algorithms: readonly ExternalAlgorithm[];
  readonly clockSkewSeconds: number;
  /** Require `typ: at+jwt` (RFC 9068). */
  readonly requireTyp: boolean;
  /**
   * Longest token lifetime (`exp − iat`) accepted from this issuer; longer tokens are
   * refused. It also bounds how long a revocation entry must live.
   */
  readonly maxLifetimeSeconds: number;
  readonly cacheMaxAgeSeconds: number;
  /** Least time between two fetches caused by unknown `kid`s. */
  readonly cooldownSeconds: number;
  /** How long the last good key set is used while the key server fails; then 503. */
  readonly maxStalenessSeconds: number;
  readonly fetchTimeoutMs: number;
}

export interface OAuthConfig {
  /** Serve the OAuth 2.0 endpoints (off: their paths are ordinary protected paths). */
  readonly enabled: boolean;
  /** RFC 6749 token endpoint (client credentials). */
  readonly tokenPath: string;
  /** RFC 7009 revocation endpoint. */
  readonly revocationPath: string;
  /** RFC 7662 introspection endpoint. */
  readonly introspectionPath: string;
  /** Latest `exp` a client assertion may carry, seconds after now (RFC 7523 §3). */
  readonly assertionMaxLifetimeSeconds: number;
  /**
   * Accepted `aud` of client assertions; empty: the token endpoint URL (issuer + tokenPath)
   * and the issuer.
   */
  readonly assertionAudiences: readonly string[];
  /**
   * Where used assertion `jti`s are kept: `local` (this process) or `redis` (every
   * replica). Default: `redis` when `revocation.store` is `redis`, else `local`.
   */
  readonly replayStore: 'local' | 'redis';
  /**
   * Most `jti`s the `local` store holds (~115 bytes of heap each); full, it refuses new
   * ones with 503. A DPoP proof's is held 2 × `dpop.proofWindowSeconds`.
   */
  readonly replayStoreMaxEntries: number;
  /**
   * `https://host[:port]` where the OAuth endpoints are also served with client
   * certificates (RFC 8705 §5): published as `mtls_endpoint_aliases`. Absent: none.
   */
  readonly mtlsBaseUrl?: string;
}

export type AdmitOrRefuse = 'admit' | 'refuse';

export interface RevocationConfig {
  /**
   * `local`: durable append-only log on disk (default); `memory`: lost on restart;
   * `redis`: shared by every replica through `redis`.
   */
  readonly store: 'local' | 'memory' | 'redis';
  /** The local store's log file. */
  readonly file: string;
  /** Redis store: the list counts as stale when its last synchronisation is older than this. */
  readonly maxSyncLagSeconds: number;
  /** Redis store: whether requests are admitted while the list is stale, per method class. */
  readonly whenStale: {
    /** GET, HEAD, OPTIONS, TRACE. */
    readonly safe: AdmitOrRefuse;
    /** Every other method. */
    readonly unsafe: AdmitOrRefuse;
  };
  /** Redis store: a revocation made while Redis is unreachable is queued durably and replayed, or refused (503). */
  readonly whileRedisDown: 'queue' | 'refuse';
  /** Redis store: the durable queue of revocations waiting for Redis. */
  readonly queueFile: string;
}

export interface RedisConfig {
  /**
   * One Redis server: `redis://[user@]host:port[/db]` (or `rediss://`). Null with
   * `sentinel.nodes` or `cluster.nodes`, or without Redis. Override with PORTARIA_REDIS_URL.
   */
  readonly url: string | null;
  /** ACL user (Redis ≥ 6) of the data nodes; or in the URL's user part, not both. */
  readonly username: string | null;
  /** File holding the data nodes' password (kept out of the URL and the config). */
  readonly passwordFile: string | null;
  readonly tls: RedisTlsConfig;
  readonly sentinel: RedisSentinelConfig;
  readonly cluster: RedisClusterConfig;
  /** Prefix of every key and channel Portaria uses (several gateways may share one Redis). */
  readonly keyPrefix: string;
  readonly connectTimeoutMs: number;
  readonly commandTimeoutMs: number;
}

/** TLS to every Redis connection (data nodes and sentinels alike). */
export interface RedisTlsConfig {
  /** TLS on (also implied by a `rediss://` URL). */
  readonly enabled: boolean;
  /** PEM CA bundle the server's certificate must chain to (else the system's). */
  readonly caFile: string | null;
  /** PEM client certificate and its key (Redis `tls-auth-clients`). */
  readonly certFile: string | null;
  readonly keyFile: string | null;
  /** The name checked against the server's certificate (else the host connected to). */
  readonly serverName: string | null;
}

/** Redis Sentinel: the primary of `masterName` as the sentinels report it. */
export interface RedisSentinelConfig {
  readonly masterName: string | null;
  /** Sentinels as `host:port`; non-empty turns Sentinel on. */
  readonly nodes: readonly string[];
  /** The sentinels' own ACL user and password file. */
  readonly username: string | null;
  readonly passwordFile: string | null;
}

/** Redis Cluster: seed nodes as `host:port`; non-empty turns Cluster on. */
export interface RedisClusterConfig {
  readonly nodes: readonly string[];
}

export interface TokenBucketConfig {
  readonly enabled: boolean;
  /** Tokens added per second. */
  readonly ratePerSecond: number;
  /** Bucket capacity: requests allowed at once after a quiet period. */
  readonly burst: number;
}

export interface TokenLimitsConfig {
  /** `local`: per-process buckets; `redis`: shared by every replica (atomic script). */
  readonly store: 'local' | 'redis';
  /** Local store: most entries tracked at once per kind (addresses, clients, (client, address) pairs). */
  readonly maxTrackedKeys: number;
  /** Token requests per source address. */
  readonly perAddress: TokenBucketConfig;
  /** Token requests per `clientId`. */
  readonly perClient: TokenBucketConfig;
  /** Growing delay after wrong secrets, per (client, source address). */
  readonly failedSecretBackoff: {
    readonly enabled: boolean;
    /** Wrong secrets allowed before the first delay. */
    readonly freeFailures: number;
    /** First delay; doubles with each further failure. */
    readonly baseDelayMs: number;
    readonly maxDelayMs: number;
    /** A (client, address) pair with no failure for this long starts over. */
    readonly forgetAfterSeconds: number;
  };
}

/** Where the client certificate comes from, and what the gateway checks it against. */
export type Profile = 'none' | 'fapi-br' | 'fapi2';

export interface Config {
  readonly server: ServerConfig;
  readonly admin: ListenerConfig & {
    /** File holding the admin API token (PORTARIA_ADMIN_TOKEN_FILE); null: admin API off. */
    readonly tokenFile: string | null;
  };
  readonly revocation: RevocationConfig;
  readonly redis: RedisConfig;
  readonly tokenLimits: TokenLimitsConfig;
  readonly quotas: QuotasConfig;
  readonly clientCertificate: ClientCertificateConfig;
  /** `iss` of the tokens we issue. */
  readonly issuer: string;
  /** `aud` of the tokens we issue and require. */
  readonly audience: string;
  /** Allowed difference between our clock and the token's time claims, seconds. */
  readonly clockSkewSeconds: number;
  readonly token: TokenConfig;
  readonly verify: VerifyConfig;
  readonly keys: {
    readonly dir: string;
    /** `Cache-Control: max-age` of the published key set; rotation publishes this far ahead. */
    readonly jwksMaxAgeSeconds: number;
  };
  /** Trusted external issuers, matched by `iss` before any key is fetched. */
  readonly issuers: readonly IssuerConfig[];
  /** Reloading the clients file, the keys directory and the routes while running. */
  readonly reload: { readonly enabled: boolean; readonly pollIntervalMs: number };
  readonly clients: { readonly file: string };
  /** The standard OAuth 2.0 endpoints beside the contract's operation (docs/oauth.md). */
  readonly oauth: OAuthConfig;
  readonly routes: readonly RouteConfig[];
  readonly upstream: UpstreamConfig;
  /** Claim name → request header set on forwarded requests (incoming copies always removed). */
  readonly identityHeaders: Readonly<Record<string, string>>;
  /** Forward the `Authorization` header to upstreams (they may re-verify). */
  readonly forwardAuthorization: boolean;
  /**
   * Caller-written address, host, path and method fields (`config/callerHeaders.ts`)
   * let through to upstreams, lowercase; every other one is removed.
   */
  readonly forwardCallerHeaders: readonly string[];
  /** Base of problem-details `tipo` URIs; the code is appended. */
  readonly problemTypeBase: string;
  readonly metrics: {
    /** Distinct clients given their own `client` metric label; later ones share `_other`; 0: none. */
    readonly maxClientLabels: number;
    /** Prefix of the process and Node.js metrics (`process_*`, `nodejs_*`); '': the standard names. */
    readonly processMetricsPrefix: string;
  };
  readonly log: {
    readonly level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
    /** Human-readable colored lines through pino-pretty (a dev dependency: development only). */
    readonly pretty: boolean;
  };
  readonly tracing: {
    /** OpenTelemetry spans exported over OTLP/HTTP, configured by the `OTEL_*` variables. */
    readonly enabled: boolean;
  };
  /**
   * `fapi-br`: FAPI 1.0 Advanced as Brazil's Open Finance uses it (docs/fapi.md): bound
   * tokens everywhere, certificates for every client, lifetimes of 300–900 s.
   */
  readonly profile: Profile;
  readonly dpop: DpopConfig;
  /** Forward verified requests (`proxy`), answer other proxies' questions (`authorizer`), or both. */
  readonly mode: GatewayMode;
  readonly authorizer: AuthorizerConfig;
  /**
   * Demo mode (`npm start`): create a signing key and a demo client when missing, and
   * start a demo upstream. Never on in a production config.
   */
  readonly demo: boolean;
}
