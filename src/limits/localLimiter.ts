/**
 * Limits kept in this process: a token bucket per key in each family (one bounded map per
 * family, made on its first take), the known pairs, and the failure back-off per source
 * address (`LocalBackoffs`). Each holds at most `maxTrackedKeys` entries (least recently
 * seen forgotten first).
 *
 * Forgetting is harmless for buckets (a forgotten bucket comes back full, which is what
 * an idle one would be), bounded for the back-off (see `localBackoffs.ts`), and for a
 * known pair costs only its standing until its next success (marks are made only by
 * accepted credentials, so only legitimate traffic can push them out). No timers: refill
 * and expiry are computed from the injected clock on access, eviction happens on insert.
 * Every answer is a value, never a promise.
 */
import type { Clock } from '../lib/clock.js';
import { BoundedMap } from './boundedMap.js';
import {
  type BucketFamily,
  KNOWN_PAIR_MS,
  type Limiter,
  type LimiterSettings,
  type PairCheck,
  tracksKnownPairs,
  UNKNOWN_PAIR,
} from './limiter.js';
import { backoffEntryKey, pairKey } from './limitKeys.js';
import { LocalBackoffs } from './localBackoffs.js';
import { type BucketState, fullBucket, takeToken } from './tokenBucket.js';

export class LocalLimiter implements Limiter {
  readonly #clock: Clock;
  readonly #maxTrackedKeys: number;
  /** Family name → its buckets. */
  readonly #families = new Map<string, BoundedMap<BucketState>>();
  /** Pair → clock time of its last success. */
  readonly #known: BoundedMap<number> | null;
  readonly #backoffs: LocalBackoffs | null;

  constructor(settings: LimiterSettings, clock: Clock) {
    this.#clock = clock;
    this.#maxTrackedKeys = settings.maxTrackedKeys;
    this.#known = tracksKnownPairs(settings) ? new BoundedMap(settings.maxTrackedKeys) : null;
    this.#backoffs =
      settings.backoff === null
        ? null
        : new LocalBackoffs(settings.maxTrackedKeys, settings.backoff);
  }

  take(family: BucketFamily, key: string): number {
    let buckets = this.#families.get(family.name);
    if (buckets === undefined) {
      buckets = new BoundedMap(this.#maxTrackedKeys);
      this.#families.set(family.name, buckets);
    }
    const nowMs = this.#clock.now();
    let state = buckets.get(key);
    if (state === undefined) {
      state = fullBucket(family.rule, nowMs);
      buckets.set(key, state);
    }
    return takeToken(state, family.rule, nowMs);
  }

  checkBackoff(subject: string, address: string): PairCheck {
    if (this.#known === null) return UNKNOWN_PAIR;
    const now = this.#clock.now();
    const known = this.#isKnown(subject, address, now);
    const waitMs = this.#backoffs?.waitMs(backoffEntryKey(subject), address, known, now) ?? 0;
    return waitMs === 0 && !known ? UNKNOWN_PAIR : { waitMs, known };
  }

  recordFailure(subject: string, address: string): void {
    if (this.#backoffs === null) return;
    const now = this.#clock.now();
    const known = this.#isKnown(subject, address, now);
    this.#backoffs.recordFailure(backoffEntryKey(subject), address, known, now);
  }

  recordSuccess(subject: string, address: string): void {
    this.#backoffs?.recordSuccess(backoffEntryKey(subject), address);
    this.#known?.set(pairKey(subject, address), this.#clock.now());
  }

  async close(): Promise<void> {}

  #isKnown(subject: string, address: string, nowMs: number): boolean {
    const since = this.#known?.get(pairKey(subject, address));
    return since !== undefined && nowMs - since < KNOWN_PAIR_MS;
  }
}
