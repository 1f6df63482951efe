/**
 * A worker thread of test/auth/key-file.test.ts: for each data dir it is given, it waits for the
 * round's start (shared with the other workers), loads the master key there as a starting
 * process does, and reports the key or the error's message.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { loadMasterKey } from '../../src/auth/keys.ts';

const { dirs, signal } = workerData as { dirs: string[]; signal: SharedArrayBuffer };
// [0]: the round the main thread has started; [1]: how many loads have finished.
const state = new Int32Array(signal);
const results: string[] = [];
for (let round = 1; round <= dirs.length; round++) {
  while (Atomics.load(state, 0) < round) Atomics.wait(state, 0, round - 1);
  try {
    results.push(loadMasterKey(undefined, dirs[round - 1]!).toString('hex'));
  } catch (err) {
    results.push(`error: ${(err as Error).message}`);
  }
  Atomics.add(state, 1, 1);
  Atomics.notify(state, 1);
}
parentPort!.postMessage(results);
