/**
 * The measuring core of the bench's modes: several HTTP targets take turns in
 * interleaved rounds (warm-up, then a measured wrk run; the order reversed every other
 * round so drift favours no side), each run priced in CPU µs per request of the target's
 * process tree (`/proc`). Ratios are the **median of the per-round ratios**, so a burst
 * of other work on the machine that hits one side of one round does not decide.
 */
import { treeCpuUs } from './processTree.js';
import { median } from './stats.js';
import { runWrk } from './wrk.js';

export interface CompareTarget {
  readonly label: string;
  /** Full URL, path included. */
  readonly url: string;
  readonly headers?: readonly string[];
  readonly script?: string;
  readonly scriptArgs?: readonly string[];
  /** Root of the process tree whose CPU prices a request; undefined: no CPU figure. */
  readonly pid: number | undefined;
  /** Other process trees the request costs too (a proxy's decision service), added in. */
  readonly pids?: readonly (number | undefined)[];
}

export interface RoundSample {
  readonly perSecond: number;
  readonly p99Ms: number;
  readonly requests: number;
  readonly cpuUsPerRequest: number;
  /** With `pids`: the CPU µs per request of each tree, `pid`'s first. */
  readonly cpuUsParts?: readonly number[];
  readonly clean: boolean;
}

export interface Timing {
  readonly rounds: number;
  readonly warmupS: number;
  readonly rewarmS: number;
  readonly durationS: number;
  readonly connections: number;
  readonly threads: number;
}

export interface Measured {
  readonly target: CompareTarget;
  readonly samples: RoundSample[];
}

const log = (text: string) => process.stdout.write(`${text}\n`);

export async function measureOnce(
  t: CompareTarget,
  timing: Omit<Timing, 'rounds' | 'rewarmS'>,
): Promise<RoundSample> {
  const common = {
    url: t.url,
    headers: t.headers ?? [],
    connections: timing.connections,
    threads: timing.threads,
    ...(t.script === undefined ? {} : { script: t.script, scriptArgs: t.scriptArgs ?? [] }),
  };
  if (timing.warmupS > 0) await runWrk({ ...common, durationS: timing.warmupS });
  const trees = [t.pid, ...(t.pids ?? [])];
  const before = trees.map(treeCpuUs);
  const result = await runWrk({ ...common, durationS: timing.durationS });
  const parts = trees.map((pid, i) => (treeCpuUs(pid) - (before[i] as number)) / result.requests);
  return {
    perSecond: result.requestsPerSec,
    p99Ms: result.p99Ms,
    requests: result.requests,
    cpuUsPerRequest: parts.reduce((sum, part) => sum + part, 0),
    ...(t.pids === undefined ? {} : { cpuUsParts: parts }),
    clean: result.non2xx === 0 && result.socketErrors === 0,
  };
}

/** Every target once per round, odd rounds in list order, even rounds reversed. */
export async function runInterleaved(
  targets: readonly CompareTarget[],
  timing: Timing,
): Promise<Measured[]> {
  const measured = targets.map((target) => ({ target, samples: [] as RoundSample[] }));
  for (let round = 1; round <= timing.rounds; round++) {
    const order = round % 2 === 1 ? measured : [...measured].reverse();
    for (const m of order) {
      const sample = await measureOnce(m.target, {
        ...timing,
        warmupS: round === 1 ? timing.warmupS : timing.rewarmS,
      });
      m.samples.push(sample);
      log(`round ${round} ${m.target.label}: ${describe(sample)}`);
    }
  }
  return measured;
}

export function describe(s: RoundSample): string {
  const cpu = Number.isFinite(s.cpuUsPerRequest)
    ? `, ${s.cpuUsPerRequest.toFixed(1)} µs CPU/request`
    : '';
  return `${s.perSecond.toFixed(0)}/s, p99 ${s.p99Ms.toFixed(2)} ms${cpu}${s.clean ? '' : ' (ERRORS: non-2xx or socket errors)'}`;
}

/** Median of the per-round ratios `figure(a) / figure(b)`. */
export function medianRatio(
  a: Measured,
  b: Measured,
  figure: (s: RoundSample) => number,
): { median: number; rounds: number[] } {
  const rounds = a.samples.map((s, i) => {
    const other = b.samples[i];
    return other === undefined ? Number.NaN : figure(s) / figure(other);
  });
  return { median: median(rounds), rounds };
}

const fixed = (v: number, digits: number) => (Number.isFinite(v) ? v.toFixed(digits) : 'n/a');

/** One row per target: medians over rounds, the ratios against `reference` (default the first). */
export function resultTable(measured: readonly Measured[], reference = measured[0]): string {
  const out = [
    '| target | req/s (median) | per round | p99 (median) | CPU µs/req (median) | req/s ratio | CPU ratio |',
    '|---|---:|---|---:|---:|---:|---:|',
  ];
  for (const m of measured) {
    const rps = m.samples.map((s) => s.perSecond);
    const flag = m.samples.every((s) => s.clean) ? '' : ' ⚠ errors';
    const ratio =
      reference === undefined ? Number.NaN : medianRatio(m, reference, perSecond).median;
    const cpu = reference === undefined ? Number.NaN : medianRatio(m, reference, cpuUs).median;
    out.push(
      `| ${m.target.label}${flag} | ${fixed(median(rps), 0)} | ${rps.map((r) => fixed(r, 0)).join(' / ')} | ${fixed(median(m.samples.map((s) => s.p99Ms)), 2)} ms | ${fixed(median(m.samples.map(cpuUs)), 1)} | ${fixed(ratio, 3)} | ${fixed(cpu, 3)} |`,
    );
  }
  return out.join('\n');
}

export const perSecond = (s: RoundSample) => s.perSecond;
export const cpuUs = (s: RoundSample) => s.cpuUsPerRequest;

/**
 * A verdict line: `a` against `b` in requests/s (≥ `minRps` to pass) and in CPU per
 * request (`a / b` ≤ `maxCpu` to pass), each the median of the per-round ratios.
 */
export function verdict(
  label: string,
  a: Measured,
  b: Measured,
  targets: { readonly minRps?: number; readonly maxCpu?: number } = {},
): string {
  const rps = medianRatio(a, b, perSecond);
  const cpu = medianRatio(a, b, cpuUs);
  const judge = (value: number, ok: boolean | undefined) =>
    ok === undefined ? '' : Number.isFinite(value) ? (ok ? ' PASS' : ' BELOW TARGET') : '';
  return (
    `${label}: req/s ${fixed(rps.median, 3)}${targets.minRps === undefined ? '' : ` (target ≥ ${targets.minRps.toFixed(2)})`}${judge(rps.median, targets.minRps === undefined ? undefined : rps.median >= targets.minRps)}` +
    ` [rounds ${rps.rounds.map((r) => fixed(r, 3)).join(' / ')}]; CPU µs/request ${fixed(cpu.median, 3)}${targets.maxCpu === undefined ? '' : ` (target ≤ ${targets.maxCpu.toFixed(2)})`}${judge(cpu.median, targets.maxCpu === undefined ? undefined : cpu.median <= targets.maxCpu)}`
  );
}

/** Whether every target's median req/s ratio against the first lies within ±`band`. */
export function flatness(measured: readonly Measured[], band = 0.1): string {
  const reference = measured[0];
  if (reference === undefined) return 'flat: n/a';
  const ratios = measured.map((m) => medianRatio(m, reference, perSecond).median);
  const lo = Math.min(...ratios);
  const hi = Math.max(...ratios);
  const flat = lo >= 1 - band && hi <= 1 + band;
  return `req/s against the first row: ${ratios.map((r) => fixed(r, 3)).join(', ')} → ${flat ? 'FLAT' : 'NOT FLAT'} (target: all within ±${Math.round(band * 100)} %)`;
}
