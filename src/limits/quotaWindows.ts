/**
 * Calendar windows of a quota: the minute, hour, day or calendar month containing an
 * instant, as wall-clock time in an IANA time zone sees it, as `[startMs, endMs)`.
 *
 * Wall time is read with `Intl.DateTimeFormat` (one formatter per zone, built on first
 * use), so the windows follow the zone's rules: a New York day is 23 or 25 hours on a
 * DST change, an Asia/Kolkata hour starts at :30 UTC, a month is 28 to 31 days. A window
 * whose wall-clock start does not exist (a DST gap at midnight, as in some zones) starts
 * at the first instant of the window that does; one whose start occurs twice (a fall-back
 * at midnight) starts at the first occurrence. Minutes and hours are measured in real
 * time: a repeated fall-back hour is two hour windows; in the one zone whose DST shift
 * is half an hour (Australia/Lord_Howe) the hour windows around a change overlap or
 * leave a gap of 30 minutes. Zone offsets are whole seconds (all of today's are), which
 * the arithmetic assumes.
 */

export type QuotaWindow = 'minute' | 'hour' | 'day' | 'month';

export const QUOTA_WINDOWS: readonly QuotaWindow[] = Object.freeze([
  'minute',
  'hour',
  'day',
  'month',
]);

export interface WindowSpan {
  readonly startMs: number;
  readonly endMs: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** Whether `name` is a time zone this runtime knows (config validation). */
export function isTimeZone(name: string): boolean {
  // Offsets such as `+05:30` are not zone names: a fixed offset has no calendar rules.
  if (name === '' || /^[+-]/.test(name)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** Wall-clock time at `instantMs` in the zone, as if it were UTC (ms, whole seconds). */
function wallOf(formatter: Intl.DateTimeFormat, instantMs: number): number {
  const fields = { year: 0, month: 1, day: 1, hour: 0, minute: 0, second: 0 };
  for (const part of formatter.formatToParts(instantMs)) {
    if (part.type in fields) fields[part.type as keyof typeof fields] = Number(part.value);
  }
  return Date.UTC(
    fields.year,
    fields.month - 1,
    fields.day,
    fields.hour,
    fields.minute,
    fields.second,
  );
}

function offsetAt(formatter: Intl.DateTimeFormat, instantMs: number): number {
  const wholeSecond = Math.floor(instantMs / 1000) * 1000;
  return wallOf(formatter, wholeSecond) - wholeSecond;
}

/**
 * The first instant whose wall time is at or after `wallMs` (the instant of `wallMs`,
 * its first occurrence when repeated, the end of the gap when skipped). `hintMs` is an
 * instant near it, whose offset is the first guess.
 */
function instantOfWall(formatter: Intl.DateTimeFormat, wallMs: number, hintMs: number): number {
  const first = wallMs - offsetAt(formatter, hintMs);
  const second = wallMs - offsetAt(formatter, first);
  const candidates = [first, second, wallMs - offsetAt(formatter, second)]
    .filter((instant) => wallOf(formatter, instant) === wallMs)
    .sort((a, b) => a - b);
  const exact = candidates[0];
  // Repeated wall time: an earlier occurrence sits one offset change before.
  if (exact !== undefined) {
    const earlier = wallMs - offsetAt(formatter, exact - 3 * 3600_000);
    return earlier < exact && wallOf(formatter, earlier) === wallMs ? earlier : exact;
  }
  // Skipped wall time: the transition lies between the two guesses; find its second.
  let low = Math.min(first, second);
  let high = Math.max(first, second);
  while (high - low > 1000) {
    const middle = low + Math.floor((high - low) / 2000) * 1000;
    if (wallOf(formatter, middle) >= wallMs) high = middle;
    else low = middle;
  }
  return high;
}

/** The wall-clock start of the day or month containing wall time `wallMs`, and the next one's. */
function wallBounds(window: 'day' | 'month', wallMs: number): [number, number] {
  const d = new Date(wallMs);
  const y = d.getUTCFullYear();
  const mo = d.getUTCMonth();
  if (window === 'month') return [Date.UTC(y, mo, 1), Date.UTC(y, mo + 1, 1)];
  const day = d.getUTCDate();
  return [Date.UTC(y, mo, day), Date.UTC(y, mo, day + 1)];
}

const UNIT_MS = { minute: 60_000, hour: 3600_000 } as const;

/** Per window and zone, the last span computed: most calls fall in it (two lookups, no key built). */
const lastSpans = new Map<QuotaWindow, Map<string, WindowSpan>>();

/** The `window` of `timeZone` containing `nowMs`. The zone must pass `isTimeZone`. */
export function windowOf(window: QuotaWindow, timeZone: string, nowMs: number): WindowSpan {
  let zones = lastSpans.get(window);
  if (zones === undefined) {
    zones = new Map();
    lastSpans.set(window, zones);
  }
  const last = zones.get(timeZone);
  if (last !== undefined && nowMs >= last.startMs && nowMs < last.endMs) return last;
  const formatter = formatterOf(timeZone);
  const wholeSecond = Math.floor(nowMs / 1000) * 1000;
  const wallNow = wallOf(formatter, wholeSecond);
  let startMs: number;
  let endMs: number;
  if (window === 'minute' || window === 'hour') {
    // Offsets change by whole hours (or half hours): the wall time elapsed in this hour is
    // real time elapsed, and a repeated hour (fall-back) is two hours, not one of two.
    const unit = UNIT_MS[window];
    startMs = wholeSecond - (wallNow % unit);
    endMs = startMs + unit;
  } else {
    const [wallStart, wallEnd] = wallBounds(window, wallNow);
    // A start found after now (the window began inside a gap): never a span without now.
    startMs = Math.min(instantOfWall(formatter, wallStart, nowMs), nowMs);
    endMs = Math.max(instantOfWall(formatter, wallEnd, nowMs), nowMs + 1);
  }
  const span = Object.freeze({ startMs, endMs });
  zones.set(timeZone, span);
  return span;
}
