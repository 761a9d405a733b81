/**
 * Mode `tracing`: what tracing costs. Three gateways side by side, at the same moment,
 * pinned to the same CPU (the upstream, the log sinks, the OTLP receiver and this process
 * on the others), each loaded by its own wrk on an authenticated, forwarded request —
 *
 *   today      the configuration without a `tracing` section (with `--baseline DIR`,
 *              another build's `tsc` output instead: the code before tracing existed)
 *   off        `tracing.enabled: false`
 *   on 1 %     `tracing.enabled: true`, `OTEL_TRACES_SAMPLER=parentbased_traceidratio`,
 *              `OTEL_TRACES_SAMPLER_ARG=0.01`, exporting over OTLP/HTTP to a receiver
 *              in this process (which answers 200 and counts the spans)
 *
 * CPU-bound servers sharing a CPU split it evenly, so requests/s ratios are cost ratios,
 * and all three feel the same moment of a noisy machine. Which wrk starts first rotates
 * each round; the figures are the medians of the per-round ratios off / today and
 * on / today.
 *
 *   npm run bench -- --mode tracing [--rounds 6] [--duration 5] [--warmup 8] [--baseline DIR]
 *     [--ratio 0.01] [--connections 50]
 *
 * (`node dist-test/bench/tracingCost.js [options]`, after `npx tsc -p tsconfig.json`, runs
 * the same.)
 *
 * `--ratio` changes the sampler's ratio of the "on" gateway (0: tracing on, nothing
 * recorded or exported — what the unrecorded path alone costs).
 *
 * The warm-up outlasts the batch processor's first export (5 s after the first recorded
 * span): the on-1% gateway has more code to optimize (the SDK's, the export path), on the
 * CPU the three share, and a 3 s warm-up left that work in the first rounds.
 *
 * Needs wrk, taskset and 2 CPUs (like compareBuilds.ts).
 */
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pinTo } from '../lib/cpuPinning.js';
import { parseModeArgs, positiveInt } from '../lib/modeArgs.js';
import { processCpuUs } from '../lib/processCpu.js';
import { type Child, spawnChild } from '../lib/spawnChild.js';
import { median } from '../lib/stats.js';
import { runWrk, type WrkResult } from '../lib/wrk.js';

interface GatewayInfo {
  url: string;
  token: string;
}

const OPTIONS = {
  rounds: { type: 'string', default: '6' },
  duration: { type: 'string', default: '5' },
  connections: { type: 'string', default: '50' },
  warmup: { type: 'string', default: '8' },
  baseline: { type: 'string' },
  ratio: { type: 'string', default: '0.01' },
} as const;

/** The build's root (dist-test/bench/modes → dist-test). */
const here = resolve(import.meta.dirname, '..', '..');
const script = (build: string, name: string): URL =>
  pathToFileURL(join(build, 'bench', `${name}.js`));

export async function run(argv: readonly string[]): Promise<number> {
  const values = parseModeArgs(argv, OPTIONS);
  const rounds = positiveInt(values, 'rounds');
  const durationS = positiveInt(values, 'duration');
  const connections = positiveInt(values, 'connections');
  const warmupS = positiveInt(values, 'warmup');
  if (availableParallelism() < 2 || spawnSync('taskset', ['-V']).status !== 0) {
    process.stderr.write('tracingCost needs 2 CPUs and taskset (util-linux)\n');
    return 2;
  }

  // The OTLP/HTTP receiver: reads each export, answers `{}`, counts the spans.
  let exportedSpans = 0;
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      exportedSpans += Buffer.concat(chunks).toString('utf8').split('"spanId"').length - 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;

  const TRACING_ENV = {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: values.ratio,
  };

  const work = await mkdtemp(join(tmpdir(), 'portaria-tracing-cost-'));
  const children: Child<unknown>[] = [];
  try {
    const upstream = await spawnChild<{ url: string }>('upstream', script(here, 'upstream'), []);
    children.push(upstream);
    const start = async (
      build: string,
      name: string,
      args: string[],
      env: Record<string, string> = {},
    ) => {
      const fifo = join(work, `${name}.fifo`);
      const made = spawnSync('mkfifo', ['-m', '600', fifo], { encoding: 'utf8' });
      if (made.status !== 0) throw new Error(`mkfifo failed: ${made.stderr}`);
      const sink = await spawnChild(`${name} log sink`, script(build, 'logSink'), [fifo]);
      children.push(sink);
      // The child inherits this process's environment as it is at spawn time.
      const saved = Object.keys(env).map((key) => [key, process.env[key]] as const);
      Object.assign(process.env, env);
      const gateway = spawnChild<GatewayInfo>(name, script(build, 'gateway'), [
        upstream.info.url,
        '--dir',
        join(work, name),
        '--log-to',
        fifo,
        ...args,
      ]);
      for (const [key, value] of saved) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
      children.push(await gateway);
      return { name, sink: sink.pid, gateway: await gateway };
    };
    const baselineBuild = values.baseline === undefined ? here : resolve(values.baseline);
    const today = await start(baselineBuild, 'today', []);
    const off = await start(here, 'off', ['--tracing', 'off']);
    const on = await start(here, 'on-1%', ['--tracing', 'on'], TRACING_ENV);
    const all = [today, off, on];
    const last = availableParallelism() - 1;
    pinTo(last === 1 ? '0' : `0-${last - 1}`, process.pid, upstream.pid, ...all.map((g) => g.sink));
    pinTo(String(last), ...all.map((g) => g.gateway.pid));

    const load = (g: Child<GatewayInfo>, seconds: number): Promise<WrkResult> =>
      runWrk({
        url: `${g.info.url}/v1/orders/42`,
        headers: [`Authorization: Bearer ${g.info.token}`],
        connections,
        threads: 1,
        durationS: seconds,
      });
    await Promise.all(all.map((g) => load(g.gateway, warmupS)));
    const offRatios: number[] = [];
    const onRatios: number[] = [];
    // today's CPU µs per request / the other's: 1 = same cost, below 1 = costlier.
    const offCpuRatios: number[] = [];
    const onCpuRatios: number[] = [];
    for (let round = 0; round < rounds; round++) {
      // All three start together; the order wrk processes are started in rotates.
      const order = all.map((_, i) => all[(i + round) % all.length] as (typeof all)[number]);
      const cpu = all.map((g) => processCpuUs(g.gateway.pid));
      const results = await Promise.all(order.map((g) => load(g.gateway, durationS)));
      const cpuAfter = all.map((g) => processCpuUs(g.gateway.pid));
      const byName = new Map(order.map((g, i) => [g.name, results[i] as WrkResult]));
      const [rToday, rOff, rOn] = all.map((g) => byName.get(g.name) as WrkResult) as [
        WrkResult,
        WrkResult,
        WrkResult,
      ];
      const us = all.map(
        (g, i) =>
          ((cpuAfter[i] as number) - (cpu[i] as number)) /
          (byName.get(g.name) as WrkResult).requests,
      );
      offRatios.push(rOff.requestsPerSec / rToday.requestsPerSec);
      onRatios.push(rOn.requestsPerSec / rToday.requestsPerSec);
      offCpuRatios.push((us[0] as number) / (us[1] as number));
      onCpuRatios.push((us[0] as number) / (us[2] as number));
      const errors = [rToday, rOff, rOn].some((r) => r.non2xx + r.socketErrors > 0);
      process.stdout.write(
        `round ${round + 1}: today ${rToday.requestsPerSec.toFixed(0)}/s ${us[0]?.toFixed(1)} µs CPU/request, ` +
          `off ${rOff.requestsPerSec.toFixed(0)}/s ${us[1]?.toFixed(1)} µs, ` +
          `on 1 % ${rOn.requestsPerSec.toFixed(0)}/s ${us[2]?.toFixed(1)} µs; ` +
          `off/today ${(rOff.requestsPerSec / rToday.requestsPerSec).toFixed(3)}, ` +
          `on/today ${(rOn.requestsPerSec / rToday.requestsPerSec).toFixed(3)}${errors ? ' (errors!)' : ''}\n`,
      );
    }
    process.stdout.write(
      `\noff / today = ${median(offRatios).toFixed(3)}, on 1 % / today = ${median(onRatios).toFixed(3)}` +
        ` (medians of ${rounds} rounds; 1 = same throughput)\n` +
        `CPU per request, today / off = ${median(offCpuRatios).toFixed(3)}, today / on 1 % = ${median(onCpuRatios).toFixed(3)}\n` +
        `spans received from the on-1% gateway: ${exportedSpans}\n` +
        `today: ${baselineBuild}${values.baseline === undefined ? ' (no tracing section)' : ''}\n`,
    );
  } finally {
    await Promise.all(children.reverse().map((c) => c.stop().catch(() => undefined)));
    receiver.closeAllConnections();
    receiver.close();
    await rm(work, { recursive: true, force: true });
  }
  return 0;
}
