/**
 * Validates a raw configuration object in one pass and returns it frozen.
 *
 * Every problem is collected and reported together, each with the path of the setting
 * (`routes[2].prefix: …`), so an operator fixes a file in one round. Schema checks come
 * from `schema.ts` (ajv, defaults filled in); the rules a schema cannot say (URLs,
 * canonical prefixes, duplicates, header-name collisions) are checked here.
 */
import { isAbsolute, resolve } from 'node:path';
import { Ajv, type ErrorObject } from 'ajv';
import { deepFreeze } from '../lib/deepFreeze.js';
import { trustedProxyProblem } from '../lib/trustedProxies.js';
import { CALLER_HEADERS, headerKey } from './callerHeaders.js';
import { ConfigError } from './configError.js';
import { REMOVED_SETTINGS } from './removedSettings.js';
import { configSchema, MAX_WORKERS } from './schema.js';
import type { Config } from './types.js';

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: true, allowUnionTypes: true });
const validateSchema = ajv.compile(configSchema);

/** Headers the gateway owns: an identity-header mapping may not name them. */
const RESERVED_HEADERS = new Set([
  'authorization',
  'host',
  'connection',
  'keep-alive',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'content-type',
  'cookie',
  'x-request-id',
  'x-forwarded-for',
  'x-forwarded-proto',
  'x-forwarded-host',
  'forwarded',
]);

export interface ValidateOptions {
  /** Directory that relative file paths in the config are resolved against. */
  readonly baseDir: string;
  readonly demo?: boolean;
}

export function validateConfig(raw: unknown, options: ValidateOptions): Config {
  const input = structuredClone(raw ?? {});
  const problems: string[] = [];
  if (!validateSchema(input)) {
    for (const error of validateSchema.errors ?? []) {
      const problem = formatAjvError(error);
      if (problem !== null) problems.push(problem);
    }
  }
  // The rules run on whatever the schema accepted (each reads its settings defensively),
  // so a file with a schema problem and a rule problem shows both in one run.
  problems.push(...ruleProblems(input as Loose));
  if (problems.length > 0) throw new ConfigError(dedupe(problems));

  const config = input as unknown as MutableConfig;
  config.forwardCallerHeaders = [...new Set(config.forwardCallerHeaders.map(headerKey))];
  for (const route of config.routes) {
    route.timeoutMs ??= config.upstream.timeoutMs;
    route.audience ??= null;
  }
  const fallback = config.upstream.default as {
    scopes?: string[];
    timeoutMs?: number;
  } | null;
  if (fallback) {
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
  if (config.redis.passwordFile)
    config.redis.passwordFile = resolvePath(options.baseDir, config.redis.passwordFile);
  if (config.admin.tokenFile)
    config.admin.tokenFile = resolvePath(options.baseDir, config.admin.tokenFile);
  config.demo = options.demo === true;
  return deepFreeze(config as Config);
}

/** A configuration the schema may have refused: every value is read with a type check. */
type Loose = Record<string, unknown>;

function isMapping(value: unknown): value is Loose {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function section(value: unknown): Loose {
  return isMapping(value) ? value : {};
}

/** The entries of a list that are mappings, with their indexes (others are the schema's). */
function mappings(value: unknown): [number, Loose][] {
  if (!Array.isArray(value)) return [];
  const out: [number, Loose][] = [];
  value.forEach((item, i) => {
    if (isMapping(item)) out.push([i, item]);
  });
  return out;
}

/** The string entries of a list, with their indexes (others are the schema's). */
function strings(value: unknown): [number, string][] {
  if (!Array.isArray(value)) return [];
  const out: [number, string][] = [];
  value.forEach((item, i) => {
    if (typeof item === 'string') out.push([i, item]);
  });
  return out;
}

function text(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** Records `value` in `seen`; true when it was there already (null: nothing to record). */
function repeated(seen: Set<string>, value: string | null): boolean {
  if (value === null) return false;
  if (seen.has(value)) return true;
  seen.add(value);
  return false;
}

/**
 * The rules a schema cannot say. Each reads only values of the expected type, so it runs
 * after a schema failure too (a value of the wrong type is the schema's problem, reported
 * there, and skipped here).
 */
function ruleProblems(config: Loose): string[] {
  const problems: string[] = [];
  const issuer = text(config.issuer);
  if (issuer !== null) checkUrl(problems, 'issuer', issuer, ['http:', 'https:']);
  const problemTypeBase = text(config.problemTypeBase);
  if (problemTypeBase !== null) checkUrl(problems, 'problemTypeBase', problemTypeBase, null);

  const ids = new Set<string>();
  const prefixes = new Set<string>();
  for (const [i, route] of mappings(config.routes)) {
    const at = `routes[${i}]`;
    const id = text(route.id);
    if (repeated(ids, id)) problems.push(`${at}.id: duplicate route id "${id}"`);
    const prefix = text(route.prefix);
    if (prefix !== null) {
      // Prefixes match ASCII case-insensitively (proxy/routeTable.ts): compare them so.
      const folded = prefix.replace(/[A-Z]/g, (c) => c.toLowerCase());
      if (repeated(prefixes, folded))
        problems.push(`${at}.prefix: duplicate prefix "${prefix}" (prefixes ignore case)`);
      const prefixProblem = prefixIssue(prefix);
      if (prefixProblem) problems.push(`${at}.prefix: ${prefixProblem}`);
    }
    const upstream = text(route.upstream);
    if (upstream !== null) checkUpstream(problems, `${at}.upstream`, upstream);
  }
  if (ids.has('default')) {
    problems.push('routes: the id "default" is reserved for upstream.default');
  }
  const fallback = text(section(section(config.upstream).default).upstream);
  if (fallback !== null) checkUpstream(problems, 'upstream.default.upstream', fallback);

  const headerNames = new Map<string, string>();
  for (const [claim, value] of Object.entries(section(config.identityHeaders))) {
    const header = text(value);
    if (header === null) continue;
    const lower = header.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) {
      problems.push(`identityHeaders.${claim}: "${header}" is a header the gateway manages`);
    }
    const other = headerNames.get(lower);
    if (other)
      problems.push(`identityHeaders.${claim}: "${header}" is also used for claim "${other}"`);
    headerNames.set(lower, claim);
  }

  const issuerIds = new Set<string>();
  const issuerValues = new Set<string>(issuer === null ? [] : [issuer]);
  for (const [i, entry] of mappings(config.issuers)) {
    const at = `issuers[${i}]`;
    const id = text(entry.id);
    if (repeated(issuerIds, id)) problems.push(`${at}.id: duplicate issuer id "${id}"`);
    const value = text(entry.issuer);
    if (repeated(issuerValues, value)) {
      problems.push(
        `${at}.issuer: "${value}" is already trusted (our own issuer or another entry)`,
      );
    }
    // Present in any form counts (a value of the wrong type is the schema's problem).
    const sources =
      (entry.jwksUri !== undefined && entry.jwksUri !== null ? 1 : 0) +
      (entry.keyFile !== undefined && entry.keyFile !== null ? 1 : 0);
    const jwksUri = text(entry.jwksUri);
    if (sources !== 1) problems.push(`${at}: set exactly one of jwksUri and keyFile`);
    if (jwksUri) {
      checkUpstream(problems, `${at}.jwksUri`, jwksUri);
      // These keys decide whom the gateway trusts: fetched in the clear, anyone on the path
      // can hand it their own. Loopback (a sidecar, tests) is not on a network path.
      if (
        URL.canParse(jwksUri) &&
        new URL(jwksUri).protocol === 'http:' &&
        !isLoopbackHost(new URL(jwksUri).hostname) &&
        entry.allowPlainHttp !== true
      ) {
        problems.push(
          `${at}.jwksUri: must use https (the key set decides whom the gateway trusts); for a network you trust set ${at}.allowPlainHttp: true`,
        );
      }
    }
  }

  // A `redis` section that is not a mapping is the schema's problem: no URL rule then.
  const redisUrl =
    config.redis === undefined || isMapping(config.redis)
      ? (section(config.redis).url ?? null)
      : undefined;
  if (typeof redisUrl === 'string') {
    checkUrl(problems, 'redis.url', redisUrl, ['redis:', 'rediss:']);
    // Two passwords: which one ioredis uses is not something to leave to its option merge.
    const passwordFile = section(config.redis).passwordFile;
    if (urlPassword(redisUrl) !== '' && typeof passwordFile === 'string')
      problems.push('redis.passwordFile: redis.url carries a password too; give it in one place');
  }
  if (section(config.revocation).store === 'redis' && redisUrl === null) {
    problems.push('revocation.store: "redis" needs redis.url (or PORTARIA_REDIS_URL)');
  }
  const tokenLimits = section(config.tokenLimits);
  if (tokenLimits.store === 'redis' && redisUrl === null) {
    problems.push('tokenLimits.store: "redis" needs redis.url (or PORTARIA_REDIS_URL)');
  }
  problems.push(...oauthProblems(section(config.oauth), redisUrl));
  const backoff = section(tokenLimits.failedSecretBackoff);
  if (
    typeof backoff.maxDelayMs === 'number' &&
    typeof backoff.baseDelayMs === 'number' &&
    backoff.maxDelayMs < backoff.baseDelayMs
  ) {
    problems.push('tokenLimits.failedSecretBackoff.maxDelayMs: must be at least baseDelayMs');
  }

  for (const [i, entry] of strings(section(config.server).trustedProxies)) {
    const problem = trustedProxyProblem(entry);
    if (problem !== null) problems.push(`server.trustedProxies[${i}]: ${problem}`);
  }
  const callerHeaders = new Set(CALLER_HEADERS);
  for (const [i, name] of strings(config.forwardCallerHeaders)) {
    if (!callerHeaders.has(headerKey(name))) {
      problems.push(
        `forwardCallerHeaders[${i}]: "${name}" is not a header the gateway removes (one of ${CALLER_HEADERS.join(', ')})`,
      );
    }
  }

  const serverPort = section(config.server).port;
  const adminPort = section(config.admin).port;
  if (typeof serverPort === 'number' && serverPort !== 0 && serverPort === adminPort) {
    problems.push('admin.port: must differ from server.port (the admin surface is never public)');
  }
  return problems;
}

/** The paths the gateway answers itself besides the OAuth endpoints. */
const OTHER_OPEN_PATHS = [
  '/v1/authentication/accesstoken',
  '/.well-known/jwks.json',
  '/v1/openapi.json',
];

function oauthProblems(oauth: Loose, redisUrl: unknown): string[] {
  const problems: string[] = [];
  const seen = new Map<string, string>();
  for (const key of ['tokenPath', 'revocationPath', 'introspectionPath']) {
    const path = text(oauth[key]);
    if (path === null) continue;
    if (OTHER_OPEN_PATHS.includes(path) || path.startsWith('/.well-known/')) {
      problems.push(`oauth.${key}: ${path} is a path the gateway already answers`);
    }
    const other = seen.get(path);
    if (other !== undefined) problems.push(`oauth.${key}: same path as oauth.${other}`);
    seen.set(path, key);
  }
  for (const [i, audience] of strings(oauth.assertionAudiences)) {
    checkUrl(problems, `oauth.assertionAudiences[${i}]`, audience, ['http:', 'https:']);
  }
  if (oauth.replayStore === 'redis' && redisUrl === null) {
    problems.push('oauth.replayStore: "redis" needs redis.url (or PORTARIA_REDIS_URL)');
  }
  return problems;
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

function resolvePath(baseDir: string, path: string): string {
  return isAbsolute(path) ? path : resolve(baseDir, path);
}

/** Why a route prefix is not a canonical path (same rules as request paths), or null. */
function prefixIssue(prefix: string): string | null {
  if (prefix.length > 1 && prefix.endsWith('/')) return 'must not end with "/"';
  if (prefix.includes('//')) return 'must not contain "//"';
  if (/[%\\?#\s]/.test(prefix)) return 'must not contain "%", "\\", "?", "#" or spaces';
  if (prefix.split('/').some((s) => s === '.' || s === '..'))
    return 'must not contain dot segments';
  return null;
}

function checkUpstream(problems: string[], at: string, value: string): void {
  const url = checkUrl(problems, at, value, ['http:', 'https:']);
  if (!url) return;
  if (url.username || url.password) problems.push(`${at}: must not carry credentials`);
  if (url.search || url.hash) problems.push(`${at}: must not have a query or fragment`);
}

/** localhost, 127.0.0.0/8 or [::1]: a host no network path leads to. */
function isLoopbackHost(hostname: string): boolean {
  return (
    hostname === 'localhost' ||
    hostname === '[::1]' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname)
  );
}

/** The password a Redis URL carries (userinfo or a `password` query parameter), or ''. */
export function urlPassword(value: string): string {
  if (!URL.canParse(value)) return '';
  const url = new URL(value);
  return url.password || url.searchParams.get('password') || '';
}

function checkUrl(
  problems: string[],
  at: string,
  value: string,
  protocols: string[] | null,
): URL | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    problems.push(`${at}: must be an absolute URL`);
    return null;
  }
  if (protocols && !protocols.includes(url.protocol)) {
    problems.push(`${at}: must use ${protocols.join(' or ')}`);
    return null;
  }
  return url;
}

/** One problem line; null for ajv's summary of a key error it already reported. */
function formatAjvError(error: ErrorObject): string | null {
  const path = pointerToPath(error.instancePath);
  const params = error.params as Record<string, unknown>;
  // A key refused by `propertyNames`: named with its path, once (ajv adds a summary).
  if (error.keyword === 'propertyNames') return null;
  const key = (error as ErrorObject & { propertyName?: string }).propertyName;
  if (key !== undefined) {
    return `${path || '(root)'}[${JSON.stringify(key)}]: is not a valid name (${error.message ?? 'invalid'})`;
  }
  // A number or a word: ajv's messages would name the two halves separately.
  if (path === 'server.workers') {
    return `server.workers: must be a whole number from 1 to ${MAX_WORKERS}, or "auto" (the CPUs available to the process)`;
  }
  switch (error.keyword) {
    case 'additionalProperties': {
      const setting = join(path, String(params.additionalProperty));
      const removed = REMOVED_SETTINGS.find((r) => r.path.join('.') === setting);
      return `${setting}: ${removed === undefined ? 'unknown setting' : removed.instead}`;
    }
    case 'required':
      return `${join(path, String(params.missingProperty))}: is required`;
    case 'enum':
      return `${path || '(root)'}: must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'oneOf':
      return `${path || '(root)'}: must be null or an object with "upstream"`;
    default:
      return `${path || '(root)'}: ${error.message ?? 'is invalid'}`;
  }
}

/** `/routes/2/prefix` → `routes[2].prefix`. */
function pointerToPath(pointer: string): string {
  let out = '';
  for (const raw of pointer.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(part) ? `[${part}]` : out === '' ? part : `.${part}`;
  }
  return out;
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

function dedupe(items: string[]): string[] {
  return [...new Set(items)];
}
