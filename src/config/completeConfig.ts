/**
 * What a valid configuration derives once checked: the defaults that depend on other
 * settings (a route's timeout, an issuer's skew, the replay store), caller headers in
 * their canonical spelling, and every file path made absolute against the base directory.
 * Runs on the schema-checked input in place, before it is frozen.
 */
import { isAbsolute, resolve } from 'node:path';
import { headerKey } from './callerHeaders.js';
import { DEFAULT_CERTIFICATE_HEADER } from './certificateHeaders.js';
import { FAPI_MAX_LIFETIME_SECONDS, FAPI_MIN_LIFETIME_SECONDS } from './profileRules.js';
import type { Config } from './types.js';

export interface CompleteOptions {
  /** Directory that relative file paths in the config are resolved against. */
  readonly baseDir: string;
  readonly demo?: boolean;
}

type MutableIssuer = {
  id: string;
  issuer: string;
  jwksUri?: string | null;
  keyFile?: string | null;
  clockSkewSeconds?: number;
};

type Mutable<T> = { -readonly [K in keyof T]: T[K] extends object ? Mutable<T[K]> : T[K] };
type MutableConfig = Mutable<Config> & {
  routes: (Mutable<Config['routes'][number]> & { timeoutMs?: number; audience?: string | null })[];
};

export function completeConfig(input: unknown, options: CompleteOptions): Config {
  const config = input as MutableConfig;
  config.forwardCallerHeaders = [...new Set(config.forwardCallerHeaders.map(headerKey))];
  for (const route of config.routes) {
    route.timeoutMs ??= config.upstream.timeoutMs;
    route.audience ??= null;
    route.upstream ??= null;
  }
  const fallback = config.upstream.default as {
    upstream?: string | null;
    scopes?: string[];
    timeoutMs?: number;
  } | null;
  if (fallback) {
    fallback.upstream ??= null;
    fallback.scopes ??= [];
    fallback.timeoutMs ??= config.upstream.timeoutMs;
  }
  for (const entry of config.issuers) {
    const issuer = entry as unknown as MutableIssuer;
    issuer.jwksUri ??= null;
    issuer.keyFile = issuer.keyFile ? resolvePath(options.baseDir, issuer.keyFile) : null;
    issuer.clockSkewSeconds ??= config.clockSkewSeconds;
  }
  const oauth = config.oauth as { replayStore?: 'local' | 'redis' };
  oauth.replayStore ??= config.revocation.store === 'redis' ? 'redis' : 'local';
  config.keys.dir = resolvePath(options.baseDir, config.keys.dir);
  config.clients.file = resolvePath(options.baseDir, config.clients.file);
  config.revocation.file = resolvePath(options.baseDir, config.revocation.file);
  config.revocation.queueFile = resolvePath(options.baseDir, config.revocation.queueFile);
  const { redis } = config;
  redis.passwordFile = resolveOptional(options.baseDir, redis.passwordFile);
  redis.tls.caFile = resolveOptional(options.baseDir, redis.tls.caFile);
  redis.tls.certFile = resolveOptional(options.baseDir, redis.tls.certFile);
  redis.tls.keyFile = resolveOptional(options.baseDir, redis.tls.keyFile);
  redis.sentinel.passwordFile = resolveOptional(options.baseDir, redis.sentinel.passwordFile);
  const nonces = config.dpop.nonces as { secretFile: string | null };
  nonces.secretFile = resolveOptional(options.baseDir, nonces.secretFile);
  const tls = config.server.tls;
  tls.certFile = resolveOptional(options.baseDir, tls.certFile);
  tls.keyFile = resolveOptional(options.baseDir, tls.keyFile);
  // The client certificate's files and its header's name (the format's by default).
  const certificate = config.clientCertificate;
  certificate.caFiles = certificate.caFiles.map((file) => resolvePath(options.baseDir, file));
  certificate.crlFiles = certificate.crlFiles.map((file) => resolvePath(options.baseDir, file));
  const header = certificate.header as {
    name: string | null;
    format: 'rfc9440' | 'xfcc' | 'nginx';
  };
  header.name = (header.name ?? DEFAULT_CERTIFICATE_HEADER[header.format]).toLowerCase();
  if (config.admin.tokenFile)
    config.admin.tokenFile = resolvePath(options.baseDir, config.admin.tokenFile);
  config.demo = options.demo === true;
  if (config.profile === 'fapi-br') applyFapiBr(config);
  if (config.profile === 'fapi2') applyFapi2(config);
  return config as Config;
}

/**
 * What `profile: fapi-br` makes of a checked configuration (profileRules.ts refused
 * the contradictions): every route and the default upstream take certificate-bound
 * tokens only (RFC 8705 §3), and the token lifetime is clamped to 300–900 s (only the
 * unwritten default, 3600, can be outside by now).
 */
function applyFapiBr(config: MutableConfig): void {
  for (const route of config.routes) route.requireCertificateBound = true;
  const fallback = config.upstream.default as { requireCertificateBound?: boolean } | null;
  if (fallback) fallback.requireCertificateBound = true;
  const token = config.token as { lifetimeSeconds: number };
  token.lifetimeSeconds = Math.min(
    Math.max(token.lifetimeSeconds, FAPI_MIN_LIFETIME_SECONDS),
    FAPI_MAX_LIFETIME_SECONDS,
  );
}

/**
 * What `profile: fapi2` makes of a checked configuration: every route and the default
 * upstream take sender-constrained tokens only — DPoP-bound or certificate-bound (FAPI 2.0
 * Security Profile §5.3.3 / §5.3.2.1).
 */
function applyFapi2(config: MutableConfig): void {
  for (const route of config.routes) route.requireSenderConstrained = true;
  const fallback = config.upstream.default as { requireSenderConstrained?: boolean } | null;
  if (fallback) fallback.requireSenderConstrained = true;
}

function resolveOptional(baseDir: string, path: string | null): string | null {
  return path ? resolvePath(baseDir, path) : null;
}

function resolvePath(baseDir: string, path: string): string {
  return isAbsolute(path) ? path : resolve(baseDir, path);
}
