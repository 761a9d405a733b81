/**
 * CPU time and resident memory of a process together with its descendants (a gateway's
 * workers, HAProxy's threads are already in its own figure), read from `/proc` (Linux).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { processCpuUs } from './processCpu.js';

/** The pid and every descendant's, from the parent field of `/proc/<pid>/stat`. */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(parent) ?? [];
      list.push(Number(name));
      children.set(parent, list);
    } catch {
      // The process ended while the list was read.
    }
  }
  const out: number[] = [];
  const todo = [pid];
  for (let next = todo.pop(); next !== undefined; next = todo.pop()) {
    out.push(next);
    todo.push(...(children.get(next) ?? []));
  }
  return out;
}

/** CPU µs (user + system) used so far by `pid` and its descendants; NaN without /proc. */
export function treeCpuUs(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  return processTree(pid).reduce((sum, p) => sum + (processCpuUs(p) || 0), 0);
}

/** `VmRSS` of `/proc/<pid>/status` text, bytes (NaN when absent). */
export function parseRssBytes(status: string): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  return match === null ? Number.NaN : Number(match[1]) * 1024;
}

/** Resident set of `pid` and its descendants, bytes (NaN without /proc). */
export function treeRssBytes(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  let sum = 0;
  for (const p of processTree(pid)) {
    try {
      sum += parseRssBytes(readFileSync(`/proc/${p}/status`, 'utf8')) || 0;
    } catch {
      // Ended meanwhile.
    }
  }
  return sum;
}
