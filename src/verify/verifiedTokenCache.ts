/**
 * Verified-token cache: token → Principal, bounded by count (LRU eviction). It caches
 * signature and claim checks only (revocation is checked on every request), and an entry is
 * served only while the token is unexpired by our clock, so it never outlives the token.
 * Entries are found by the token's last `KEY_LENGTH` characters and served only when the
 * SHA-256 digest of the whole presented token equals the stored one: the entry holds 32
 * octets instead of the token's several hundred. `clear()` starts a generation so a
 * verification begun before it cannot refill the cache. Why this is safe:
 * docs/architecture.md.
 */
import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Principal } from '../domain/principal.js';
import type { Clock } from '../lib/clock.js';

/** Characters of the token's end that find its entry (24 bytes of signature, base64url). */
export const KEY_LENGTH = 32;

interface Entry {
  /** SHA-256 of the whole token, as a 32-character latin1 (`binary`) string. */
  readonly digest: string;
  readonly principal: Principal;
}

function keyOf(token: string): string {
  return token.length > KEY_LENGTH ? token.slice(-KEY_LENGTH) : token;
}

/** The whole token's digest: a cache keyed by a part of it would serve a forged rest. */
function digestOf(token: string): string {
  return hash('sha256', token, 'binary');
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
    if (entry === undefined || entry.digest !== digestOf(token)) return undefined;
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
    if (generation !== this.#generation || this.#entries === null) return;
    // A copy of the key: a slice would keep the whole token alive (V8 sliced strings).
    const key = Buffer.from(keyOf(token), 'latin1').toString('latin1');
    this.#entries.set(key, { digest: digestOf(token), principal });
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
