/**
 * A group (`server.workers` > 1) writes one log stream: every worker's lines pass through
 * the primary, so under many concurrent requests on every worker each stdout line is one
 * whole JSON object, and every request has its access line. Each line a worker writes
 * names it (`worker`, its cluster id); the primary's own lines do not.
 */
import assert from 'node:assert/strict';
import { appendFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { NOBODY_LISTENS } from '../helpers/process.js';
import { rawRequest } from '../helpers/rawHttp.js';
import {
  accessToken,
  protectedRequests,
  send,
  startGroup,
  startUpstream,
  waitForLines,
} from './groupGateway.js';

const WORKERS = 3;
const REQUESTS = 2000;
const CONNECTIONS = 48;

/** `count` GETs over `connections` keep-alive connections; resolves with the statuses. */
function load(baseUrl: string, token: string, count: number, connections: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  let next = 0;
  const statuses: number[] = [];
  const lane = async () => {
    while (next < count) {
      const i = next++;
      statuses.push(
        await new Promise<number>((resolve, reject) => {
          const req = request(
            `${baseUrl}/v1/orders/${i}?q=${'x'.repeat(i % 200)}`,
            { agent, headers: { authorization: `Bearer ${token}` } },
            (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode ?? 0));
            },
          );
          req.on('error', reject);
          req.end();
        }),
      );
    }
  };
  return Promise.all(Array.from({ length: connections }, lane)).then(() => {
    agent.destroy();
    return statuses;
  });
}

describe('the access log of a group of workers', () => {
  test('lines of every worker arrive whole: each stdout line parses as JSON, one per request', async (t) => {
    const upstream = await startUpstream(t);
    const group = await startGroup(t, WORKERS, {
      upstream: { default: { upstream: upstream.url } },
    });
    const token = await accessToken(group);
    const statuses = await load(group.files.publicUrl, token, REQUESTS, CONNECTIONS);
    assert.deepEqual(new Set(statuses), new Set([200]));
    // Access lines wait up to 50 ms in their batch, then cross the primary.
    const lines = await waitForLines(
      group,
      `${REQUESTS} access lines`,
      (l) => l.log === 'access' && l['http.route'] === 'default',
      REQUESTS,
    );
    assert.equal(lines.length, REQUESTS);
    const ids = new Set(lines.map((l) => l['portaria.request_id']));
    assert.equal(ids.size, REQUESTS, 'one line per request, none repeated');
    // Every line of the stream (not only access lines) is one JSON object.
    const raw = group.stdout();
    assert.ok(raw.endsWith('\n'));
    for (const line of raw.slice(0, -1).split('\n')) {
      assert.doesNotThrow(() => JSON.parse(line), `not one JSON object: ${line.slice(0, 200)}`);
    }
  });

  test("every line a worker writes names the worker: access lines, pino access events and events alike; the primary's own lines do not", async (t) => {
    const upstream = await startUpstream(t);
    const nobody = NOBODY_LISTENS;
    const group = await startGroup(t, WORKERS, {
      upstream: { default: { upstream: upstream.url } },
      routes: [{ id: 'down', prefix: '/v1/down', upstream: nobody }],
      reload: { enabled: false },
    });
    const ids = new Set(
      group
        .lines()
        .filter((l) => l.msg === 'worker started')
        .map((l) => l.worker),
    );
    assert.equal(ids.size, WORKERS);
    const token = await accessToken(group);
    // A new connection per request: node:cluster hands them to every worker in turn.
    const served = 3 * WORKERS;
    assert.deepEqual(new Set(await protectedRequests(group, token, served, 1)), new Set([200]));
    const down = await send(`${group.files.publicUrl}/v1/down/1`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(down.status, 502);
    await rawRequest(
      group.files.publicUrl,
      'GET /v1/live HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n' +
        'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    );
    // A reload that applies (new bytes), on SIGHUP: each worker logs it.
    await appendFile(join(group.dir, 'clients.json'), '\n');
    group.child.kill('SIGHUP');

    const byWorker = (msg: string, count: number) =>
      waitForLines(group, `${count} "${msg}" lines`, (l) => l.msg === msg, count);
    const requests = (await byWorker('request', served + 1)).filter(
      (l) => l['http.route'] === 'default',
    );
    // Each worker's own `listening` (the primary's has `workers`).
    const started = group.lines().filter((l) => l.msg === 'listening' && l.workers === undefined);
    assert.equal(started.length, WORKERS);
    const written = [
      ...started,
      ...requests,
      ...(await byWorker('request failed', 1)),
      ...(await byWorker('upgrade', 1)),
      ...(await byWorker('reloaded', WORKERS)),
    ];
    for (const line of written) {
      assert.ok(ids.has(line.worker), `worker ${String(line.worker)}: ${JSON.stringify(line)}`);
      // Bound once, beside `service`: pino's lines and the hand-written ones alike.
      assert.deepEqual(Object.keys(line).slice(0, 4), ['level', 'time', 'service', 'worker']);
    }
    assert.deepEqual(
      new Set(requests.map((l) => l.worker)),
      ids,
      'every worker answered and named itself',
    );
    assert.deepEqual(new Set(started.map((l) => l.worker)), ids);

    // The primary's own lines name no worker.
    const primary = group
      .lines()
      .filter(
        (l) =>
          (l.msg === 'listening' && l.workers === WORKERS) ||
          l.msg === 'signal received: reloading every worker',
      );
    assert.equal(primary.length, 2);
    for (const line of primary) assert.equal(line.worker, undefined, JSON.stringify(line));
  });
});
