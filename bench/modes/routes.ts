/**
 * Mode `routes`: requests/s at 1, 100, 1,000 and 10,000 path-prefix routes (`--counts`),
 * one gateway each, measured in the same rounds. The worst case for matching: the
 * request hits the shortest route (`/v1/orders`; longest prefixes are tried first), and
 * every other route is a longer prefix that shares 15 characters with the request path,
 * is no longer than it and never matches it, so each one is compared before it fails.
 * Verdict: flat within ±10 % of the 1-route gateway.
 */
import { intList, parseModeArgs, TIMING_OPTIONS, timingOf } from '../lib/modeArgs.js';
import { runScale, type Variant } from '../lib/scale.js';

export const PATH = '/v1/orders/42/lines/7';
const HIT = '/v1/orders';
/** Shares `/v1/orders/42/l` with PATH; a digit after it never continues `lines`. */
const FILLER_BASE = '/v1/orders/42/l';

/** `count` routes: the one the request hits and `count − 1` fillers tried before it. */
export function worstCaseRoutes(count: number, upstream: string): Record<string, unknown>[] {
  const routes: Record<string, unknown>[] = [
    { id: 'hit', prefix: HIT, upstream, scopes: ['orders:read'] },
  ];
  for (let i = 1; i < count; i++) {
    const suffix = i.toString(36).padStart(4, '0');
    routes.push({
      id: `r${i}`,
      prefix: `${FILLER_BASE}${/^[0-9]/.test(suffix) ? suffix : `0${suffix}`}`,
      upstream,
      scopes: ['orders:read'],
    });
  }
  return routes;
}

export async function run(argv: readonly string[]): Promise<number> {
  const values = parseModeArgs(argv, {
    ...TIMING_OPTIONS,
    counts: { type: 'string', default: '1,100,1000,10000' },
  });
  const variants: Variant[] = intList(values, 'counts').map((count) => ({
    label: `${count} route${count === 1 ? '' : 's'}`,
    overrides: async (_dir, upstream) => ({
      routes: worstCaseRoutes(Math.max(1, count), upstream),
    }),
  }));
  return runScale('routes', PATH, variants, timingOf(values));
}
