/**
 * Verified-token cache: token text → Principal, bounded by count (LRU eviction).
 *
 * An entry is served only while the token is unexpired by our clock (`exp` strictly in
 * the future, no skew), so a cached entry never outlives the token; past that the
 * token goes through full verification again (where the configured skew applies).
 * It caches signature and claim checks only: revocation is checked on every request.
 *
 * Entries are found by the token's last `KEY_LENGTH` characters (the end of its
 * signature) and served only when the whole stored token equals the one presented.
 * A map keyed by the whole token hashes its ~600 characters on every request (each
 * request's token is a new string, so V8 has no hash stored for it): a lookup cost
 * ~650 ns, against ~150 ns by the short key plus the comparison. Two tokens sharing
 * the key share one slot: the later verified one takes it, and the other is verified
 * again on its next use. Only a fully verified token is ever stored, so a token made to
 * end like another one (a copied signature) can neither be served for it nor displace
 * it without a valid signature of its own. Each token has one spelling (`compactJws.ts`)
 * except an ECDSA signature's (r, n − s) twin, which verifies on its own and gets its own
 * entry with the same principal: nothing here or after it keys a decision on the text.
 *
 * `clear()` (a key left the ring) starts a new generation: a verification that began
 * before it — its key looked up in the old ring, its signature check still running —
 * must not put its result into the fresh cache, so `set` takes the generation read
 * before the verification and drops the entry when it is stale.
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
