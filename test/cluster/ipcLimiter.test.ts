/**
 * The primary's side of a worker's limiter call (`answerLimiterCall`) over the real
 * `LocalLimiter` with a manual clock: a family named by a worker is resolved among the
 * primary's, an unknown one or malformed arguments are answered "no wait" and never
 * throw, a failing limiter is answered undefined (the worker then answers locally). And
 * a worker whose question goes unanswered answers from its own local limiter (the
 * channel drops the question outside a group).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { answerLimiterCall, IpcLimiter } from '../../src/cluster/ipcLimiter.js';
import { WorkerChannel } from '../../src/cluster/workerChannel.js';
import { ManualClock } from '../../src/lib/clock.js';
import {
  type BucketFamily,
  bucketFamily,
  type Limiter,
  type LimiterSettings,
  UNKNOWN_PAIR,
} from '../../src/limits/limiter.js';
import { LocalLimiter } from '../../src/limits/localLimiter.js';

const SETTINGS: LimiterSettings = {
  maxTrackedKeys: 100,
  backoff: { freeFailures: 0, baseDelayMs: 5000, maxDelayMs: 5000, forgetAfterSeconds: 900 },
  knownPairs: true,
};
const CLIENT = bucketFamily('client', { ratePerSecond: 1, burst: 1 }, 'client');
const FAMILIES: ReadonlyMap<string, BucketFamily> = new Map([[CLIENT.name, CLIENT]]);

describe('answerLimiterCall', () => {
  test("a worker's call is answered by the primary's limiter, the family found by its name", async () => {
    const limiter = new LocalLimiter(SETTINGS, new ManualClock());
    const ask = (
      method: 'take' | 'checkBackoff' | 'recordFailure' | 'recordSuccess',
      a: string,
      b: string,
    ) => answerLimiterCall(limiter, FAMILIES, method, [a, b]);
    assert.equal(await ask('take', 'client', 'acme'), 0);
    assert.equal(await ask('take', 'client', 'acme'), 1000);
    assert.equal(await ask('recordFailure', 'acme', '192.0.2.1'), null);
    assert.deepEqual(await ask('checkBackoff', 'acme', '192.0.2.1'), {
      waitMs: 5000,
      known: false,
    });
    assert.equal(await ask('recordSuccess', 'acme', '192.0.2.1'), null);
    assert.deepEqual(await ask('checkBackoff', 'acme', '192.0.2.1'), { waitMs: 0, known: true });
  });

  test('an unknown family is answered 0 every time and takes nothing', async () => {
    const limiter = new LocalLimiter(SETTINGS, new ManualClock());
    for (let i = 0; i < 3; i++) {
      assert.equal(
        await answerLimiterCall(limiter, FAMILIES, 'take', ['partner-quota', 'acme']),
        0,
      );
    }
    assert.equal(limiter.take(CLIENT, 'acme'), 0, "the known family's bucket is untouched");
  });

  test('malformed calls, or no limiter at all: no wait, unknown pair, nothing recorded', async () => {
    const limiter = new LocalLimiter(SETTINGS, new ManualClock());
    const malformed: [string, readonly unknown[]][] = [
      ['take', []],
      ['take', ['client']],
      ['take', [{ name: 'client' }, 'acme']],
      ['checkBackoff', [1, 2]],
      ['recordFailure', [null, '192.0.2.1']],
      ['forget', ['acme', '192.0.2.1']],
    ];
    const answers = await Promise.all(
      malformed.map(([method, args]) =>
        answerLimiterCall(limiter, FAMILIES, method as 'take', args),
      ),
    );
    assert.deepEqual(answers, [0, 0, 0, UNKNOWN_PAIR, null, null]);
    assert.deepEqual(
      await Promise.all([
        answerLimiterCall(null, FAMILIES, 'take', ['client', 'acme']),
        answerLimiterCall(null, FAMILIES, 'checkBackoff', ['acme', '192.0.2.1']),
        answerLimiterCall(null, FAMILIES, 'recordSuccess', ['acme', '192.0.2.1']),
      ]),
      [0, UNKNOWN_PAIR, null],
    );
  });

  test('a limiter that fails is answered undefined (the worker answers locally), never a rejection', async () => {
    const failing: Limiter = {
      take: () => {
        throw new Error('boom');
      },
      checkBackoff: () => Promise.reject(new Error('boom')),
      recordFailure: () => undefined,
      recordSuccess: () => undefined,
      close: () => Promise.resolve(),
    };
    assert.equal(await answerLimiterCall(failing, FAMILIES, 'take', ['client', 'acme']), undefined);
    assert.equal(
      await answerLimiterCall(failing, FAMILIES, 'checkBackoff', ['acme', '192.0.2.1']),
      undefined,
    );
  });
});

describe('IpcLimiter', () => {
  test('calls the primary leaves unanswered are answered by the worker’s own limiter', async (t) => {
    // The answer's timer is unref'd (it must not hold a worker open): this holds the test's.
    const alive = setInterval(() => undefined, 1000);
    t.after(() => clearInterval(alive));
    const limiter = new IpcLimiter(new WorkerChannel(), SETTINGS, new ManualClock());
    assert.deepEqual(
      await Promise.all([
        limiter.take(CLIENT, 'acme'),
        limiter.take(CLIENT, 'acme'),
        limiter.recordFailure('acme', '192.0.2.1'),
      ]),
      [0, 1000, undefined],
    );
    assert.deepEqual(await limiter.checkBackoff('acme', '192.0.2.1'), {
      waitMs: 5000,
      known: false,
    });
  });
});
