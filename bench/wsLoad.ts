/**
 * WebSocket load generator (wrk cannot speak WebSocket): `connections` clients each run a
 * ping-pong loop — send a message, wait for its echo, send the next — for `durationS`
 * seconds after a `warmupS` warm-up, then it prints round trips per second and p50/p99
 * round-trip latency as one JSON line. It runs in its own process so that its cost, like
 * wrk's, does not land on the process under test.
 *
 *   node dist-test/bench/wsLoad.js --url ws://127.0.0.1:<port>/ws [--token T]
 *        [--connections 50] [--duration 5] [--warmup 2] [--size 64]
 */
import { parseArgs } from 'node:util';
import { WebSocket } from 'ws';
import { percentile } from './lib/stats.js';

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    token: { type: 'string' },
    connections: { type: 'string', default: '50' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '2' },
    size: { type: 'string', default: '64' },
  },
  strict: true,
});
if (values.url === undefined) {
  process.stderr.write('usage: node wsLoad.js --url ws://… [--token T]\n');
  process.exit(2);
}
const url = values.url;
const connections = Number(values.connections);
const durationMs = Number(values.duration) * 1000;
const warmupMs = Number(values.warmup) * 1000;
const message = Buffer.alloc(Number(values.size), 0x61);
const headers: Record<string, string> =
  values.token === undefined ? {} : { authorization: `Bearer ${values.token}` };

let measuring = false;
let stopped = false;
const samples: number[] = [];

function open(): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers, perMessageDeflate: false });
    socket.once('open', () => resolve(socket));
    socket.once('error', reject);
    socket.once('unexpected-response', (_req, res) =>
      reject(new Error(`handshake refused: ${res.statusCode}`)),
    );
  });
}

function pingPong(socket: WebSocket): void {
  let sentAt = 0;
  socket.on('message', () => {
    if (measuring) samples.push(performance.now() - sentAt);
    if (stopped) return;
    sentAt = performance.now();
    socket.send(message);
  });
  sentAt = performance.now();
  socket.send(message);
}

const sockets = await Promise.all(Array.from({ length: connections }, open));
for (const socket of sockets) pingPong(socket);
await new Promise((resolve) => setTimeout(resolve, warmupMs));
measuring = true;
const start = performance.now();
await new Promise((resolve) => setTimeout(resolve, durationMs));
measuring = false;
stopped = true;
const seconds = (performance.now() - start) / 1000;
for (const socket of sockets) socket.terminate();

samples.sort((a, b) => a - b);
process.stdout.write(
  `${JSON.stringify({
    roundTrips: samples.length,
    perSecond: samples.length / seconds,
    p50Ms: percentile(samples, 0.5),
    p99Ms: percentile(samples, 0.99),
  })}\n`,
);
