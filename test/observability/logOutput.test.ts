/**
 * The default log output (`outputDestination`), on real descriptors: a pipe is written
 * from the event loop, whole and in order even when the reader is slower than the
 * writer; `flush` calls back once everything is handed to the pipe; a reader that goes
 * away (EPIPE) stops the logging, not the process; a file goes through pino's
 * asynchronous destination.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createReadStream, open, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { createLoggers, droppedWrites, outputDestination } from '../../src/observability/logger.js';
import { accessRecord } from '../helpers/accessRecord.js';
import { startGateway } from '../helpers/fixture.js';
import { waitFor } from '../helpers/wait.js';

const openFd = promisify(open);

interface Flushable {
  write(chunk: string): void;
  flush(callback: (error?: Error) => void): void;
  end(): void;
}

async function fifo(t: { after(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-log-output-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'log.fifo');
  const made = spawnSync('mkfifo', ['-m', '600', path], { encoding: 'utf8' });
  assert.equal(made.status, 0, `mkfifo: ${made.stderr}`);
  return path;
}

/**
 * A FIFO whose reader is open but paused, and the write end's descriptor. (The reader
 * opens first: a FIFO's open waits for the other end.)
 */
async function pausedPipe(t: { after(fn: () => Promise<void>): void }) {
  const path = await fifo(t);
  const reader = createReadStream(path);
  reader.pause();
  const fd = await openFd(path, 'w');
  return { reader, fd };
}

/** Line `i` of the pipe tests (~220 bytes). */
const padded = (i: number) => `{"n":${i},"pad":"${'x'.repeat(200)}"}\n`;

test('a pipe gets every line whole and in order, flush waits for the backlog', async (t) => {
  // The reader is paused: the writer fills the pipe and must queue the rest without blocking.
  const { reader, fd } = await pausedPipe(t);
  const output = outputDestination(fd) as unknown as Flushable;
  t.after(() => output.end());
  assert.equal(typeof output.flush, 'function');
  const lines = 5000;
  for (let i = 0; i < lines; i++) output.write(padded(i));
  // More than a pipe holds (~1 MB against 64 KiB) was accepted without blocking the loop.
  let flushed = false;
  output.flush(() => {
    flushed = true;
  });
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(flushed, false, 'flush waits while the reader has not drained the pipe');
  const chunks: Buffer[] = [];
  reader.on('data', (chunk) => chunks.push(chunk as Buffer));
  reader.resume();
  await waitFor('the flush callback', () => (flushed ? true : undefined), 10_000);
  const expected = Array.from({ length: lines }, (_, i) => padded(i)).join('');
  await waitFor('every byte', () =>
    Buffer.concat(chunks).length >= Buffer.byteLength(expected) ? true : undefined,
  );
  assert.equal(Buffer.concat(chunks).toString('utf8'), expected);
  reader.destroy();
});

test('a reader that stalls: writes beyond the backlog bound are dropped whole and counted', async (t) => {
  const { reader, fd } = await pausedPipe(t);
  const bound = 256 * 1024;
  const output = outputDestination(fd, bound) as unknown as Flushable;
  t.after(() => output.end());
  const lines = 5000; // ~1 MB: four times the bound, plus what the pipe itself holds
  for (let i = 0; i < lines; i++) output.write(padded(i));
  const dropped = droppedWrites(output as never);
  assert.ok(dropped > 0, 'writes were dropped');
  assert.ok(dropped < lines, 'not everything was dropped');
  const chunks: Buffer[] = [];
  reader.on('data', (chunk) => chunks.push(chunk as Buffer));
  reader.resume();
  await new Promise<void>((resolve) => output.flush(() => resolve()));
  let expectedBytes = 0;
  for (let i = 0; i < lines - dropped; i++) expectedBytes += Buffer.byteLength(padded(i));
  await waitFor('the kept lines', () =>
    Buffer.concat(chunks).length >= expectedBytes ? true : undefined,
  );
  const received = Buffer.concat(chunks).toString('utf8').split('\n');
  assert.equal(received.pop(), '');
  // Every line whole, in order; the kept ones are the first writes, up to the bound.
  const numbers = received.map((line) => (JSON.parse(line) as { n: number }).n);
  assert.equal(numbers.length, lines - dropped);
  assert.deepEqual(
    numbers,
    Array.from({ length: numbers.length }, (_, i) => i),
  );
  reader.destroy();
});

test('the gateway counts dropped log writes in its metrics', async (t) => {
  const { reader, fd } = await pausedPipe(t);
  // Registered before the gateway's shutdown: the reader leaves first, so the
  // shutdown's flush does not wait for a reader that never reads.
  t.after(() => reader.destroy());
  const gw = await startGateway(t, { logDestination: outputDestination(fd, 4096) });
  const token = await gw.token();
  // ~600 access lines: more than the pipe itself holds (64 KiB) plus the 4 KiB bound.
  for (let round = 0; round < 30; round++) {
    await Promise.all(
      Array.from({ length: 20 }, () =>
        fetch(`${gw.url}/v1/orders/1`, { headers: { authorization: `Bearer ${token}` } }).then(
          (res) => res.arrayBuffer(),
        ),
      ),
    );
  }
  gw.app.logger.flush();
  const dropped = await waitFor(
    'a dropped write in the metrics',
    async () => {
      const text = await (await fetch(`${gw.adminUrl}/metrics`)).text();
      const value = Number(/^portaria_log_dropped_writes_total (\d+)$/m.exec(text)?.[1] ?? 0);
      return value > 0 ? value : undefined;
    },
    3000,
    50,
  );
  assert.ok(dropped > 0);
});

test('a reader that goes away (EPIPE) ends the logging, not the process', async (t) => {
  const path = await fifo(t);
  const reader = createReadStream(path);
  const fd = await openFd(path, 'w');
  const output = outputDestination(fd) as unknown as Flushable;
  t.after(() => output.end());
  const { logger, access } = createLoggers('info', output);
  logger.info('before');
  await new Promise<void>((resolve) => output.flush(() => resolve()));
  reader.destroy();
  await new Promise<void>((resolve) => reader.once('close', () => resolve()));
  // Written after the reader left: EPIPE, swallowed; later writes are dropped at once.
  for (let i = 0; i < 100; i++) {
    logger.info({ i }, 'after');
    access.request(accessRecord({ id: `r${i}`, clientId: 'acme' }));
  }
  access.flush();
  await new Promise<void>((resolve) => output.flush(() => resolve()));
  await new Promise((resolve) => setTimeout(resolve, 50));
  logger.info('still alive');
  await new Promise<void>((resolve) => output.flush(() => resolve()));
});

test('a file is written through pino’s asynchronous destination', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'portaria-log-output-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'log.jsonl');
  const fd = await openFd(path, 'a');
  const output = outputDestination(fd) as unknown as Flushable;
  t.after(() => output.end());
  assert.equal(output.constructor.name, 'SonicBoom');
  const { logger, access } = createLoggers('info', output);
  logger.info('event');
  access.request(accessRecord({ id: 'r1', durationMs: 1.5, clientId: 'acme' }));
  access.flush();
  logger.info('stopped');
  // flush calls back once every line is in the file (shutdown exits right after it: an
  // earlier write still in flight would land after the lines written at exit).
  await new Promise<void>((resolve) => logger.flush(() => resolve()));
  const lines = readFileSync(path, 'utf8').trim().split('\n');
  assert.deepEqual(
    lines.map((line) => (JSON.parse(line) as { msg: string }).msg),
    ['event', 'request', 'stopped'],
  );
});
