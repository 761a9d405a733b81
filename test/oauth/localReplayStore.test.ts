import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PortariaError } from '../../src/errors.js';
import { ManualClock } from '../../src/lib/clock.js';
import { LocalReplayStore } from '../../src/oauth/localReplayStore.js';

test('a jti is claimed once per client until its moment, then may be claimed again', () => {
  const clock = new ManualClock(1_000_000);
  const store = new LocalReplayStore(clock);
  assert.equal(store.claim('a', 'j1', 1_060_000), true);
  assert.equal(store.claim('a', 'j1', 1_060_000), false);
  assert.equal(store.claim('b', 'j1', 1_060_000), true, 'another client’s jti is its own');
  clock.set(1_060_000);
  assert.equal(store.claim('a', 'j1', 1_120_000), true);
});

test('(client, jti) pairs that concatenate alike stay apart', () => {
  const store = new LocalReplayStore(new ManualClock(0));
  assert.equal(store.claim('ab', 'c', 10_000), true);
  assert.equal(store.claim('a', 'bc', 10_000), true);
});

test('when full it sweeps expired entries, and refuses (503) rather than forget a live one', () => {
  const clock = new ManualClock(0);
  const store = new LocalReplayStore(clock, 3);
  assert.equal(store.claim('a', '1', 1000), true);
  assert.equal(store.claim('a', '2', 5000), true);
  assert.equal(store.claim('a', '3', 5000), true);
  clock.set(1000);
  assert.equal(store.claim('a', '4', 5000), true, 'the expired entry made room');
  assert.equal(store.size, 3);
  assert.throws(
    () => store.claim('a', '5', 5000),
    (err: unknown) => err instanceof PortariaError && err.status === 503,
  );
  assert.equal(store.claim('a', '2', 5000), false, 'a live entry was kept');
});

test('a small store refuses new jtis while full, says so once, and accepts again once they expire', () => {
  const clock = new ManualClock(1_000_000);
  const full: number[] = [];
  const store = new LocalReplayStore(clock, 2, (maxEntries) => full.push(maxEntries));
  const proofUntil = () => clock.now() + 120_000; // 2 × a 60 s proof window
  assert.equal(store.claim('dpop:k', 'a', proofUntil()), true);
  assert.equal(store.claim('dpop:k', 'b', proofUntil()), true);
  for (const jti of ['c', 'd', 'e']) {
    assert.throws(
      () => store.claim('dpop:k', jti, proofUntil()),
      (err: unknown) => err instanceof PortariaError && err.status === 503,
    );
  }
  assert.deepEqual(full, [2], 'reported once, not per refusal');
  assert.equal(store.claim('dpop:k', 'a', proofUntil()), false, 'a replay is still a replay');
  clock.advance(60_000);
  assert.throws(
    () => store.claim('dpop:k', 'c', proofUntil()),
    PortariaError,
    'nothing expired yet',
  );
  clock.set(1_120_000);
  assert.equal(store.claim('dpop:k', 'c', proofUntil()), true, 'the expired entries made room');
  assert.equal(store.claim('dpop:k', 'd', proofUntil()), true);
  assert.equal(store.size, 2);
  // Full again: a new episode, reported again.
  assert.throws(() => store.claim('dpop:k', 'e', proofUntil()), PortariaError);
  assert.deepEqual(full, [2, 2]);
  assert.throws(() => new LocalReplayStore(clock, 0), RangeError);
});
