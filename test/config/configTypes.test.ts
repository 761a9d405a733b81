/**
 * `Config` (src/config/types.ts) and the file's JSON Schema (src/config/schema.ts) name
 * the same settings. `EVERY_SETTING` is checked against `Config` by the compiler
 * (`satisfies`: no setting missing, none extra); this test compares its paths with the
 * schema's, so a setting added to one file and not the other fails here.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { configSchema } from '../../src/config/schema.js';
import type { Config } from '../../src/config/types.js';

const bucket = { enabled: true, ratePerSecond: 1, burst: 1 };

/** One value for every setting of `Config`, each list with one entry, each union at its object. */
const EVERY_SETTING = {
  server: {
    host: '0.0.0.0',
    port: 8080,
    headersTimeoutMs: 1,
    requestTimeoutMs: 1,
    keepAliveTimeoutMs: 1,
    maxHeaderBytes: 1,
    maxHeaderLines: 1,
    shutdownGraceMs: 1,
    trustedProxies: [],
    closeWebSocketsAtTokenExpiry: true,
    halfClosedRequests: 'answer',
    workers: 1,
    tls: {
      enabled: false,
      certFile: null,
      keyFile: null,
      minVersion: 'TLSv1.2',
      policy: 'default',
      clientCertificates: 'off',
    },
  },
  clientCertificate: {
    source: 'tls',
    caFiles: ['ca.pem'],
    crlFiles: ['ca.crl.pem'],
    header: { format: 'rfc9440', name: 'client-cert' },
  },
  admin: { host: '127.0.0.1', port: 9091, tokenFile: null },
  revocation: {
    store: 'local',
    file: 'r.log',
    maxSyncLagSeconds: 1,
    whenStale: { safe: 'admit', unsafe: 'refuse' },
    whileRedisDown: 'queue',
    queueFile: 'q.log',
  },
  redis: {
    url: null,
    username: null,
    passwordFile: null,
    tls: { enabled: false, caFile: null, certFile: null, keyFile: null, serverName: null },
    sentinel: { masterName: null, nodes: [], username: null, passwordFile: null },
    cluster: { nodes: [] },
    keyPrefix: 'p:',
    connectTimeoutMs: 1,
    commandTimeoutMs: 1,
  },
  oauth: {
    enabled: true,
    tokenPath: '/oauth2/token',
    revocationPath: '/oauth2/revoke',
    introspectionPath: '/oauth2/introspect',
    assertionMaxLifetimeSeconds: 1,
    assertionAudiences: [],
    replayStore: 'local',
    replayStoreMaxEntries: 1000,
    mtlsBaseUrl: 'https://mtls.example',
  },
  quotas: {
    store: 'local',
    whenRedisDown: 'open',
    headers: 'always',
    maxTrackedKeys: 100_000,
    policies: {},
  },
  tokenLimits: {
    store: 'local',
    maxTrackedKeys: 1,
    perAddress: bucket,
    perClient: bucket,
    failedSecretBackoff: {
      enabled: true,
      freeFailures: 1,
      baseDelayMs: 1,
      maxDelayMs: 1,
      forgetAfterSeconds: 1,
    },
  },
  issuer: 'http://localhost',
  audience: 'portaria',
  clockSkewSeconds: 1,
  token: { lifetimeSeconds: 1, algorithm: 'ES256', responseFields: 'reference', bodyLimitBytes: 1 },
  verify: { cacheSize: 1 },
  keys: { dir: 'keys', jwksMaxAgeSeconds: 1 },
  issuers: [
    {
      id: 'idp',
      issuer: 'https://idp.example',
      jwksUri: null,
      allowPlainHttp: false,
      keyFile: 'idp.jwks',
      audiences: ['api'],
      algorithms: ['ES256'],
      clockSkewSeconds: 1,
      requireTyp: true,
      maxLifetimeSeconds: 1,
      cacheMaxAgeSeconds: 1,
      cooldownSeconds: 1,
      maxStalenessSeconds: 1,
      fetchTimeoutMs: 1,
    },
  ],
  reload: { enabled: true, pollIntervalMs: 1 },
  clients: { file: 'clients.json' },
  routes: [
    {
      id: 'r',
      prefix: '/r',
      upstream: 'http://u',
      scopes: [],
      timeoutMs: 1,
      audience: null,
      requireCertificateBound: false,
      requireSenderConstrained: false,
      quota: 'q',
    },
  ],
  upstream: {
    default: {
      upstream: 'http://u',
      scopes: [],
      timeoutMs: 1,
      requireCertificateBound: false,
      requireSenderConstrained: false,
      quota: 'q',
    },
    timeoutMs: 1,
    connections: 1,
  },
  identityHeaders: { sub: 'X-Client-Id' },
  forwardAuthorization: true,
  forwardCallerHeaders: [],
  problemTypeBase: 'urn:portaria:problem:',
  metrics: { maxClientLabels: 1, processMetricsPrefix: 'p_' },
  log: { level: 'info', pretty: false },
  tracing: { enabled: false },
  profile: 'none',
  dpop: {
    enabled: false,
    algorithms: ['ES256'],
    proofWindowSeconds: 60,
    nonces: { enabled: false, secretFile: null, lifetimeSeconds: 300 },
  },
  mode: 'proxy',
  authorizer: {
    host: '0.0.0.0',
    port: 1,
    grpc: { enabled: false, port: 1 },
    originalMethodHeader: 'X-Original-Method',
    originalUriHeader: 'X-Original-URI',
    cacheDecisions: { enabled: false, maxAgeSeconds: 1 },
  },
  demo: false,
} satisfies Config;

/** Settings of `Config` that no file sets. */
const NOT_IN_THE_FILE = ['demo'];

/** Settings whose value is a map keyed by data (header names), not by setting names. */
const MAPS = new Set(['identityHeaders', 'quotas.policies']);

type Schema = {
  readonly properties?: Readonly<Record<string, Schema>>;
  readonly items?: Schema;
  readonly oneOf?: readonly Schema[];
};

/** Every setting's path in the schema: `server.port`, `routes[].id`, … */
function schemaPaths(schema: Schema, prefix = ''): string[] {
  const paths: string[] = [];
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    paths.push(prefix + name, ...nestedSchemaPaths(property, `${prefix}${name}`));
  }
  return paths;
}

function nestedSchemaPaths(schema: Schema, path: string): string[] {
  if (schema.items !== undefined) return nestedSchemaPaths(schema.items, `${path}[]`);
  if (schema.oneOf !== undefined) return schema.oneOf.flatMap((s) => nestedSchemaPaths(s, path));
  return schemaPaths(schema, `${path}.`);
}

/** Every setting's path in a value shaped like `Config`. */
function valuePaths(value: unknown, prefix = ''): string[] {
  const paths: string[] = [];
  for (const [name, entry] of Object.entries(value as Record<string, unknown>)) {
    const path = prefix + name;
    paths.push(path);
    if (!MAPS.has(path)) paths.push(...nestedValuePaths(entry, path));
  }
  return paths;
}

function nestedValuePaths(value: unknown, path: string): string[] {
  if (Array.isArray(value)) return nestedValuePaths(value[0], `${path}[]`);
  if (typeof value === 'object' && value !== null) return valuePaths(value, `${path}.`);
  return [];
}

test('the schema and the Config type name the same settings', () => {
  const inSchema = schemaPaths(configSchema as Schema).sort();
  const inType = valuePaths(EVERY_SETTING)
    .filter((path) => !NOT_IN_THE_FILE.includes(path))
    .sort();
  assert.ok(inSchema.length > 100, `only ${inSchema.length} settings found in the schema`);
  assert.deepEqual(
    inType.filter((path) => !inSchema.includes(path)),
    [],
    'in Config, not in the schema',
  );
  assert.deepEqual(
    inSchema.filter((path) => !inType.includes(path)),
    [],
    'in the schema, not in Config',
  );
});
