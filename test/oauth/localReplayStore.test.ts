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
