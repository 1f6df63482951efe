/**
 * `--heap-profile DIR` (bench/run.ts): loaded into each server process with `--import`, it runs
 * V8's sampling heap profiler over the process's life, counting every object sampled whether or
 * not a garbage collection took it since (Node's own `--heap-prof` keeps only the survivors, which
 * says nothing of what the collector spends its time on), and writes
 * `DIR/allocations-PID.heapprofile` when the process exits. `node bench/profile-summary.ts FILE`
 * prints where the bytes were allocated. For the findings only: the server's code is the same
 * with or without it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';

const dir = process.env['VRP_BENCH_HEAP_PROFILE'];
if (dir) {
  const session = new Session();
  session.connect();
  // A session in the process answers at once, within post().
  const post = (method: string, params?: object) => {
    let out: unknown;
    session.post(method, params ?? {}, (err, result) => {
      if (err) throw err;
      out = result;
    });
    return out;
  };
  post('HeapProfiler.enable');
  post('HeapProfiler.startSampling', {
    samplingInterval: 16 * 1024,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  process.on('exit', () => {
    const { profile } = post('HeapProfiler.stopSampling') as { profile: unknown };
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `allocations-${process.pid}.heapprofile`), JSON.stringify(profile));
  });
}
