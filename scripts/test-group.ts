/**
 * What a group file (scripts/test-groups.ts) runs: each test file as a suite of its own, named
 * after the file, its tests and top-level hooks inside it, one file after another.
 *
 * With VRP_TEST_TIMES=<file>, each test file adds a line to <file>: its wall time, the CPU time
 * of this process while it ran (threads included: scrypt runs on libuv's), the CPU time of the
 * processes it started and waited for, in seconds, and its name. That is how the suite's time
 * is measured (README.md, "Development").
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { after, before, describe } from 'node:test';

const timesFile = process.env['VRP_TEST_TIMES'];

/** `entries`: [name shown in the report, file URL to import]. */
export function describeFiles(entries: readonly (readonly [string, string])[]): void {
  for (const [name, url] of entries) {
    describe(name, async () => {
      if (timesFile) {
        let start: Sample | undefined;
        before(() => {
          start = sample();
        });
        await import(url);
        // Registered after the file's own hooks, so it runs after them, and counts them.
        after(() => {
          const end = sample();
          const s = (n: number) => n.toFixed(2).padStart(7);
          const line = `${s(end.wall - start!.wall)} ${s(end.cpu - start!.cpu)} ${s(end.children - start!.children)}  ${name}\n`;
          appendFileSync(timesFile, line);
        });
        return;
      }
      await import(url);
    });
  }
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

/** CPU seconds of the children this process waited for (Linux /proc; 0 elsewhere). */
function childrenCpu(): number {
  try {
    // Fields after the command name: cutime and cstime are the 14th and 15th, in clock ticks (100/s).
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return 0;
  }
}
