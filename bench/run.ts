/**
 * `npm run bench`: the gateway's forwarding overhead, measured against a bare undici
 * passthrough in the same run.
 *
 * Every server is its own Node process (the machine has few cores; the load generator, the
 * upstream and the system under test must each get scheduled): one loopback upstream, and
 * in front of it the baseline (undici `Pool.stream`, no auth, no logging), the gateway
 * (`createApp`: a real ES256 token verified then cached, revocation checked, access log
 * serialised to a file, metrics on) and, as a second reference, a bare http-proxy
 * passthrough. wrk drives each in turn — warm-up, then a measured run — alternating the
 * order between rounds so drift does not favour one side. WebSocket echo round trips are
 * then measured direct vs through the gateway.
 *
 * Each HTTP row also prices a request in CPU µs of the server process (from /proc), a
 * figure far steadier than requests/s on a shared machine. The bench reports; it does
 * not fail below the target (exit 1 only when it could not run).
 *
 *   npm run bench -- [--duration 10] [--warmup 3] [--connections 50] [--threads 1]
 *                    [--rounds 2] [--ws-duration 5] [--skip-ws] [--skip-http-proxy]
 *                    [--profile]   (baseline and gateway under --cpu-prof, no WebSocket part;
 *                                   figures then not representative)
 *                    [--diagnose]  (adds a gateway with the access log off, to price the log)
 *                    [--log-to-file] (the gateway logs to a file on disk instead of a pipe
 *                                   read by another process, the production shape)
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { compareProfiles } from './lib/cpuProfile.js';
import { countedRequests, countLines } from './lib/gatewayChecks.js';
import { measureHttp, measureWebSocket } from './lib/measure.js';
import { type Line, type Sample, summarise, table } from './lib/report.js';
import { type Child, spawnChild } from './lib/spawnChild.js';
import { wrkVersion } from './lib/wrk.js';

const TARGET_RATIO = 0.85;
const REQUEST_PATH = '/v1/orders/42';
const ROOT = fileURLToPath(new URL('../../', import.meta.url)).replace(/\/$/, '');

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    threads: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '2' },
    'ws-duration': { type: 'string', default: '5' },
    'ws-connections': { type: 'string', default: '50' },
    'skip-ws': { type: 'boolean', default: false },
    'skip-http-proxy': { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    diagnose: { type: 'boolean', default: false },
    'log-to-file': { type: 'boolean', default: false },
  },
  strict: true,
});
const durationS = positive('duration');
const warmupS = positive('warmup');
const connections = positive('connections');
const threads = positive('threads');
const rounds = positive('rounds');
const wsDurationS = positive('ws-duration');
const wsConnections = positive('ws-connections');

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
interface Target extends Line {
  readonly url: string;
  readonly auth: string;
  readonly samples: Sample[];
  run(): Promise<Sample>;
}
const child = (name: string) => new URL(`./${name}.js`, import.meta.url);
const log = (text: string) => process.stdout.write(`${text}\n`);

async function main(): Promise<number> {
  const wrk = wrkVersion();
  if (wrk === null) {
    process.stderr.write(
      'bench: wrk is not installed. Debian/Ubuntu: `sudo apt-get install -y wrk`; macOS: `brew install wrk`.\n',
    );
    return 1;
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
    for (const t of http) await expectOk(t.url, t.auth);

    function target(label: string, url: string, header = auth, pid?: number): Target {
      return { label, url, auth: header, samples: [], run: () => measure(url, header, pid) };
    }

    log(`# Portaria bench — ${new Date().toISOString()}`);
    log(
      `node ${process.version}, ${availableParallelism()} CPUs (${cpus()[0]?.model ?? '?'}), ${wrk}`,
    );
    log(
      `wrk -t${threads} -c${connections} -d${durationS}s --latency (after a ${warmupS} s warm-up), GET ${REQUEST_PATH}, ${rounds} rounds, order reversed every other round${args.profile ? ', BASELINE AND GATEWAY PROFILED (--cpu-prof)' : ''}\n`,
    );
    await runRounds(http);
    const gatewayRequests = http[1]?.samples.reduce((sum, s) => sum + s.requests, 0) ?? 0;

    const ws: Target[] = [];
    // A profile must hold HTTP work only: it is divided by the HTTP requests served.
    if (!args['skip-ws'] && !args.profile) {
      ws.push(
        {
          label: 'WebSocket direct to upstream',
          url: upstream.info.url,
          auth: '',
          samples: [],
          run: () => wsMeasure(upstream.info.url, undefined),
        },
        {
          label: 'WebSocket through the gateway (JWT verified at the upgrade)',
          url: gateway.info.url,
          auth,
          samples: [],
          run: () => wsMeasure(gateway.info.url, gateway.info.token),
        },
      );
      await runRounds(ws);
    }

    const [base, gw] = http;
    const ratio = ratioOf(gw, base);
    log('\n## HTTP (ratios against the baseline of the same run)\n');
    log(table(http.map(summarise), 'req/s'));
    log(
      `\ngateway / baseline = ${ratio.toFixed(3)} (per round: ${perRound(gw, base)}) → ${ratio >= TARGET_RATIO ? 'PASS' : 'BELOW TARGET'} (target ≥ ${TARGET_RATIO})`,
    );
    if (base !== undefined && gw !== undefined) {
      const cpu = summarise(base).cpuUsPerRequest / summarise(gw).cpuUsPerRequest;
      if (Number.isFinite(cpu)) {
        log(
          `CPU per request, baseline / gateway = ${cpu.toFixed(3)} (less sensitive to other load)`,
        );
      }
    }
    if (ws.length > 0) {
      log(
        `\n## WebSocket echo: ${wsConnections} connections ping-pong 64-byte messages (ratios against direct)\n`,
      );
      log(table(ws.map(summarise), 'round trips/s'));
      log(
        `\nthrough the gateway / direct = ${ratioOf(ws[1], ws[0]).toFixed(3)} (per round: ${perRound(ws[1], ws[0])})`,
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

/** Every target once per round; odd rounds in list order, even rounds reversed. */
async function runRounds(targets: readonly Target[]): Promise<void> {
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? targets : [...targets].reverse();
    for (const t of order) {
      const sample = await t.run();
      t.samples.push(sample);
      log(`round ${round} ${t.label}: ${describe(sample)}`);
    }
  }
}

function ratioOf(a: Target | undefined, b: Target | undefined): number {
  if (a === undefined || b === undefined) return Number.NaN;
  return summarise(a).perSecond / summarise(b).perSecond;
}

function perRound(a: Target | undefined, b: Target | undefined): string {
  if (a === undefined || b === undefined) return 'n/a';
  return a.samples
    .map((s, i) => (s.perSecond / (b.samples[i]?.perSecond ?? Number.NaN)).toFixed(3))
    .join(' / ');
}

async function expectOk(url: string, auth: string): Promise<void> {
  const [name = '', value = ''] = auth.split(': ');
  const res = await fetch(url + REQUEST_PATH, { headers: { [name]: value } });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${url}${REQUEST_PATH} answered ${res.status}`);
}

function measure(url: string, auth: string, pid: number | undefined): Promise<Sample> {
  return measureHttp({
    url: url + REQUEST_PATH,
    auth,
    pid,
    connections,
    threads,
    warmupS,
    durationS,
  });
}

function wsMeasure(httpUrl: string, token: string | undefined): Promise<Sample> {
  return measureWebSocket({
    script: child('wsLoad'),
    url: `${httpUrl.replace(/^http/, 'ws')}/v1/stream`,
    token,
    connections: wsConnections,
    warmupS: Math.min(warmupS, 2),
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

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`bench: ${(error as Error).stack ?? String(error)}\n`);
    process.exitCode = 1;
  },
);
