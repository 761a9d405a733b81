/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`): self time per function and per
 * file, idle excluded (GC and "(program)" kept), so two processes can be compared in
 * microseconds of CPU per request served (`compareProfiles`: gateway against baseline).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface HotSpot {
  readonly name: string;
  /** Self time, microseconds. */
  readonly us: number;
}

export interface ProfileSummary {
  /** Busy (non-idle) time, microseconds. */
  readonly busyUs: number;
  /** The `top` functions by self time. */
  readonly functions: readonly HotSpot[];
  /** Every file by self time; a dependency counts as one file (`node_modules/pino`). */
  readonly files: readonly HotSpot[];
}

export async function summariseProfile(
  path: string,
  root: string,
  top = 25,
): Promise<ProfileSummary> {
  const profile = JSON.parse(await readFile(path, 'utf8')) as CpuProfile;
  // Sample i lasts until sample i + 1 (Chrome DevTools' convention).
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
  });
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  let busyUs = 0;
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    const { functionName, url, lineNumber } = node.callFrame;
    if (us === 0 || functionName === '(idle)') continue;
    busyUs += us;
    const file = shortUrl(url, root);
    const name =
      file === ''
        ? functionName || '(native)'
        : `${file}:${lineNumber + 1} ${functionName || '(anonymous)'}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    const fileKey = file === '' ? functionName || '(native)' : packageOf(file);
    byFile.set(fileKey, (byFile.get(fileKey) ?? 0) + us);
  }
  const rank = (map: Map<string, number>, limit = top): HotSpot[] =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([name, us]) => ({ name, us }));
  return { busyUs, functions: rank(byFunction), files: rank(byFile, 1000) };
}

function shortUrl(url: string, root: string): string {
  const path = url.startsWith('file://') ? decodeURIComponent(url.slice('file://'.length)) : url;
  return path.startsWith(`${root}/`) ? path.slice(root.length + 1) : path;
}

/** `node_modules/<pkg>` or `node_modules/@scope/<pkg>` for dependencies, else the file. */
function packageOf(file: string): string {
  if (!file.startsWith('node_modules/')) return file;
  const parts = file.split('/');
  return parts.slice(0, parts[1]?.startsWith('@') ? 3 : 2).join('/');
}

async function profileOf(dir: string, root: string) {
  const file = (await readdir(dir)).find((f) => f.endsWith('.cpuprofile'));
  if (file === undefined) throw new Error(`no .cpuprofile in ${dir}`);
  return { path: join(dir, file), ...(await summariseProfile(join(dir, file), root)) };
}

/** CPU per request served (warm-ups included), gateway against baseline. */
export async function compareProfiles(
  dir: string,
  root: string,
  baseServed: number,
  gwServed: number,
): Promise<string> {
  const out: string[] = [];
  const log = (line: string) => out.push(line);
  const base = await profileOf(join(dir, 'baseline'), root);
  const gw = await profileOf(join(dir, 'gateway'), root);
  const perReq = (us: number, n: number) => `${(us / n).toFixed(2).padStart(7)} µs`;
  const share = (us: number) => `${((100 * us) / gw.busyUs).toFixed(1).padStart(5)}%`;
  log('\n## CPU profiles: busy CPU time per request served (start-up included)\n');
  log(`baseline ${perReq(base.busyUs, baseServed)}  ${base.path}`);
  log(`gateway  ${perReq(gw.busyUs, gwServed)}  ${gw.path}`);
  log('\ngateway self time by function (µs per request, % of busy):');
  for (const spot of gw.functions)
    log(`${perReq(spot.us, gwServed)} ${share(spot.us)}  ${spot.name}`);
  log('\nself time by file (gateway | baseline, µs per request):');
  const baseFiles = new Map(base.files.map((f) => [f.name, f.us]));
  for (const spot of gw.files.slice(0, 25)) {
    const other = baseFiles.get(spot.name);
    log(
      `${perReq(spot.us, gwServed)} | ${other === undefined ? '     –    ' : perReq(other, baseServed)}  ${spot.name}`,
    );
  }
  return out.join('\n');
}
