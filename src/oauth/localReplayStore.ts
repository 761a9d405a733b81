/**
 * The replay store of one process: a `Map` from (client, jti) to the moment the entry may
 * be forgotten, bounded at `maxEntries`. When full, expired entries are swept; if it is
 * still full, a new assertion is refused (503) rather than an entry still guarding
 * against a replay being dropped. With `assertionMaxLifetimeSeconds` 300 and the default
 * 100 000 entries, that takes over 300 accepted assertions a second, beyond what the
 * token limits let through by default. Replicas do not share it: use `redis` with
 * several.
 */
import type { Clock } from '../lib/clock.js';
import {
  type AssertionReplayStore,
  replayKey,
  replayStoreUnavailable,
} from './assertionReplayStore.js';

export const DEFAULT_MAX_ENTRIES = 100_000;

export class LocalReplayStore implements AssertionReplayStore {
  readonly #seen = new Map<string, number>();
  readonly #clock: Clock;
  readonly #maxEntries: number;

  constructor(clock: Clock, maxEntries = DEFAULT_MAX_ENTRIES) {
    this.#clock = clock;
    this.#maxEntries = maxEntries;
  }

  get size(): number {
    return this.#seen.size;
  }

  claim(clientId: string, jti: string, untilMs: number): boolean {
    const key = replayKey(clientId, jti);
    const now = this.#clock.now();
    const until = this.#seen.get(key);
    if (until !== undefined && until > now) return false;
    if (until === undefined && this.#seen.size >= this.#maxEntries) {
      this.#sweep(now);
      if (this.#seen.size >= this.#maxEntries) throw replayStoreUnavailable();
    }
    this.#seen.set(key, untilMs);
    return true;
  }

  #sweep(now: number): void {
    for (const [key, until] of this.#seen) if (until <= now) this.#seen.delete(key);
  }

  close(): Promise<void> {
    this.#seen.clear();
    return Promise.resolve();
  }
}
