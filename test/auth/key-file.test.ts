/**
 * The key file made on a first start: processes starting together on a fresh data dir (two
 * servers, a server and `vrp db`) all make the data dir and its missing parents without
 * tripping over each other, all get the same whole key, never a file another is still
 * writing, and the file is the key alone, mode 0600, with nothing else left in the directory.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Worker } from 'node:worker_threads';

const root = mkdtempSync(join(tmpdir(), 'vrp-key-file-'));
after(() => rmSync(root, { recursive: true, force: true }));

const WORKERS = 4;
const ROUNDS = 300;

test('loaders starting together on a fresh data dir all get the one key that was made', async () => {
  // Each round is a fresh data dir (not yet made, as on a first start, nor its two parents)
  // that every worker loads the key from at the same moment: they make the directories together
  // too.
  const dirs = Array.from({ length: ROUNDS }, (_, i) => join(root, `round-${i}`, 'state', 'vrp'));
  const signal = new SharedArrayBuffer(8);
  const state = new Int32Array(signal);
  const workers = Array.from(
    { length: WORKERS },
    () =>
      new Worker(new URL('../helpers/key-file-racer.ts', import.meta.url), { workerData: { dirs, signal } }),
  );
  const results = workers.map((w) => once(w, 'message').then(([r]) => r as string[]));
  for (let round = 1; round <= ROUNDS; round++) {
    Atomics.store(state, 0, round);
    Atomics.notify(state, 0);
    // Wait for every worker's load of this round before starting the next.
    for (;;) {
      const done = Atomics.load(state, 1);
      if (done >= round * WORKERS) break;
      await Atomics.waitAsync(state, 1, done).value;
    }
  }
  const byWorker = await Promise.all(results);
  for (const [i, dir] of dirs.entries()) {
    const seen = byWorker.map((r) => r[i]);
    const file = join(dir, 'secret.key');
    const key = readFileSync(file, 'utf8');
    assert.match(key, /^[0-9a-f]{64}\n$/, `round ${i}: the file holds the key alone`);
    assert.deepEqual(seen, Array(WORKERS).fill(key.trim()), `round ${i}: every loader got the file's key`);
    assert.equal(statSync(file).mode & 0o777, 0o600, `round ${i}: mode 0600`);
    assert.deepEqual(readdirSync(dir), ['secret.key'], `round ${i}: nothing else left behind`);
  }
});
