/**
 * What a lane (scripts/test-lanes.ts) runs: it takes the next test file nobody has taken from
 * the queue and runs it as a suite of its own, named after the file, with the file's tests and
 * top-level hooks (an `after` that removes a data dir) inside; then the next, until none is left.
 * One file at a time, so a test never shares its process with a test of another file running at
 * the same time (mocked timers, the CLI's captured stdout stay safe).
 *
 * A resource costly to make (a browser) may be shared by the files of a lane
 * (test/helpers/lane.ts); the lane ends it once its last file is done.
 *
 * Each test file adds a line to the file VRP_TEST_TIMES names (scripts/test.ts always gives one):
 * its wall time, the CPU time of this process while it ran (threads included: scrypt runs on
 * libuv's), the CPU time of the processes it started (those it waited for, and the lane's
 * browser, whose pages the file drove), in seconds, and its name.
 * That is how the suite's time is measured (docs/testing.md, "Seeing where the time goes"), and how the next run
 * knows in which order to run the files (scripts/test-costs.ts).
 */
import {
  appendFileSync,
  closeSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { after, before, describe } from 'node:test';
import { LANE_ENDINGS } from '../test/helpers/lane.ts';
import { realVmGroup } from './test-lanes.ts';

const timesFile = process.env['VRP_TEST_TIMES'];

/**
 * Runs the files of the queue in `dir` that no other lane has taken, one after another. With
 * `share` (a run filtered by test name or `only`) it runs every `of`-th file from `index` on:
 * Node's test runner drops the tests of a suite added after the first one ran when a name
 * filter is given, so the suites are all added at once.
 */
export async function runQueue(dir: string, share?: { index: number; of: number }): Promise<void> {
  // What the test files share for the lane's whole life (test/helpers/lane.ts) ends after them.
  const endings: (() => Promise<void>)[] = [];
  (globalThis as { [LANE_ENDINGS]?: typeof endings })[LANE_ENDINGS] = endings;
  try {
    await runFiles(dir, share);
  } finally {
    // Not in a root `after` hook: Node runs those once the event loop is empty, which a
    // browser's connection keeps from happening.
    for (const end of endings.splice(0)) await end();
    endOnceIdle();
  }
}

/**
 * How long a lane whose queue is done may stay alive before it is ended: enough for Node's test
 * runner to report the last results, which needs no more than a few turns of the event loop.
 */
const LANE_END_GRACE_MS = 10_000;

/**
 * A lane must end once its queue is done. A test that left a handle open (a listening server,
 * an interval, a socket) would keep it alive, and the whole run waiting for it: after a grace
 * period, the lane names what is still open and exits with a failure instead.
 */
function endOnceIdle(): void {
  setTimeout(() => {
    const open = process.getActiveResourcesInfo().filter((r) => r !== 'TTYWrap');
    console.error(
      `test lane ${process.pid}: its queue is done, yet ${open.length} handle(s) keep it running ` +
        `(${[...new Set(open)].join(', ')}); a test file it ran left something open: ${ran.join(', ')}`,
    );
    process.exit(1);
  }, LANE_END_GRACE_MS).unref();
}

/** The files this lane ran, for the message above. */
const ran: string[] = [];

async function runFiles(dir: string, share?: { index: number; of: number }): Promise<void> {
  const files = JSON.parse(readFileSync(join(dir, 'files.json'), 'utf8')) as [string, string][];
  // What this lane runs now, for the run's watchdog (scripts/test.ts) to name if it hangs.
  const running = join(dir, `running-${process.pid}`);
  try {
    if (share) {
      const mine = files.filter((_, i) => i % share.of === share.index);
      writeFileSync(running, mine.map(([name]) => name).join(', '));
      ran.push(...mine.map(([name]) => name));
      await Promise.all(mine.map(([name, url]) => describeFile(name, url)));
      return;
    }
    const left = new Set(files.keys());
    while (left.size > 0) {
      let tookOne = false;
      for (const i of left) {
        const [name, url] = files[i] ?? ['', ''];
        // One real-VM file of a group at a time across the lanes: its file is skipped while
        // another lane holds the group, and taken later.
        const vmGroup = realVmGroup(name);
        const group = vmGroup && join(dir, `group-${vmGroup}`);
        if (group && !take(group)) continue;
        left.delete(i);
        if (!take(join(dir, `taken-${i}`))) {
          if (group) rmSync(group, { force: true });
          continue;
        }
        tookOne = true;
        writeFileSync(running, name);
        ran.push(name);
        try {
          // Resolves when the suite, its tests and its hooks are done.
          await describeFile(name, url);
        } finally {
          if (group) rmSync(group, { force: true });
        }
        break;
      }
      // Only real-VM files are left, and another lane runs one: wait for it.
      if (!tookOne && left.size > 0) await new Promise((r) => setTimeout(r, 1000));
    }
  } finally {
    rmSync(running, { force: true });
  }
}

/** The test file at `url` as a suite named `name`: its tests and top-level hooks inside. */
function describeFile(name: string, url: string): Promise<void> {
  return describe(name, async () => {
    const times = timesFile ? measure(timesFile, name) : undefined;
    await import(url);
    // Hooks run in the order they were added: this one comes after the file's own.
    if (times) after(times.record);
  });
}

/** Whether this lane got `marker` (a file taken, a group held): creating a file that must not exist is atomic. */
function take(marker: string): boolean {
  try {
    closeSync(openSync(marker, 'wx'));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

/** Starts measuring `name` before its tests; `record` adds its line to `file`. */
function measure(file: string, name: string): { record(): void } {
  let start: Sample | undefined;
  before(() => {
    start = sample();
  });
  return {
    record() {
      const end = sample();
      const s = (n: number) => n.toFixed(2).padStart(7);
      const spent = [end.wall - start!.wall, end.cpu - start!.cpu, end.children - start!.children];
      appendFileSync(file, `${spent.map(s).join(' ')}  ${name}\n`);
    },
  };
}

interface Sample {
  readonly wall: number;
  readonly cpu: number;
  readonly children: number;
}

function sample(): Sample {
  const { user, system } = process.cpuUsage();
  return { wall: performance.now() / 1000, cpu: (user + system) / 1e6, children: childrenCpu() };
}

/**
 * CPU seconds of the processes this one started: those it waited for, and those still running
 * (the lane's browser and its helpers, with the processes they waited for). Linux /proc; 0
 * elsewhere. The difference of two samples is what they spent in between.
 */
function childrenCpu(): number {
  try {
    const stats = new Map<number, string[]>();
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        stats.set(Number(entry), statFields(readFileSync(`/proc/${entry}/stat`, 'utf8')));
      } catch {
        // ended meanwhile
      }
    }
    // The fields after the command name: ppid is the 2nd; utime, stime, cutime and cstime the
    // 12th to 15th, in ticks of 1/100 s.
    const own = stats.get(process.pid);
    let ticks = own ? Number(own[13]) + Number(own[14]) : 0;
    const descendants = new Set([process.pid]);
    for (let grew = true; grew; ) {
      grew = false;
      for (const [pid, f] of stats) {
        if (descendants.has(pid) || !descendants.has(Number(f[1]))) continue;
        descendants.add(pid);
        grew = true;
        ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
      }
    }
    return ticks / 100;
  } catch {
    return 0;
  }
}

function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}
