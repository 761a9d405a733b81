import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config/loadConfig.js';
import { configSchema } from '../../src/config/schema.js';
import type { Config } from '../../src/config/types.js';
import { validateConfig } from '../../src/config/validateConfig.js';

/** From dist-test/test/config/ up to the repository. */
const EXAMPLE = fileURLToPath(new URL('../../../config/portaria.example.yaml', import.meta.url));

type Json = Record<string, unknown>;

/** The config with its resolved paths made relative to the config file's directory. */
function portable(config: Config, file: string): Json {
  const base = dirname(file);
  return {
    ...config,
    keys: { ...config.keys, dir: relative(base, config.keys.dir) },
    clients: { file: relative(base, config.clients.file) },
    revocation: {
      ...config.revocation,
      file: relative(base, config.revocation.file),
      queueFile: relative(base, config.revocation.queueFile),
    },
  };
}

/**
 * A commented-out example block, uncommented and parsed: the comment line `# key:` and
 * the more deeply indented comment lines under it (`#   - id: …`).
 */
function commentedExample(text: string, key: string): Json {
  const lines = text.split('\n');
  const marker = new RegExp(`^(\\s*)#(\\s+)${key}:\\s*$`);
  const start = lines.findIndex((line) => marker.test(line));
  assert.notEqual(start, -1, `no commented example for ${key}`);
  const [, indent = '', gap = ''] = marker.exec(lines[start] as string) ?? [];
  const prefix = `${indent}#${gap}`;
  const block = [(lines[start] as string).slice(prefix.length)];
  for (const line of lines.slice(start + 1)) {
    if (!line.startsWith(`${prefix} `)) break;
    block.push(line.slice(prefix.length));
  }
  return parse(block.join('\n')) as Json;
}

/** A scalar setting shown commented out (`# key: value`, below its description), parsed. */
function commentedSetting(text: string, key: string): Json {
  const line = text
    .split('\n')
    .filter((l) => new RegExp(`^\\s*#\\s+${key}: \\S+$`).test(l))
    .at(-1);
  assert.ok(line !== undefined, `no commented ${key}`);
  return parse(line.replace(/^\s*#\s+/, '')) as Json;
}

/** Every setting path of the schema: `server.port`, `routes[].id`, `upstream.default.scopes`. */
function schemaPaths(schema: Json, at: string): string[] {
  const paths: string[] = [];
  const properties = (schema.properties ?? {}) as Record<string, Json>;
  for (const [key, child] of Object.entries(properties)) {
    const path = at === '' ? key : `${at}.${key}`;
    paths.push(path);
    paths.push(...schemaPaths(child, path));
    const items = child.items as Json | undefined;
    if (items?.properties) paths.push(...schemaPaths(items, `${path}[]`));
    for (const member of (child.oneOf ?? []) as Json[]) paths.push(...schemaPaths(member, path));
  }
  return paths;
}

/** True when `path` names a key present in `value` (for `[]`, in some array item). */
function hasPath(value: unknown, path: string): boolean {
  const [head = '', ...rest] = path.split('.');
  const array = head.endsWith('[]');
  const key = array ? head.slice(0, -2) : head;
  if (value === null || typeof value !== 'object' || !Object.hasOwn(value, key)) return false;
  const child = (value as Json)[key];
  if (rest.length === 0) return true;
  if (array) return Array.isArray(child) && child.some((item) => hasPath(item, rest.join('.')));
  return hasPath(child, rest.join('.'));
}

async function loadFile(file: string): Promise<Config> {
  return loadConfig({ file, env: {}, cwd: dirname(file) });
}

describe('config/portaria.example.yaml', () => {
  test('loads, and every value it documents is the schema default', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'portaria-example-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const empty = join(dir, 'empty.yaml');
    await writeFile(empty, '');
    const example = await loadFile(EXAMPLE);
    const defaults = await loadFile(empty);
    assert.deepEqual(portable(example, EXAMPLE), portable(defaults, empty));
    assert.equal(example.keys.dir, join(dirname(EXAMPLE), 'data/keys'));
    assert.equal(example.clients.file, join(dirname(EXAMPLE), 'data/clients.json'));
  });

  test('pins no default that follows another setting: with a Redis revocation store, the replay store is Redis', async () => {
    const text = await readFile(EXAMPLE, 'utf8');
    const example = parse(text) as Json;
    const settings = {
      ...example,
      revocation: { ...(example.revocation as Json), store: 'redis' },
      redis: { ...(example.redis as Json), url: 'redis://127.0.0.1:6379/0' },
    };
    const config = validateConfig(settings, { baseDir: dirname(EXAMPLE) });
    assert.equal(config.oauth.replayStore, 'redis');
  });

  test('says the token limits cover the OAuth endpoints too', async () => {
    const text = await readFile(EXAMPLE, 'utf8');
    const above = text.slice(0, text.indexOf('\ntokenLimits:'));
    const comment = above.slice(above.lastIndexOf('\n\n'));
    assert.match(comment, /OAuth 2\.0 token, revocation\s+(#\s+)?and introspection endpoints/);
  });

  test('documents every setting of the schema', async () => {
    const text = await readFile(EXAMPLE, 'utf8');
    const documented = parse(text) as Json;
    const upstream = documented.upstream as Json;
    // Settings whose default is empty are shown in commented examples.
    const withExamples = {
      ...documented,
      // Its default follows revocation.store: shown commented out, never pinned.
      oauth: {
        ...(documented.oauth as Json),
        ...commentedSetting(text, 'replayStore'),
        ...commentedSetting(text, 'mtlsBaseUrl'),
      },
      routes: commentedExample(text, 'routes').routes,
      issuers: commentedExample(text, 'issuers').issuers,
      upstream: { ...upstream, default: commentedExample(text, 'default').default },
    };
    const paths = schemaPaths(configSchema as unknown as Json, '');
    assert.ok(paths.includes('routes[].timeoutMs'));
    assert.ok(paths.includes('upstream.default.scopes'));
    const missing = paths.filter((path) => !hasPath(withExamples, path));
    assert.deepEqual(missing, []);
  });

  test('the commented examples are valid settings', async () => {
    const text = await readFile(EXAMPLE, 'utf8');
    const settings = {
      ...commentedExample(text, 'routes'),
      upstream: commentedExample(text, 'default'),
      ...commentedExample(text, 'identityHeaders'),
      ...commentedExample(text, 'issuers'),
      quotas: commentedExample(text, 'policies'),
    };
    const config = validateConfig(settings, { baseDir: '/' });
    assert.deepEqual(Object.keys(config.quotas.policies), ['partner-standard']);
    assert.deepEqual(
      config.issuers.map((i) => [
        i.id,
        i.jwksUri,
        i.keyFile,
        i.clockSkewSeconds,
        i.cooldownSeconds,
      ]),
      [
        ['partner-idp', 'https://idp.partner.example/.well-known/jwks.json', null, 60, 30],
        ['batch-jobs', null, '/jobs-public-keys.json', 60, 30],
      ],
    );
    assert.deepEqual(
      config.routes.map((r) => [r.id, r.prefix, r.scopes, r.timeoutMs]),
      [
        ['orders', '/v1/orders', ['orders:read'], 5000],
        ['reports', '/v1/reports', ['reports:read', 'reports:export'], 30_000],
      ],
    );
    assert.deepEqual(config.upstream.default, {
      upstream: 'http://legacy.internal:8080',
      scopes: ['legacy'],
      timeoutMs: 10_000,
      requireCertificateBound: true,
      requireSenderConstrained: true,
      quota: 'partner-standard',
    });
    assert.equal(config.identityHeaders.client_id, 'X-Partner-Id');
  });

  test('every active setting has a comment line above it', async () => {
    const lines = (await readFile(EXAMPLE, 'utf8')).split('\n');
    const settings = new Set(schemaPaths(configSchema as unknown as Json, ''));
    const stack: { indent: number; key: string }[] = [];
    const bare: string[] = [];
    lines.forEach((line, i) => {
      const m = /^(\s*)([A-Za-z_]+):/.exec(line);
      if (m === null) return;
      const indent = (m[1] as string).length;
      while (stack.length > 0 && (stack.at(-1) as { indent: number }).indent >= indent) stack.pop();
      stack.push({ indent, key: m[2] as string });
      const path = stack.map((s) => s.key).join('.');
      if (settings.has(path) && !/^\s*#/.test(lines[i - 1] ?? '')) bare.push(path);
    });
    assert.deepEqual(bare, []);
  });
});
