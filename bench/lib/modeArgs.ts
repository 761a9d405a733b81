/**
 * Command-line handling shared by the bench's modes: `run.js --mode <name> …` hands the
 * rest of the arguments to the mode, which parses them with the common timing options
 * plus its own. A bad value stops the bench with exit 2 and a one-line message.
 */
import { availableParallelism, cpus } from 'node:os';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import type { Timing } from './comparison.js';
import { wrkVersion } from './wrk.js';

type Options = NonNullable<ParseArgsConfig['options']>;

/** The timing options every comparing mode takes, with short defaults. */
export const TIMING_OPTIONS = {
  duration: { type: 'string', default: '5' },
  warmup: { type: 'string', default: '3' },
  rewarm: { type: 'string', default: '1' },
  connections: { type: 'string', default: '50' },
  threads: { type: 'string', default: '1' },
  rounds: { type: 'string', default: '3' },
} as const satisfies Options;

/** Splits `--mode <name>` (or `--mode=<name>`) from the other arguments. */
export function splitMode(argv: readonly string[]): { mode: string | undefined; rest: string[] } {
  const rest: string[] = [];
  let mode: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--mode') {
      mode = argv[i + 1];
      i++;
    } else if (arg.startsWith('--mode=')) {
      mode = arg.slice('--mode='.length);
    } else {
      rest.push(arg);
    }
  }
  return { mode, rest };
}

export function parseModeArgs<O extends Options>(
  args: readonly string[],
  options: O,
): ReturnType<typeof parseArgs<{ options: O; args: string[]; strict: true }>>['values'] {
  try {
    return parseArgs({ args: [...args], options, strict: true }).values;
  } catch (error) {
    fail((error as Error).message);
  }
}

/** A positive integer option (exit 2 otherwise). */
export function positiveInt(values: Record<string, unknown>, name: string): number {
  const value = Number(values[name]);
  if (!Number.isInteger(value) || value < 1) fail(`--${name} must be a positive integer`);
  return value;
}

/** A comma-separated list of non-negative integers (exit 2 otherwise). */
export function intList(values: Record<string, unknown>, name: string): number[] {
  const list = String(values[name])
    .split(',')
    .map((part) => Number(part.trim()));
  if (list.length === 0 || !list.every((n) => Number.isInteger(n) && n >= 0)) {
    fail(`--${name} must be a comma-separated list of non-negative integers`);
  }
  return list;
}

export function timingOf(values: Record<string, unknown>): Timing {
  return {
    durationS: positiveInt(values, 'duration'),
    warmupS: positiveInt(values, 'warmup'),
    rewarmS: positiveInt(values, 'rewarm'),
    connections: positiveInt(values, 'connections'),
    threads: positiveInt(values, 'threads'),
    rounds: positiveInt(values, 'rounds'),
  };
}

export function fail(message: string): never {
  process.stderr.write(`bench: ${message}\n`);
  process.exit(2);
}

/** wrk's version, or exit 1 with how to install it. */
export function requireWrk(): string {
  const wrk = wrkVersion();
  if (wrk === null) {
    process.stderr.write(
      'bench: wrk is not installed. Debian/Ubuntu: `sudo apt-get install -y wrk`; macOS: `brew install wrk`.\n',
    );
    process.exit(1);
  }
  return wrk;
}

/** The report header: what ran, on which Node and machine. */
export function header(mode: string, wrk: string, timing?: Timing): string {
  const lines = [
    `# Portaria bench, mode ${mode} — ${new Date().toISOString()}`,
    `node ${process.version} (${process.execPath}), ${availableParallelism()} CPUs (${cpus()[0]?.model ?? '?'}), ${wrk}`,
  ];
  if (timing !== undefined) {
    lines.push(
      `wrk -t${timing.threads} -c${timing.connections} -d${timing.durationS}s, ${timing.rounds} interleaved rounds (warm-up ${timing.warmupS} s in round 1, ${timing.rewarmS} s later), medians; loopback`,
    );
  }
  return `${lines.join('\n')}\n`;
}
