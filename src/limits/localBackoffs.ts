/**
 * The failed-secret back-off kept in this process: one table of entries per source
 * address (`addressBackoff.ts` says which entry a check reads and a failure charges),
 * at most `maxEntries` entries in all.
 *
 * Addresses are kept in least-recently-used order (a Map iterates in insertion order, so
 * "touch" is delete + set); when a failure would make the total exceed `maxEntries`, the
 * least recently used other addresses are forgotten whole, first. Forgetting is bounded
 * like `BoundedMap`'s: an evicted address starts over, and evicting one takes newer
 * entries from other addresses, each costing a request from their address buckets. One
 * address holds at most the per-address cap, the overflow entry and its known pairs, so
 * it cannot push the others out by itself. No timers: dead entries count as absent and
 * are dropped when their address's table is full or the address is evicted.
 */
import { type AddressEntries, entryToCharge, entryToCheck } from './addressBackoff.js';
import {
  afterFailure,
  type BackoffRule,
  type BackoffState,
  backoffWaitMs,
} from './failedSecretBackoff.js';

export class LocalBackoffs {
  readonly #addresses = new Map<string, AddressEntries>();
  readonly #maxEntries: number;
  readonly #rule: BackoffRule;
  #entries = 0;

  constructor(maxEntries: number, rule: BackoffRule) {
    this.#maxEntries = maxEntries;
    this.#rule = rule;
  }

  /** Entries held in all (for tests). */
  get size(): number {
    return this.#entries;
  }

  /** Milliseconds `client` must still wait before an attempt from `address` (0: none). */
  waitMs(client: string, address: string, known: boolean, nowMs: number): number {
    const state = entryToCheck(this.#touch(address), client, known, this.#rule, nowMs);
    return backoffWaitMs(state, nowMs);
  }

  /** One more failure of `client` from `address`. */
  recordFailure(client: string, address: string, known: boolean, nowMs: number): void {
    let entries = this.#touch(address);
    if (entries === undefined) {
      entries = new Map<string, BackoffState>();
      this.#addresses.set(address, entries);
    }
    const before = entries.size;
    const name = entryToCharge(entries, client, known, this.#rule, nowMs);
    entries.set(name, afterFailure(entries.get(name), this.#rule, nowMs));
    this.#entries += entries.size - before;
    this.#evictOthers(address);
  }

  /** Accepted credentials: `client`'s own entry at `address` is forgotten (not the overflow). */
  recordSuccess(client: string, address: string): void {
    const entries = this.#addresses.get(address);
    if (entries === undefined || !entries.delete(client)) return;
    this.#entries--;
    if (entries.size === 0) this.#addresses.delete(address);
  }

  /** The address's entries, made the most recently used; undefined when it has none. */
  #touch(address: string): AddressEntries | undefined {
    const entries = this.#addresses.get(address);
    if (entries !== undefined) {
      this.#addresses.delete(address);
      this.#addresses.set(address, entries);
    }
    return entries;
  }

  #evictOthers(keep: string): void {
    for (const [address, entries] of this.#addresses) {
      if (this.#entries <= this.#maxEntries) return;
      if (address === keep) continue;
      this.#addresses.delete(address);
      this.#entries -= entries.size;
    }
  }
}
