/**
 * The access log gathers lines and hands them to the destination in batches (at most
 * 50 ms late, or every 64 KiB), whole, in order, with pino's field layout; `flush()`
 * (called at shutdown) hands over the rest at once.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { createLoggers } from '../../src/observability/logger.js';
import { waitFor } from '../helpers/wait.js';

function capture() {
  const writes: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      writes.push(chunk.toString('utf8'));
      callback();
    },
  });
  return { writes, destination };
}

test('access lines are batched, whole and in order, and flush() writes the rest', async () => {
  const { writes, destination } = capture();
  const { access } = createLoggers('info', destination);
  access.request('r1', 'GET', 'orders', 200, 1.5, 'acme', undefined);
  access.request('r2', 'POST', 'token', 401, 0.25, undefined, 'bad-secret');
  assert.deepEqual(writes, [], 'nothing written per line');
  access.flush();
  assert.equal(writes.length, 1, 'one write for the batch');
  const lines = (writes[0] ?? '').split('\n');
  assert.equal(lines.pop(), '', 'every line ends with a newline');
  const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.deepEqual(
    parsed.map(({ time, ...rest }) => {
      assert.equal(typeof time, 'number');
      return rest;
    }),
    [
      {
        level: 'info',
        service: 'portaria',
        log: 'access',
        reqId: 'r1',
        method: 'GET',
        route: 'orders',
        status: 200,
        durationMs: 1.5,
        clientId: 'acme',
        msg: 'request',
      },
      {
        level: 'info',
        service: 'portaria',
        log: 'access',
        reqId: 'r2',
        method: 'POST',
        route: 'token',
        status: 401,
        durationMs: 0.25,
        reason: 'bad-secret',
        msg: 'request',
      },
    ],
  );
});

test('a batch is written by itself within its delay, and at once when it is large', async () => {
  const { writes, destination } = capture();
  const { access } = createLoggers('info', destination);
  access.request('late', 'GET', 'orders', 200, 1, undefined, undefined);
  await waitFor('the timed batch', () => (writes.length === 1 ? true : undefined), 1000, 5);
  for (let i = 0; i < 1000; i++)
    access.request(`r${i}`, 'GET', 'orders', 200, 1, 'acme', undefined);
  assert.ok(writes.length >= 2, 'a full batch is written without waiting');
  access.flush();
  const all = writes
    .join('')
    .split('\n')
    .filter((line) => line !== '');
  assert.equal(all.length, 1001);
  assert.deepEqual(
    all.slice(1).map((line) => (JSON.parse(line) as { reqId: string }).reqId),
    Array.from({ length: 1000 }, (_, i) => `r${i}`),
  );
});

test('multi-byte client ids across batch boundaries, and a line larger than a batch, arrive whole', () => {
  const { writes, destination } = capture();
  const { access } = createLoggers('info', destination);
  const wide = 'é€😀'.repeat(40);
  for (let i = 0; i < 2000; i++) access.request(`r${i}`, 'GET', 'orders', 200, 1, wide, undefined);
  const huge = 'x'.repeat(30_000);
  access.request('huge', 'GET', 'orders', 200, 1, huge, undefined);
  access.request('last', 'GET', 'orders', 200, 1, undefined, undefined);
  access.flush();
  assert.ok(writes.length > 3, 'several batches');
  for (const write of writes) assert.ok(write.endsWith('\n'), 'every write ends on a line end');
  const lines = writes
    .join('')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { reqId: string; clientId?: string });
  assert.equal(lines.length, 2002);
  assert.ok(
    lines.slice(0, 2000).every((line, i) => line.reqId === `r${i}` && line.clientId === wide),
  );
  assert.equal(lines[2000]?.clientId, huge);
  assert.equal(lines[2001]?.reqId, 'last');
});

test('client ids that need escaping stay valid JSON', () => {
  const { writes, destination } = capture();
  const { access } = createLoggers('info', destination);
  const odd = 'partner "x"\\\n\u00e9';
  access.request('r', 'GET', 'orders', 200, 1, odd, undefined);
  access.flush();
  assert.equal((JSON.parse(writes[0] ?? '') as { clientId: string }).clientId, odd);
});

test('after stopBatching() (shutdown) every line is written at once', () => {
  const { writes, destination } = capture();
  const { access } = createLoggers('info', destination);
  access.request('before', 'GET', 'orders', 200, 1, undefined, undefined);
  access.stopBatching();
  assert.equal(writes.length, 1, 'the gathered batch is written');
  access.request('after', 'GET', 'orders', 200, 1, undefined, undefined);
  assert.equal(writes.length, 2, 'a later line does not wait for a timer');
  assert.match(writes[1] ?? '', /"reqId":"after"/);
});
