/**
 * The primary's side of a worker's replay claim (`answerClaim`), over the real
 * `LocalReplayStore` with a manual clock: the store's verdict, or null — which the worker
 * turns into a 503 — when there is no store or it cannot tell. A worker whose question goes
 * unanswered fails closed too (the channel drops it outside a group).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { answerClaim, IpcReplayStore } from '../../src/cluster/ipcReplayStore.js';
import { WorkerChannel } from '../../src/cluster/workerChannel.js';
import { PortariaError } from '../../src/errors.js';
import { ManualClock } from '../../src/lib/clock.js';
import { LocalReplayStore } from '../../src/oauth/localReplayStore.js';

const NOW = Date.UTC(2026, 0, 1);

describe('answerClaim', () => {
  test('a first claim is true, its replay false, and after its time true again', async () => {
    const clock = new ManualClock(NOW);
    const store = new LocalReplayStore(clock);
    assert.equal(await answerClaim(store, 'c', 'j', NOW + 1000), true);
    assert.equal(await answerClaim(store, 'c', 'j', NOW + 1000), false);
    assert.equal(await answerClaim(store, 'other', 'j', NOW + 1000), true, 'per client');
    clock.advance(1000);
    assert.equal(await answerClaim(store, 'c', 'j', NOW + 5000), true);
  });

  test('no store, or a full one: null (the worker answers 503), never "not seen"', async () => {
    const clock = new ManualClock(NOW);
    const full = new LocalReplayStore(clock, 1);
    assert.equal(await answerClaim(full, 'c', 'a', NOW + 60_000), true);
    assert.equal(await answerClaim(full, 'c', 'b', NOW + 60_000), null);
    assert.equal(await answerClaim(null, 'c', 'a', NOW + 60_000), null);
  });
});

describe('IpcReplayStore', () => {
  test('a claim the primary never answers is refused with 503', async (t) => {
    // The answer's timer is unref'd (it must not hold a worker open): this holds the test's.
    const alive = setInterval(() => undefined, 1000);
    t.after(() => clearInterval(alive));
    const store = new IpcReplayStore(new WorkerChannel());
    await assert.rejects(
      store.claim('c', 'j', Date.now() + 60_000),
      (error: unknown) =>
        error instanceof PortariaError &&
        error.status === 503 &&
        error.reason === 'replay-store-unavailable',
    );
  });
});
