/**
 * The access log gathers lines and hands them to the destination in batches (at most
 * 50 ms late, or every 64 KiB), whole, in order, with pino's field layout; `flush()`
 * (called at shutdown) hands over the rest at once.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { createLoggers } from '../../src/observability/logger.js';
import { accessRecord } from '../helpers/accessRecord.js';
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
  access.request(accessRecord({ id: 'r1', durationMs: 1.5, clientId: 'acme' }));
  access.request(
    accessRecord({
      id: 'r2',
      method: 'POST',
      routeId: 'token',
      urlPath: '/v1/authentication/accesstoken',
      status: 401,
      durationMs: 0.25,
      reason: 'bad-secret',
    }),
  );
  assert.deepEqual(writes, [], 'nothing written per line');
  access.flush();
  assert.equal(writes.length, 1, 'one write for the batch');
  const lines = (writes[0] ?? '').split('\n');
  assert.equal(lines.pop(), '', 'every line ends with a newline');
  const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.deepEqual(
    parsed.map(({ time, ...rest }) => {
      assert.match(time as string, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      return rest;
    }),
    [
      {
        level: 'info',
        service: 'portaria',
        log: 'access',
        'portaria.request_id': 'r1',
        'http.request.method': 'GET',
        'http.route': 'orders',
        'url.path': '/v1/orders/1',
        'http.response.status_code': 200,
        'portaria.duration_ms': 1.5,
        'http.request.size': 0,
        'http.response.size': 0,
        'portaria.client_id': 'acme',
        msg: 'request',
      },
      {
        level: 'info',
        service: 'portaria',
        log: 'access',
        'portaria.request_id': 'r2',
        'http.request.method': 'POST',
        'http.route': 'token',
        'url.path': '/v1/authentication/accesstoken',
        'http.response.status_code': 401,
        'portaria.duration_ms': 0.25,
        'http.request.size': 0,
        'http.response.size': 0,
        'portaria.reason': 'bad-secret',
        msg: 'request',
      },
    ],
  );
});

test('a batch is written by itself within its delay, and at once when it is large', async () => {
  const { writes, destination } = capture();
  const { access } = createLoggers('info', destination);
  access.request(accessRecord({ id: 'late' }));
  await waitFor('the timed batch', () => (writes.length === 1 ? true : undefined), 1000, 5);
  for (let i = 0; i < 1000; i++) access.request(accessRecord({ id: `r${i}`, clientId: 'acme' }));
  assert.ok(writes.length >= 2, 'a full batch is written without waiting');
  access.flush();
  const all = writes
    .join('')
    .split('\n')
    .filter((line) => line !== '');
  assert.equal(all.length, 1001);
  assert.deepEqual(
    all
      .slice(1)
      .map((line) => (JSON.parse(line) as Record<string, unknown>)['portaria.request_id']),
    Array.from({ length: 1000 }, (_, i) => `r${i}`),
  );
});

test('multi-byte client ids across batch boundaries arrive whole', () => {
  const { writes, destination } = capture();
  const { access } = createLoggers('info', destination);
  const wide = 'é€😀'.repeat(25);
  for (let i = 0; i < 2000; i++) access.request(accessRecord({ id: `r${i}`, clientId: wide }));
  access.request(accessRecord({ id: 'last' }));
  access.flush();
  assert.ok(writes.length > 3, 'several batches');
  for (const write of writes) assert.ok(write.endsWith('\n'), 'every write ends on a line end');
  const lines = writes
    .join('')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.equal(lines.length, 2001);
  assert.ok(
    lines
      .slice(0, 2000)
      .every(
        (line, i) => line['portaria.request_id'] === `r${i}` && line['portaria.client_id'] === wide,
      ),
  );
  assert.equal(lines[2000]?.['portaria.request_id'], 'last');
});

test('plain lines and lines with Latin-1 or wider characters alternate in a batch, all as UTF-8', () => {
  const { writes, destination } = capture();
  const { access } = createLoggers('info', destination);
  // 'é' and 'ÿ' are one byte per character in V8's Latin-1 strings, two in UTF-8.
  const values = ['plain', 'café', 'ÿ', 'plain-again', '€', 'done'];
  for (const clientId of values)
    access.request(accessRecord({ clientId, urlPath: `/${clientId}` }));
  access.flush();
  const text = Buffer.concat(writes.map((write) => Buffer.from(write, 'utf8'))).toString('utf8');
  const lines = text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  assert.deepEqual(
    lines.map((line) => [line['portaria.client_id'], line['url.path']]),
    values.map((value) => [value, `/${value}`]),
  );
});

test('client ids that need escaping stay valid JSON', () => {
  const { writes, destination } = capture();
  const { access } = createLoggers('info', destination);
  const odd = 'partner "x"\\\n\u00e9';
  access.request(accessRecord({ clientId: odd }));
  access.flush();
  assert.equal((JSON.parse(writes[0] ?? '') as Record<string, unknown>)['portaria.client_id'], odd);
});

test('after stopBatching() (shutdown) every line is written at once', () => {
  const { writes, destination } = capture();
  const { access } = createLoggers('info', destination);
  access.request(accessRecord({ id: 'before' }));
  access.stopBatching();
  assert.equal(writes.length, 1, 'the gathered batch is written');
  access.request(accessRecord({ id: 'after' }));
  assert.equal(writes.length, 2, 'a later line does not wait for a timer');
  assert.match(writes[1] ?? '', /"portaria.request_id":"after"/);
});
