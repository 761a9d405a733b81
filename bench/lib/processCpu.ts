/**
 * CPU time (user + system) a process has used so far, from `/proc/<pid>/stat` (Linux).
 * Divided by the requests served in between, it prices a request in CPU microseconds —
 * a figure far less disturbed by other load on the machine than requests/s.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    const probe = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    const value = Number(probe.stdout?.trim());
    ticksPerSecond = Number.isInteger(value) && value > 0 ? value : 100;
  }
  return ticksPerSecond;
}

/** Microseconds of CPU used by `pid`, or NaN where `/proc` is not available. */
export function processCpuUs(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1e6) / clockTicks();
  } catch {
    return Number.NaN;
  }
}

/**
 * Microseconds of CPU used by this process's children that have ended and been waited
 * for (`cutime` + `cstime`), NaN without `/proc`. Around a child that is spawned and
 * reaped in between (a wrk run), with no other child ending meanwhile, the difference
 * is that child's CPU: its `/proc` entry is gone by the time its figure is final.
 */
export function reapedChildrenCpuUs(): number {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[13]) + Number(fields[14]);
    return (ticks * 1e6) / clockTicks();
  } catch {
    return Number.NaN;
  }
}
