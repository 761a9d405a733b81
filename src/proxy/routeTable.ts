/**
 * The route table, compiled once from the frozen config. The longest prefix matching the
 * canonical path at a `/` or `.` boundary wins, ASCII case-insensitively; a route matched
 * at a `.` also requires the scopes (and audiences) of the route the `/` rule would pick, so no upstream
 * that ignores suffixes or case is reachable with fewer scopes. A lookup tries the path's
 * cuts at the lengths some prefix has, longest first, each one map lookup: its cost does
 * not grow with the number of routes (`npm run bench -- --mode routes`).
 *
 * `/v1/orders` matches `/v1/orders`, `/v1/orders/1` and `/v1/orders.json`, never
 * `/v1/ordersX`; the prefix `/` matches every path. The `.` boundary only ever adds
 * requirements (precomputed per route: no allocation per request). When nothing matches,
 * `upstream.default` (id `default`) serves, else null (404). An upstream URL is split into
 * its origin (one connection pool each) and a base path without trailing slash: the
 * forwarded path is `basePath + path`, never rewritten.
 */
import type { Config } from '../config/types.js';

export interface CompiledRoute {
  readonly id: string;
  readonly prefix: string;
  /** `scheme://host[:port]`, the key of the connection pool; `''`: none (`mode: authorizer`). */
  readonly origin: string;
  /** Upstream URL path without trailing slash, `''` if none. */
  readonly basePath: string;
  readonly scopes: readonly string[];
  /** `aud` values the token must all carry (RFC 8707): the route's `audience`, if any. */
  readonly audiences: readonly string[];
  readonly timeoutMs: number;
  /** Only certificate-bound tokens pass (RFC 8705 §3; `requireCertificateBound`). */
  readonly requireCertificateBound: boolean;
  /** Only DPoP- or certificate-bound tokens pass (`requireSenderConstrained`). */
  readonly requireSenderConstrained: boolean;
  /** The quota policy metering the route (`quotas.policies`); null: none. */
  readonly quota: string | null;
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

/**
 * Values many routes share (an upstream origin, a scope set, no audience) stored once: a
 * table of 10,000 routes then holds 10,000 small route objects, not 10,000 copies of each
 * value beside them (heap the garbage collector walks on every full collection).
 */
class SharedValues {
  readonly #strings = new Map<string, string>();
  readonly #lists = new Map<string, readonly string[]>();

  string(value: string): string {
    const known = this.#strings.get(value);
    if (known !== undefined) return known;
    this.#strings.set(value, value);
    return value;
  }

  /** A frozen copy of `values`, the same object for the same values in the same order. */
  list(values: readonly string[]): readonly string[] {
    const key = JSON.stringify(values);
    let known = this.#lists.get(key);
    if (known === undefined) {
      known = Object.freeze(values.map((value) => this.string(value)));
      this.#lists.set(key, known);
    }
    return known;
  }
}

function compileRoute(
  id: string,
  prefix: string,
  upstream: string | null,
  scopes: readonly string[],
  timeoutMs: number,
  audience: string | null,
  requireCertificateBound: boolean,
  requireSenderConstrained: boolean,
  quota: string | null,
  shared: SharedValues,
): CompiledRoute {
  // No upstream (`mode: authorizer`): the route decides, nothing is forwarded.
  const url = upstream === null ? null : new URL(upstream);
  let basePath = url?.pathname ?? '';
  while (basePath.endsWith('/')) basePath = basePath.slice(0, -1);
  return Object.freeze({
    id,
    prefix,
    origin: shared.string(url?.origin ?? ''),
    basePath: shared.string(basePath),
    scopes: shared.list(scopes),
    audiences: shared.list(audience === null ? [] : [audience]),
    timeoutMs,
    requireCertificateBound,
    requireSenderConstrained,
    quota,
  });
}

const AT_SEGMENT_END = 1;
const AT_DOT = 2;

/**
 * How a prefix of `length` code units of `path` ends: on a segment boundary (the path's
 * end, a `/` inside or right after the prefix, or `;`, which ends a segment in RFC 3986
 * §3.3 — paths with `;` are refused before routing, so that is defence in depth), at a
 * `.`, or on no boundary (0).
 */
function boundaryAt(path: string, length: number): number {
  if (length === path.length || path.charCodeAt(length - 1) === 0x2f) return AT_SEGMENT_END;
  const next = path.charCodeAt(length);
  if (next === 0x2f || next === 0x3b) return AT_SEGMENT_END;
  return next === 0x2e ? AT_DOT : 0;
}

interface IndexedRoute {
  readonly route: CompiledRoute;
  /** The route matched at a `.`: the same route with the `/` rule's route's scopes added. */
  atDot: CompiledRoute;
}

export function compileRouteTable(config: Pick<Config, 'routes' | 'upstream'>): RouteTable {
  const shared = new SharedValues();
  const routes = config.routes.map((r) =>
    compileRoute(
      r.id,
      r.prefix,
      r.upstream,
      r.scopes,
      r.timeoutMs,
      r.audience,
      r.requireCertificateBound === true,
      r.requireSenderConstrained === true,
      r.quota ?? null,
      shared,
    ),
  );
  // Prefixes by their ASCII-folded spelling; validation rejects two routes with one prefix,
  // and the first configured wins should one slip through.
  const byPrefix = new Map<string, IndexedRoute>();
  for (const route of routes) {
    const folded = hasUpperAscii(route.prefix) ? lowerAscii(route.prefix) : route.prefix;
    if (!byPrefix.has(folded)) byPrefix.set(folded, { route, atDot: route });
  }
  // The lengths some prefix has, longest first: a lookup tries only those cuts of the path.
  const lengths = Int32Array.from(new Set([...byPrefix.keys()].map((k) => k.length))).sort(
    (a, b) => b - a,
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
          null,
          config.upstream.default.requireCertificateBound === true,
          config.upstream.default.requireSenderConstrained === true,
          config.upstream.default.quota ?? null,
          shared,
        );
  const all = fallback === null ? routes : [...routes, fallback];

  /**
   * The longest prefix of `path` that names a route and ends on a boundary; `dots`: a `.`
   * boundary counts too. Cost: one map lookup per distinct prefix length that fits and
   * ends on a boundary, whatever the number of routes.
   */
  const lookup = (path: string, dots: boolean): CompiledRoute | null => {
    const folded = hasUpperAscii(path) ? lowerAscii(path) : path;
    for (let i = 0; i < lengths.length; i++) {
      const length = lengths[i] as number;
      if (length > folded.length) continue;
      const boundary = boundaryAt(folded, length);
      if (boundary === 0 || (boundary === AT_DOT && !dots)) continue;
      const entry = byPrefix.get(length === folded.length ? folded : folded.slice(0, length));
      if (entry !== undefined) return boundary === AT_DOT ? entry.atDot : entry.route;
    }
    return fallback;
  };
  for (const [folded, entry] of byPrefix) {
    entry.atDot = withScopesOf(entry.route, lookup(`${folded}.`, false));
  }

  return Object.freeze({
    routes: Object.freeze(all),
    origins: Object.freeze([...new Set(all.map((r) => r.origin))].filter((o) => o !== '')),
    match: (path: string): CompiledRoute | null => lookup(path, true),
  });
}

/**
 * `route`, requiring `other`'s scopes, audiences and token binding too, and metered by
 * its policy when `route` has none (the same object when that adds nothing).
 */
function withScopesOf(route: CompiledRoute, other: CompiledRoute | null): CompiledRoute {
  const extra = other?.scopes.filter((scope) => !route.scopes.includes(scope)) ?? [];
  const audiences = other?.audiences.filter((aud) => !route.audiences.includes(aud)) ?? [];
  const bound = other?.requireCertificateBound === true && !route.requireCertificateBound;
  const constrained = other?.requireSenderConstrained === true && !route.requireSenderConstrained;
  // Metered there and not here: a dot must not be a way around the meter.
  const quota = route.quota ?? other?.quota ?? null;
  const metered = quota !== route.quota;
  if (extra.length === 0 && audiences.length === 0 && !bound && !constrained && !metered) {
    return route;
  }
  return Object.freeze({
    ...route,
    quota,
    scopes: Object.freeze([...route.scopes, ...extra]),
    audiences: Object.freeze([...route.audiences, ...audiences]),
    requireCertificateBound: route.requireCertificateBound || bound,
    requireSenderConstrained: route.requireSenderConstrained || constrained,
  });
}

/** Whether `text` has an ASCII capital (most paths have none: then nothing is copied). */
function hasUpperAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) return true;
  }
  return false;
}

/** ASCII-only lower case (URL paths are ASCII once canonical; no locale rules). */
function lowerAscii(text: string): string {
  return text.replace(/[A-Z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0x20));
}
