/**
 * JSON Schema of the configuration file, with every default. Validation fills the
 * defaults in (ajv `useDefaults`), so `config/portaria.example.yaml` and this file are
 * the two places a setting is described; a test checks they agree.
 */

const port = { type: 'integer', minimum: 0, maximum: 65535 } as const;
const host = { type: 'string', minLength: 1 } as const;
const positiveMs = { type: 'integer', minimum: 1, maximum: 3_600_000 } as const;
const scopeItems = {
  type: 'array',
  items: { type: 'string', pattern: '^[\\x21\\x23-\\x5B\\x5D-\\x7E]+$' },
  uniqueItems: true,
} as const;
const scopeList = { ...scopeItems, default: [] } as const;
/** An OAuth endpoint's path: canonical segments of unreserved characters (RFC 3986 §2.3). */
const oauthPath = { type: 'string', pattern: '^(/[A-Za-z0-9_~-][A-Za-z0-9._~-]*)+$' } as const;

const nullableText = { type: ['string', 'null'], minLength: 1, default: null } as const;
/** A quota policy's name (`quotas.policies`): it goes into Redis keys and RateLimit items. */
const QUOTA_NAME = '^[a-z0-9][a-z0-9-]{0,62}$';
const quotaName = { type: 'string', pattern: QUOTA_NAME } as const;
/** Redis nodes as `host:port` (`[v6]:port` for an IPv6 address). */
const redisNodes = {
  type: 'array',
  maxItems: 64,
  uniqueItems: true,
  items: { type: 'string', minLength: 3, maxLength: 300 },
  default: [],
} as const;

/** Files given as a list of paths (PEM bundles). */
const fileList = {
  type: 'array',
  maxItems: 64,
  uniqueItems: true,
  items: { type: 'string', minLength: 1 },
  default: [],
} as const;

/** A token bucket's settings (`tokenLimits.perAddress`, `tokenLimits.perClient`). */
function tokenBucket(ratePerSecond: number, burst: number) {
  return {
    type: 'object',
    additionalProperties: false,
    default: {},
    properties: {
      enabled: { type: 'boolean', default: true },
      ratePerSecond: {
        type: 'number',
        exclusiveMinimum: 0,
        maximum: 100_000,
        default: ratePerSecond,
      },
      burst: { type: 'integer', minimum: 1, maximum: 1_000_000, default: burst },
    },
  } as const;
}

/** Ceiling of `server.workers` (docs/workers.md): past it, scale by replicas. */
export const MAX_WORKERS = 64;

export const configSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    server: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        host: { ...host, default: '0.0.0.0' },
        port: { ...port, default: 8080 },
        headersTimeoutMs: { ...positiveMs, default: 10_000 },
        requestTimeoutMs: { ...positiveMs, default: 30_000 },
        keepAliveTimeoutMs: { ...positiveMs, default: 5_000 },
        maxHeaderBytes: { type: 'integer', minimum: 1024, maximum: 1_048_576, default: 16_384 },
        maxHeaderLines: { type: 'integer', minimum: 16, maximum: 10_000, default: 100 },
        shutdownGraceMs: { ...positiveMs, default: 30_000 },
        trustedProxies: {
          type: 'array',
          uniqueItems: true,
          items: { type: 'string', minLength: 1, maxLength: 64 },
          default: [],
        },
        closeWebSocketsAtTokenExpiry: { type: 'boolean', default: true },
        halfClosedRequests: { enum: ['answer', 'abort'], default: 'answer' },
        workers: {
          type: ['integer', 'string'],
          minimum: 1,
          maximum: MAX_WORKERS,
          pattern: '^auto$',
          default: 1,
        },
        // TLS on the public listener (docs/configuration.md#tls); rules in tlsRules.ts.
        tls: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            enabled: { type: 'boolean', default: false },
            certFile: nullableText,
            keyFile: nullableText,
            minVersion: { enum: ['TLSv1.2', 'TLSv1.3'], default: 'TLSv1.2' },
            policy: { enum: ['default', 'fapi'], default: 'default' },
            clientCertificates: { enum: ['off', 'request', 'require'], default: 'off' },
          },
        },
      },
    },
    admin: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        host: { ...host, default: '127.0.0.1' },
        port: { ...port, default: 9091 },
        tokenFile: { type: ['string', 'null'], minLength: 1, default: null },
      },
    },
    // Client certificates (mutual TLS, RFC 8705): where they come from — the listener's
    // TLS or a trusted proxy's header — and what they are checked against
    // (docs/configuration.md#client-certificates); rules in tlsRules.ts and
    // certificateRules.ts, header names in config/certificateHeaders.ts.
    clientCertificate: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        source: { enum: ['none', 'tls', 'header'], default: 'none' },
        caFiles: fileList,
        crlFiles: fileList,
        header: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            format: { enum: ['rfc9440', 'xfcc', 'nginx'], default: 'rfc9440' },
            name: { type: ['string', 'null'], pattern: '^[A-Za-z0-9-]{1,64}$', default: null },
          },
        },
      },
    },
    issuer: { type: 'string', minLength: 1, default: 'http://localhost:8080' },
    audience: { type: 'string', minLength: 1, default: 'portaria' },
    clockSkewSeconds: { type: 'integer', minimum: 0, maximum: 600, default: 60 },
    token: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        lifetimeSeconds: { type: 'integer', minimum: 1, maximum: 86_400, default: 3600 },
        algorithm: { enum: ['ES256', 'EdDSA', 'RS256', 'PS256'], default: 'ES256' },
        responseFields: { enum: ['reference', 'guide'], default: 'reference' },
        bodyLimitBytes: { type: 'integer', minimum: 64, maximum: 1_048_576, default: 16_384 },
      },
    },
    verify: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        cacheSize: { type: 'integer', minimum: 0, maximum: 10_000_000, default: 10_000 },
      },
    },
    keys: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        dir: { type: 'string', minLength: 1, default: './data/keys' },
        jwksMaxAgeSeconds: { type: 'integer', minimum: 0, maximum: 86_400, default: 300 },
      },
    },
    issuers: {
      type: 'array',
      default: [],
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'issuer', 'audiences'],
        properties: {
          id: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,62}$' },
          issuer: { type: 'string', minLength: 1 },
          jwksUri: { type: 'string', minLength: 1 },
          allowPlainHttp: { type: 'boolean', default: false },
          keyFile: { type: 'string', minLength: 1 },
          audiences: {
            type: 'array',
            minItems: 1,
            uniqueItems: true,
            items: { type: 'string', minLength: 1 },
          },
          algorithms: {
            type: 'array',
            minItems: 1,
            uniqueItems: true,
            items: { enum: ['ES256', 'ES384', 'EdDSA', 'RS256', 'PS256'] },
            default: ['ES256', 'RS256'],
          },
          clockSkewSeconds: { type: 'integer', minimum: 0, maximum: 600 },
          requireTyp: { type: 'boolean', default: true },
          maxLifetimeSeconds: { type: 'integer', minimum: 60, maximum: 2_592_000, default: 86_400 },
          cacheMaxAgeSeconds: { type: 'integer', minimum: 10, maximum: 86_400, default: 600 },
          cooldownSeconds: { type: 'integer', minimum: 1, maximum: 3600, default: 30 },
          maxStalenessSeconds: { type: 'integer', minimum: 0, maximum: 604_800, default: 3600 },
          fetchTimeoutMs: { type: 'integer', minimum: 100, maximum: 60_000, default: 5000 },
        },
      },
    },
    revocation: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        store: { enum: ['local', 'memory', 'redis'], default: 'local' },
        file: { type: 'string', minLength: 1, default: './data/revocations.log' },
        maxSyncLagSeconds: { type: 'integer', minimum: 1, maximum: 86_400, default: 30 },
        whenStale: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            safe: { enum: ['admit', 'refuse'], default: 'admit' },
            unsafe: { enum: ['admit', 'refuse'], default: 'refuse' },
          },
        },
        whileRedisDown: { enum: ['queue', 'refuse'], default: 'queue' },
        queueFile: { type: 'string', minLength: 1, default: './data/revocations-pending.log' },
      },
    },
    redis: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        url: { type: ['string', 'null'], minLength: 1, default: null },
        username: { ...nullableText, maxLength: 256 },
        passwordFile: nullableText,
        tls: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            enabled: { type: 'boolean', default: false },
            caFile: nullableText,
            certFile: nullableText,
            keyFile: nullableText,
            serverName: { ...nullableText, maxLength: 253 },
          },
        },
        sentinel: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            masterName: { ...nullableText, maxLength: 256 },
            nodes: redisNodes,
            username: { ...nullableText, maxLength: 256 },
            passwordFile: nullableText,
          },
        },
        cluster: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: { nodes: redisNodes },
        },
        keyPrefix: { type: 'string', pattern: '^[A-Za-z0-9:_.-]{1,64}$', default: 'portaria:' },
        connectTimeoutMs: { ...positiveMs, default: 2000 },
        commandTimeoutMs: { ...positiveMs, default: 1000 },
      },
    },
    tokenLimits: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        store: { enum: ['local', 'redis'], default: 'local' },
        maxTrackedKeys: { type: 'integer', minimum: 100, maximum: 10_000_000, default: 100_000 },
        perAddress: tokenBucket(5, 20),
        perClient: tokenBucket(10, 50),
        failedSecretBackoff: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            enabled: { type: 'boolean', default: true },
            freeFailures: { type: 'integer', minimum: 0, maximum: 1000, default: 3 },
            baseDelayMs: { type: 'integer', minimum: 1, maximum: 3_600_000, default: 1000 },
            maxDelayMs: { type: 'integer', minimum: 1, maximum: 86_400_000, default: 300_000 },
            forgetAfterSeconds: { type: 'integer', minimum: 1, maximum: 604_800, default: 900 },
          },
        },
      },
    },
    reload: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        enabled: { type: 'boolean', default: true },
        pollIntervalMs: { type: 'integer', minimum: 100, maximum: 3_600_000, default: 5000 },
      },
    },
    clients: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: { file: { type: 'string', minLength: 1, default: './data/clients.json' } },
    },
    oauth: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        enabled: { type: 'boolean', default: true },
        tokenPath: { ...oauthPath, default: '/oauth2/token' },
        revocationPath: { ...oauthPath, default: '/oauth2/revoke' },
        introspectionPath: { ...oauthPath, default: '/oauth2/introspect' },
        assertionMaxLifetimeSeconds: { type: 'integer', minimum: 10, maximum: 3600, default: 300 },
        assertionAudiences: {
          type: 'array',
          uniqueItems: true,
          items: { type: 'string', minLength: 1, maxLength: 512 },
          default: [],
        },
        replayStore: { enum: ['local', 'redis'] },
        // The local store's bound (localReplayStore.ts): ~115 bytes of heap an entry.
        replayStoreMaxEntries: {
          type: 'integer',
          minimum: 1000,
          maximum: 10_000_000,
          default: 500_000,
        },
        mtlsBaseUrl: { type: 'string', minLength: 1, maxLength: 512 },
      },
    },
    routes: {
      type: 'array',
      default: [],
      items: {
        type: 'object',
        additionalProperties: false,
        // `upstream` is required unless `mode: authorizer` (routeRules.ts).
        required: ['id', 'prefix'],
        properties: {
          id: { type: 'string', pattern: '^[a-z0-9][a-z0-9_-]{0,62}$' },
          prefix: { type: 'string', pattern: '^/' },
          upstream: { type: 'string', minLength: 1 },
          scopes: scopeList,
          timeoutMs: positiveMs,
          audience: { type: 'string', minLength: 1 },
          requireCertificateBound: { type: 'boolean', default: false },
          requireSenderConstrained: { type: 'boolean', default: false },
          quota: quotaName,
        },
      },
    },
    upstream: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        default: {
          default: null,
          oneOf: [
            { type: 'null' },
            {
              type: 'object',
              additionalProperties: false,
              properties: {
                upstream: { type: 'string', minLength: 1 },
                scopes: scopeItems,
                timeoutMs: positiveMs,
                // No default: ajv ignores defaults inside oneOf (strict mode refuses one).
                requireCertificateBound: { type: 'boolean' },
                requireSenderConstrained: { type: 'boolean' },
                quota: quotaName,
              },
            },
          ],
        },
        timeoutMs: { ...positiveMs, default: 30_000 },
        connections: { type: 'integer', minimum: 1, maximum: 10_000, default: 128 },
      },
    },
    identityHeaders: {
      type: 'object',
      default: { sub: 'X-Client-Id', scope: 'X-Token-Scope', jti: 'X-Token-Jti' },
      propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$' },
      additionalProperties: { type: 'string', pattern: '^[A-Za-z0-9-]{1,64}$' },
    },
    forwardAuthorization: { type: 'boolean', default: true },
    forwardCallerHeaders: {
      type: 'array',
      uniqueItems: true,
      items: { type: 'string', minLength: 1, maxLength: 64 },
      default: [],
    },
    problemTypeBase: { type: 'string', minLength: 1, default: 'urn:portaria:problem:' },
    metrics: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        maxClientLabels: { type: 'integer', minimum: 0, maximum: 10_000, default: 100 },
        processMetricsPrefix: {
          type: 'string',
          maxLength: 64,
          pattern: '^([a-zA-Z_:][a-zA-Z0-9_:]*)?$',
          default: '',
        },
      },
    },
    log: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        level: {
          enum: ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
          default: 'info',
        },
        pretty: { type: 'boolean', default: false },
      },
    },
    tracing: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: { enabled: { type: 'boolean', default: false } },
    },
    // A security profile that tightens and checks other settings (docs/fapi.md); rules
    // in profileRules.ts, its effects in completeConfig.ts and profile/.
    profile: { enum: ['none', 'fapi-br', 'fapi2'], default: 'none' },
    // DPoP (RFC 9449): proof-of-possession tokens, issued and enforced (docs/dpop.md).
    dpop: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        enabled: { type: 'boolean', default: false },
        algorithms: {
          type: 'array',
          minItems: 1,
          uniqueItems: true,
          items: { enum: ['ES256', 'ES384', 'EdDSA', 'PS256', 'RS256'] },
          default: ['ES256', 'ES384', 'EdDSA', 'PS256', 'RS256'],
        },
        // How far a proof's iat may be from now, either way (RFC 9449 §11.1); a proof's
        // jti is remembered for twice as long.
        proofWindowSeconds: { type: 'integer', minimum: 5, maximum: 300, default: 60 },
        // Server-provided nonces (RFC 9449 §8): proofs must carry one the gateway handed out.
        nonces: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            enabled: { type: 'boolean', default: false },
            // The HMAC secret every replica shares; null: a random one per process group.
            secretFile: nullableText,
            lifetimeSeconds: { type: 'integer', minimum: 10, maximum: 3600, default: 300 },
          },
        },
      },
    },
    // Per-partner rate limits and quotas on API routes (docs/quotas.md); rules in
    // quotaRules.ts.
    quotas: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        // Where the counters live: this process group, or Redis shared by every replica.
        store: { enum: ['local', 'redis'], default: 'local' },
        // Redis unusable: let requests through (counted), or refuse them with 503.
        whenRedisDown: { enum: ['open', 'closed'], default: 'open' },
        // RateLimit-Policy and RateLimit fields: on every metered answer, on 429s only, never.
        headers: { enum: ['always', 'refusals', 'off'], default: 'always' },
        // The most counters one process group keeps (local store); the least recently used go first.
        maxTrackedKeys: { type: 'integer', minimum: 100, maximum: 10_000_000, default: 100_000 },
        policies: {
          type: 'object',
          default: {},
          maxProperties: 1000,
          propertyNames: { pattern: QUOTA_NAME },
          additionalProperties: {
            type: 'object',
            additionalProperties: false,
            properties: {
              // A token bucket: perSecond refills, burst is its size (default: perSecond, at least 1).
              rate: {
                type: 'object',
                additionalProperties: false,
                required: ['perSecond'],
                properties: {
                  perSecond: { type: 'number', exclusiveMinimum: 0, maximum: 1_000_000 },
                  burst: { type: 'integer', minimum: 1, maximum: 1_000_000_000 },
                },
              },
              // So many requests per calendar window, in a time zone (IANA name).
              quota: {
                type: 'object',
                additionalProperties: false,
                required: ['limit', 'window'],
                properties: {
                  limit: { type: 'integer', minimum: 1, maximum: 1_000_000_000_000 },
                  window: { enum: ['minute', 'hour', 'day', 'month'] },
                  timeZone: { type: 'string', minLength: 1, maxLength: 64, default: 'UTC' },
                },
              },
              // Whose counters: the partner's (one set over every route), or per route too.
              per: { enum: ['client', 'client-route'], default: 'client' },
              // The claim naming the partner; null: the token's client id.
              claim: {
                type: ['string', 'null'],
                pattern: '^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$',
                default: null,
              },
            },
          },
        },
      },
    },
    // What the gateway does with a verified request (docs/authorizer.md): forward it
    // (`proxy`), answer another proxy's question about it (`authorizer`), or both.
    mode: { enum: ['proxy', 'authorizer', 'both'], default: 'proxy' },
    // The decision listeners (docs/authorizer.md); rules in authorizerRules.ts.
    authorizer: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        host: { ...host, default: '0.0.0.0' },
        port: { ...port, default: 8181 },
        // Envoy ext_authz over gRPC (envoy.service.auth.v3.Authorization), same host.
        grpc: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            enabled: { type: 'boolean', default: true },
            port: { ...port, default: 9191 },
          },
        },
        // Where nginx `auth_request` puts the original request (names are configurable:
        // `proxy_set_header` chooses them).
        originalMethodHeader: {
          type: 'string',
          pattern: '^[A-Za-z0-9-]{1,64}$',
          default: 'X-Original-Method',
        },
        originalUriHeader: {
          type: 'string',
          pattern: '^[A-Za-z0-9-]{1,64}$',
          default: 'X-Original-URI',
        },
        // Allow decisions the proxy may cache: off by default; a revoked token may pass
        // at the proxy for up to maxAgeSeconds (docs/authorizer.md#cacheable-decisions).
        cacheDecisions: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            enabled: { type: 'boolean', default: false },
            maxAgeSeconds: { type: 'integer', minimum: 1, maximum: 300, default: 10 },
          },
        },
      },
    },
  },
} as const;
