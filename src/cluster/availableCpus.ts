/**
 * `server.workers: auto`: the CPUs this process may use. `os.availableParallelism()` sees
 * the CPU affinity mask (cpuset) but not a CFS quota, which is how a container's CPU limit
 * is enforced (Kubernetes `resources.limits.cpu`, `docker run --cpus`): a pod limited to
 * 2 CPUs on a 64-core node must not start 64 workers that the quota then throttles.
 *
 * The quota is read from the cgroup of this process and each of its ancestors (a limit
 * set higher up binds too; the smallest wins): cgroup v2 `cpu.max` (`max 100000` or
 * `200000 100000`), cgroup v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us` (-1: none). A
 * fractional quota rounds down, at least 1 (1.5 CPUs: one worker never throttled rather
 * than two that are). Files that cannot be read are no limit: outside Linux, or with
 * cgroups not mounted, the affinity mask alone decides.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';

export interface CgroupSource {
  /** Where the cgroup hierarchies are mounted (`/sys/fs/cgroup`). */
  readonly root: string;
  /** The text of `/proc/self/cgroup`. */
  readonly selfCgroup: string;
}

/** The CPUs `auto` means: the affinity mask, capped by the cgroup CPU quota, capped at `max`. */
export function availableCpus(max: number, source: CgroupSource | null = systemCgroups()): number {
  const quota = source === null ? null : cgroupCpuQuota(source);
  return Math.max(1, Math.min(max, availableParallelism(), quota ?? Number.POSITIVE_INFINITY));
}

/** The whole CPUs the cgroup quota allows (rounded down, at least 1), or null without one. */
export function cgroupCpuQuota(source: CgroupSource): number | null {
  let smallest: number | null = null;
  for (const line of source.selfCgroup.split('\n')) {
    // `hierarchy-id:controllers:path` (v2: `0::/path`).
    const match = /^(\d+):([^:]*):(\/.*)$/.exec(line.trim());
    if (match === null) continue;
    const [, id, controllers = '', path = '/'] = match;
    const v2 = id === '0' && controllers === '';
    const names = controllers.split(',');
    if (!v2 && !names.includes('cpu')) continue;
    // v1 mounts the cpu controller under its joined name (`cpu,cpuacct`), often with a
    // `cpu` link; both are tried.
    const mounts = v2
      ? [source.root, join(source.root, 'unified')]
      : [join(source.root, 'cpu'), join(source.root, controllers)];
    for (const mount of new Set(mounts)) {
      for (const dir of ancestors(mount, path)) {
        const cpus = v2 ? readCpuMax(dir) : readCfsQuota(dir);
        if (cpus !== null && (smallest === null || cpus < smallest)) smallest = cpus;
      }
    }
  }
  return smallest === null ? null : Math.max(1, Math.floor(smallest));
}

/** `mount + path`, then each parent up to `mount` itself. */
function ancestors(mount: string, path: string): string[] {
  const parts = path.split('/').filter((p) => p !== '' && p !== '.' && p !== '..');
  const dirs: string[] = [];
  for (let n = parts.length; n >= 0; n--) dirs.push(join(mount, ...parts.slice(0, n)));
  return dirs;
}

function readCpuMax(dir: string): number | null {
  const text = readText(join(dir, 'cpu.max'));
  if (text === null) return null;
  const [quota, period = '100000'] = text.split(/\s+/);
  return ratio(quota, period);
}

function readCfsQuota(dir: string): number | null {
  const quota = readText(join(dir, 'cpu.cfs_quota_us'));
  const period = readText(join(dir, 'cpu.cfs_period_us'));
  return quota === null || period === null ? null : ratio(quota, period);
}

/** quota / period in CPUs; null for `max`, -1 or anything unreadable. */
function ratio(quota: string | undefined, period: string): number | null {
  if (quota === undefined || !/^\d+$/.test(quota) || !/^\d+$/.test(period)) return null;
  const q = Number(quota);
  const p = Number(period);
  return q > 0 && p > 0 ? q / p : null;
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    return null;
  }
}

function systemCgroups(): CgroupSource | null {
  const selfCgroup = readText('/proc/self/cgroup');
  return selfCgroup === null ? null : { root: '/sys/fs/cgroup', selfCgroup };
}

/** How many worker processes `server.workers` asks for (1: no cluster at all). */
export function workerCount(setting: number | 'auto', max: number): number {
  return setting === 'auto' ? availableCpus(max) : setting;
}
