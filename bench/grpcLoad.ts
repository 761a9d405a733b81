/**
 * gRPC load generator for Envoy's ext_authz `envoy.service.auth.v3.Authorization/Check`
 * (wrk cannot speak gRPC): a @grpc/grpc-js client on the gateway's own protos, `channels`
 * HTTP/2 connections, `inFlight` calls kept in flight (each slot sends the next call as
 * its answer arrives, as a wrk connection does). It runs in its own process so that its
 * cost, like wrk's, does not land on the process under test, and reports it apart.
 *
 * Every call sends the same CheckRequest, shaped as Envoy's HTTP filter builds it (method,
 * path, host, scheme, protocol, lower-case headers with the pseudo-headers and the
 * Authorization), serialised once: like wrk's fixed request bytes, so the generator spends
 * its CPU on the calls, not on re-encoding one message. Each answer is decoded and counted
 * as an allow only when the RPC is OK, `status.code` is OK and it holds `ok_response`.
 *
 * Protocol (bench/lib/grpcMeasure.ts reads it): after the warm-up one JSON line
 * `{ "measuring": true }`; `duration` seconds later one line with the result (calls
 * answered in the window, their rate, p50/p99, and every non-allow counted, warm-up
 * included); then it waits for the calls still in flight (at most 5 s), prints the calls
 * answered in all and the non-allows again (the tail included), and exits.
 *
 *   node dist-test/bench/grpcLoad.js --target 127.0.0.1:<port> --token T [--path /v1/orders/42]
 *        [--in-flight 50] [--channels 1] [--duration 5] [--warmup 2]
 */

import { parseArgs } from 'node:util';
import { Client, credentials, type ServiceError } from '@grpc/grpc-js';
import { serviceClient } from '../src/authorizer/envoyProtos.js';
import { percentile } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    target: { type: 'string' },
    token: { type: 'string' },
    path: { type: 'string', default: '/v1/orders/42' },
    'in-flight': { type: 'string', default: '50' },
    channels: { type: 'string', default: '1' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '2' },
  },
  strict: true,
});
if (values.target === undefined || values.token === undefined) {
  process.stderr.write('usage: node grpcLoad.js --target 127.0.0.1:<port> --token T\n');
  process.exit(2);
}
const inFlight = Number(values['in-flight']);
const channelCount = Number(values.channels);
const durationMs = Number(values.duration) * 1000;
const warmupMs = Number(values.warmup) * 1000;
const path = values.path;

const METHOD = '/envoy.service.auth.v3.Authorization/Check';
const { Check } = serviceClient('authorization').service;
if (Check === undefined) throw new Error('the Authorization service has no Check method');
const decode = Check.responseDeserialize as (bytes: Buffer) => CheckAnswer;

interface CheckAnswer {
  readonly status?: { readonly code?: number } | null;
  readonly ok_response?: object | null;
  readonly denied_response?: { readonly status?: { readonly code?: unknown } | null } | null;
}

const host = 'api.example.com';
const request = Check.requestSerialize({
  attributes: {
    source: { address: { socket_address: { address: '203.0.113.7', port_value: 51234 } } },
    destination: { address: { socket_address: { address: '10.0.0.2', port_value: 8443 } } },
    request: {
      http: {
        method: 'GET',
        path,
        host,
        scheme: 'https',
        protocol: 'HTTP/1.1',
        headers: {
          ':authority': host,
          ':method': 'GET',
          ':path': path,
          ':scheme': 'https',
          accept: '*/*',
          'user-agent': 'curl/8.5.0',
          'x-forwarded-proto': 'https',
          authorization: `Bearer ${values.token}`,
        },
      },
    },
  },
});

const channels = Array.from(
  { length: channelCount },
  () =>
    new Client(values.target as string, credentials.createInsecure(), {
      // A connection per channel: grpc-js shares one per target otherwise.
      'grpc.use_local_subchannel_pool': 1,
      // The generator's own bookkeeping, off so that its CPU goes into the calls.
      'grpc.enable_channelz': 0,
      'grpc.enable_retries': 0,
    }),
);
await Promise.all(
  channels.map(
    (client) =>
      new Promise<void>((resolve, reject) =>
        client.waitForReady(Date.now() + 10_000, (error) =>
          error === undefined || error === null ? resolve() : reject(error),
        ),
      ),
  ),
);

let measuring = false;
let stopped = false;
let outstanding = 0;
let answered = 0;
const latencies: number[] = [];
const notOk = { rpcErrors: 0, denied: 0, other: 0 };
let firstNotOk: string | undefined;

function countNotOk(kind: keyof typeof notOk, what: string): void {
  notOk[kind]++;
  firstNotOk ??= what;
}

const identity = (bytes: Buffer) => bytes;

function send(client: Client): void {
  const sentAt = performance.now();
  outstanding++;
  client.makeUnaryRequest(
    METHOD,
    identity,
    decode,
    request,
    (error: ServiceError | null, answer?: CheckAnswer) => {
      outstanding--;
      answered++;
      if (measuring) latencies.push(performance.now() - sentAt);
      if (error !== null) {
        countNotOk('rpcErrors', `RPC failed: ${error.code} ${error.details}`);
      } else if (answer?.denied_response) {
        countNotOk('denied', `denied, HTTP ${String(answer.denied_response.status?.code)}`);
      } else if ((answer?.status?.code ?? 0) !== 0 || !answer?.ok_response) {
        countNotOk('other', `status ${String(answer?.status?.code)} without ok_response`);
      }
      if (!stopped) send(client);
    },
  );
}

for (let slot = 0; slot < inFlight; slot++) send(channels[slot % channels.length] as Client);
await new Promise((resolve) => setTimeout(resolve, warmupMs));
measuring = true;
process.stdout.write(`${JSON.stringify({ measuring: true })}\n`);
const start = performance.now();
await new Promise((resolve) => setTimeout(resolve, durationMs));
measuring = false;
stopped = true;
const seconds = (performance.now() - start) / 1000;
latencies.sort((a, b) => a - b);
process.stdout.write(
  `${JSON.stringify({
    calls: latencies.length,
    perSecond: latencies.length / seconds,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    ...notOk,
    firstNotOk: firstNotOk ?? null,
  })}\n`,
);
const drainUntil = Date.now() + 5000;
while (outstanding > 0 && Date.now() < drainUntil) {
  await new Promise((resolve) => setTimeout(resolve, 10));
}
for (const client of channels) client.close();
process.stdout.write(`${JSON.stringify({ answered, ...notOk, firstNotOk: firstNotOk ?? null })}\n`);
process.exit(0);
