/** Formats the bench results as Markdown tables (pasted as is into bench/RESULTS.md). */
import { mean, median } from './stats.js';

export interface Sample {
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Responses (or round trips) counted in the measured run. */
  readonly requests: number;
  /** Responses served, warm-up included (to divide a CPU profile by). */
  readonly served: number;
  /** CPU time of the process under test per measured response, µs (NaN if unknown). */
  readonly cpuUsPerRequest: number;
  /** False when the run saw non-2xx answers or socket errors. */
  readonly clean: boolean;
}

export interface Line {
  readonly label: string;
  readonly samples: readonly Sample[];
}

export interface Summary {
  readonly label: string;
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly cpuUsPerRequest: number;
  readonly rounds: readonly number[];
  readonly clean: boolean;
}

export function summarise(line: Line): Summary {
  return {
    label: line.label,
    perSecond: mean(line.samples.map((s) => s.perSecond)),
    p50Ms: mean(line.samples.map((s) => s.p50Ms)),
    p99Ms: mean(line.samples.map((s) => s.p99Ms)),
    cpuUsPerRequest: mean(line.samples.map((s) => s.cpuUsPerRequest)),
    rounds: line.samples.map((s) => s.perSecond),
    clean: line.samples.every((s) => s.clean),
  };
}

/**
 * One row per line, the ratio column against `reference` (the first row); the CPU column
 * only when some row has one.
 */
export function table(rows: readonly Summary[], unit: string): string {
  const reference = rows[0]?.perSecond ?? Number.NaN;
  const withCpu = rows.some((row) => Number.isFinite(row.cpuUsPerRequest));
  const out = [
    `| target | ${unit} (mean) | per round | p50 | p99 |${withCpu ? ' CPU µs/req |' : ''} ratio |`,
    `|---|---:|---|---:|---:|${withCpu ? '---:|' : ''}---:|`,
  ];
  for (const row of rows) {
    const flag = row.clean ? '' : ' ⚠ errors';
    out.push(
      `| ${row.label}${flag} | ${fixed(row.perSecond, 0)} | ${row.rounds.map((r) => fixed(r, 0)).join(' / ')} | ${ms(row.p50Ms)} | ${ms(row.p99Ms)} |${withCpu ? ` ${fixed(row.cpuUsPerRequest, 0)} |` : ''} ${fixed(row.perSecond / reference, 3)} |`,
    );
  }
  return out.join('\n');
}

function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}

function ms(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(2)} ms` : 'n/a';
}

/**
 * Paired rounds: one row per target, beside the baseline measured at the same moments;
 * the ratio is the median of the per-round ratios.
 */
export function pairedTable(pairs: readonly (readonly [Line, Line])[]): string {
  const out = [
    '| target | req/s (mean) | baseline req/s, same moments (mean) | p50 | p99 | CPU µs/req (target / baseline) | ratio per round | ratio (median) |',
    '|---|---:|---:|---:|---:|---|---|---:|',
  ];
  for (const [target, base] of pairs) {
    const t = summarise(target);
    const b = summarise(base);
    const ratios = target.samples.map(
      (s, i) => s.perSecond / (base.samples[i]?.perSecond ?? Number.NaN),
    );
    const flag = t.clean && b.clean ? '' : ' ⚠ errors';
    out.push(
      `| ${t.label}${flag} | ${fixed(t.perSecond, 0)} | ${fixed(b.perSecond, 0)} | ${ms(t.p50Ms)} | ${ms(t.p99Ms)} | ${fixed(t.cpuUsPerRequest, 0)} / ${fixed(b.cpuUsPerRequest, 0)} | ${ratios.map((r) => fixed(r, 3)).join(' / ')} | ${fixed(median(ratios), 3)} |`,
    );
  }
  return out.join('\n');
}
