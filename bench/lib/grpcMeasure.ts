/**
 * One measured run of the gRPC load generator (`bench/grpcLoad.ts`) against a gateway's
 * `envoy.service.auth.v3.Authorization/Check`: the generator warms up, says it is
 * measuring, and reports after the duration; the gateway's CPU (its process tree, as the
 * wrk rows count it) and the generator's own are read from `/proc` at those two lines.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { processCpuUs } from './processCpu.js';
import { treeCpuUs } from './processTree.js';

export interface GrpcRun {
  /** `host:port` of the gRPC listener. */
  readonly target: string;
  readonly token: string;
  readonly path: string;
  readonly inFlight: number;
  readonly channels: number;
  readonly warmupS: number;
  readonly durationS: number;
  /** The gateway whose CPU prices a decision. */
  readonly pid: number | undefined;
}

export interface GrpcResult {
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Calls answered in the measured window. */
  readonly calls: number;
  /** Calls answered in all: warm-up, window and the tail in flight at the end. */
  readonly answered: number;
  /** Answers that were not an allow (RPC errors, denials, anything else), in all. */
  readonly notOk: number;
  readonly firstNotOk: string | null;
  readonly cpuUsPerDecision: number;
  /** The load generator's CPU per call of the window. */
  readonly loadCpuUsPerDecision: number;
}

interface Line {
  readonly [key: string]: unknown;
}

const script = new URL('../grpcLoad.js', import.meta.url);

export function measureGrpc(run: GrpcRun): Promise<GrpcResult> {
  const child = spawn(
    process.execPath,
    [
      script.pathname,
      ...['--target', run.target, '--token', run.token, '--path', run.path],
      ...['--in-flight', String(run.inFlight), '--channels', String(run.channels)],
      ...['--warmup', String(run.warmupS), '--duration', String(run.durationS)],
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => {
        child.kill('SIGKILL');
        reject(new Error('grpc load: no result in time'));
      },
      (run.warmupS + run.durationS + 40) * 1000,
    );
    const lines: Line[] = [];
    let gatewayBefore = Number.NaN;
    let loadBefore = Number.NaN;
    let gatewayUs = Number.NaN;
    let loadUs = Number.NaN;
    createInterface({ input: child.stdout }).on('line', (text) => {
      if (!text.startsWith('{')) return;
      const line = JSON.parse(text) as Line;
      lines.push(line);
      if (line.measuring === true) {
        gatewayBefore = treeCpuUs(run.pid);
        loadBefore = processCpuUs(child.pid);
      } else if (typeof line.calls === 'number') {
        gatewayUs = treeCpuUs(run.pid) - gatewayBefore;
        loadUs = processCpuUs(child.pid) - loadBefore;
      }
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      const window = lines.find((l) => typeof l.calls === 'number');
      const final = lines.find((l) => typeof l.answered === 'number');
      if (code !== 0 || window === undefined || final === undefined) {
        reject(new Error(`grpc load exited with ${code} without its result`));
        return;
      }
      const calls = window.calls as number;
      const count = (l: Line) =>
        (l.rpcErrors as number) + (l.denied as number) + (l.other as number);
      resolve({
        perSecond: window.perSecond as number,
        p50Ms: window.p50Ms as number,
        p99Ms: window.p99Ms as number,
        calls,
        answered: final.answered as number,
        notOk: count(final),
        firstNotOk: (final.firstNotOk as string | null) ?? null,
        cpuUsPerDecision: gatewayUs / calls,
        loadCpuUsPerDecision: loadUs / calls,
      });
    });
  });
}
