/**
 * Verified-token cache: token → Principal, bounded by count (LRU eviction). It caches
 * signature and claim checks only (revocation is checked on every request), and an entry is
 * served only while the token is unexpired by our clock, so it never outlives the token.
 * Entries are found by a number made of the token's last `KEY_LENGTH` characters (the end
 * of its signature; a small integer costs the map no key object) and served only when the
 * SHA-256 digest of the whole presented token equals the stored one: the entry holds 32
 * octets instead of the token's several hundred. `clear()` starts a generation so a
 * verification begun before it cannot refill the cache. Why this is safe:
 * docs/architecture.md.
 */
import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Principal } from '../domain/principal.js';
import type { Clock } from '../lib/clock.js';
import { base64urlValue } from './compactJws.js';

/** Characters of the token's end that find its entry (up to 36 bits of signature). */
export const KEY_LENGTH = 6;

/** 2^31 − 1, a prime: the slot numbers stay V8 small integers. */
const SLOTS = 2_147_483_647;

interface Entry {
  /** SHA-256 of the whole token, as a 32-character latin1 (`binary`) string. */
  readonly digest: string;
  readonly principal: Principal;
}

/**
 * The slot of a token: the 6-bit values of its last `KEY_LENGTH` base64url characters as
 * one number, modulo a prime under 2^31 (a V8 small integer: no allocation per lookup, no
 * key object per entry). Tokens ending alike share a slot; two others about once in 2^31
 * (an ES256 signature's last character holds 2 bits), and then merely take turns. Other
 * characters count as zero: such a token was never verified.
 */
function keyOf(token: string): number {
  let key = 0;
  for (let i = Math.max(0, token.length - KEY_LENGTH); i < token.length; i++) {
    key = key * 64 + base64urlValue(token.charCodeAt(i));
  }
  return key % SLOTS;
}

/** The whole token's digest: a cache keyed by a part of it would serve a forged rest. */
function digestOf(token: string): string {
  return hash('sha256', token, 'binary');
}

export class VerifiedTokenCache {
  readonly #entries: LRUCache<number, Entry> | null;
  readonly #clock: Clock;
  #generation = 0;

  constructor(capacity: number, clock: Clock) {
    this.#entries = capacity > 0 ? new LRUCache<number, Entry>({ max: capacity }) : null;
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
    this.#entries.set(keyOf(token), { digest: digestOf(token), principal });
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
