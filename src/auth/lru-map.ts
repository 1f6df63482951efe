/**
 * A map that holds at most `capacity` entries and, when full, forgets the least recently used
 * one. A map cleared when full would let anyone who fills it (with many client ids or
 * addresses) wipe what it remembers, lock-outs included; an LRU only loses the stalest entry.
 */
export class LruMap<K, V> {
  readonly #capacity: number;
  // A Map iterates in insertion order: re-inserting on use keeps the least recently used first.
  readonly #entries = new Map<K, V>();

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError('capacity must be a positive integer');
    this.#capacity = capacity;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The value for `key`, which becomes the most recently used. */
  get(key: K): V | undefined {
    if (!this.#entries.has(key)) return undefined;
    const value = this.#entries.get(key) as V;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  /** Stores `value` as the most recently used, evicting the least recently used entry when full. */
  set(key: K, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.#capacity) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
  }

  delete(key: K): boolean {
    return this.#entries.delete(key);
  }
}
