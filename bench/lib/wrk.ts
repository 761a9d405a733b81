/**
 * Runs wrk (https://github.com/wg/wrk, Debian package `wrk`) against one URL and parses
 * its report: requests/s, p50/p99 from `--latency`, and the counts that make a run
 * invalid (non-2xx/3xx answers, socket errors).
 */
import { execFile, spawnSync } from 'node:child_process';

export interface WrkOptions {
  readonly url: string;
  readonly headers: readonly string[];
  readonly connections: number;
  readonly threads: number;
  readonly durationS: number;
  /** A wrk Lua script (`-s`), and the arguments after `--` it receives in `init(args)`. */
  readonly script?: string;
  readonly scriptArgs?: readonly string[];
}

export interface WrkResult {
  readonly requests: number;
  readonly requestsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly non2xx: number;
  readonly socketErrors: number;
}

/** wrk's version line, or null when it is not installed. */
export function wrkVersion(): string | null {
  const probe = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
  if (probe.error !== undefined) return null;
  return `${probe.stdout}${probe.stderr}`.split('\n')[0]?.trim() ?? 'wrk';
}

export function runWrk(options: WrkOptions): Promise<WrkResult> {
  const args = [
    `-t${options.threads}`,
    `-c${options.connections}`,
    `-d${options.durationS}s`,
    '--timeout',
    '5s',
    '--latency',
    ...options.headers.flatMap((h) => ['-H', h]),
    ...(options.script === undefined ? [] : ['-s', options.script]),
    options.url,
    ...(options.script === undefined ? [] : ['--', ...(options.scriptArgs ?? [])]),
  ];
  return new Promise((resolve, reject) => {
    execFile(
      'wrk',
      args,
      { timeout: (options.durationS + 30) * 1000, maxBuffer: 1 << 20 },
      (error, stdout) => {
        if (error) {
          reject(new Error(`wrk failed: ${error.message}`));
          return;
        }
        try {
          resolve(parseWrkOutput(stdout));
        } catch (parseError) {
          reject(parseError);
        }
      },
    );
  });
}

const UNIT_MS: Readonly<Record<string, number>> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

function latencyMs(text: string, label: string): number {
  const match = new RegExp(`^\\s*${label}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(text);
  if (match === null) throw new Error(`wrk output has no ${label}% latency line`);
  return Number(match[1]) * (UNIT_MS[match[2] ?? ''] ?? Number.NaN);
}

export function parseWrkOutput(text: string): WrkResult {
  const rate = /^Requests\/sec:\s+([\d.]+)/m.exec(text);
  const total = /^\s*(\d+) requests in /m.exec(text);
  if (rate === null || total === null) throw new Error(`unexpected wrk output:\n${text}`);
  const non2xx = /^\s*Non-2xx or 3xx responses:\s+(\d+)/m.exec(text);
  const sockets = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  const socketErrors =
    sockets === null ? 0 : sockets.slice(1).reduce((sum, n) => sum + Number(n), 0);
  return {
    requests: Number(total[1]),
    requestsPerSec: Number(rate[1]),
    p50Ms: latencyMs(text, '50'),
    p99Ms: latencyMs(text, '99'),
    non2xx: non2xx === null ? 0 : Number(non2xx[1]),
    socketErrors,
  };
}
