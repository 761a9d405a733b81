/**
 * Mode `forwarding` (the default of `npm run bench`): the gateway's forwarding overhead, measured against a bare undici
 * passthrough in the same run.
 *
 * Every server is its own Node process: one loopback upstream, and in front of it the
 * baseline (undici `Pool.stream`, no auth, no logging), the gateway (`createApp`: a real
 * ES256 token verified then cached, revocation checked, access log written to a pipe read
 * by a log-sink process, metrics on) and, as a second reference, a bare http-proxy
 * passthrough. WebSocket echo round trips are then measured direct vs through the gateway.
 *
 * The targets take turns — warm-up, then a measured run — in many short rounds, the order
 * reversed every other round so drift favours no side. The verdict is the **median of
 * the per-round ratios**: within a round the gateway and the baseline are measured
 * seconds apart, and the median ignores the rounds that a burst of other work on this
 * shared machine hit on one side only (docs/performance.md).
 *
 * `--paired` measures each target *at the same time* as the baseline instead — one wrk
 * each, started together — with both servers pinned to one CPU and everything else (wrk,
 * the upstream, the log sink) on the others; a second baseline against the first (the
 * calibration row) shows the instrument's own spread. Its rounds agree within a few
 * percent, which makes it the tool for comparing two builds, but the two servers share
 * one CPU's caches, which costs the process with the larger working set (the gateway)
 * more than it would alone: it reads lower than the sequential verdict. Needs taskset and
 * two CPUs.
 *
 * Each HTTP row also prices a request in CPU µs of the server process (from /proc). The
 * bench reports; it does not fail below the target (exit 1 only when it could not run).
 *
 *   npm run bench -- [--duration 4] [--warmup 3] [--rewarm 1] [--connections 50]
 *                    [--threads 1] [--rounds 8] [--ws-duration 3] [--skip-ws]
 *                    [--skip-http-proxy]
 *                    [--profile]   (baseline and gateway under --cpu-prof, no WebSocket part;
 *                                   figures then not representative)
 *                    [--diagnose]  (adds a gateway with the access log off, to price the log)
 *                    [--log-to-file] (the gateway logs to a file on disk instead of a pipe
 *                                   read by another process, the production shape)
 *                    [--paired] [--skip-calibration] (see above)
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { parseArgs } from 'node:util';
import { pinTo } from '../lib/cpuPinning.js';
import { compareProfiles } from '../lib/cpuProfile.js';
import { countedRequests, countLines } from '../lib/gatewayChecks.js';
import {
  type HttpMeasurement,
  measureHttp,
  measureHttpTogether,
  measureWebSocket,
} from '../lib/measure.js';
import { parseModeArgs } from '../lib/modeArgs.js';
import { type Line, pairedTable, type Sample, summarise, table } from '../lib/report.js';
import { type Child, spawnChild } from '../lib/spawnChild.js';
import { median } from '../lib/stats.js';
import { wrkVersion } from '../lib/wrk.js';

const TARGET_RATIO = 0.85;
const REQUEST_PATH = '/v1/orders/42';
const ROOT = fileURLToPath(new URL('../../../', import.meta.url)).replace(/\/$/, '');

const OPTIONS = {
  duration: { type: 'string', default: '4' },
  warmup: { type: 'string', default: '3' },
  rewarm: { type: 'string', default: '1' },
  connections: { type: 'string', default: '50' },
  threads: { type: 'string', default: '1' },
  rounds: { type: 'string', default: '8' },
  'ws-duration': { type: 'string', default: '3' },
  'ws-connections': { type: 'string', default: '50' },
  'skip-ws': { type: 'boolean', default: false },
  'skip-http-proxy': { type: 'boolean', default: false },
  profile: { type: 'boolean', default: false },
  diagnose: { type: 'boolean', default: false },
  'log-to-file': { type: 'boolean', default: false },
  paired: { type: 'boolean', default: false },
  'skip-calibration': { type: 'boolean', default: false },
} as const;
let args: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; strict: true }>>['values'];
let durationS: number;
let warmupS: number;
let rewarmS: number;
let connections: number;
let threads: number;
let rounds: number;
let wsDurationS: number;
let wsConnections: number;

export function run(argv: readonly string[]): Promise<number> {
  args = parseModeArgs(argv, OPTIONS);
  durationS = positive('duration');
  warmupS = positive('warmup');
  rewarmS = positive('rewarm');
  connections = positive('connections');
  threads = positive('threads');
  rounds = positive('rounds');
  wsDurationS = positive('ws-duration');
  wsConnections = positive('ws-connections');
  return main();
}

function positive(name: keyof typeof args): number {
  const value = Number(args[name]);
  if (!Number.isInteger(value) || value < 1) {
    process.stderr.write(`bench: --${name} must be a positive integer\n`);
    process.exit(2);
  }
  return value;
}

interface ServerInfo {
  readonly url: string;
}
interface GatewayInfo extends ServerInfo {
  readonly adminUrl: string;
  readonly token: string;
  readonly logFile: string;
}
/** Something measured once per round. */
interface Runnable extends Line {
  readonly samples: Sample[];
  run(round: number): Promise<Sample>;
}
/** An HTTP target: paired rounds measure two `measurement`s at once. */
interface Target extends Runnable {
  readonly url: string;
  readonly auth: string;
  readonly measurement: (round: number) => HttpMeasurement;
}
const child = (name: string) => new URL(`../${name}.js`, import.meta.url);
const log = (text: string) => process.stdout.write(`${text}\n`);

async function main(): Promise<number> {
  const wrk = wrkVersion();
  if (wrk === null) {
    process.stderr.write(
      'bench: wrk is not installed. Debian/Ubuntu: `sudo apt-get install -y wrk`; macOS: `brew install wrk`.\n',
    );
    return 1;
  }
  let paired = args.paired && !args.profile;
  if (paired && (availableParallelism() < 2 || spawnSync('taskset', ['-V']).status !== 0)) {
    log('(--paired needs 2 CPUs and taskset (util-linux): measuring sequentially)');
    paired = false;
  }
  const dir = await mkdtemp(join(tmpdir(), 'portaria-bench-'));
  // Kept after the run, so the profiles can be opened in Chrome DevTools.
  const profileDir = args.profile ? await mkdtemp(join(tmpdir(), 'portaria-bench-profile-')) : '';
  const profiled = (name: string) =>
    args.profile ? ['--cpu-prof', `--cpu-prof-dir=${join(profileDir, name)}`] : [];
  const children: Child<unknown>[] = [];
  try {
    const upstream = await spawnChild<ServerInfo>('upstream', child('upstream'), []);
    children.push(upstream);
    const baseline = await spawnChild<ServerInfo>(
      'baseline',
      child('baseline'),
      [upstream.info.url],
      profiled('baseline'),
    );
    children.push(baseline);
    // The gateway logs to a named pipe read by the log sink, as production logs to stdout
    // read by the container runtime (--log-to-file: a file instead, see docs/performance.md).
    let sink: Child<unknown> | null = null;
    const logArgs: string[] = [];
    if (!args['log-to-file']) {
      const fifo = join(dir, 'gateway-log.fifo');
      const made = spawnSync('mkfifo', ['-m', '600', fifo]);
      if (made.status !== 0) throw new Error(`mkfifo failed: ${made.stderr}`);
      sink = await spawnChild('log sink', child('logSink'), [fifo]);
      children.push(sink);
      logArgs.push('--log-to', fifo);
    }
    const gateway = await spawnChild<GatewayInfo>(
      'gateway',
      child('gateway'),
      [upstream.info.url, '--dir', join(dir, 'gateway'), ...logArgs],
      profiled('gateway'),
    );
    children.push(gateway);
    const httpProxy = args['skip-http-proxy']
      ? null
      : await spawnChild<ServerInfo>('http-proxy', child('httpProxyPassthrough'), [
          upstream.info.url,
        ]);
    if (httpProxy !== null) children.push(httpProxy);
    const quietGateway = args.diagnose
      ? await spawnChild<GatewayInfo>('gateway (log off)', child('gateway'), [
          upstream.info.url,
          '--dir',
          join(dir, 'gateway-log-off'),
          '--log-level',
          'silent',
        ])
      : null;
    if (quietGateway !== null) children.push(quietGateway);
    const calibration =
      paired && !args['skip-calibration']
        ? await spawnChild<ServerInfo>('baseline B', child('baseline'), [upstream.info.url])
        : null;
    if (calibration !== null) children.push(calibration);
    if (paired) {
      // The servers measured share the last CPU; the load generators, the upstream and
      // the log sink use the others.
      const last = availableParallelism() - 1;
      pinTo(last === 1 ? '0' : `0-${last - 1}`, process.pid, upstream.pid, sink?.pid);
      pinTo(
        String(last),
        baseline.pid,
        calibration?.pid,
        gateway.pid,
        httpProxy?.pid,
        quietGateway?.pid,
      );
    }

    const auth = `Authorization: Bearer ${gateway.info.token}`;
    const http: Target[] = [
      target(
        'baseline: undici Pool.stream passthrough, no auth/log/metrics',
        baseline.info.url,
        auth,
        baseline.pid,
      ),
      target(
        'gateway: JWT verified (cached) + access log + metrics',
        gateway.info.url,
        auth,
        gateway.pid,
      ),
    ];
    if (httpProxy !== null) {
      http.push(
        target('reference: bare http-proxy passthrough', httpProxy.info.url, auth, httpProxy.pid),
      );
    }
    if (quietGateway !== null) {
      const quietAuth = `Authorization: Bearer ${quietGateway.info.token}`;
      http.push(
        target(
          'diagnosis: gateway with log.level silent',
          quietGateway.info.url,
          quietAuth,
          quietGateway.pid,
        ),
      );
    }
    if (calibration !== null) {
      http.splice(
        1,
        0,
        target(
          'calibration: a second baseline (expected ratio 1)',
          calibration.info.url,
          auth,
          calibration.pid,
        ),
      );
    }
    for (const t of http) await expectOk(t.url, t.auth);

    function target(label: string, url: string, header = auth, pid?: number): Target {
      const m = (round: number) => httpMeasurement(url, header, pid, round);
      return {
        label,
        url,
        auth: header,
        samples: [],
        measurement: m,
        run: (round) => measureHttp(m(round)),
      };
    }

    log(`# Portaria bench — ${new Date().toISOString()}`);
    log(
      `node ${process.version}, ${availableParallelism()} CPUs (${cpus()[0]?.model ?? '?'}), ${wrk}`,
    );
    log(
      `wrk -t${threads} -c${connections} -d${durationS}s --latency (after a ${warmupS} s warm-up in round 1, ${rewarmS} s later), GET ${REQUEST_PATH}, ${rounds} rounds, ${paired ? 'PAIRED: each target measured at the same time as the baseline, both servers sharing one CPU' : 'one target at a time, order reversed every other round'}${args.profile ? ', BASELINE AND GATEWAY PROFILED (--cpu-prof)' : ''}\n`,
    );
    const [base, ...others] = http;
    if (base === undefined) throw new Error('no baseline');
    const gw = others.find((t) => t.url === gateway.info.url);
    const pairedBase = new Map<Target, Sample[]>();
    if (paired) await runPairedRounds(base, others, pairedBase);
    else await runRounds(http);
    const gatewayRequests = gw?.samples.reduce((sum, s) => sum + s.requests, 0) ?? 0;

    const ws: Runnable[] = [];
    // A profile must hold HTTP work only: it is divided by the HTTP requests served.
    if (!args['skip-ws'] && !args.profile) {
      ws.push(
        {
          label: 'WebSocket direct to upstream',
          samples: [],
          run: (round) => wsMeasure(upstream.info.url, undefined, round),
        },
        {
          label: 'WebSocket through the gateway (JWT verified at the upgrade)',
          samples: [],
          run: (round) => wsMeasure(gateway.info.url, gateway.info.token, round),
        },
      );
      await runRounds(ws);
    }

    // Each target's baseline samples: its paired ones, or the baseline's own rounds.
    const baseOf = (t: Target): Line => ({
      label: base.label,
      samples: pairedBase.get(t) ?? base.samples,
    });
    log('\n## HTTP (ratios against the baseline of the same run)\n');
    if (paired) log(pairedTable(others.map((t) => [t, baseOf(t)])));
    else log(table(http.map(summarise), 'req/s'));
    if (gw !== undefined) {
      const ratios = roundRatios(gw, baseOf(gw), (s) => s.perSecond);
      const ratio = median(ratios);
      log(
        `\ngateway / baseline = ${ratio.toFixed(3)}, median of the per-round ratios ${ratios.map((r) => r.toFixed(3)).join(' / ')} → ${ratio >= TARGET_RATIO ? 'PASS' : 'BELOW TARGET'} (target ≥ ${TARGET_RATIO})`,
      );
      const cpu = median(roundRatios(baseOf(gw), gw, (s) => s.cpuUsPerRequest));
      if (Number.isFinite(cpu)) {
        log(
          `CPU per request, baseline / gateway = ${cpu.toFixed(3)} (median of the per-round ratios)`,
        );
      }
    }
    if (ws.length > 0) {
      log(
        `\n## WebSocket echo: ${wsConnections} connections ping-pong 64-byte messages (ratios against direct)\n`,
      );
      log(table(ws.map(summarise), 'round trips/s'));
      log(
        `\nthrough the gateway / direct = ${median(roundRatios(ws[1], ws[0], (s) => s.perSecond)).toFixed(3)}, median of the per-round ratios ${roundRatios(
          ws[1],
          ws[0],
          (s) => s.perSecond,
        )
          .map((r) => r.toFixed(3))
          .join(' / ')}`,
      );
    }

    const counted = await countedRequests(gateway.info.adminUrl);
    children.splice(children.indexOf(gateway), 1);
    await gateway.stop(); // flushes the access log (and writes the profile)
    let accessLines: number;
    if (sink === null) {
      accessLines = await countLines(gateway.info.logFile, '"msg":"request"');
    } else {
      children.splice(children.indexOf(sink), 1);
      const final = await sink.stop();
      accessLines = typeof final?.lines === 'number' ? final.lines : -1;
      if (typeof final?.cpuUs === 'number' && accessLines > 0) {
        log(
          `log sink (the container runtime's part): ${(final.cpuUs / accessLines).toFixed(1)} µs CPU per access line`,
        );
      }
    }
    log(
      `\nchecks: wrk counted ${gatewayRequests} measured gateway responses (warm-ups excluded); ` +
        `warm-ups included, the gateway's metrics counted ${counted} requests and its access log holds ${accessLines} request lines`,
    );
    if (args.profile && base !== undefined && gw !== undefined) {
      children.splice(children.indexOf(baseline), 1);
      await baseline.stop();
      log(await compareProfiles(profileDir, ROOT, served(base), served(gw)));
    }
    return 0;
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Paired rounds: each target is measured at the same time as the baseline (its samples in
 * `target.samples`, the baseline's of the same moments in `pairedBase`); the targets take
 * turns, in reversed order every other round.
 */
async function runPairedRounds(
  base: Target,
  targets: readonly Target[],
  pairedBase: Map<Target, Sample[]>,
): Promise<void> {
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? targets : [...targets].reverse();
    for (const t of order) {
      const [b, sample] = await measureHttpTogether([
        base.measurement(round),
        t.measurement(round),
      ]);
      if (b === undefined || sample === undefined) throw new Error('paired measurement failed');
      t.samples.push(sample);
      const list = pairedBase.get(t) ?? [];
      list.push(b);
      pairedBase.set(t, list);
      log(
        `round ${round} ${t.label}: ${describe(sample)} | baseline at the same time: ${describe(b)} | ratio ${(sample.perSecond / b.perSecond).toFixed(3)}`,
      );
    }
  }
}

/** Every target once per round; odd rounds in list order, even rounds reversed. */
async function runRounds(targets: readonly Runnable[]): Promise<void> {
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? targets : [...targets].reverse();
    for (const t of order) {
      const sample = await t.run(round);
      t.samples.push(sample);
      log(`round ${round} ${t.label}: ${describe(sample)}`);
    }
  }
}

/** `figure(a) / figure(b)` for each round (measured together, or seconds apart). */
function roundRatios(
  a: Line | undefined,
  b: Line | undefined,
  figure: (sample: Sample) => number,
): number[] {
  if (a === undefined || b === undefined) return [];
  return a.samples.map((s, i) => {
    const other = b.samples[i];
    return other === undefined ? Number.NaN : figure(s) / figure(other);
  });
}

async function expectOk(url: string, auth: string): Promise<void> {
  const [name = '', value = ''] = auth.split(': ');
  const res = await fetch(url + REQUEST_PATH, { headers: { [name]: value } });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${url}${REQUEST_PATH} answered ${res.status}`);
}

function httpMeasurement(
  url: string,
  auth: string,
  pid: number | undefined,
  round: number,
): HttpMeasurement {
  return {
    url: url + REQUEST_PATH,
    auth,
    pid,
    connections,
    threads,
    warmupS: round === 1 ? warmupS : rewarmS,
    durationS,
  };
}

function wsMeasure(httpUrl: string, token: string | undefined, round: number): Promise<Sample> {
  return measureWebSocket({
    script: child('wsLoad'),
    url: `${httpUrl.replace(/^http/, 'ws')}/v1/stream`,
    token,
    connections: wsConnections,
    warmupS: round === 1 ? Math.min(warmupS, 2) : rewarmS,
    durationS: wsDurationS,
  });
}

function describe(sample: Sample): string {
  const cpu = Number.isFinite(sample.cpuUsPerRequest)
    ? `, ${sample.cpuUsPerRequest.toFixed(0)} µs CPU/request`
    : '';
  return `${sample.perSecond.toFixed(0)}/s, p50 ${sample.p50Ms.toFixed(2)} ms, p99 ${sample.p99Ms.toFixed(2)} ms${cpu}${sample.clean ? '' : ' (ERRORS: non-2xx or socket errors)'}`;
}

function served(t: Target): number {
  return t.samples.reduce((sum, s) => sum + s.served, 0);
}
