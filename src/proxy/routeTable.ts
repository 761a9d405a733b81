/**
 * The route table, compiled once from the frozen config. The longest prefix matching the
 * canonical path at a `/` or `.` boundary wins, ASCII case-insensitively; a route matched
 * at a `.` also requires the scopes (and audiences) of the route the `/` rule would pick, so no upstream
 * that ignores suffixes or case is reachable with fewer scopes. A lookup is a scan of
 * routes sorted once, with no allocation. Matching rules in full: docs/architecture.md.
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
  /** `aud` values the token must all carry (RFC 8707): the route's `audience`, if any. */
  readonly audiences: readonly string[];
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
  audience: string | null,
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
    audiences: Object.freeze(audience === null ? [] : [audience]),
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
    compileRoute(r.id, r.prefix, r.upstream, r.scopes, r.timeoutMs, r.audience),
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
          null,
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

/** `route`, requiring `other`'s scopes and audiences too (the same object when that adds none). */
function withScopesOf(route: CompiledRoute, other: CompiledRoute | null): CompiledRoute {
  const extra = other?.scopes.filter((scope) => !route.scopes.includes(scope)) ?? [];
  const audiences = other?.audiences.filter((aud) => !route.audiences.includes(aud)) ?? [];
  if (extra.length === 0 && audiences.length === 0) return route;
  return Object.freeze({
    ...route,
    scopes: Object.freeze([...route.scopes, ...extra]),
    audiences: Object.freeze([...route.audiences, ...audiences]),
  });
}

/** ASCII-only lower case (URL paths are ASCII once canonical; no locale rules). */
function lowerAscii(text: string): string {
  return text.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0x20));
}
