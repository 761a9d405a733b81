/**
 * Mode `quotas`: what metering a route (docs/quotas.md) costs on the cached path, with the
 * counters in this process group and in Redis. Two gateways pinned to one CPU (only one is
 * loaded at a time), each with two routes to the same upstream:
 *
 *   plain     `/v1/plain/…`, no quota: the verified-token cache path
 *   metered   `/v1/metered/…`, `quota: bench`: a token bucket and a day window so large that
 *             nothing is refused during the run, `quotas.headers: always` so every answer
 *             carries `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers)
 *
 * The first gateway has `quotas.store: local`, the second `quotas.store: redis` on a real
 * `redis-server` on a loopback port (one Lua script per metered request). The load is an
 * undici pool per gateway in this process, `--connections` lanes of one request in flight
 * each, on the other CPU with the upstream, the log sinks and Redis, in phases whose order
 * rotates every round; the gateways' CPU per request is read from /proc for each phase.
 * Target: metered ≥ 0.95 × plain in CPU per request (inverse: plain µs / metered µs), local
 * store; the Redis store's figure is reported, not judged.
 *
 *   npm run bench -- --mode quotas [--rounds 6] [--duration 5] [--warmup 3] [--connections 16]
 *     [--cpu-prof-dir DIR]
 *
 * Needs redis-server, taskset and 2 CPUs.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Pool } from 'undici';
import { startBenchRedis } from '../lib/benchRedis.js';
import { closedLoad, type LoadDone } from '../lib/closedLoad.js';
import { pinTo } from '../lib/cpuPinning.js';
import { ChildSet, startGateway, startUpstream } from '../lib/gateways.js';
import { parseModeArgs, positiveInt } from '../lib/modeArgs.js';
import { processCpuUs } from '../lib/processCpu.js';
import { median } from '../lib/stats.js';

const OPTIONS = {
  rounds: { type: 'string', default: '6' },
  duration: { type: 'string', default: '5' },
  warmup: { type: 'string', default: '3' },
  connections: { type: 'string', default: '16' },
  // A directory: the local-store gateway writes a V8 CPU profile there when it stops.
  'cpu-prof-dir': { type: 'string' },
} as const;

/** Never refuses in a bench run: the schema's largest bucket and a 10^12 day window. */
const BENCH_POLICY = {
  rate: { perSecond: 1_000_000, burst: 1_000_000_000 },
  quota: { limit: 1_000_000_000_000, window: 'day' },
} as const;

type Name = 'plain-local' | 'metered-local' | 'plain-redis' | 'metered-redis';

interface Target {
  readonly name: Name;
  readonly pool: Pool;
  readonly pid: number | undefined;
  readonly path: string;
  readonly token: string;
  readonly metered: boolean;
}

/** `connections` lanes of back-to-back GETs for `seconds`. */
function load(target: Target, seconds: number, connections: number): Promise<LoadDone> {
  const headers = { authorization: `Bearer ${target.token}` };
  return closedLoad(target.pool, target.path, () => headers, seconds, connections);
}

/** Throws unless the metered route answers with both fields and the plain one with neither. */
async function checkFields(target: Target): Promise<void> {
  const res = await target.pool.request({
    method: 'GET',
    path: target.path,
    headers: { authorization: `Bearer ${target.token}` },
  });
  await res.body.dump();
  if (res.statusCode !== 200) throw new Error(`${target.name}: answered ${res.statusCode}`);
  const limit = res.headers.ratelimit;
  const policy = res.headers['ratelimit-policy'];
  if (target.metered) {
    if (typeof limit !== 'string' || !limit.includes('"bench-quota"') || policy === undefined) {
      throw new Error(`${target.name}: a metered answer without the RateLimit fields`);
    }
  } else if (limit !== undefined || policy !== undefined) {
    throw new Error(`${target.name}: an unmetered answer with RateLimit fields`);
  }
}

type Seen = Record<string, { rate: number; us: number }>;

export async function run(argv: readonly string[]): Promise<number> {
  const values = parseModeArgs(argv, OPTIONS);
  const rounds = positiveInt(values, 'rounds');
  const durationS = positiveInt(values, 'duration');
  const warmupS = positiveInt(values, 'warmup');
  const connections = positiveInt(values, 'connections');
  const profileDir = values['cpu-prof-dir'];
  if (availableParallelism() < 2 || spawnSync('taskset', ['-V']).status !== 0) {
    process.stderr.write('the quotas mode needs 2 CPUs and taskset (util-linux)\n');
    return 2;
  }
  // This process first: every child (Redis too) inherits its CPUs; the gateways then move.
  const last = availableParallelism() - 1;
  pinTo(last === 1 ? '0' : `0-${last - 1}`, process.pid);

  const work = await mkdtemp(join(tmpdir(), 'portaria-quotas-bench-'));
  const children = new ChildSet();
  const pools: Pool[] = [];
  let redis: Awaited<ReturnType<typeof startBenchRedis>> | undefined;
  try {
    redis = await startBenchRedis();
    const upstream = await startUpstream(children);
    const settings = (store: 'local' | 'redis') => ({
      quotas: { store, headers: 'always', policies: { bench: BENCH_POLICY } },
      routes: [
        { id: 'plain', prefix: '/v1/plain', upstream: upstream.info.url },
        { id: 'metered', prefix: '/v1/metered', upstream: upstream.info.url, quota: 'bench' },
      ],
      ...(store === 'redis' ? { redis: { url: redis?.server.url } } : {}),
    });
    const local = await startGateway(children, {
      name: 'gateway-local',
      dir: join(work, 'local'),
      upstream: upstream.info.url,
      overrides: settings('local'),
      ...(profileDir === undefined
        ? {}
        : { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] }),
    });
    const shared = await startGateway(children, {
      name: 'gateway-redis',
      dir: join(work, 'redis'),
      upstream: upstream.info.url,
      overrides: settings('redis'),
    });
    pinTo(String(last), local.pid, shared.pid);

    const poolOf = (url: string) => {
      const pool = new Pool(url, { connections });
      pools.push(pool);
      return pool;
    };
    const localPool = poolOf(local.info.url);
    const sharedPool = poolOf(shared.info.url);
    const target = (name: Name, gw: typeof local, pool: Pool, metered: boolean): Target => ({
      name,
      pool,
      pid: gw.pid,
      path: metered ? '/v1/metered/42' : '/v1/plain/42',
      token: gw.info.token,
      metered,
    });
    const targets: readonly Target[] = [
      target('plain-local', local, localPool, false),
      target('metered-local', local, localPool, true),
      target('plain-redis', shared, sharedPool, false),
      target('metered-redis', shared, sharedPool, true),
    ];
    for (const t of targets) await checkFields(t);

    process.stdout.write(`warm-up ${warmupS} s each\n`);
    for (const t of targets) await load(t, warmupS, connections);
    const perRound: Seen[] = [];
    let failures = 0;
    for (let r = 0; r < rounds; r++) {
      const order = targets.map((_, i) => targets[(i + r) % targets.length] as Target);
      const seen: Seen = {};
      for (const t of order) {
        const before = processCpuUs(t.pid);
        const started = performance.now();
        const done = await load(t, durationS, connections);
        const seconds = (performance.now() - started) / 1000;
        seen[t.name] = {
          rate: done.requests / seconds,
          us: (processCpuUs(t.pid) - before) / done.requests,
        };
        failures += done.failures;
        if (done.failures > 0) {
          process.stdout.write(
            `  ${t.name}: ${done.failures} failures (${[...done.statuses].map(([s, n]) => `${n}×${s}`).join(', ')})\n`,
          );
        }
      }
      perRound.push(seen);
      process.stdout.write(
        `round ${r + 1}: ${targets
          .map(
            (t) =>
              `${t.name} ${at(seen, t.name).rate.toFixed(0)}/s ${at(seen, t.name).us.toFixed(1)} µs`,
          )
          .join(
            ', ',
          )}; metered/plain CPU local ${cpuRatio(seen, 'local').toFixed(3)}, redis ${cpuRatio(seen, 'redis').toFixed(3)}\n`,
      );
    }
    const med = (fn: (s: Seen) => number) => median(perRound.map(fn));
    const line = (n: Name) =>
      `  ${n.padEnd(14)}${med((s) => at(s, n).rate).toFixed(0)}/s  ${med((s) => at(s, n).us).toFixed(1)} µs\n`;
    const summary = (store: 'local' | 'redis') => {
      const rate = med((s) => at(s, `metered-${store}`).rate / at(s, `plain-${store}`).rate);
      const added = med((s) => at(s, `metered-${store}`).us - at(s, `plain-${store}`).us);
      return (
        `metered/plain (${store}) = ${rate.toFixed(3)} × req/s, ${med((s) => cpuRatio(s, store)).toFixed(3)} ` +
        `× CPU per request as plain µs / metered µs (+${added.toFixed(1)} µs per metered request)`
      );
    };
    const localCpu = med((s) => cpuRatio(s, 'local'));
    process.stdout.write(
      `\nmedians of ${rounds} rounds (gateway CPU per request from /proc, ${connections} connections):\n` +
        targets.map((t) => line(t.name)).join('') +
        `${summary('local')}; target ≥ 0.95 on CPU per request: ${localCpu >= 0.95 ? 'met' : 'not met'}\n` +
        `${summary('redis')}\n` +
        `Redis over local, metered: +${med((s) => at(s, 'metered-redis').us - at(s, 'metered-local').us).toFixed(1)} µs per request ` +
        `(plain-redis − plain-local: ${med((s) => at(s, 'plain-redis').us - at(s, 'plain-local').us).toFixed(1)} µs, the gateways' own difference)\n`,
    );
    if (failures > 0) {
      process.stdout.write(`${failures} requests failed: the figures above are not valid\n`);
      return 1;
    }
    return 0;
  } finally {
    for (const pool of pools) await pool.close();
    await children.stopAll();
    await redis?.stop();
    await rm(work, { recursive: true, force: true });
  }
}

const at = (s: Seen, n: string) => s[n] as { rate: number; us: number };

/** Plain CPU per request over metered: 1 when metering is free, below 1 as it costs. */
function cpuRatio(s: Seen, store: 'local' | 'redis'): number {
  return at(s, `plain-${store}`).us / at(s, `metered-${store}`).us;
}
