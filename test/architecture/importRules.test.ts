/**
 * The import rule (docs/architecture.md, Layers), enforced: imports point inward, there are no cycles,
 * and each third-party library has one home. Reads the TypeScript sources as text.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = findRoot(dirname(fileURLToPath(import.meta.url)));
const src = join(root, 'src');

/** Which internal areas each area may import (an area is a top-level dir or file of src/). */
const ALLOWED: Record<string, readonly string[]> = {
  lib: [],
  errors: [],
  config: ['lib', 'errors'],
  domain: ['lib', 'errors'],
  observability: ['lib', 'errors'],
  keys: ['domain', 'config', 'lib', 'errors'],
  issuers: ['domain', 'config', 'lib', 'errors'],
  clients: ['domain', 'config', 'lib', 'errors'],
  redis: ['config', 'lib', 'errors'],
  revocation: ['redis', 'domain', 'config', 'lib', 'errors'],
  limits: ['redis', 'domain', 'config', 'lib', 'errors'],
  token: ['keys', 'clients', 'revocation', 'limits', 'domain', 'config', 'lib', 'errors'],
  verify: ['keys', 'issuers', 'clients', 'revocation', 'domain', 'config', 'lib', 'errors'],
  proxy: ['domain', 'config', 'lib', 'errors'],
  // The public listener's TLS: files, policy, context reloads, the peer's certificate.
  tls: ['domain', 'config', 'lib', 'errors'],
  // Client certificates from a proxy's header: formats, CA and CRL files, verification.
  certificates: ['domain', 'config', 'lib', 'errors'],
  // The protected steps over the plain per-request value: no entry's objects.
  pipeline: ['verify', 'proxy', 'limits', 'observability', 'domain', 'config', 'lib', 'errors'],
  oauth: [
    'clients',
    'keys',
    'issuers',
    'token',
    'verify',
    'revocation',
    'limits',
    'redis',
    'domain',
    'config',
    'lib',
    'errors',
  ],
  http: [
    'tls',
    'certificates',
    'pipeline',
    'documents',
    'oauth',
    'token',
    'verify',
    'proxy',
    'limits',
    'observability',
    'domain',
    'config',
    'lib',
    'errors',
  ],
  // Authorizer mode: the decision entries over the protected steps (docs/authorizer.md).
  authorizer: [
    'http',
    'certificates',
    'pipeline',
    'proxy',
    'observability',
    'domain',
    'config',
    'lib',
    'errors',
  ],
  // What the gateway serves about itself: OpenAPI, RFC 8414 / RFC 9728 metadata, JWKS.
  documents: ['proxy', 'domain', 'config', 'lib', 'errors'],
  // The admin listener: an entry of its own, sharing the public entry's HTTP replies.
  admin: ['http', 'revocation', 'domain', 'config', 'lib', 'errors'],
  reload: ['config', 'lib', 'errors'],
  // `config check` loads issuers' key files and compiles the routes as the gateway does.
  cli: [
    'profile',
    'certificates',
    'clients',
    'keys',
    'issuers',
    'proxy',
    'tls',
    'config',
    'domain',
    'lib',
    'errors',
  ],
  // profile: fapi-br over the clients file and the keys directory (docs/fapi.md).
  profile: ['clients', 'keys', 'config', 'lib', 'errors'],
  demo: ['clients', 'keys', 'config', 'lib', 'errors'],
  app: [
    'authorizer',
    'pipeline',
    'profile',
    'tls',
    'certificates',
    'admin',
    'documents',
    'http',
    'oauth',
    'token',
    'verify',
    'proxy',
    'keys',
    'issuers',
    'clients',
    'revocation',
    'redis',
    'limits',
    'reload',
    'observability',
    'domain',
    'config',
    'lib',
    'errors',
  ],
  cluster: [
    'app',
    'http',
    'oauth',
    'revocation',
    'limits',
    'observability',
    'config',
    'lib',
    'errors',
  ],
  // cli/processFlags: --help and --version, answered before the gateway's modules load.
  main: ['app', 'cluster', 'config', 'demo', 'cli'],
};

/** The only areas that may import each third-party package. */
const HOMES: Record<string, readonly string[]> = {
  undici: ['proxy'],
  'http-proxy': ['proxy'],
  jose: ['keys', 'issuers', 'verify', 'token', 'oauth'],
  'prom-client': ['observability'],
  pino: ['observability'],
  'pino-pretty': ['observability'],
  '@opentelemetry/api': ['observability'],
  '@opentelemetry/core': ['observability'],
  '@opentelemetry/exporter-trace-otlp-http': ['observability'],
  '@opentelemetry/resources': ['observability'],
  '@opentelemetry/sdk-trace-base': ['observability'],
  '@opentelemetry/semantic-conventions': ['observability'],
  yaml: ['config'],
  ajv: ['config'],
  ioredis: ['redis'],
  'proxy-addr': ['lib'],
  'ipaddr.js': ['limits'],
  'structured-headers': ['certificates'],
  // Envoy's ext_authz over gRPC: the listener, its protos and its Check.
  '@grpc/grpc-js': ['authorizer'],
  '@grpc/proto-loader': ['authorizer'],
};

interface Edge {
  from: string;
  to: string;
  specifier: string;
}

function findRoot(start: string): string {
  let dir = start;
  while (true) {
    try {
      readFileSync(join(dir, 'package.json'));
      return dir;
    } catch {
      const up = dirname(dir);
      if (up === dir) throw new Error('package.json not found');
      dir = up;
    }
  }
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

function areaOf(file: string): string {
  const rel = relative(src, file);
  const first = rel.split('/')[0] ?? '';
  return first.endsWith('.ts') ? first.slice(0, -3) : first;
}

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|(?:^|\n)\s*import\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((m) => (m[1] ?? m[2] ?? m[3]) as string);
}

const files = sourceFiles(src);
const internal: Edge[] = [];
const external: Edge[] = [];
for (const file of files) {
  for (const specifier of importsOf(file)) {
    if (specifier.startsWith('.')) {
      const target = resolve(dirname(file), specifier).replace(/\.js$/, '.ts');
      internal.push({ from: file, to: target, specifier });
    } else if (!specifier.startsWith('node:')) {
      external.push({ from: file, to: specifier, specifier });
    }
  }
}

test('the source tree was found and read', () => {
  assert.ok(files.length > 20, `only ${files.length} files under ${src}`);
  assert.ok(internal.length > 50);
});

test('every relative import resolves to a source file', () => {
  const known = new Set(files);
  const missing = internal
    .filter((e) => !known.has(e.to))
    .map((e) => `${relative(root, e.from)} → ${e.specifier}`);
  assert.deepEqual(missing, []);
});

test('imports point inward (the import rule of docs/architecture.md)', () => {
  const violations: string[] = [];
  for (const edge of internal) {
    const from = areaOf(edge.from);
    const to = areaOf(edge.to);
    if (from === to) continue;
    const allowed = ALLOWED[from];
    assert.ok(
      allowed,
      `area "${from}" (${relative(root, edge.from)}) is not in the import rule table`,
    );
    if (!allowed.includes(to))
      violations.push(`${relative(root, edge.from)} (${from}) imports ${edge.specifier} (${to})`);
  }
  assert.deepEqual(violations, []);
});

test('each third-party library is imported from its one home only', () => {
  const violations: string[] = [];
  for (const edge of external) {
    const pkg = edge.to.startsWith('@')
      ? edge.to.split('/').slice(0, 2).join('/')
      : (edge.to.split('/')[0] as string);
    const homes = HOMES[pkg];
    const area = areaOf(edge.from);
    if (homes === undefined)
      violations.push(
        `${relative(root, edge.from)} imports ${pkg}, which has no home in the table`,
      );
    else if (!homes.includes(area))
      violations.push(`${relative(root, edge.from)} imports ${pkg} outside ${homes.join(', ')}`);
  }
  assert.deepEqual(violations, []);
});

test('there are no import cycles between modules', () => {
  const graph = new Map<string, string[]>();
  for (const edge of internal) graph.set(edge.from, [...(graph.get(edge.from) ?? []), edge.to]);
  const state = new Map<string, 'visiting' | 'done'>();
  const cycles: string[] = [];
  const visit = (node: string, path: string[]) => {
    const s = state.get(node);
    if (s === 'done') return;
    if (s === 'visiting') {
      cycles.push(
        [...path.slice(path.indexOf(node)), node].map((f) => relative(src, f)).join(' → '),
      );
      return;
    }
    state.set(node, 'visiting');
    for (const next of graph.get(node) ?? []) visit(next, [...path, node]);
    state.set(node, 'done');
  };
  for (const file of files) visit(file, []);
  assert.deepEqual(cycles, []);
});
