/**
 * A Map bounded by count with least-recently-used eviction, for the local token limits.
 *
 * Reading an entry (`get`) or writing it (`set`) makes it the most recent; inserting a
 * new key into a full map first drops the least recently used one. There are no timers:
 * callers store their own timestamps and treat stale values as absent (lazy expiry), and
 * eviction happens only on insert. A Map iterates in insertion order, so "move to the
 * end" is delete + set and the oldest entry is the first key.
 *
 * The few lines the limits need, with no clock of its own, so the injected Clock stays
 * the only time source.
 */
export class BoundedMap<V> {
  readonly #entries = new Map<string, V>();
  readonly #capacity: number;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError('capacity must be a positive integer');
    }
    this.#capacity = capacity;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: string): V | undefined {
    const value = this.#entries.get(key);
    if (value === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  set(key: string, value: V): void {
    if (this.#entries.has(key)) {
      this.#entries.delete(key);
    } else if (this.#entries.size >= this.#capacity) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, value);
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }

  has(key: string): boolean {
    return this.#entries.has(key);
  }
}
