import type { Readable } from 'node:stream';

/**
 * Reads exact byte counts from a stream: what a reader of an archive's data object needs, as the
 * store hands it back in chunks of its own size. Holds at most one chunk beyond what was asked.
 */
export class ByteReader {
  #iterator: AsyncIterator<Buffer>;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #done = false;
  /** Bytes handed out or skipped so far. */
  position = 0;

  constructor(stream: Readable | AsyncIterable<Buffer>) {
    this.#iterator = stream[Symbol.asyncIterator]();
  }

  async #fill(n: number): Promise<void> {
    while (this.#pendingBytes < n && !this.#done) {
      const next = await this.#iterator.next();
      if (next.done) {
        this.#done = true;
        break;
      }
      const chunk = Buffer.isBuffer(next.value) ? next.value : Buffer.from(next.value);
      this.#pending.push(chunk);
      this.#pendingBytes += chunk.length;
    }
  }

  /** The next `n` bytes; fewer only when the stream ends first. */
  async read(n: number): Promise<Buffer> {
    await this.#fill(n);
    const [only, ...more] = this.#pending;
    const all = only && more.length === 0 ? only : Buffer.concat(this.#pending);
    const take = Math.min(n, all.length);
    const out = all.subarray(0, take);
    const rest = all.subarray(take);
    this.#pending = rest.length > 0 ? [rest] : [];
    this.#pendingBytes = rest.length;
    this.position += take;
    return out;
  }

  /** Skips `n` bytes (reading them: a stream cannot seek); resolves to how many it skipped. */
  async skip(n: number): Promise<number> {
    let left = n;
    while (left > 0) {
      const got = await this.read(Math.min(left, 1 << 20));
      if (got.length === 0) break;
      left -= got.length;
    }
    return n - left;
  }

  /** Ends the stream early (a reader that found what it needed, or failed). */
  async close(): Promise<void> {
    this.#done = true;
    await this.#iterator.return?.();
  }
}
