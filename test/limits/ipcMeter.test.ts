/**
 * The worker's `IpcMeter` and the primary's `PrimaryMeter`. Two real node:cluster workers
 * (`test/helpers/quotaWorker.ts`) check one key at once through the primary, whose one
 * `LocalMeter` counts them together: exactly the limit is allowed. The primary compiles
 * the policy each call carries (a malformed one, or a failing meter, is answered null and
 * reads as unavailable, never a rejection); a worker whose question goes unanswered reads
 * `UNAVAILABLE` (outside a group the channel drops the question).
 */
import assert from 'node:assert/strict';
import cluster, { type Worker } from 'node:cluster';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { IpcMeter, PrimaryMeter } from '../../src/cluster/ipcMeter.js';
import { isPortariaMessage, type WorkerMessage } from '../../src/cluster/messages.js';
import { WorkerChannel } from '../../src/cluster/workerChannel.js';
import { ManualClock } from '../../src/lib/clock.js';
import type { Meter } from '../../src/limits/meter.js';
import { type MeterReading, quotaPolicy, UNAVAILABLE } from '../../src/limits/quotaPolicy.js';

const START = Date.parse('2026-05-04T10:00:00Z');
const DAILY = quotaPolicy('daily', null, { limit: 20, window: 'day', timeZone: 'UTC' });
const BOTH = quotaPolicy(
  'both',
  { ratePerSecond: 1, burst: 2 },
  { limit: 3, window: 'minute', timeZone: 'UTC' },
);

/** A worker's next message of test kind `kind`. */
async function next(worker: Worker, kind: string): Promise<Record<string, unknown>> {
  for (;;) {
    const [message] = (await once(worker, 'message')) as [Record<string, unknown>];
    if (message.test === kind) return message;
  }
}

describe('IpcMeter across two real workers', () => {
  test('50 parallel checks from two workers: exactly the 20 with room are allowed', async (t) => {
    const primary = new PrimaryMeter(100, new ManualClock(START));
    cluster.setupPrimary({
      exec: fileURLToPath(new URL('../helpers/quotaWorker.js', import.meta.url)),
    });
    const workers = [cluster.fork(), cluster.fork()];
    t.after(() => {
      for (const worker of workers) worker.kill();
    });
    for (const worker of workers) {
      worker.on('message', (message: unknown) => {
        if (!isPortariaMessage<WorkerMessage>(message) || message.portaria !== 'quota') return;
        void primary
          .answer(message.method, message.policy, message.key)
          .then((value) => worker.send({ portaria: 'answer', id: message.id, value }));
      });
    }
    await Promise.all(workers.map((worker) => next(worker, 'ready')));
    const answers = workers.map((worker) => next(worker, 'readings'));
    for (const worker of workers) {
      worker.send({ test: 'checks', policy: DAILY, key: 'acme', count: 25 });
    }
    const readings = (await Promise.all(answers)).flatMap(
      (message) => message.readings as MeterReading[],
    );
    assert.equal(readings.length, 50);
    assert.equal(readings.filter((r) => r.unavailable).length, 0);
    const allowed = readings.filter((r) => r.allowed);
    assert.equal(allowed.length, 20);
    assert.deepEqual(
      allowed.map((r) => r.quota?.remaining).sort((a, b) => Number(a) - Number(b)),
      Array.from({ length: 20 }, (_, i) => i),
      'each allowed check saw its own count: the primary serialised them',
    );
    const after = (await primary.answer('peek', DAILY, 'acme')) as MeterReading;
    assert.deepEqual([after.allowed, after.quota?.remaining], [false, 0]);
  });
});

describe('PrimaryMeter', () => {
  test('answers check, peek and reset with the policy the call carries', async () => {
    const primary = new PrimaryMeter(100, new ManualClock(START));
    // As it arrives over IPC: a plain JSON copy, not the worker's frozen value.
    const carried = JSON.parse(JSON.stringify(BOTH));
    const first = (await primary.answer('check', carried, 'acme')) as MeterReading;
    assert.deepEqual([first.allowed, first.quota?.remaining, first.rate?.remaining], [true, 2, 1]);
    assert.equal(
      ((await primary.answer('peek', carried, 'acme')) as MeterReading).quota?.remaining,
      2,
    );
    assert.equal(await primary.answer('reset', carried, 'acme'), true);
    assert.equal(
      ((await primary.answer('peek', BOTH, 'acme')) as MeterReading).quota?.remaining,
      3,
    );
    // A changed definition under the same name (a reload): the counters stay, the new limit applies.
    await primary.answer('check', BOTH, 'acme');
    const raised = { ...carried, quota: { ...carried.quota, limit: 10 } };
    assert.equal(
      ((await primary.answer('peek', raised, 'acme')) as MeterReading).quota?.remaining,
      9,
    );
  });

  test('malformed calls are answered null and count nothing', async () => {
    const primary = new PrimaryMeter(100, new ManualClock(START));
    const malformed: [unknown, unknown, unknown][] = [
      ['check', null, 'acme'],
      ['check', { name: 'x' }, 'acme'],
      ['check', { ...DAILY, quota: { ...DAILY.quota, window: 'week' } }, 'acme'],
      ['check', { ...DAILY, quota: { ...DAILY.quota, timeZone: 'Mars/Olympus' } }, 'acme'],
      ['check', { ...DAILY, name: 'Daily Tier' }, 'acme'],
      ['check', DAILY, 42],
      ['forget', DAILY, 'acme'],
    ];
    for (const [method, policy, key] of malformed) {
      assert.equal(
        await primary.answer(method, policy, key),
        null,
        JSON.stringify([method, policy]),
      );
    }
    assert.equal(
      ((await primary.answer('peek', DAILY, 'acme')) as MeterReading).quota?.remaining,
      20,
    );
  });

  test('a failing meter is answered null, never a rejection', async () => {
    const failing: Meter = {
      check: () => {
        throw new Error('boom');
      },
      peek: () => Promise.reject(new Error('boom')),
      reset: () => Promise.reject(new Error('boom')),
      close: () => Promise.resolve(),
    };
    const primary = new PrimaryMeter(100, new ManualClock(START), failing);
    for (const method of ['check', 'peek', 'reset']) {
      assert.equal(await primary.answer(method, DAILY, 'acme'), null, method);
    }
  });
});

describe('IpcMeter without an answer', () => {
  test('checks and peeks the primary leaves unanswered read UNAVAILABLE; a reset throws', async (t) => {
    // The answer's timer is unref'd (it must not hold a worker open): this holds the test's.
    const alive = setInterval(() => undefined, 1000);
    t.after(() => clearInterval(alive));
    const meter = new IpcMeter(new WorkerChannel(), 50);
    assert.deepEqual(await Promise.all([meter.check(DAILY, 'acme'), meter.peek(DAILY, 'acme')]), [
      UNAVAILABLE,
      UNAVAILABLE,
    ]);
    await assert.rejects(meter.reset(DAILY, 'acme'), /did not confirm/);
  });
});
