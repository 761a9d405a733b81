/**
 * The route table, compiled once from the frozen config.
 *
 * A route matches a canonical path (see `domain/requestPath.ts`; the query is not part of
 * it) when its prefix equals the path or is followed in it by `/` or `.`: `/v1/orders`
 * matches `/v1/orders`, `/v1/orders/1` and `/v1/orders.json`, never `/v1/ordersX`. The
 * `.` boundary only ever adds scopes: upstreams that serve `/v1/orders.json` as
 * `/v1/orders` (suffix patterns) must not be reachable with fewer scopes than the orders
 * route's, and a path the `/` rule alone gives to a less specific route
 * (`/v1/files.internal/…` under `/v1`) must not need fewer than that route's — so a route
 * matched at a `.` requires its own scopes and those of the route the `/` rule would
 * pick (precomputed: no allocation per request). The prefix `/` matches every
 * path. Prefixes compare ASCII case-insensitively: `/V1/Orders/1` takes the `/v1/orders`
 * route and its scopes, so an upstream that ignores case can never be reached around a
 * route's scopes through the default route (the path is forwarded unchanged). The longest matching prefix wins; routes are sorted by prefix length once, so a
 * lookup is a scan that stops at the first hit and allocates nothing. When nothing
 * matches, `upstream.default` (id `default`) is used if configured, else `null` (404).
 *
 * The upstream URL is split into its origin (one connection pool each) and a base path
 * without trailing slash: the forwarded path is `basePath + path`, never rewritten.
 */
import type { Config } from '../config/types.js';

export interface CompiledRoute {
  readonly id: string;
  readonly prefix: string;
  /** `scheme://host[:port]`, the key of the connection pool. */
  readonly origin: string;
  /** Upstream URL path without trailing slash, `''` if none. */
  readonly basePath: string;
  readonly scopes: readonly string[];
  readonly timeoutMs: number;
}

export interface RouteTable {
  /** The route for a canonical path (no query), or `null`. */
  match(path: string): CompiledRoute | null;
  /** Every route, the default last; for pool creation and diagnostics. */
  readonly routes: readonly CompiledRoute[];
  /** Distinct upstream origins. */
  readonly origins: readonly string[];
}

export const DEFAULT_ROUTE_ID = 'default';

function compileRoute(
  id: string,
  prefix: string,
  upstream: string,
  scopes: readonly string[],
  timeoutMs: number,
): CompiledRoute {
  const url = new URL(upstream);
  let basePath = url.pathname;
  while (basePath.endsWith('/')) basePath = basePath.slice(0, -1);
  return Object.freeze({
    id,
    prefix,
    origin: url.origin,
    basePath,
    scopes: Object.freeze([...scopes]),
    timeoutMs,
  });
}

/** `path` starts with `lowerPrefix` (already lower case), ignoring ASCII case; allocates nothing. */
function startsWithFolded(path: string, lowerPrefix: string): boolean {
  if (path.length < lowerPrefix.length) return false;
  for (let i = 0; i < lowerPrefix.length; i++) {
    let c = path.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) c += 0x20;
    if (c !== lowerPrefix.charCodeAt(i)) return false;
  }
  return true;
}

const NO_MATCH = 0;
const AT_SEGMENT_END = 1;
const AT_DOT = 2;

/** Whether `path` starts with `prefix` at a boundary: a segment's end, or a `.` only. */
function boundaryOf(prefix: string, path: string): number {
  if (!startsWithFolded(path, prefix)) return NO_MATCH;
  // A prefix ending in `/` (including `/` itself) already ends on a boundary.
  // `;` also ends a segment (RFC 3986 §3.3 parameters); request paths with `;` are refused
  // before routing, so this is defence in depth.
  const next = path.charCodeAt(prefix.length);
  if (
    path.length === prefix.length ||
    prefix.charCodeAt(prefix.length - 1) === 0x2f ||
    next === 0x2f ||
    next === 0x3b
  ) {
    return AT_SEGMENT_END;
  }
  return next === 0x2e ? AT_DOT : NO_MATCH;
}

export function compileRouteTable(config: Pick<Config, 'routes' | 'upstream'>): RouteTable {
  const routes = config.routes.map((r) =>
    compileRoute(r.id, r.prefix, r.upstream, r.scopes, r.timeoutMs),
  );
  // Stable sort: among equal prefixes the first configured wins (validation rejects those).
  const sorted = [...routes]
    .sort((a, b) => b.prefix.length - a.prefix.length)
    .map((route) => ({ route, folded: lowerAscii(route.prefix) }));
  const fallback =
    config.upstream.default === null
      ? null
      : compileRoute(
          DEFAULT_ROUTE_ID,
          '/',
          config.upstream.default.upstream,
          config.upstream.default.scopes,
          config.upstream.default.timeoutMs,
        );
  const all = fallback === null ? routes : [...routes, fallback];
  /** The route the `/` boundary alone picks for `path` (the rule before `.` counted). */
  const bySegments = (path: string): CompiledRoute | null =>
    sorted.find(({ folded }) => boundaryOf(folded, path) === AT_SEGMENT_END)?.route ?? fallback;
  const byLength = Object.freeze(
    sorted.map(({ route, folded }) => ({
      route,
      folded,
      atDot: withScopesOf(route, bySegments(`${folded}.`)),
    })),
  );

  return Object.freeze({
    routes: Object.freeze(all),
    origins: Object.freeze([...new Set(all.map((r) => r.origin))]),
    match(path: string): CompiledRoute | null {
      for (const { route, folded, atDot } of byLength) {
        const boundary = boundaryOf(folded, path);
        if (boundary === AT_SEGMENT_END) return route;
        if (boundary === AT_DOT) return atDot;
      }
      return fallback;
    },
  });
}

/** `route`, requiring `other`'s scopes too (the same object when that adds none). */
function withScopesOf(route: CompiledRoute, other: CompiledRoute | null): CompiledRoute {
  const extra = other?.scopes.filter((scope) => !route.scopes.includes(scope)) ?? [];
  if (extra.length === 0) return route;
  return Object.freeze({ ...route, scopes: Object.freeze([...route.scopes, ...extra]) });
}

/** ASCII-only lower case (URL paths are ASCII once canonical; no locale rules). */
function lowerAscii(text: string): string {
  return text.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0x20));
}
