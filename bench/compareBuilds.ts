/**
 * Two builds of the gateway side by side: is a change faster or slower? Both gateways run
 * at the same moment, pinned to the same CPU (the upstream, the log sinks and this process
 * on the others), each loaded by its own wrk; two CPU-bound servers sharing a CPU split
 * it evenly, so their requests/s ratio is their cost ratio, and both feel the same moment
 * of a noisy machine (sequential runs of one build differ by up to 20 %). The rounds run
 * in both positions (A first, then B first, alternately) and the verdict is the median of
 * the per-round ratios B / A. Not the forwarding verdict (that is `run.js`): a tool for
 * comparing builds or Node flags.
 *
 *   git worktree add /tmp/old <commit> && (cd /tmp/old && npm ci && npx tsc -p tsconfig.json --outDir out)
 *   npx tsc -p tsconfig.json --outDir .out-perf
 *   node .out-perf/bench/compareBuilds.js /tmp/old/out .out-perf [--rounds 8] [--duration 5]
 *
 * `--node-flags-a`/`--node-flags-b` start a side's gateway with Node flags (one build in
 * both positions then compares the flags, e.g. `--node-flags-b=--max-semi-space-size=8`).
 *
 * `--operation token` loads the token operation instead (`POST /v1/authentication/accesstoken`
 * with the bench client's JSON body, limits on as `--mode token` runs them).
 *
 * A build directory is a `tsc` output of this repository (it holds `bench/gateway.js`); it
 * resolves its own `node_modules` from where it lies. Needs wrk, taskset and 2 CPUs.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  BENCH_CLIENT_ID,
  BENCH_CLIENT_SECRET,
  LIMITS_ON_NOT_REFUSING,
  TOKEN_PATH,
} from './lib/benchClaims.js';
import { pinTo } from './lib/cpuPinning.js';
import { processCpuUs } from './lib/processCpu.js';
import { type Child, spawnChild } from './lib/spawnChild.js';
import { median } from './lib/stats.js';
import { runWrk, type WrkResult } from './lib/wrk.js';
import { writeWrkScripts } from './lib/wrkScripts.js';

interface GatewayInfo {
  url: string;
  token: string;
}

const { values, positionals } = parseArgs({
  options: {
    rounds: { type: 'string', default: '8' },
    duration: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
    operation: { type: 'string', default: 'forwarding' },
    'node-flags-a': { type: 'string', default: '' },
    'node-flags-b': { type: 'string', default: '' },
  },
  allowPositionals: true,
  strict: true,
});
const [buildA, buildB] = positionals;
const rounds = Number(values.rounds);
const durationS = Number(values.duration);
const connections = Number(values.connections);
if (buildA === undefined || buildB === undefined || positionals.length !== 2) {
  process.stderr.write('usage: compareBuilds.js <build A dir> <build B dir> [--rounds 8]\n');
  process.exit(2);
}
if (![rounds, durationS, connections].every((n) => Number.isInteger(n) && n > 0)) {
  process.stderr.write('--rounds, --duration and --connections take positive integers\n');
  process.exit(2);
}
const nodeFlags = {
  A: values['node-flags-a'].split(' ').filter((flag) => flag !== ''),
  B: values['node-flags-b'].split(' ').filter((flag) => flag !== ''),
};
const operation = values.operation;
if (operation !== 'forwarding' && operation !== 'token') {
  process.stderr.write('--operation takes forwarding or token\n');
  process.exit(2);
}
if (availableParallelism() < 2 || spawnSync('taskset', ['-V']).status !== 0) {
  process.stderr.write('compareBuilds needs 2 CPUs and taskset (util-linux)\n');
  process.exit(2);
}

const script = (build: string, name: string): URL =>
  pathToFileURL(join(resolve(build), 'bench', `${name}.js`));

process.stdout.write(`node ${process.version} (${process.execPath}), both builds\n`);
const work = await mkdtemp(join(tmpdir(), 'portaria-compare-'));
const children: Child<unknown>[] = [];
const TOKEN_BODY = JSON.stringify({ clientId: BENCH_CLIENT_ID, clientSecret: BENCH_CLIENT_SECRET });
try {
  const postScript = (await writeWrkScripts(work)).post;
  const overrides = join(work, 'overrides.json');
  await writeFile(overrides, JSON.stringify(operation === 'token' ? LIMITS_ON_NOT_REFUSING : {}));
  const upstream = await spawnChild<{ url: string }>('upstream', script(buildB, 'upstream'), []);
  children.push(upstream);
  const start = async (build: string, name: 'A' | 'B') => {
    const fifo = join(work, `${name}.fifo`);
    const made = spawnSync('mkfifo', ['-m', '600', fifo], { encoding: 'utf8' });
    if (made.status !== 0) throw new Error(`mkfifo failed: ${made.stderr}`);
    const sink = await spawnChild(`${name} log sink`, script(build, 'logSink'), [fifo]);
    children.push(sink);
    const gateway = await spawnChild<GatewayInfo>(
      name,
      script(build, 'gateway'),
      [
        upstream.info.url,
        '--dir',
        join(work, name),
        '--log-to',
        fifo,
        // Only when needed: a build older than `--overrides` can still be compared.
        ...(operation === 'token' ? ['--overrides', overrides] : []),
      ],
      nodeFlags[name],
    );
    children.push(gateway);
    return { sink, gateway };
  };
  const a = await start(buildA, 'A');
  const b = await start(buildB, 'B');
  const last = availableParallelism() - 1;
  pinTo(last === 1 ? '0' : `0-${last - 1}`, process.pid, upstream.pid, a.sink.pid, b.sink.pid);
  pinTo(String(last), a.gateway.pid, b.gateway.pid);

  const load = (g: Child<GatewayInfo>, seconds: number): Promise<WrkResult> =>
    runWrk(
      operation === 'token'
        ? {
            url: `${g.info.url}${TOKEN_PATH}`,
            headers: [],
            script: postScript,
            scriptArgs: [TOKEN_BODY],
            connections,
            threads: 1,
            durationS: seconds,
          }
        : {
            url: `${g.info.url}/v1/orders/42`,
            headers: [`Authorization: Bearer ${g.info.token}`],
            connections,
            threads: 1,
            durationS: seconds,
          },
    );
  await Promise.all([load(a.gateway, 3), load(b.gateway, 3)]); // warm-up
  const ratios: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    // Both start together; which one wrk starts first alternates.
    const first = round % 2 === 1 ? a.gateway : b.gateway;
    const second = first === a.gateway ? b.gateway : a.gateway;
    const cpuA = processCpuUs(a.gateway.pid);
    const cpuB = processCpuUs(b.gateway.pid);
    const [r1, r2] = await Promise.all([load(first, durationS), load(second, durationS)]);
    const [ra, rb] = first === a.gateway ? [r1, r2] : [r2, r1];
    const usA = (processCpuUs(a.gateway.pid) - cpuA) / ra.requests;
    const usB = (processCpuUs(b.gateway.pid) - cpuB) / rb.requests;
    ratios.push(rb.requestsPerSec / ra.requestsPerSec);
    process.stdout.write(
      `round ${round}: A ${ra.requestsPerSec.toFixed(0)}/s ${usA.toFixed(1)} µs CPU/request, ` +
        `B ${rb.requestsPerSec.toFixed(0)}/s ${usB.toFixed(1)} µs CPU/request, ` +
        `B/A ${(rb.requestsPerSec / ra.requestsPerSec).toFixed(3)}` +
        `${ra.non2xx + rb.non2xx + ra.socketErrors + rb.socketErrors > 0 ? ' (errors!)' : ''}\n`,
    );
  }
  process.stdout.write(
    `\nB / A = ${median(ratios).toFixed(3)} (median of ${rounds} rounds; > 1: B is faster)\n` +
      `A: ${resolve(buildA)}\nB: ${resolve(buildB)}\n`,
  );
} finally {
  await Promise.all(children.reverse().map((c) => c.stop().catch(() => undefined)));
  await rm(work, { recursive: true, force: true });
}
