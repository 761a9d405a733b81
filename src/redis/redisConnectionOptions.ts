/**
 * What ioredis is given, built from `redis` once per connection: the server (a URL's
 * parts, the sentinels and the primary's name, or a cluster's seed nodes), the ACL user
 * and password, and TLS (CA, client certificate, server name). The URL is taken apart
 * here rather than handed to ioredis, which lets a URL's empty password (`redis://gw@host`)
 * win over the password option (WRONGPASS). Files are read here; a problem names the
 * setting and the file, never a file's content.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { ConfigError } from '../config/configError.js';
import { parseRedisNode, urlPassword, urlUsername } from '../config/redisRules.js';
import type { RedisConfig } from '../config/types.js';

export interface RedisNode {
  readonly host: string;
  readonly port: number;
}

/** What every connection (data node or sentinel) shares. */
export interface RedisAuth {
  readonly username?: string;
  readonly password?: string;
  readonly tls?: ConnectionOptions;
}

export type RedisTargetOptions =
  | { readonly kind: 'server'; readonly node: RedisNode; readonly db: number }
  | {
      readonly kind: 'sentinel';
      readonly sentinels: readonly RedisNode[];
      readonly masterName: string;
      readonly sentinelAuth: RedisAuth;
    }
  | { readonly kind: 'cluster'; readonly nodes: readonly RedisNode[] };

export interface RedisConnectionOptions {
  readonly target: RedisTargetOptions;
  /** The data nodes' user, password and TLS. */
  readonly auth: RedisAuth;
}

export function redisConnectionOptions(config: RedisConfig): RedisConnectionOptions {
  const tls = tlsOptions(config);
  const password = config.passwordFile
    ? readSecret('redis.passwordFile', config.passwordFile)
    : undefined;
  if (config.url !== null) {
    const url = new URL(config.url);
    const username = urlUsername(config.url);
    const db = url.pathname.length > 1 ? Number(url.pathname.slice(1)) : 0;
    return {
      target: {
        kind: 'server',
        node: { host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 6379) },
        db: Number.isInteger(db) ? db : 0,
      },
      auth: auth(
        username || config.username || undefined,
        urlPassword(config.url) || password,
        url.protocol === 'rediss:' ? (tls ?? {}) : tls,
      ),
    };
  }
  const dataAuth = auth(config.username ?? undefined, password, tls);
  if (config.sentinel.nodes.length > 0) {
    const sentinel = config.sentinel;
    return {
      target: {
        kind: 'sentinel',
        sentinels: nodes(sentinel.nodes),
        masterName: sentinel.masterName ?? '',
        sentinelAuth: auth(
          sentinel.username ?? undefined,
          sentinel.passwordFile
            ? readSecret('redis.sentinel.passwordFile', sentinel.passwordFile)
            : undefined,
          tls,
        ),
      },
      auth: dataAuth,
    };
  }
  if (config.cluster.nodes.length > 0) {
    return { target: { kind: 'cluster', nodes: nodes(config.cluster.nodes) }, auth: dataAuth };
  }
  throw new Error('redis is not configured (redis.url, redis.sentinel.nodes, redis.cluster.nodes)');
}

/** Whether keys must share a hash slot per script (Redis Cluster). */
export function isRedisCluster(config: RedisConfig): boolean {
  return (
    config.url === null && config.sentinel.nodes.length === 0 && config.cluster.nodes.length > 0
  );
}

function auth(
  username: string | undefined,
  password: string | undefined,
  tls: ConnectionOptions | undefined,
): RedisAuth {
  return {
    ...(username === undefined ? {} : { username }),
    ...(password === undefined ? {} : { password }),
    ...(tls === undefined ? {} : { tls }),
  };
}

function nodes(list: readonly string[]): RedisNode[] {
  return list.map((node, i) => {
    const parsed = parseRedisNode(node);
    if (!parsed) throw new ConfigError([`redis nodes[${i}]: must be host:port`]);
    return parsed;
  });
}

/** TLS options when TLS is on (`redis.tls.enabled`; a rediss:// URL adds it above). */
function tlsOptions(config: RedisConfig): ConnectionOptions | undefined {
  const tls = config.tls;
  const on = tls.enabled || (config.url?.startsWith('rediss:') ?? false);
  if (!on) return undefined;
  return {
    ...(tls.caFile ? { ca: readFile('redis.tls.caFile', tls.caFile) } : {}),
    ...(tls.certFile ? { cert: readFile('redis.tls.certFile', tls.certFile) } : {}),
    ...(tls.keyFile ? { key: readFile('redis.tls.keyFile', tls.keyFile) } : {}),
    ...(tls.serverName ? { servername: tls.serverName } : {}),
  };
}

/** A password file's content, trimmed; a problem names the file, never its content. */
function readSecret(setting: string, file: string): string {
  const secret = readFile(setting, file).trim();
  if (secret === '') throw new ConfigError([`${setting}: ${file} is empty`]);
  return secret;
}

function readFile(setting: string, file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError([`${setting}: cannot read ${file} (${code})`]);
  }
}
