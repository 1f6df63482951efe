import { readdirSync, readFileSync } from 'node:fs';

export interface LeftProcess {
  readonly pid: number;
  readonly command: string;
}

/**
 * Live processes whose environment has `name=value` (Linux /proc; elsewhere none are found).
 * Children inherit the environment, so this finds everything a test run started, however deep.
 */
export function leftBehind(name: string, value: string): LeftProcess[] {
  const marker = `${name}=${value}`;
  const found: LeftProcess[] = [];
  for (const pid of livePids()) {
    if (Number(pid) === process.pid) continue;
    try {
      const env = readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0');
      if (!env.includes(marker)) continue;
      const command = readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ').trim();
      found.push({ pid: Number(pid), command: command || '(zombie)' });
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/** The ids of the live processes (Linux /proc; elsewhere none). */
function livePids(): string[] {
  try {
    return readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return [];
  }
}

/** The live processes whose parent is `parent`. */
export function childrenOf(parent: number): number[] {
  return livePids()
    .filter((pid) => {
      try {
        return Number(/^PPid:\s*(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) === parent;
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}

const TICKS = 100; // USER_HZ, 100 on Linux

/**
 * A process's CPU time so far (user, system; µs), with `withReaped` that of its children it has
 * waited for too; undefined if it is gone (Linux /proc).
 */
export function processCpu(pid: number, withReaped = false): { user: number; system: number } | undefined {
  try {
    // Fields after the command name (which may hold spaces): utime, stime, cutime, cstime are the 12th to 15th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const at = (i: number) => (Number(f[i] ?? 0) * 1e6) / TICKS;
    return withReaped ? { user: at(11) + at(13), system: at(12) + at(14) } : { user: at(11), system: at(12) };
  } catch {
    return undefined;
  }
}

/**
 * The machine's idle time so far, all cores summed (µs; Linux /proc/stat: idle and iowait);
 * undefined elsewhere. Over an interval, its growth over the interval's length is the cores that
 * nothing used.
 */
export function machineIdle(): number | undefined {
  try {
    const [, ...fields] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
    const idle = Number(fields[3]) + Number(fields[4]);
    return Number.isFinite(idle) ? (idle * 1e6) / TICKS : undefined;
  } catch {
    return undefined;
  }
}
