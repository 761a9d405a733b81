/**
 * Mode `tls`: what TLS on the public listener costs. Two gateways at the same moment,
 * pinned to the same CPU (the upstream, the log sinks, the load generators and this
 * process on the others), each loaded by its own wrk on an authenticated, forwarded
 * request (the verified-token cache path) —
 *
 *   plain   `server.tls` off
 *   tls     `server.tls` on: a P-256 certificate, the default policy (TLS 1.3)
 *
 * CPU-bound servers sharing a CPU split it evenly, so requests/s ratios are cost ratios,
 * and both feel the same moment of a noisy machine. Two loads, each in its own rounds:
 *
 *   keep-alive   wrk keeps its connections: what encrypting the records costs
 *   new          `Connection: close` on every request: a new connection each, so for
 *                `tls` a full handshake (wrk resumes no session)
 *
 * Then resumption, on the `tls` gateway alone: a client in this process opens connections
 * of one request each, `--concurrency` at a time, in alternating phases that resume a
 * session or make a full handshake, and the gateway's CPU per connection is read from
 * /proc for each (the client's own cost does not count).
 *
 *   npm run bench -- --mode tls [--rounds 6] [--duration 5] [--warmup 5] [--connections 50]
 *     [--concurrency 8]
 *
 * Needs wrk, taskset, openssl and 2 CPUs (like the tracing mode).
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { pinTo } from '../lib/cpuPinning.js';
import { ChildSet, type GatewayInfo, startGateway, startUpstream } from '../lib/gateways.js';
import { parseModeArgs, positiveInt } from '../lib/modeArgs.js';
import { processCpuUs } from '../lib/processCpu.js';
import type { Child } from '../lib/spawnChild.js';
import { median } from '../lib/stats.js';
import { runWrk, type WrkResult } from '../lib/wrk.js';

const OPTIONS = {
  rounds: { type: 'string', default: '6' },
  duration: { type: 'string', default: '5' },
  warmup: { type: 'string', default: '5' },
  connections: { type: 'string', default: '50' },
  concurrency: { type: 'string', default: '8' },
} as const;

const PATH = '/v1/orders/42';

/** A P-256 certificate for 127.0.0.1, self-signed by openssl: its files. */
function benchCertificate(dir: string): { certFile: string; keyFile: string } {
  const certFile = join(dir, 'server.crt');
  const keyFile = join(dir, 'server.key');
  const made = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-subj',
      '/CN=portaria.bench',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-days',
      '2',
    ],
    { encoding: 'utf8' },
  );
  if (made.status !== 0) throw new Error(`openssl failed: ${made.stderr}`);
  return { certFile, keyFile };
}

interface Pair {
  readonly ratio: number;
  readonly cpuRatio: number;
  readonly line: string;
}

/** One round of both gateways under the same wrk load at once; `order` rotates the starts. */
async function round(
  gateways: readonly [Child<GatewayInfo>, Child<GatewayInfo>],
  seconds: number,
  connections: number,
  headers: readonly string[],
  flip: boolean,
): Promise<Pair> {
  const load = (g: Child<GatewayInfo>) =>
    runWrk({
      url: `${g.info.url}${PATH}`,
      headers: [`Authorization: Bearer ${g.info.token}`, ...headers],
      connections,
      threads: 1,
      durationS: seconds,
    });
  const cpu = gateways.map((g) => processCpuUs(g.pid));
  const started = flip
    ? [load(gateways[1]), load(gateways[0])]
    : [load(gateways[0]), load(gateways[1])];
  const results = await Promise.all(started);
  const [plain, tls] = (flip ? [results[1], results[0]] : results) as [WrkResult, WrkResult];
  const after = gateways.map((g) => processCpuUs(g.pid));
  const us = [plain, tls].map(
    (r, i) => ((after[i] as number) - (cpu[i] as number)) / r.requests,
  ) as [number, number];
  const errors = plain.non2xx + plain.socketErrors + tls.non2xx + tls.socketErrors;
  return {
    ratio: tls.requestsPerSec / plain.requestsPerSec,
    cpuRatio: us[0] / us[1],
    line:
      `plain ${plain.requestsPerSec.toFixed(0)}/s ${us[0].toFixed(1)} µs CPU/request, ` +
      `tls ${tls.requestsPerSec.toFixed(0)}/s ${us[1].toFixed(1)} µs; ` +
      `tls/plain ${(tls.requestsPerSec / plain.requestsPerSec).toFixed(3)}${errors > 0 ? ' (errors!)' : ''}`,
  };
}

/** Connections of one request each to `url` for `seconds`, `concurrency` at a time. */
async function connectionsFor(
  url: string,
  token: string,
  seconds: number,
  concurrency: number,
  session: { current: Buffer | undefined } | null,
): Promise<{ connections: number; resumed: number }> {
  const { hostname, port } = new URL(url);
  const request = `GET ${PATH} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`;
  const deadline = performance.now() + seconds * 1000;
  let connections = 0;
  let resumed = 0;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const socket = connect(
        {
          host: hostname,
          port: Number(port),
          rejectUnauthorized: false,
          ...(session?.current === undefined ? {} : { session: session.current }),
        },
        () => {
          if (socket.isSessionReused()) resumed++;
          socket.write(request);
        },
      );
      socket.on('session', (ticket: Buffer) => {
        if (session !== null) session.current = ticket;
      });
      socket.on('data', () => {});
      socket.on('error', reject);
      socket.on('close', () => resolve());
    });
  const lane = async () => {
    while (performance.now() < deadline) {
      await one();
      connections++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  return { connections, resumed };
}

export async function run(argv: readonly string[]): Promise<number> {
  const values = parseModeArgs(argv, OPTIONS);
  const rounds = positiveInt(values, 'rounds');
  const durationS = positiveInt(values, 'duration');
  const warmupS = positiveInt(values, 'warmup');
  const connections = positiveInt(values, 'connections');
  const concurrency = positiveInt(values, 'concurrency');
  if (availableParallelism() < 2 || spawnSync('taskset', ['-V']).status !== 0) {
    process.stderr.write('the tls mode needs 2 CPUs and taskset (util-linux)\n');
    return 2;
  }
  const work = await mkdtemp(join(tmpdir(), 'portaria-tls-bench-'));
  const children = new ChildSet();
  try {
    const { certFile, keyFile } = benchCertificate(work);
    const upstream = await startUpstream(children);
    const plain = await startGateway(children, {
      name: 'plain',
      dir: join(work, 'plain'),
      upstream: upstream.info.url,
    });
    const tls = await startGateway(children, {
      name: 'tls',
      dir: join(work, 'tls'),
      upstream: upstream.info.url,
      overrides: { server: { tls: { enabled: true, certFile, keyFile } } },
    });
    const last = availableParallelism() - 1;
    const gatewayPids = [plain.pid, tls.pid];
    const others = children.pids().filter((pid) => !gatewayPids.includes(pid));
    pinTo(last === 1 ? '0' : `0-${last - 1}`, process.pid, ...others);
    pinTo(String(last), ...gatewayPids);

    const pair = [plain, tls] as const;
    process.stdout.write(`warm-up ${warmupS} s\n`);
    await round(pair, warmupS, connections, [], false);
    const summary: string[] = [];
    for (const [name, headers] of [
      ['keep-alive', []],
      ['new connections', ['Connection: close']],
    ] as const) {
      const ratios: number[] = [];
      const cpuRatios: number[] = [];
      for (let r = 0; r < rounds; r++) {
        const result = await round(pair, durationS, connections, headers, r % 2 === 1);
        ratios.push(result.ratio);
        cpuRatios.push(result.cpuRatio);
        process.stdout.write(`${name} round ${r + 1}: ${result.line}\n`);
      }
      summary.push(
        `${name}: tls / plain = ${median(ratios).toFixed(3)} × req/s, plain / tls = ${median(cpuRatios).toFixed(3)} × CPU per request (medians of ${rounds} rounds)`,
      );
    }

    // Resumption: the same client, full handshakes and resumed sessions in turn.
    const session = { current: undefined as Buffer | undefined };
    await connectionsFor(tls.info.url, tls.info.token, 1, 1, session);
    const fullUs: number[] = [];
    const resumedUs: number[] = [];
    for (let r = 0; r < rounds; r++) {
      for (const resume of [false, true]) {
        const before = processCpuUs(tls.pid);
        const made = await connectionsFor(
          tls.info.url,
          tls.info.token,
          durationS,
          concurrency,
          resume ? session : null,
        );
        const us = (processCpuUs(tls.pid) - before) / made.connections;
        (resume ? resumedUs : fullUs).push(us);
        process.stdout.write(
          `connections round ${r + 1} ${resume ? 'resumed' : 'full'}: ${made.connections} (${made.resumed} resumed), ${us.toFixed(0)} µs gateway CPU per connection\n`,
        );
      }
    }
    const full = median(fullUs);
    const resumed = median(resumedUs);
    summary.push(
      `tls connection of one request: ${full.toFixed(0)} µs gateway CPU with a full handshake, ${resumed.toFixed(0)} µs resumed (resumed / full = ${(resumed / full).toFixed(3)}, medians of ${rounds} rounds)`,
    );
    process.stdout.write(`\n${summary.join('\n')}\n`);
    return 0;
  } finally {
    await children.stopAll();
    await rm(work, { recursive: true, force: true });
  }
}
