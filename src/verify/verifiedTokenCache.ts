/**
 * Verified-token cache: token → Principal, bounded by count (least recently used evicted).
 * It caches signature and claim checks only (revocation is checked on every request), and
 * an entry is served only while the token is unexpired by our clock, so it never outlives
 * the token. Entries are found by the SHA-256 digest of the whole presented token and
 * served only when all 32 octets equal the stored ones: the entry holds 32 octets instead
 * of the token's several hundred, and a forged header or payload in front of a cached
 * token's signature has another digest. `clear()` starts a generation so a verification
 * begun before it cannot refill the cache.
 *
 * Only a fully verified token is stored, so a token is served for another only with a
 * second preimage of SHA-256 (a cache keyed by the signature alone would serve a forged
 * header and payload carrying a copied signature). Unexpired means `exp` in the future,
 * without skew; past it the token is verified again, where the skew applies. An ECDSA
 * twin, (r, n − s), verifies on its own and gets its own entry with the same principal:
 * nothing here or after keys a decision on the token's text.
 *
 * Layout (bench/RESULTS.md, "verified-token cache memory"): one slot number per entry, indexing parallel typed arrays
 * (the digests, the recency list) and one array of principals, with an open-addressing
 * table from digest to slot. Apart from the principal, an entry costs no object on the
 * heap: about 60 octets, most of them outside it.
 */
import { hash } from 'node:crypto';
import type { Principal } from '../domain/principal.js';
import type { Clock } from '../lib/clock.js';

/** Octets of a SHA-256 digest. */
const DIGEST = 32;
/** The digest as 32-bit words, compared a word at a time. */
const WORDS = DIGEST / 4;
/** No slot: the end of the recency list, an empty table cell (cells hold slot + 1). */
const NONE = -1;

/** The whole token's digest, one character per octet: a cache keyed by a part of it would serve a forged rest. */
function digestOf(token: string): string {
  return hash('sha256', token, 'binary');
}

/**
 * Word `i` of a digest held as text (one character per octet). Stored digests are written
 * with it too, so the comparison does not depend on the platform's byte order. Word 0
 * also picks the table cell (SHA-256 output is uniform).
 */
function wordOf(digest: string, i: number): number {
  const at = i * 4;
  return (
    digest.charCodeAt(at) |
    (digest.charCodeAt(at + 1) << 8) |
    (digest.charCodeAt(at + 2) << 16) |
    (digest.charCodeAt(at + 3) << 24)
  );
}

/** Whether the stored digest at `base` (in words) is exactly `digest`. */
function sameDigest(words: Int32Array, base: number, digest: string): boolean {
  for (let i = 0; i < WORDS; i++) {
    if (words[base + i] !== wordOf(digest, i)) return false;
  }
  return true;
}

export class VerifiedTokenCache {
  readonly #capacity: number;
  readonly #clock: Clock;
  /** `WORDS` words of digest per slot, written and read through `wordOf` alone. */
  readonly #words: Int32Array;
  /** The recency list, most recent at `#newest`; `#older` also chains the free slots. */
  readonly #older: Int32Array;
  readonly #newer: Int32Array;
  readonly #principals: (Principal | undefined)[] = [];
  /** Slot + 1 per cell, 0 for empty; a power of two at least twice the capacity (load ≤ ½). */
  #table: Int32Array;
  readonly #mask: number;
  #newest = NONE;
  #oldest = NONE;
  /** Slots never used yet start here; freed ones are chained from `#free`. */
  #unused = 0;
  #free = NONE;
  #size = 0;
  #generation = 0;

  constructor(capacity: number, clock: Clock) {
    this.#capacity = Math.max(0, Math.floor(capacity));
    this.#clock = clock;
    // Typed arrays are zeroed lazily by the system: a large capacity costs little until filled.
    this.#words = new Int32Array(this.#capacity * WORDS);
    this.#older = new Int32Array(this.#capacity);
    this.#newer = new Int32Array(this.#capacity);
    let cells = 2;
    while (cells < this.#capacity * 2) cells *= 2;
    this.#table = new Int32Array(this.#capacity > 0 ? cells : 0);
    this.#mask = cells - 1;
  }

  get(token: string): Principal | undefined {
    if (this.#capacity === 0) return undefined;
    const slot = this.#find(digestOf(token));
    if (slot === NONE) return undefined;
    const principal = this.#principals[slot] as Principal;
    if (principal.expiresAt * 1000 <= this.#clock.now()) {
      this.#remove(slot);
      return undefined;
    }
    if (slot !== this.#newest) {
      this.#unlink(slot);
      this.#pushNewest(slot);
    }
    return principal;
  }

  /** Read before a full verification and handed to `set` with its result. */
  get generation(): number {
    return this.#generation;
  }

  set(token: string, principal: Principal, generation: number): void {
    if (generation !== this.#generation || this.#capacity === 0) return;
    const digest = digestOf(token);
    let slot = this.#find(digest);
    if (slot !== NONE) {
      this.#principals[slot] = principal;
      this.#unlink(slot);
      this.#pushNewest(slot);
      return;
    }
    if (this.#size === this.#capacity) this.#remove(this.#oldest);
    if (this.#free !== NONE) {
      slot = this.#free;
      this.#free = this.#older[slot] as number;
      this.#principals[slot] = principal;
    } else {
      slot = this.#unused++;
      this.#principals.push(principal);
    }
    const base = slot * WORDS;
    for (let i = 0; i < WORDS; i++) this.#words[base + i] = wordOf(digest, i);
    let cell = wordOf(digest, 0) & this.#mask;
    while (this.#table[cell] !== 0) cell = (cell + 1) & this.#mask;
    this.#table[cell] = slot + 1;
    this.#pushNewest(slot);
    this.#size++;
  }

  /** Forgets every entry (after a key ring change: a removed key's tokens must re-verify). */
  clear(): void {
    this.#generation++;
    if (this.#size === 0 && this.#unused === 0) return;
    this.#table = new Int32Array(this.#table.length);
    this.#principals.length = 0;
    this.#newest = NONE;
    this.#oldest = NONE;
    this.#unused = 0;
    this.#free = NONE;
    this.#size = 0;
  }

  get size(): number {
    return this.#size;
  }

  /** The slot holding exactly `digest`, or `NONE`. */
  #find(digest: string): number {
    const table = this.#table;
    const digests = this.#words;
    for (let cell = wordOf(digest, 0) & this.#mask; ; cell = (cell + 1) & this.#mask) {
      const slot = (table[cell] as number) - 1;
      if (slot === NONE) return NONE;
      if (sameDigest(digests, slot * WORDS, digest)) return slot;
    }
  }

  /** The cell a stored slot's digest starts probing at. */
  #home(slot: number): number {
    return (this.#words[slot * WORDS] as number) & this.#mask;
  }

  /** Empties `slot`: out of the table (closing the probe run behind it), the list and the principals. */
  #remove(slot: number): void {
    const table = this.#table;
    const mask = this.#mask;
    let hole = this.#home(slot);
    while (table[hole] !== slot + 1) hole = (hole + 1) & mask;
    // Backward-shift deletion: move up every later entry of the run whose home is not
    // between the hole and itself, so no lookup stops early at the emptied cell.
    for (let cell = (hole + 1) & mask; table[cell] !== 0; cell = (cell + 1) & mask) {
      const home = this.#home((table[cell] as number) - 1);
      const stays = hole <= cell ? hole < home && home <= cell : hole < home || home <= cell;
      if (!stays) {
        table[hole] = table[cell] as number;
        hole = cell;
      }
    }
    table[hole] = 0;
    this.#unlink(slot);
    this.#principals[slot] = undefined;
    this.#older[slot] = this.#free;
    this.#free = slot;
    this.#size--;
  }

  #unlink(slot: number): void {
    const older = this.#older[slot] as number;
    const newer = this.#newer[slot] as number;
    if (newer === NONE) this.#newest = older;
    else this.#older[newer] = older;
    if (older === NONE) this.#oldest = newer;
    else this.#newer[older] = newer;
  }

  #pushNewest(slot: number): void {
    this.#older[slot] = this.#newest;
    this.#newer[slot] = NONE;
    if (this.#newest === NONE) this.#oldest = slot;
    else this.#newer[this.#newest] = slot;
    this.#newest = slot;
  }
}
