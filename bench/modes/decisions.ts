/**
 * Mode `decisions`: one gateway in `mode: authorizer` asked directly, no proxy in front,
 * on its two entries in interleaved rounds, the same token and original request
 * (`GET /v1/orders/42`), every answer required to be an allow:
 *
 *   HTTP entry   wrk → `GET /nginx` with `X-Original-Method`, `X-Original-URI` and the
 *                Authorization, as nginx's auth_request subrequest carries them
 *   gRPC entry   `envoy.service.auth.v3.Authorization/Check` from the gRPC load generator
 *                (`bench/grpcLoad.ts`: @grpc/grpc-js on the gateway's protos, `--channels`
 *                HTTP/2 connections, `--connections` calls in flight, as wrk's
 *                connections), CheckRequests shaped as Envoy sends them
 *   HTTP, paced  the HTTP entry again, each wrk connection pausing between requests so
 *                that it offers the rate the gRPC row reached in the same round: what a
 *                decision costs depends on the rate (at a higher one, more of them share
 *                each wake-up, read and write), and the gRPC row's is bounded by its
 *                load generator, so this row compares CPU per decision at equal load
 *
 * A row's CPU per decision is the gateway's process (as every row of the bench counts
 * it), read from /proc over the measured run; the load generators' CPU per decision is
 * printed apart (wrk's from the bench's reaped-children time, the gRPC generator's from
 * its /proc entry). Ratios against the first row are medians of the per-round ratios. A round with
 * any answer that is not an allow (wrk's non-2xx or socket errors; a failed RPC, a denial
 * or a CheckResponse without `ok_response`) stops the run with exit 1.
 *
 *   npm run bench -- --mode decisions [--rounds 3] [--duration 5] [--warmup 3]
 *     [--connections 50] [--channels 1]
 *
 * Needs wrk.
 */

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { serviceClient } from '../../src/authorizer/envoyProtos.js';
import {
  type Measured,
  type RoundSample,
  resultTable,
  type Timing,
  verdict,
} from '../lib/comparison.js';
import { countedRequests } from '../lib/gatewayChecks.js';
import { ChildSet, startGateway, startUpstream } from '../lib/gateways.js';
import { measureGrpc } from '../lib/grpcMeasure.js';
import {
  fail,
  header,
  parseModeArgs,
  positiveInt,
  requireWrk,
  TIMING_OPTIONS,
  timingOf,
} from '../lib/modeArgs.js';
import { reapedChildrenCpuUs } from '../lib/processCpu.js';
import { treeCpuUs } from '../lib/processTree.js';
import { median } from '../lib/stats.js';
import { runWrk } from '../lib/wrk.js';

const PATH = '/v1/orders/42';
const log = (text: string) => process.stdout.write(`${text}\n`);

const HTTP_LABEL = 'HTTP entry: wrk → /nginx (X-Original-Method, X-Original-URI)';

/** wrk's Lua pacing: each connection waits `args[1]` ms after an answer before its next request. */
const PACED = `
local pause = 0
function init(args) pause = tonumber(args[1]) end
function delay() return pause end
`;

/** Throws unless the HTTP entry refuses a decision without a token and one with a bad token. */
async function expectHttpRefusals(url: string, token: string): Promise<void> {
  const original = { 'x-original-method': 'GET', 'x-original-uri': PATH };
  const refused: Record<string, string>[] = [
    {},
    { authorization: `Bearer ${token.slice(0, -4)}AAAA` },
  ];
  for (const extra of refused) {
    const res = await fetch(url, { headers: { ...original, ...extra } });
    await res.arrayBuffer();
    if (res.status !== 401) throw new Error(`${url} answered ${res.status} where it must refuse`);
  }
  const res = await fetch(url, { headers: { ...original, authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${url} answered ${res.status} to a valid token`);
}

type Unary = (
  request: unknown,
  options: { deadline: number },
  callback: (error: Error | null, response: unknown) => void,
) => void;

/** Throws unless the gRPC entry denies a forged token with 401 (so it really decides). */
async function expectGrpcRefusal(target: string, token: string): Promise<void> {
  const Service = serviceClient('authorization');
  const client = new Service(target, credentials.createInsecure()) as unknown as {
    Check: Unary;
    close(): void;
  };
  try {
    const answer = await new Promise<{
      denied_response?: { status?: { code?: unknown } } | null;
    }>((resolve, reject) =>
      client.Check(
        {
          attributes: {
            request: {
              http: {
                method: 'GET',
                path: PATH,
                host: 'api.example.com',
                headers: { authorization: `Bearer ${token.slice(0, -4)}AAAA` },
              },
            },
          },
        },
        { deadline: Date.now() + 5000 },
        (error, response) => (error === null ? resolve(response as never) : reject(error)),
      ),
    );
    const code = String(answer.denied_response?.status?.code ?? '');
    if (code !== 'Unauthorized' && code !== '401') {
      throw new Error(
        `the gRPC entry did not deny a forged token (denied status: ${code || 'none'})`,
      );
    }
  } finally {
    client.close();
  }
}

interface Row {
  readonly measured: Measured;
  /** The load generator's CPU µs per decision, per round. */
  readonly loadCpu: number[];
  /** Answers the load generator saw, warm-ups included. */
  answered: number;
}

export async function run(argv: readonly string[]): Promise<number> {
  const values = parseModeArgs(argv, {
    ...TIMING_OPTIONS,
    channels: { type: 'string', default: '1' },
  });
  const timing: Timing = timingOf(values);
  const channels = positiveInt(values, 'channels');
  if (channels > timing.connections) fail('--channels must not exceed --connections');
  const wrk = requireWrk();
  const dir = await mkdtemp(join(tmpdir(), 'portaria-bench-decisions-'));
  const children = new ChildSet();
  try {
    const upstream = await startUpstream(children);
    const gateway = await startGateway(children, {
      name: 'Portaria authorizer',
      dir: join(dir, 'gateway'),
      upstream: upstream.info.url,
      overrides: {
        mode: 'authorizer',
        server: { trustedProxies: ['127.0.0.1'] },
        authorizer: {
          host: '127.0.0.1',
          port: 0,
          grpc: { enabled: true, port: 0 },
          cacheDecisions: { enabled: false },
        },
      },
    });
    const { token, authorizerUrl, grpcUrl, adminUrl } = gateway.info;
    if (grpcUrl === '' || authorizerUrl === '')
      throw new Error('the gateway has no decision listeners');
    const nginxUrl = `${authorizerUrl}/nginx`;
    const grpcTarget = grpcUrl.slice('grpc://'.length);
    await expectHttpRefusals(nginxUrl, token);
    await expectGrpcRefusal(grpcTarget, token);

    log(header('decisions', wrk, timing));
    log(
      `gRPC: @grpc/grpc-js load generator, ${channels} HTTP/2 channel${channels === 1 ? '' : 's'}, ${timing.connections} calls in flight; one gateway answers both entries, decision cache off\n`,
    );
    const row = (label: string, url: string): Row => ({
      measured: { target: { label, url, pid: gateway.pid }, samples: [] },
      loadCpu: [],
      answered: 0,
    });
    const http = row(HTTP_LABEL, nginxUrl);
    const grpc = row(
      `gRPC entry: Authorization/Check, ${timing.connections} in flight on ${channels} channel${channels === 1 ? '' : 's'}`,
      grpcUrl,
    );
    const paced = row(`${HTTP_LABEL}, paced to the gRPC row's rate`, nginxUrl);
    const pacing = join(dir, 'paced.lua');
    await writeFile(pacing, PACED);
    const wrkOptions = {
      url: nginxUrl,
      headers: [
        'X-Original-Method: GET',
        `X-Original-URI: ${PATH}`,
        `Authorization: Bearer ${token}`,
      ],
      connections: timing.connections,
      threads: timing.threads,
    };
    /** One wrk row; `delayMs`: each connection waits that long between requests. */
    const measureHttp = async (into: Row, warmupS: number, delayMs?: number): Promise<void> => {
      const options = {
        ...wrkOptions,
        ...(delayMs === undefined ? {} : { script: pacing, scriptArgs: [String(delayMs)] }),
      };
      const warm = await runWrk({ ...options, durationS: warmupS });
      const gatewayBefore = treeCpuUs(gateway.pid);
      const wrkBefore = reapedChildrenCpuUs();
      const result = await runWrk({ ...options, durationS: timing.durationS });
      const gatewayUs = treeCpuUs(gateway.pid) - gatewayBefore;
      const wrkUs = reapedChildrenCpuUs() - wrkBefore;
      const notOk = warm.non2xx + warm.socketErrors + result.non2xx + result.socketErrors;
      into.answered += warm.requests + result.requests;
      const sample: RoundSample = {
        perSecond: result.requestsPerSec,
        p99Ms: result.p99Ms,
        requests: result.requests,
        cpuUsPerRequest: gatewayUs / result.requests,
        clean: notOk === 0,
      };
      into.measured.samples.push(sample);
      into.loadCpu.push(wrkUs / result.requests);
      report(
        into,
        sample,
        notOk === 0 ? '' : `${notOk} answers not an allow (non-2xx or socket errors)`,
      );
    };
    const measureCheck = async (warmupS: number): Promise<void> => {
      const result = await measureGrpc({
        target: grpcTarget,
        token,
        path: PATH,
        inFlight: timing.connections,
        channels,
        warmupS,
        durationS: timing.durationS,
        pid: gateway.pid,
      });
      grpc.answered += result.answered;
      const sample: RoundSample = {
        perSecond: result.perSecond,
        p99Ms: result.p99Ms,
        requests: result.calls,
        cpuUsPerRequest: result.cpuUsPerDecision,
        clean: result.notOk === 0,
      };
      grpc.measured.samples.push(sample);
      grpc.loadCpu.push(result.loadCpuUsPerDecision);
      report(
        grpc,
        sample,
        result.notOk === 0
          ? ''
          : `${result.notOk} answers not an allow (first: ${result.firstNotOk})`,
      );
    };
    let round = 0;
    const report = (row: Row, s: RoundSample, problem: string) => {
      const load = row.loadCpu[row.loadCpu.length - 1] ?? Number.NaN;
      log(
        `round ${round} ${row.measured.target.label}: ${s.perSecond.toFixed(0)}/s, p99 ${s.p99Ms.toFixed(2)} ms, gateway ${s.cpuUsPerRequest.toFixed(1)} µs CPU/decision, load generator ${load.toFixed(1)} µs${problem === '' ? '' : ` — ${problem}`}`,
      );
      if (problem !== '') throw new Error(`round ${round} failed: ${problem}`);
    };
    for (round = 1; round <= timing.rounds; round++) {
      const warmupS = round === 1 ? timing.warmupS : timing.rewarmS;
      // The paced row follows the gRPC row whose rate it offers; the full-load row
      // alternates before and after the pair.
      const pair = async () => {
        await measureCheck(warmupS);
        const rate = grpc.measured.samples[grpc.measured.samples.length - 1]?.perSecond ?? 1;
        await measureHttp(
          paced,
          warmupS,
          Math.max(1, Math.round((1000 * timing.connections) / rate)),
        );
      };
      if (round % 2 === 1) {
        await measureHttp(http, warmupS);
        await pair();
      } else {
        await pair();
        await measureHttp(http, warmupS);
      }
    }
    const counted = Number(await countedRequests(adminUrl));

    log(
      '\n## Decisions asked directly: HTTP entry vs gRPC entry (ratios against the first row; medians of per-round ratios)\n',
    );
    log(resultTable([http.measured, grpc.measured, paced.measured]));
    log('\nCPU µs per decision (medians of rounds):');
    for (const r of [http, grpc, paced]) {
      const gatewayCpu = median(r.measured.samples.map((s) => s.cpuUsPerRequest));
      log(
        `- ${r.measured.target.label}: gateway ${gatewayCpu.toFixed(1)}, load generator ${median(r.loadCpu).toFixed(1)} (${r === grpc ? 'grpc-js' : 'wrk'})`,
      );
    }
    log('');
    log(verdict('gRPC / HTTP entry', grpc.measured, http.measured));
    log(verdict('gRPC / HTTP entry at the same rate', grpc.measured, paced.measured));
    log(
      `\nchecks: every answer an allow; the gateway counted ${counted} decisions (start-up checks included) for ${http.answered + paced.answered + grpc.answered} answers the load generators saw (${http.answered + paced.answered} HTTP, ${grpc.answered} gRPC; wrk leaves its last answers uncounted)`,
    );
    return 0;
  } finally {
    await children.stopAll();
    await rm(dir, { recursive: true, force: true });
  }
}
