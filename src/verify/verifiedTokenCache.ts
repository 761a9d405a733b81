/**
 * Verified-token cache: token text → Principal, bounded by count (LRU eviction). It caches
 * signature and claim checks only (revocation is checked on every request), and an entry is
 * served only while the token is unexpired by our clock, so it never outlives the token.
 * Entries are found by the token's last `KEY_LENGTH` characters (hashing the whole token
 * cost ~650 ns a lookup) and served only when the whole token matches; `clear()` starts a
 * generation so a verification begun before it cannot refill the cache. Why this is safe:
 * docs/architecture.md.
 */
import { LRUCache } from 'lru-cache';
import type { Principal } from '../domain/principal.js';
import type { Clock } from '../lib/clock.js';

/** Characters of the token's end that find its entry (24 bytes of signature, base64url). */
export const KEY_LENGTH = 32;

interface Entry {
  readonly token: string;
  readonly principal: Principal;
}

function keyOf(token: string): string {
  return token.length > KEY_LENGTH ? token.slice(-KEY_LENGTH) : token;
}

export class VerifiedTokenCache {
  readonly #entries: LRUCache<string, Entry> | null;
  readonly #clock: Clock;
  #generation = 0;

  constructor(capacity: number, clock: Clock) {
    this.#entries = capacity > 0 ? new LRUCache<string, Entry>({ max: capacity }) : null;
    this.#clock = clock;
  }

  get(token: string): Principal | undefined {
    if (this.#entries === null) return undefined;
    const key = keyOf(token);
    const entry = this.#entries.get(key);
    if (entry === undefined || entry.token !== token) return undefined;
    if (entry.principal.expiresAt * 1000 <= this.#clock.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.principal;
  }

  /** Read before a full verification and handed to `set` with its result. */
  get generation(): number {
    return this.#generation;
  }

  set(token: string, principal: Principal, generation: number): void {
    if (generation !== this.#generation) return;
    this.#entries?.set(keyOf(token), { token, principal });
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
