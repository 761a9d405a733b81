import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RouteConfig, UpstreamConfig } from '../../src/config/types.js';
import { compileRouteTable } from '../../src/proxy/routeTable.js';

function route(id: string, prefix: string, upstream: string, timeoutMs = 1000): RouteConfig {
  return { id, prefix, upstream, scopes: [`${id}:read`], timeoutMs, audience: null };
}

const upstream: UpstreamConfig = { default: null, timeoutMs: 30_000, connections: 8 };

const table = compileRouteTable({
  routes: [
    route('orders', '/v1/orders', 'http://127.0.0.1:3000'),
    route('order-items', '/v1/orders/items', 'http://127.0.0.1:3001/api/', 2500),
    route('v1', '/v1', 'http://[::1]:3002/base'),
    route('docs', '/docs/', 'https://docs.internal'),
  ],
  upstream,
});

describe('compileRouteTable', () => {
  const cases: ReadonlyArray<readonly [string, string | null]> = [
    ['/v1/orders', 'orders'],
    ['/v1/orders/', 'orders'],
    ['/v1/orders/1', 'orders'],
    ['/v1/orders/items', 'order-items'],
    ['/v1/orders/items/7', 'order-items'],
    ['/v1/orders/itemsX', 'orders'],
    ['/v1/ordersX', 'v1'],
    // `.` ends a prefix too: suffix patterns (/orders.json) keep the route's scopes.
    ['/v1/orders.json', 'orders'],
    ['/v1/orders/items.csv', 'order-items'],
    ['/v1.2/orders', 'v1'],
    ['/v1', 'v1'],
    ['/v1/', 'v1'],
    ['/v10', null],
    // Prefixes ignore ASCII case: a case variant keeps its route's scopes.
    ['/V1/orders', 'orders'],
    ['/V1/ORDERS/Items/7', 'order-items'],
    ['/DOCS/a', 'docs'],
    ['/V10', null],
    ['/docs/', 'docs'],
    ['/docs/a', 'docs'],
    ['/docs', null],
    ['/', null],
  ];
  for (const [path, id] of cases) {
    test(`matches ${path} to ${id ?? 'no route'}`, () => {
      assert.equal(table.match(path)?.id ?? null, id);
    });
  }

  test('splits the upstream URL into origin and base path without trailing slash', () => {
    assert.deepEqual(
      table.routes.map((r) => [r.id, r.origin, r.basePath, r.timeoutMs]),
      [
        ['orders', 'http://127.0.0.1:3000', '', 1000],
        ['order-items', 'http://127.0.0.1:3001', '/api', 2500],
        ['v1', 'http://[::1]:3002', '/base', 1000],
        ['docs', 'https://docs.internal', '', 1000],
      ],
    );
    assert.deepEqual(table.match('/v1/orders')?.scopes, ['orders:read']);
  });

  test('a route matched at a "." also requires the scopes of the route "/" alone would pick', () => {
    // /v1/orders.json: the orders route, and the v1 route's scopes too (the "/" rule gave
    // it to v1); /v1/orders/1 needs the orders scopes only.
    assert.deepEqual(table.match('/v1/orders.json')?.scopes, ['orders:read', 'v1:read']);
    assert.equal(table.match('/v1/orders.json')?.id, 'orders');
    assert.deepEqual(table.match('/v1/orders/1')?.scopes, ['orders:read']);
    assert.deepEqual(table.match('/v1/orders/items.csv')?.scopes, [
      'order-items:read',
      'orders:read',
    ]);
    // The default route's scopes count too; none of them: the route's own.
    const withDefault = compileRouteTable({
      routes: [route('files', '/files', 'http://127.0.0.1:3000')],
      upstream: {
        ...upstream,
        default: { upstream: 'http://127.0.0.1:3001', scopes: ['internal:all'], timeoutMs: 1000 },
      },
    });
    assert.deepEqual(withDefault.match('/files.internal/payroll.csv')?.scopes, [
      'files:read',
      'internal:all',
    ]);
    assert.equal(withDefault.match('/files.x'), withDefault.match('/files.y'), 'precomputed');
  });

  test('a route with an audience requires it, and so does a route matched at a "." beside it', () => {
    const withAudience = compileRouteTable({
      routes: [
        { ...route('orders', '/v1/orders', 'http://127.0.0.1:3000'), audience: 'urn:orders' },
        { ...route('v1', '/v1', 'http://127.0.0.1:3001'), audience: 'urn:v1' },
        route('files', '/files', 'http://127.0.0.1:3002'),
      ],
      upstream,
    });
    assert.deepEqual(withAudience.match('/v1/orders/1')?.audiences, ['urn:orders']);
    assert.deepEqual(withAudience.match('/v1/orders.json')?.audiences, ['urn:orders', 'urn:v1']);
    assert.deepEqual(withAudience.match('/v1/other')?.audiences, ['urn:v1']);
    assert.deepEqual(withAudience.match('/files/a')?.audiences, []);
  });

  test('lists each upstream origin once', () => {
    const twice = compileRouteTable({
      routes: [
        route('a', '/a', 'http://127.0.0.1:3000'),
        route('b', '/b', 'http://127.0.0.1:3000/b'),
      ],
      upstream,
    });
    assert.deepEqual(twice.origins, ['http://127.0.0.1:3000']);
  });

  test('falls back to the default upstream, with id default, when no prefix matches', () => {
    const withDefault = compileRouteTable({
      routes: [route('orders', '/v1/orders', 'http://127.0.0.1:3000')],
      upstream: {
        ...upstream,
        default: { upstream: 'http://127.0.0.1:4000/fallback/', scopes: ['any'], timeoutMs: 700 },
      },
    });
    assert.equal(withDefault.match('/v1/orders/1')?.id, 'orders');
    assert.deepEqual(withDefault.match('/elsewhere'), {
      id: 'default',
      prefix: '/',
      origin: 'http://127.0.0.1:4000',
      basePath: '/fallback',
      scopes: ['any'],
      audiences: [],
      timeoutMs: 700,
      requireCertificateBound: false,
      requireSenderConstrained: false,
      quota: null,
    });
    assert.deepEqual(withDefault.origins, ['http://127.0.0.1:3000', 'http://127.0.0.1:4000']);
  });

  test('a route with prefix / matches every path', () => {
    const catchAll = compileRouteTable({
      routes: [
        route('all', '/', 'http://127.0.0.1:3000'),
        route('x', '/x', 'http://127.0.0.1:3001'),
      ],
      upstream,
    });
    assert.equal(catchAll.match('/')?.id, 'all');
    assert.equal(catchAll.match('/anything/at/all')?.id, 'all');
    assert.equal(catchAll.match('/x/1')?.id, 'x');
  });

  test('compiled routes are frozen', () => {
    const compiled = table.match('/v1/orders');
    assert.ok(compiled !== null && Object.isFrozen(compiled) && Object.isFrozen(compiled.scopes));
  });

  test('routes with the same scopes share one frozen list, and so do routes with no audience', () => {
    const shared = compileRouteTable({
      routes: [
        { ...route('a', '/a', 'http://127.0.0.1:3000'), scopes: ['read', 'write'] },
        { ...route('b', '/b', 'http://127.0.0.1:3000'), scopes: ['read', 'write'] },
        { ...route('c', '/c', 'http://127.0.0.1:3000'), scopes: ['write', 'read'] },
        { ...route('d', '/d', 'http://127.0.0.1:3000'), audience: 'https://api.example' },
      ],
      upstream,
    });
    const [a, b, c, d] = shared.routes;
    assert.ok(a !== undefined && b !== undefined && c !== undefined && d !== undefined);
    assert.equal(a.scopes, b.scopes);
    assert.notEqual(a.scopes, c.scopes);
    assert.deepEqual(c.scopes, ['write', 'read']);
    assert.ok(Object.isFrozen(a.scopes) && Object.isFrozen(a.audiences));
    assert.equal(a.audiences, b.audiences);
    assert.deepEqual(d.audiences, ['https://api.example']);
    assert.deepEqual(a.audiences, []);
  });
});

/**
 * The matching rule written as plainly as possible — every route tried, longest prefix
 * first — to check the indexed lookup against on many generated tables and paths.
 */
function referenceMatch(routes: readonly RouteConfig[], path: string): string | null {
  const lower = path.toLowerCase();
  const boundary = (prefix: string): 'segment' | 'dot' | null => {
    if (!lower.startsWith(prefix)) return null;
    const next = lower[prefix.length];
    if (next === undefined || prefix.endsWith('/') || next === '/' || next === ';') {
      return 'segment';
    }
    return next === '.' ? 'dot' : null;
  };
  const sorted = [...routes].sort((a, b) => b.prefix.length - a.prefix.length);
  for (const r of sorted) {
    if (boundary(r.prefix.toLowerCase()) !== null) return r.id;
  }
  return null;
}

describe('compileRouteTable on generated tables', () => {
  // A small deterministic generator: segments from a tiny alphabet make prefixes that
  // share beginnings, end in `/`, contain `.` and differ only in case.
  let seed = 42;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const pieces = ['a', 'A', 'b', 'a.b', 'v1', 'V1', 'x', ''];
  const pathOf = (segments: number): string => {
    let p = '';
    for (let i = 0; i < segments; i++) p += `/${pieces[next(pieces.length)]}`;
    return p === '' ? '/' : p;
  };

  test('the indexed lookup picks the same route as trying every route, longest first', () => {
    for (let t = 0; t < 200; t++) {
      const byFolded = new Map<string, RouteConfig>();
      const count = 1 + next(12);
      for (let i = 0; i < count; i++) {
        let prefix = pathOf(1 + next(3));
        if (next(4) === 0 && !prefix.endsWith('/')) prefix += '/';
        const folded = prefix.toLowerCase();
        if (!byFolded.has(folded)) byFolded.set(folded, route(`r${i}`, prefix, 'http://u'));
      }
      const routes = [...byFolded.values()];
      const compiled = compileRouteTable({ routes, upstream });
      for (let q = 0; q < 50; q++) {
        let path = pathOf(next(5));
        if (next(5) === 0) path += '.json';
        if (next(5) === 0) path += '/';
        assert.equal(
          compiled.match(path)?.id ?? null,
          referenceMatch(routes, path),
          `${path} in ${routes.map((r) => r.prefix).join(' ')}`,
        );
      }
    }
  });

  test('10,000 routes compile and match like one', () => {
    const routes = Array.from({ length: 10_000 }, (_, i) =>
      route(`r${i}`, `/api/${i}/items`, 'http://u'),
    );
    const compiled = compileRouteTable({ routes, upstream });
    assert.equal(compiled.match('/api/9999/items/7')?.id, 'r9999');
    assert.equal(compiled.match('/API/0/Items.json')?.id, 'r0');
    assert.equal(compiled.match('/api/10000/items'), null);
  });
});
