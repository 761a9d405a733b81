/**
 * Calendar windows through `windowOf`: each case names the zone, the window and the
 * instant, and states the window's bounds in UTC (DST days of 23 and 25 hours, month
 * ends, a leap February, a zone whose hours start at :30 UTC, a day whose midnight does
 * not exist). And time zone names: known ones pass, others are refused.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isTimeZone, type QuotaWindow, windowOf } from '../../src/limits/quotaWindows.js';

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

const CASES: [string, QuotaWindow, string, string, string][] = [
  // [zone, window, now, start, end]
  ['UTC', 'minute', '2026-05-04T10:20:30.500Z', '2026-05-04T10:20:00Z', '2026-05-04T10:21:00Z'],
  ['UTC', 'hour', '2026-05-04T10:00:00Z', '2026-05-04T10:00:00Z', '2026-05-04T11:00:00Z'],
  ['UTC', 'day', '2026-05-04T23:59:59.999Z', '2026-05-04T00:00:00Z', '2026-05-05T00:00:00Z'],
  // New York spring forward (2026-03-08, 02:00 → 03:00): a 23-hour day.
  [
    'America/New_York',
    'day',
    '2026-03-08T12:00:00Z',
    '2026-03-08T05:00:00Z',
    '2026-03-09T04:00:00Z',
  ],
  // Fall back (2026-11-01, 02:00 → 01:00): a 25-hour day.
  [
    'America/New_York',
    'day',
    '2026-11-01T12:00:00Z',
    '2026-11-01T04:00:00Z',
    '2026-11-02T05:00:00Z',
  ],
  // The repeated 01:00 hour counts as two hours, each an hour long.
  [
    'America/New_York',
    'hour',
    '2026-11-01T05:30:00Z',
    '2026-11-01T05:00:00Z',
    '2026-11-01T06:00:00Z',
  ],
  [
    'America/New_York',
    'hour',
    '2026-11-01T06:30:00Z',
    '2026-11-01T06:00:00Z',
    '2026-11-01T07:00:00Z',
  ],
  // Kolkata is UTC+05:30: its hours start at :30 UTC.
  ['Asia/Kolkata', 'hour', '2026-03-08T05:15:00Z', '2026-03-08T04:30:00Z', '2026-03-08T05:30:00Z'],
  ['Asia/Kolkata', 'day', '2026-03-08T20:00:00Z', '2026-03-08T18:30:00Z', '2026-03-09T18:30:00Z'],
  // Calendar months: 31 days, 30 days, a leap February, a common February, the year's end.
  ['UTC', 'month', '2026-01-31T23:59:59Z', '2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z'],
  ['UTC', 'month', '2026-04-01T00:00:00Z', '2026-04-01T00:00:00Z', '2026-05-01T00:00:00Z'],
  ['UTC', 'month', '2028-02-29T12:00:00Z', '2028-02-01T00:00:00Z', '2028-03-01T00:00:00Z'],
  ['UTC', 'month', '2027-02-15T12:00:00Z', '2027-02-01T00:00:00Z', '2027-03-01T00:00:00Z'],
  ['UTC', 'month', '2026-12-31T23:00:00Z', '2026-12-01T00:00:00Z', '2027-01-01T00:00:00Z'],
  // A New York month containing the spring forward: one hour short of 31 days.
  [
    'America/New_York',
    'month',
    '2026-03-31T12:00:00Z',
    '2026-03-01T05:00:00Z',
    '2026-04-01T04:00:00Z',
  ],
  // Just before New York midnight, in UTC already the next day.
  [
    'America/New_York',
    'month',
    '2026-05-01T03:59:59Z',
    '2026-04-01T04:00:00Z',
    '2026-05-01T04:00:00Z',
  ],
  // Santiago springs forward at midnight (2026-09-06 00:00 → 01:00): the day starts at 01:00.
  [
    'America/Santiago',
    'day',
    '2026-09-06T12:00:00Z',
    '2026-09-06T04:00:00Z',
    '2026-09-07T03:00:00Z',
  ],
];

describe('windowOf', () => {
  for (const [zone, window, now, start, end] of CASES) {
    test(`${zone} ${window} at ${now} is [${start}, ${end})`, () => {
      const span = windowOf(window, zone, Date.parse(now));
      assert.deepEqual([iso(span.startMs), iso(span.endMs)], [start, end]);
    });
  }

  test('the next window starts where the last one ended, across a DST change', () => {
    let now = Date.parse('2026-03-07T12:00:00Z');
    const lengths: number[] = [];
    for (let i = 0; i < 3; i++) {
      const span = windowOf('day', 'America/New_York', now);
      lengths.push((span.endMs - span.startMs) / 3600_000);
      assert.ok(span.startMs <= now && now < span.endMs);
      assert.equal(windowOf('day', 'America/New_York', span.endMs).startMs, span.endMs);
      now = span.endMs;
    }
    assert.deepEqual(lengths, [24, 23, 24]);
  });
});

describe('isTimeZone', () => {
  test('IANA zone names pass', () => {
    for (const name of ['UTC', 'Europe/Lisbon', 'America/New_York', 'Asia/Kolkata']) {
      assert.equal(isTimeZone(name), true, name);
    }
  });

  test('unknown names, offsets and the empty string are refused', () => {
    for (const name of ['', 'Mars/Olympus_Mons', 'Europe/Lisbo', '+05:30', '-03:00', 'UTC+1']) {
      assert.equal(isTimeZone(name), false, name);
    }
  });
});
