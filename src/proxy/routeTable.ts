/**
 * The route table, compiled once from the frozen config.
 *
 * A route matches a canonical path (see `domain/requestPath.ts`; the query is not part of
 * it) when its prefix equals the path or is followed in it by `/` or `.`: `/v1/orders`
 * matches `/v1/orders`, `/v1/orders/1` and `/v1/orders.json`, never `/v1/ordersX`. The prefix `/` matches every
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

function matches(prefix: string, path: string): boolean {
  if (!startsWithFolded(path, prefix)) return false;
  // A prefix ending in `/` (including `/` itself) already ends on a boundary.
  // `.` counts as one too: upstreams that match `/reports.json` or `/reports.` as
  // `/reports` (Spring's suffix patterns, Windows dropping trailing dots) must not be
  // reachable around the route's scopes through a less specific route.
  // `;` also ends a segment (RFC 3986 §3.3 parameters); request paths with `;` are refused
  // before routing, so this is defence in depth.
  const next = path.charCodeAt(prefix.length);
  return (
    path.length === prefix.length ||
    prefix.charCodeAt(prefix.length - 1) === 0x2f ||
    next === 0x2f ||
    next === 0x2e ||
    next === 0x3b
  );
}

export function compileRouteTable(config: Pick<Config, 'routes' | 'upstream'>): RouteTable {
  const routes = config.routes.map((r) =>
    compileRoute(r.id, r.prefix, r.upstream, r.scopes, r.timeoutMs),
  );
  // Stable sort: among equal prefixes the first configured wins (validation rejects those).
  const byLength = Object.freeze(
    [...routes]
      .sort((a, b) => b.prefix.length - a.prefix.length)
      .map((route) => ({ route, folded: lowerAscii(route.prefix) })),
  );
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

  return Object.freeze({
    routes: Object.freeze(all),
    origins: Object.freeze([...new Set(all.map((r) => r.origin))]),
    match(path: string): CompiledRoute | null {
      for (const { route, folded } of byLength) {
        if (matches(folded, path)) return route;
      }
      return fallback;
    },
  });
}

/** ASCII-only lower case (URL paths are ASCII once canonical; no locale rules). */
function lowerAscii(text: string): string {
  return text.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0x20));
}
