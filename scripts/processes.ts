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
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return found;
  }
  for (const pid of pids) {
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
