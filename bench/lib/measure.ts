/**
 * One measurement of one target: a warm-up, then a measured run, as a `Sample`.
 * HTTP goes through wrk (and, given the server's pid, prices each response in CPU time);
 * WebSocket through the `wsLoad` child, a separate process like wrk.
 */
import { processCpuUs } from './processCpu.js';
import type { Sample } from './report.js';
import { spawnChild } from './spawnChild.js';
import { runWrk } from './wrk.js';

export interface HttpMeasurement {
  readonly url: string;
  /** One `Name: value` request header line. */
  readonly auth: string;
  /** The server under test, for its CPU time; undefined → no CPU figure. */
  readonly pid: number | undefined;
  readonly connections: number;
  readonly threads: number;
  readonly warmupS: number;
  readonly durationS: number;
}

export async function measureHttp(m: HttpMeasurement): Promise<Sample> {
  const [sample] = await measureHttpTogether([m]);
  if (sample === undefined) throw new Error('no sample');
  return sample;
}

/**
 * Measures every target at the same time (one wrk each, started together): the paired
 * design, where both sides of a ratio see the same moment of the machine.
 */
export async function measureHttpTogether(list: readonly HttpMeasurement[]): Promise<Sample[]> {
  const common = (m: HttpMeasurement) => ({
    url: m.url,
    headers: [m.auth],
    connections: m.connections,
    threads: m.threads,
  });
  const warm = await Promise.all(list.map((m) => runWrk({ ...common(m), durationS: m.warmupS })));
  const cpuBefore = list.map((m) => processCpuUs(m.pid));
  const results = await Promise.all(
    list.map((m) => runWrk({ ...common(m), durationS: m.durationS })),
  );
  return list.map((m, i) => {
    const result = results[i] as (typeof results)[number];
    const cpuUs = processCpuUs(m.pid) - (cpuBefore[i] ?? Number.NaN);
    return {
      perSecond: result.requestsPerSec,
      p50Ms: result.p50Ms,
      p99Ms: result.p99Ms,
      clean: result.non2xx === 0 && result.socketErrors === 0,
      requests: result.requests,
      served: (warm[i]?.requests ?? 0) + result.requests,
      cpuUsPerRequest: cpuUs / result.requests,
    };
  });
}

export interface WebSocketMeasurement {
  /** The compiled `wsLoad.js`. */
  readonly script: URL;
  readonly url: string;
  readonly token: string | undefined;
  readonly connections: number;
  readonly warmupS: number;
  readonly durationS: number;
}

interface WsResult {
  readonly roundTrips: number;
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

export async function measureWebSocket(m: WebSocketMeasurement): Promise<Sample> {
  const args = [
    '--url',
    m.url,
    '--connections',
    String(m.connections),
    '--duration',
    String(m.durationS),
    '--warmup',
    String(m.warmupS),
    ...(m.token === undefined ? [] : ['--token', m.token]),
  ];
  const timeoutMs = (m.durationS + m.warmupS + 30) * 1000;
  const load = await spawnChild<WsResult>('ws-load', m.script, args, [], timeoutMs);
  await load.stop();
  const { perSecond, p50Ms, p99Ms, roundTrips } = load.info;
  return {
    perSecond,
    p50Ms,
    p99Ms,
    requests: roundTrips,
    served: roundTrips,
    cpuUsPerRequest: Number.NaN,
    clean: roundTrips > 0,
  };
}
