/**
 * Reads by key that arrive together go to the database together. Under load many requests are
 * parsed in one turn of the event loop, and each would make its own round trip to PostgreSQL
 * for one row; a batch collects the keys asked for until the loop's check phase (setImmediate:
 * after the I/O callbacks of this turn, so every request read in it is included) and reads all
 * of them in one statement. One key alone takes the single-row read, as before.
 */
export interface ReadBatch<K, R> {
  get(key: K): Promise<R | undefined>;
}

export function createReadBatch<K, R>(o: {
  /** The read of one row, for a batch of one. */
  readonly one: (key: K) => Promise<R | undefined>;
  /** The read of many: the rows found, in any order (a missing row is simply absent). */
  readonly many: (keys: readonly K[]) => Promise<readonly R[]>;
  /** Whether `row` is the answer for `key` (the check includes everything the key names). */
  readonly matches: (row: R, key: K) => boolean;
  /** Most keys per statement; more wait for the next batch (default 100). */
  readonly max?: number;
}): ReadBatch<K, R> {
  const max = o.max ?? 100;
  type Waiting = { key: K; resolve: (r: R | undefined) => void; reject: (e: unknown) => void };
  const waiting: Waiting[] = [];

  function flush(): void {
    const batch = waiting.splice(0, max);
    if (waiting.length > 0) setImmediate(flush);
    void read(batch);
  }

  /**
   * An async function: a read that throws before it returns its promise (node:sqlite's are
   * synchronous) rejects its keys' promises, where it was thrown out of the setImmediate and
   * ended the process.
   */
  async function read(batch: readonly Waiting[]): Promise<void> {
    try {
      if (batch.length === 1) {
        const [w] = batch as [Waiting];
        w.resolve(await o.one(w.key));
        return;
      }
      const rows = await o.many(batch.map((w) => w.key));
      for (const w of batch) w.resolve(rows.find((r) => o.matches(r, w.key)));
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }

  return {
    get(key) {
      return new Promise((resolve, reject) => {
        if (waiting.length === 0) setImmediate(flush);
        waiting.push({ key, resolve, reject });
      });
    },
  };
}
