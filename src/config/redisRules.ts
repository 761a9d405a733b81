/**
 * `redis` and the stores that need it: one way to reach Redis (a URL, Sentinel or
 * Cluster), each credential in one place only, TLS files only with TLS on, and
 * `revocation.store` / `tokenLimits.store: redis` only with Redis. Why: docs/configuration.md.
 */
import { isMapping, type Loose, section, strings, text } from './looseValues.js';
import { checkUrl } from './urlRules.js';

/** How Redis is reached: one server by URL, the primary Sentinel names, or a Cluster. */
export type RedisTarget = 'url' | 'sentinel' | 'cluster';

const NEEDS_REDIS = 'needs redis.url, redis.sentinel.nodes or redis.cluster.nodes';

/**
 * How `redis` reaches Redis as given: null when not at all, and undefined when the
 * `redis` section is not a mapping (the schema's problem: no rule reads it then).
 */
export function redisTargetOf(config: Loose): RedisTarget | null | undefined {
  if (config.redis !== undefined && !isMapping(config.redis)) return undefined;
  const redis = section(config.redis);
  if (typeof redis.url === 'string') return 'url';
  if (strings(section(redis.sentinel).nodes).length > 0) return 'sentinel';
  if (strings(section(redis.cluster).nodes).length > 0) return 'cluster';
  return null;
}

export function redisProblems(config: Loose, target: RedisTarget | null | undefined): string[] {
  const problems: string[] = [];
  const redis = section(config.redis);
  const sentinel = section(redis.sentinel);
  const cluster = section(redis.cluster);
  const given = [
    typeof redis.url === 'string' ? 'redis.url' : null,
    strings(sentinel.nodes).length > 0 ? 'redis.sentinel.nodes' : null,
    strings(cluster.nodes).length > 0 ? 'redis.cluster.nodes' : null,
  ].filter((name) => name !== null);
  if (given.length > 1) {
    problems.push(`redis: ${given.join(' and ')} are both set; Redis is reached one way`);
  }
  const url = text(redis.url);
  if (url !== null) problems.push(...urlProblems(redis, url));
  for (const [i, node] of strings(sentinel.nodes)) {
    if (!parseRedisNode(node)) problems.push(`redis.sentinel.nodes[${i}]: ${NODE_SHAPE}`);
  }
  for (const [i, node] of strings(cluster.nodes)) {
    if (!parseRedisNode(node)) problems.push(`redis.cluster.nodes[${i}]: ${NODE_SHAPE}`);
  }
  const sentinelOn = strings(sentinel.nodes).length > 0;
  if (sentinelOn && text(sentinel.masterName) === null) {
    problems.push('redis.sentinel.masterName: Sentinel needs the name of the primary it watches');
  }
  if (!sentinelOn) {
    for (const key of ['masterName', 'username', 'passwordFile']) {
      if (text(sentinel[key]) !== null) {
        problems.push(`redis.sentinel.${key}: applies only with redis.sentinel.nodes`);
      }
    }
  }
  problems.push(...tlsProblems(redis, url));
  if (section(config.revocation).store === 'redis' && target === null) {
    problems.push(`revocation.store: "redis" ${NEEDS_REDIS} (or PORTARIA_REDIS_URL)`);
  }
  if (section(config.tokenLimits).store === 'redis' && target === null) {
    problems.push(`tokenLimits.store: "redis" ${NEEDS_REDIS} (or PORTARIA_REDIS_URL)`);
  }
  if (section(config.quotas).store === 'redis' && target === null) {
    problems.push(`quotas.store: "redis" ${NEEDS_REDIS} (or PORTARIA_REDIS_URL)`);
  }
  return problems;
}

/** A `redis.url`: the scheme, and the user name and password each given in one place. */
function urlProblems(redis: Loose, url: string): string[] {
  const problems: string[] = [];
  checkUrl(problems, 'redis.url', url, ['redis:', 'rediss:']);
  if (decodedCredential(url, 'username') === null || decodedCredential(url, 'password') === null)
    problems.push('redis.url: its user name or password is not valid percent-encoding (%XX)');
  // Two passwords or two users: which one ioredis uses is not something to leave to its
  // option merge.
  if (urlPassword(url) !== '' && text(redis.passwordFile) !== null)
    problems.push('redis.passwordFile: redis.url carries a password too; give it in one place');
  if (urlUsername(url) !== '' && text(redis.username) !== null)
    problems.push('redis.username: redis.url carries a user name too; give it in one place');
  return problems;
}

/** TLS files and names only with TLS on; a client certificate with its key. */
function tlsProblems(redis: Loose, url: string | null): string[] {
  const problems: string[] = [];
  const tls = section(redis.tls);
  const scheme = url !== null && URL.canParse(url) ? new URL(url).protocol : null;
  if (scheme === 'redis:' && tls.enabled === true) {
    problems.push('redis.tls.enabled: redis.url is redis:// (plain); use rediss:// for TLS');
  }
  const on = tls.enabled === true || scheme === 'rediss:';
  for (const key of ['caFile', 'certFile', 'keyFile', 'serverName']) {
    if (!on && text(tls[key]) !== null) {
      problems.push(`redis.tls.${key}: TLS is off; set redis.tls.enabled (or a rediss:// URL)`);
    }
  }
  if ((text(tls.certFile) === null) !== (text(tls.keyFile) === null)) {
    problems.push('redis.tls: certFile and keyFile go together (a client certificate and its key)');
  }
  return problems;
}

const NODE_SHAPE = 'must be host:port ([address]:port for IPv6), port 1-65535';

/** `host:port` or `[v6]:port` → its parts; undefined when it is neither. */
export function parseRedisNode(node: string): { host: string; port: number } | undefined {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(node);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port < 1 || port > 65535) return undefined;
  return { host: (match[1] ?? match[2]) as string, port };
}

/** The password a Redis URL carries (userinfo or a `password` query parameter), or ''. */
export function urlPassword(value: string): string {
  return decodedCredential(value, 'password') ?? '';
}

/** The user name a Redis URL carries (userinfo or a `username` query parameter), or ''. */
export function urlUsername(value: string): string {
  return decodedCredential(value, 'username') ?? '';
}

/**
 * A credential of a Redis URL, percent-decoded (RFC 3986 §2.1: userinfo is
 * percent-encoded); '' when absent, and null when it is not valid percent-encoding.
 */
function decodedCredential(value: string, part: 'username' | 'password'): string | null {
  if (!URL.canParse(value)) return '';
  const url = new URL(value);
  try {
    return decodeURIComponent(url[part]) || url.searchParams.get(part) || '';
  } catch {
    return null;
  }
}
