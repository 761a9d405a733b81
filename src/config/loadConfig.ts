/**
 * Loads the configuration: the YAML file named by `--config` or `PORTARIA_CONFIG`, then
 * the environment (`environment.ts`: `PORTARIA_SERVER__PORT` for `server.port`, and so
 * on for every setting), then `validateConfig`. Precedence: environment, then file, then
 * the schema's default. This module is the only one that reads `process.env`; it is
 * handed the environment so tests pass their own.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { isCollection, LineCounter, parseDocument, visit } from 'yaml';
import { ConfigError } from './configError.js';
import { environmentOverrides } from './environment.js';
import { configSchema } from './schema.js';
import type { Config } from './types.js';
import { urlPassword, validateConfig } from './validateConfig.js';

export interface LoadOptions {
  /** Config file path; undefined → PORTARIA_CONFIG; both undefined → no file. */
  readonly file?: string | undefined;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /** Demo mode: embedded defaults with the data under `.portaria-demo/`. */
  readonly demo?: boolean;
  /** Demo mode: the demo upstream's URL, used as the default upstream. */
  readonly demoUpstream?: string;
}

export async function loadConfig(options: LoadOptions): Promise<Config> {
  const file = options.file ?? options.env.PORTARIA_CONFIG;
  let raw: Record<string, unknown> = {};
  let baseDir = options.cwd;
  if (file) {
    const path = resolve(options.cwd, file);
    raw = await readYaml(path);
    baseDir = dirname(path);
  } else if (options.demo) {
    raw = demoSettings(options.demoUpstream);
  } else {
    throw new ConfigError([
      'no configuration file: pass --config FILE or set PORTARIA_CONFIG (or run "npm start" for the demo)',
    ]);
  }
  const problems: string[] = [];
  // A secret in the configuration file is a secret in a ConfigMap, a repository, a
  // backup: the Redis password comes from redis.passwordFile, or with the URL from the
  // environment (PORTARIA_REDIS_URL), never from the file.
  if (redisUrlHasPassword(raw)) {
    problems.push(
      'redis.url: must not carry a password in the configuration file (give it in redis.passwordFile, or the whole URL in PORTARIA_REDIS_URL)',
    );
  }
  const fromEnv = environmentOverrides(options.env);
  problems.push(...fromEnv.problems);
  /** [setting path, variable] of every override applied: its problems name the variable. */
  const applied: [string, string][] = [];
  for (const { path, variable, value } of fromEnv.overrides) {
    const refused = setPath(raw, path, value);
    if (refused !== null) problems.push(`${refused}: must be a mapping (${variable} cannot apply)`);
    else applied.push([path.join('.'), variable]);
  }
  if (!file && options.demo) demoIssuer(raw);
  let config: Config;
  try {
    config = validateConfig(raw, { baseDir, demo: options.demo === true });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    // A value from the environment is named with its variable (`admin.port
    // (PORTARIA_ADMIN__PORT): must be <= 65535`); an override refused above is reported
    // with the file's own problems, in one run.
    const named = error.problems.map((problem) => {
      for (const [at, name] of applied) {
        // `routes[0].prefix: …` comes from PORTARIA_ROUTES as well.
        if (/^[:.[]/.test(problem.slice(at.length)) && problem.startsWith(at)) {
          const rest = problem.slice(at.length);
          const colon = rest.indexOf(':');
          return `${at}${rest.slice(0, colon)} (${name})${rest.slice(colon)}`;
        }
      }
      return problem;
    });
    throw new ConfigError([...problems, ...named]);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** True when the file's `redis.url` names a password (`user:password@` or `?password=`). */
function redisUrlHasPassword(raw: Record<string, unknown>): boolean {
  const redis = raw.redis;
  if (typeof redis !== 'object' || redis === null) return false;
  const url = (redis as Record<string, unknown>).url;
  return typeof url === 'string' && urlPassword(url) !== '';
}

/**
 * The demo's issuer is where it listens (127.0.0.1, its port after the environment's
 * overrides), not the schema's `http://localhost:8080`: the RFC 9728 `resource_metadata`
 * of its challenges and its discovery documents then name a URL that reaches it (https:
 * with `server.tls`).
 * `PORTARIA_ISSUER` still wins. Port 0 (chosen at start) cannot be named here.
 */
function demoIssuer(raw: Record<string, unknown>): void {
  if (raw.issuer !== undefined) return;
  const server = raw.server as Record<string, unknown> | undefined;
  const port = server?.port ?? configSchema.properties.server.properties.port.default;
  const tls = server?.tls as Record<string, unknown> | undefined;
  raw.issuer = `${tls?.enabled === true ? 'https' : 'http'}://127.0.0.1:${String(port)}`;
}

/** The embedded demo: local data directory, one scoped route and a default upstream. */
function demoSettings(upstream: string | undefined): Record<string, unknown> {
  const settings: Record<string, unknown> = {
    server: { host: '127.0.0.1' },
    keys: { dir: '.portaria-demo/keys' },
    clients: { file: '.portaria-demo/clients.json' },
    revocation: { file: '.portaria-demo/revocations.log' },
  };
  if (upstream) {
    settings.routes = [
      { id: 'orders', prefix: '/v1/orders', upstream, scopes: ['orders:read'] },
      { id: 'reports', prefix: '/v1/reports', upstream, scopes: ['reports:read'] },
    ];
    settings.upstream = { default: { upstream } };
  }
  return settings;
}

async function readYaml(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ConfigError([`${path}: cannot read the configuration file (${code ?? 'error'})`]);
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true, lineCounter });
  // Warnings are problems too: an unknown tag (`!custom`) would otherwise load as a plain
  // string. So is a list or mapping used as a key (it would load stringified).
  const issues = [...doc.errors, ...doc.warnings].map(
    (e) => `${path}: ${(e.message.split('\n')[0] ?? '').replace(/:$/, '')}`,
  );
  visit(doc, {
    Pair(_, pair) {
      if (isCollection(pair.key)) {
        const line = lineCounter.linePos(pair.key.range?.[0] ?? 0).line;
        issues.push(`${path}: line ${line}: a key must be a plain value, not a list or mapping`);
      }
    },
  });
  if (issues.length > 0) throw new ConfigError(issues);
  let value: unknown;
  try {
    // Converting can still fail: an alias bomb (too many aliases), a collection as a key.
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    throw new ConfigError([`${path}: ${(error as Error).message}`]);
  }
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new ConfigError([`${path}: the top level must be a mapping of settings`]);
  }
  return value as Record<string, unknown>;
}

/**
 * Sets `path` in `target`, making missing sections; returns the path of a section the
 * file gives as something other than a mapping (not replaced: that is the file's problem
 * to report), else null.
 */
function setPath(
  target: Record<string, unknown>,
  path: readonly string[],
  value: unknown,
): string | null {
  let node = target;
  for (const [i, key] of path.slice(0, -1).entries()) {
    const next = node[key];
    if (next === undefined || next === null) node[key] = {};
    else if (typeof next !== 'object' || Array.isArray(next)) {
      return path.slice(0, i + 1).join('.');
    }
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1] as string] = value;
  return null;
}
