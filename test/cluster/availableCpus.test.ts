/**
 * `server.workers: auto` counts the CPUs a cgroup quota allows: cgroup v2 `cpu.max`,
 * cgroup v1 CFS quota, limits set on an ancestor, fractions rounded down.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { availableCpus, cgroupCpuQuota, workerCount } from '../../src/cluster/availableCpus.js';

async function cgroupRoot(t: TestContext, files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'portaria-cgroup-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), `${text}\n`);
  }
  return root;
}

const V2 = '0::/kubepods/pod1/container1\n';
const V1 = '4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n';

test('cgroup v2: cpu.max of the process cgroup, fractions rounded down', async (t) => {
  const cases: [string, number | null][] = [
    ['200000 100000', 2],
    ['250000 100000', 2],
    ['150000 100000', 1],
    ['50000 100000', 1],
    ['max 100000', null],
  ];
  for (const [cpuMax, expected] of cases) {
    const root = await cgroupRoot(t, { 'kubepods/pod1/container1/cpu.max': cpuMax });
    assert.equal(cgroupCpuQuota({ root, selfCgroup: V2 }), expected, cpuMax);
  }
});

test('cgroup v2: a smaller limit on an ancestor binds', async (t) => {
  const root = await cgroupRoot(t, {
    'kubepods/pod1/container1/cpu.max': '800000 100000',
    'kubepods/pod1/cpu.max': '300000 100000',
    'kubepods/cpu.max': 'max 100000',
  });
  assert.equal(cgroupCpuQuota({ root, selfCgroup: V2 }), 3);
});

test('cgroup v2 inside a container namespace: the path is / and cpu.max is at the root', async (t) => {
  const root = await cgroupRoot(t, { 'cpu.max': '400000 100000' });
  assert.equal(cgroupCpuQuota({ root, selfCgroup: '0::/\n' }), 4);
});

test('cgroup v1: cfs_quota_us over cfs_period_us under the cpu controller; -1 is no limit', async (t) => {
  const limited = await cgroupRoot(t, {
    'cpu,cpuacct/docker/abc/cpu.cfs_quota_us': '300000',
    'cpu,cpuacct/docker/abc/cpu.cfs_period_us': '100000',
  });
  assert.equal(cgroupCpuQuota({ root: limited, selfCgroup: V1 }), 3);
  const unlimited = await cgroupRoot(t, {
    'cpu/cpu.cfs_quota_us': '-1',
    'cpu/cpu.cfs_period_us': '100000',
  });
  assert.equal(cgroupCpuQuota({ root: unlimited, selfCgroup: V1 }), null);
});

test('no readable cgroup files: no limit (the affinity mask decides)', async (t) => {
  const root = await cgroupRoot(t, {});
  assert.equal(cgroupCpuQuota({ root, selfCgroup: V2 }), null);
  assert.equal(cgroupCpuQuota({ root, selfCgroup: 'garbage\n' }), null);
  assert.equal(availableCpus(64, { root, selfCgroup: V2 }), Math.min(64, availableParallelism()));
});

test('auto is the smallest of the affinity mask, the quota and the ceiling', async (t) => {
  const root = await cgroupRoot(t, { 'cpu.max': '100000 100000' });
  assert.equal(availableCpus(64, { root, selfCgroup: '0::/\n' }), 1);
  assert.equal(availableCpus(1, null), 1);
  assert.equal(availableCpus(64, null), Math.min(64, availableParallelism()));
  assert.equal(workerCount(3, 64), 3);
  assert.ok(workerCount('auto', 64) >= 1);
});
