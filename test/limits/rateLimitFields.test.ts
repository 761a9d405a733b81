/**
 * `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-11) from real
 * readings of a `LocalMeter`, parsed back with the `structured-headers` package (RFC 9651
 * Lists): one String item per part of the policy, `q`/`w` and `r`/`t` Integers with the
 * reading's values, and no field for a reading without parts (store unavailable).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseList } from 'structured-headers';
import { ManualClock } from '../../src/lib/clock.js';
import { LocalMeter } from '../../src/limits/localMeter.js';
import { quotaPolicy, UNAVAILABLE } from '../../src/limits/quotaPolicy.js';
import { rateLimitFields } from '../../src/limits/rateLimitFields.js';

/** A parsed List as `[item, {param: value}]`, checking that every item is a String. */
function parsed(field: string): [string, Record<string, unknown>][] {
  return parseList(field).map(([item, params]) => {
    assert.equal(typeof item, 'string', `${String(item)} is a String item`);
    return [item as string, Object.fromEntries(params)];
  });
}

const GOLD = quotaPolicy(
  'gold',
  { ratePerSecond: 5, burst: 20 },
  { limit: 1000, window: 'day', timeZone: 'America/New_York' },
);

describe('rateLimitFields', () => {
  test('a policy with a rate and a quota: one item per part, values from the reading', () => {
    // 2026-03-08 is New York's 23-hour day; 10:00 local (EDT) is 14:00 UTC, 14 hours before its end.
    const clock = new ManualClock(Date.parse('2026-03-08T14:00:00Z'));
    const meter = new LocalMeter(10, clock);
    meter.check(GOLD, 'acme');
    const fields = rateLimitFields(GOLD, meter.check(GOLD, 'acme'));
    assert.ok(fields !== null);
    assert.deepEqual(parsed(fields.policy), [
      ['gold-rate', { q: 20, w: 4 }],
      ['gold-quota', { q: 1000, w: 23 * 3600 }],
    ]);
    assert.deepEqual(parsed(fields.limit), [
      ['gold-rate', { r: 18, t: 1 }],
      ['gold-quota', { r: 998, t: 14 * 3600 }],
    ]);
  });

  test("one policy across days of different lengths: each answer states its own day's w", () => {
    // New York: 2026-03-08 has 23 hours, 2026-03-09 24 (the field is kept per policy).
    const clock = new ManualClock(Date.parse('2026-03-08T14:00:00Z'));
    const meter = new LocalMeter(10, clock);
    const short = rateLimitFields(GOLD, meter.check(GOLD, 'acme'));
    clock.set(Date.parse('2026-03-09T14:00:00Z'));
    const next = rateLimitFields(GOLD, meter.check(GOLD, 'acme'));
    clock.set(Date.parse('2026-03-08T15:00:00Z'));
    const back = rateLimitFields(GOLD, meter.check(GOLD, 'acme'));
    assert.deepEqual(
      [short, next, back].map((f) => parsed(f?.policy ?? '')[1]),
      [
        ['gold-quota', { q: 1000, w: 23 * 3600 }],
        ['gold-quota', { q: 1000, w: 24 * 3600 }],
        ['gold-quota', { q: 1000, w: 23 * 3600 }],
      ],
    );
    // Another policy of the same name and shape but other numbers is never served the first's.
    const silver = quotaPolicy(
      'gold',
      { ratePerSecond: 1, burst: 2 },
      { limit: 10, window: 'day', timeZone: 'America/New_York' },
    );
    const other = rateLimitFields(silver, meter.check(silver, 'acme'));
    assert.deepEqual(parsed(other?.policy ?? ''), [
      ['gold-rate', { q: 2, w: 2 }],
      ['gold-quota', { q: 10, w: 23 * 3600 }],
    ]);
  });

  test('a refused request: r=0, and t equals the wait of the part that refused', () => {
    const clock = new ManualClock(Date.parse('2026-05-04T10:00:30Z'));
    const meter = new LocalMeter(10, clock);
    const slow = quotaPolicy('slow', { ratePerSecond: 0.1, burst: 1 }, null);
    meter.check(slow, 'acme');
    const refused = meter.check(slow, 'acme');
    const fields = rateLimitFields(slow, refused);
    assert.ok(fields !== null);
    assert.deepEqual(parsed(fields.policy), [['slow-rate', { q: 1, w: 10 }]]);
    assert.deepEqual(parsed(fields.limit), [['slow-rate', { r: 0, t: 10 }]]);
    assert.equal(refused.retryAfterMs, 10_000);

    const monthly = quotaPolicy('monthly', null, { limit: 1, window: 'month', timeZone: 'UTC' });
    meter.check(monthly, 'acme');
    const spent = meter.check(monthly, 'acme');
    const monthFields = rateLimitFields(monthly, spent);
    assert.ok(monthFields !== null);
    // May has 31 days; from 10:00:30 on the 4th, 27 days, 13 h 59 min 30 s remain.
    const untilEnd = 27 * 86400 + 13 * 3600 + 59 * 60 + 30;
    assert.deepEqual(parsed(monthFields.policy), [['monthly-quota', { q: 1, w: 31 * 86400 }]]);
    assert.deepEqual(parsed(monthFields.limit), [['monthly-quota', { r: 0, t: untilEnd }]]);
    assert.equal(spent.retryAfterMs, untilEnd * 1000);
  });

  test('an unavailable reading has no fields', () => {
    assert.equal(rateLimitFields(GOLD, UNAVAILABLE), null);
  });
});
