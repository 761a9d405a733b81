/**
 * Mode `routes`: requests/s at 1, 100, 1,000 and 10,000 path-prefix routes (`--counts`),
 * one gateway each, measured in the same rounds. The worst case for matching: the
 * request hits the shortest route (`/v1/orders`; longest prefixes are tried first), and
 * every other route is a longer prefix that shares 15 characters with the request path,
 * is no longer than it and never matches it, so each one is compared before it fails.
 * Verdict: flat within ±10 % of the 1-route gateway.
 *
 * The last row (`--control`, on by default) is a second gateway with the first count:
 * nothing differs from the first row but the process, so its ratio is the spread two
 * identical gateways show in this run — a count outside ±10 % by no more than the control
 * is not evidence of a cost growing with the routes (bench/RESULTS.md, "Routes").
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
    control: { type: 'string', default: 'on' },
  });
  if (values.control !== 'on' && values.control !== 'off') {
    process.stderr.write('--control takes on or off\n');
    return 2;
  }
  const variant = (count: number, suffix = ''): Variant => ({
    label: `${count} route${count === 1 ? '' : 's'}${suffix}`,
    overrides: async (_dir, upstream) => ({
      routes: worstCaseRoutes(Math.max(1, count), upstream),
    }),
  });
  const counts = intList(values, 'counts');
  const variants = counts.map((count) => variant(count));
  if (values.control === 'on') {
    variants.push(variant(counts[0] as number, ', a second process (control)'));
  }
  return runScale('routes', PATH, variants, timingOf(values));
}
