/**
 * Quota counters kept in this process (one process, or a group's primary answering every
 * worker). One entry per (policy, key) in a bounded map: at most `maxKeys`, the least
 * recently used forgotten first. Forgetting a full bucket or a spent window costs
 * nothing (they mean the same as no entry); forgetting a live one gives that key a fresh
 * start, so `maxKeys` must exceed the keys active in a window (the lead's config default
 * and the metric of evictions are the caller's). No timers: refill and rollover are
 * computed from the injected clock on access. Every answer is a value, never a promise.
 */
import type { Clock } from '../lib/clock.js';
import { BoundedMap } from './boundedMap.js';
import type { Meter } from './meter.js';
import { bringUpToDate, consume, hasRoom, type MeterState, readingOf } from './meterState.js';
import type { MeterReading, QuotaPolicy } from './quotaPolicy.js';
import { type WindowSpan, windowOf } from './quotaWindows.js';

/** The bound when the config names none (the primary's meter, until the lead wires it). */
export const DEFAULT_MAX_QUOTA_KEYS = 100_000;

export class LocalMeter implements Meter {
  readonly #clock: Clock;
  readonly #entries: BoundedMap<MeterState>;

  constructor(maxKeys: number, clock: Clock) {
    this.#clock = clock;
    this.#entries = new BoundedMap(maxKeys);
  }

  check(policy: QuotaPolicy, key: string): MeterReading {
    const nowMs = this.#clock.now();
    const span = spanOf(policy, nowMs);
    const entryKey = entryKeyOf(policy, key);
    // `get` makes the entry the most recent: an allowed request updates it in place.
    const stored = this.#entries.get(entryKey);
    const state = bringUpToDate(policy, stored, span, nowMs);
    const allowed = hasRoom(policy, state);
    // A refused request consumes nothing: the stored state stays as it was.
    if (allowed) {
      consume(policy, state);
      if (stored === undefined) this.#entries.set(entryKey, state);
      else {
        stored.tokens = state.tokens;
        stored.updatedMs = state.updatedMs;
        stored.windowStartMs = state.windowStartMs;
        stored.count = state.count;
      }
    }
    return readingOf(policy, state, span, nowMs, allowed);
  }

  peek(policy: QuotaPolicy, key: string): MeterReading {
    const nowMs = this.#clock.now();
    const span = spanOf(policy, nowMs);
    const state = bringUpToDate(policy, this.#entries.get(entryKeyOf(policy, key)), span, nowMs);
    return readingOf(policy, state, span, nowMs, hasRoom(policy, state));
  }

  reset(policy: QuotaPolicy, key: string): void {
    this.#entries.delete(entryKeyOf(policy, key));
  }

  /** How many (policy, key) entries are held (for a gauge, and the bound's tests). */
  get size(): number {
    return this.#entries.size;
  }

  async close(): Promise<void> {}
}

/** The current window of `policy`'s quota, null without one. */
export function spanOf(policy: QuotaPolicy, nowMs: number): WindowSpan | null {
  return policy.quota === null ? null : windowOf(policy.quota.window, policy.quota.timeZone, nowMs);
}

function entryKeyOf(policy: QuotaPolicy, key: string): string {
  // A policy name has no space (quotaPolicy.ts): the pair is unambiguous.
  return `${policy.name} ${key}`;
}
