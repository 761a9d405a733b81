/**
 * `LocalMeter` through the `Meter` interface with a manual clock: a quota allows exactly
 * its limit per window and starts again in the next one; a bucket allows its burst and
 * refills; with both, a request needs room in each and a refused one consumes nothing;
 * peek and reset; keys and policies independent; memory bounded by `maxKeys`. Answers
 * are values, never promises. And policies: compiled frozen, invalid ones refused.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ManualClock } from '../../src/lib/clock.js';
import { LocalMeter } from '../../src/limits/localMeter.js';
import { quotaPolicy } from '../../src/limits/quotaPolicy.js';

const START = Date.parse('2026-05-04T10:00:00Z');
const HOURLY = quotaPolicy('hourly', null, { limit: 3, window: 'hour', timeZone: 'UTC' });
const BUCKET = quotaPolicy('bucket', { ratePerSecond: 2, burst: 2 }, null);
const BOTH = quotaPolicy(
  'both',
  { ratePerSecond: 1, burst: 2 },
  { limit: 3, window: 'minute', timeZone: 'UTC' },
);

function meter(clock: ManualClock, maxKeys = 100): LocalMeter {
  return new LocalMeter(maxKeys, clock);
}

describe('quotaPolicy', () => {
  test('a compiled policy is frozen, with its parts', () => {
    assert.ok(Object.isFrozen(BOTH) && Object.isFrozen(BOTH.rate) && Object.isFrozen(BOTH.quota));
    assert.deepEqual(BOTH.quota, { limit: 3, window: 'minute', timeZone: 'UTC' });
  });

  test('invalid policies are refused with every problem named', () => {
    assert.throws(() => quotaPolicy('gold', null, null), /needs a rate, a quota or both/);
    assert.throws(
      () => quotaPolicy('Gold Tier', { ratePerSecond: 0, burst: 1.5 }, null),
      /name: .*rate\.perSecond: must be a positive number; rate\.burst: must be a positive integer/,
    );
    assert.throws(
      () => quotaPolicy('gold', null, { limit: 0, window: 'day', timeZone: 'Mars/Olympus' }),
      /quota\.limit: must be a positive integer; quota\.timeZone: not a known IANA time zone/,
    );
  });
});

describe('LocalMeter', () => {
  test('a quota allows exactly its limit in a window, refusals until its end, then anew', () => {
    const clock = new ManualClock(START + 15 * 60_000);
    const m = meter(clock);
    const readings = [1, 2, 3, 4].map(() => m.check(HOURLY, 'acme'));
    assert.deepEqual(
      readings.map((r) => [r.allowed, r.quota?.remaining]),
      [
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0],
      ],
    );
    assert.deepEqual(readings[3], {
      allowed: false,
      retryAfterMs: 45 * 60_000,
      rate: null,
      quota: { limit: 3, remaining: 0, resetSeconds: 2700, windowSeconds: 3600 },
    });
    clock.set(START + 3600_000 - 1);
    assert.equal(m.check(HOURLY, 'acme').allowed, false, 'the last millisecond of the window');
    clock.set(START + 3600_000);
    const next = m.check(HOURLY, 'acme');
    assert.deepEqual(
      [next.allowed, next.quota?.remaining, next.quota?.resetSeconds],
      [true, 2, 3600],
    );
  });

  test('a bucket allows its burst, refuses until the next token, and refills', () => {
    const clock = new ManualClock(START);
    const m = meter(clock);
    assert.deepEqual(m.check(BUCKET, 'acme'), {
      allowed: true,
      retryAfterMs: 0,
      rate: { limit: 2, remaining: 1, resetSeconds: 1 },
      quota: null,
    });
    assert.equal(m.check(BUCKET, 'acme').allowed, true);
    assert.deepEqual(m.check(BUCKET, 'acme'), {
      allowed: false,
      retryAfterMs: 500,
      rate: { limit: 2, remaining: 0, resetSeconds: 1 },
      quota: null,
    });
    clock.advance(499);
    assert.equal(m.check(BUCKET, 'acme').allowed, false);
    clock.advance(1);
    assert.equal(m.check(BUCKET, 'acme').allowed, true);
    clock.advance(60_000);
    assert.equal(m.peek(BUCKET, 'acme').rate?.remaining, 2, 'full again, never above the burst');
  });

  test('with a rate and a quota a request needs room in both; a refusal consumes neither', () => {
    const clock = new ManualClock(START);
    const m = meter(clock);
    assert.equal(m.check(BOTH, 'acme').allowed, true);
    assert.equal(m.check(BOTH, 'acme').allowed, true);
    // The bucket is empty: refused, and the window's counter is not charged.
    const refusedByRate = m.check(BOTH, 'acme');
    assert.deepEqual(
      [refusedByRate.allowed, refusedByRate.retryAfterMs, refusedByRate.quota?.remaining],
      [false, 1000, 1],
    );
    clock.advance(1000);
    assert.equal(m.check(BOTH, 'acme').allowed, true, 'the third of the window');
    clock.advance(5000);
    // The bucket has room, the window does not: refused until the minute ends, no token taken.
    const refusedByQuota = m.check(BOTH, 'acme');
    assert.deepEqual(
      [refusedByQuota.allowed, refusedByQuota.retryAfterMs, refusedByQuota.rate?.remaining],
      [false, 54_000, 2],
    );
    assert.equal(m.peek(BOTH, 'acme').rate?.remaining, 2);
    clock.set(START + 60_000);
    assert.equal(m.check(BOTH, 'acme').allowed, true);
  });

  test('when both parts refuse, the wait is until both have room', () => {
    const clock = new ManualClock(START + 59_500);
    const m = meter(clock);
    const tight = quotaPolicy(
      'tight',
      { ratePerSecond: 0.5, burst: 1 },
      { limit: 1, window: 'minute', timeZone: 'UTC' },
    );
    assert.equal(m.check(tight, 'acme').allowed, true);
    assert.deepEqual(
      [m.check(tight, 'acme').retryAfterMs, m.peek(tight, 'acme').retryAfterMs],
      [2000, 2000],
    );
  });

  test('peek reads without consuming; reset forgets one key of one policy', () => {
    const clock = new ManualClock(START);
    const m = meter(clock);
    const fresh = m.peek(HOURLY, 'acme');
    assert.deepEqual([fresh.allowed, fresh.quota?.remaining], [true, 3]);
    for (let i = 0; i < 3; i++) m.check(HOURLY, 'acme');
    m.check(HOURLY, 'globex');
    m.check(BUCKET, 'acme');
    const spent = m.peek(HOURLY, 'acme');
    assert.deepEqual([spent.allowed, spent.quota?.remaining], [false, 0]);
    assert.equal(m.peek(HOURLY, 'acme').quota?.remaining, 0, 'peeking twice consumed nothing');
    m.reset(HOURLY, 'acme');
    assert.equal(m.peek(HOURLY, 'acme').quota?.remaining, 3);
    assert.equal(m.peek(HOURLY, 'globex').quota?.remaining, 2, 'another key is untouched');
    assert.equal(m.peek(BUCKET, 'acme').rate?.remaining, 1, 'another policy is untouched');
  });

  test('memory is bounded: past maxKeys the least recently used key is forgotten', () => {
    const clock = new ManualClock(START);
    const m = meter(clock, 2);
    m.check(HOURLY, 'a');
    m.check(HOURLY, 'b');
    m.check(HOURLY, 'a');
    m.check(HOURLY, 'c');
    assert.equal(m.size, 2);
    assert.equal(m.peek(HOURLY, 'b').quota?.remaining, 3, 'b, least recent, was forgotten');
    assert.equal(m.peek(HOURLY, 'a').quota?.remaining, 1);
  });

  test('answers are values, never promises', () => {
    const m = meter(new ManualClock(START));
    for (const answer of [m.check(BOTH, 'acme'), m.peek(BOTH, 'acme'), m.reset(BOTH, 'acme')]) {
      assert.equal(answer instanceof Promise, false);
    }
  });
});
