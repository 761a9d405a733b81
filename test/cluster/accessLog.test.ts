/**
 * A group (`server.workers` > 1) writes one log stream: every worker's lines pass through
 * the primary, so under many concurrent requests on every worker each stdout line is one
 * whole JSON object, and every request has its access line.
 */
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { describe, test } from 'node:test';
import { accessToken, startGroup, startUpstream, waitForLines } from './groupGateway.js';

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
});
