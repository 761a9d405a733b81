/**
 * Verified-token cache: token text → Principal, bounded by count (LRU eviction).
 *
 * An entry is served only while the token is unexpired by our clock (`exp` strictly in
 * the future, no skew), so a cached entry never outlives the token; past that the
 * token goes through full verification again (where the configured skew applies).
 * It caches signature and claim checks only: revocation is checked on every request.
 *
 * `clear()` (a key left the ring) starts a new generation: a verification that began
 * before it — its key looked up in the old ring, its signature check still running —
 * must not put its result into the fresh cache, so `set` takes the generation read
 * before the verification and drops the entry when it is stale.
 */
import { LRUCache } from 'lru-cache';
import type { Principal } from '../domain/principal.js';
import type { Clock } from '../lib/clock.js';

export class VerifiedTokenCache {
  readonly #entries: LRUCache<string, Principal> | null;
  readonly #clock: Clock;
  #generation = 0;

  constructor(capacity: number, clock: Clock) {
    this.#entries = capacity > 0 ? new LRUCache<string, Principal>({ max: capacity }) : null;
    this.#clock = clock;
  }

  get(token: string): Principal | undefined {
    if (this.#entries === null) return undefined;
    const principal = this.#entries.get(token);
    if (principal === undefined) return undefined;
    if (principal.expiresAt * 1000 <= this.#clock.now()) {
      this.#entries.delete(token);
      return undefined;
    }
    return principal;
  }

  /** Read before a full verification and handed to `set` with its result. */
  get generation(): number {
    return this.#generation;
  }

  set(token: string, principal: Principal, generation: number): void {
    if (generation !== this.#generation) return;
    this.#entries?.set(token, principal);
  }

  /** Forgets every entry (after a key ring change: a removed key's tokens must re-verify). */
  clear(): void {
    this.#generation++;
    this.#entries?.clear();
  }

  get size(): number {
    return this.#entries?.size ?? 0;
  }
}
