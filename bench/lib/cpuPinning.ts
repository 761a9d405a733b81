/**
 * CPU pinning for the modes that compare processes on one CPU: `taskset` on every thread
 * of each process, so servers sharing a CPU split it evenly and the load generators
 * stay off it.
 */
import { spawnSync } from 'node:child_process';

/** Sets the CPU affinity of every thread of each process; throws when taskset fails. */
export function pinTo(cpus: string, ...pids: (number | undefined)[]): void {
  for (const pid of pids) {
    if (pid === undefined) continue;
    const done = spawnSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { encoding: 'utf8' });
    if (done.status !== 0) throw new Error(`taskset failed for ${pid}: ${done.stderr}`);
  }
}
