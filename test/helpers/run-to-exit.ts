/**
 * Runs a real process of ours (`node <args>` in the project directory) to its exit, for
 * start-up failures: a process that keeps running instead is killed after `timeoutMs` and its
 * code is null, which fails the test's exit-code assertion.
 */
import { spawnSync } from 'node:child_process';

export interface Exited {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function runToExit(args: string[], env: Record<string, string>, timeoutMs = 20_000): Exited {
  const r = spawnSync(process.execPath, args, {
    env: { ...process.env, VRP_LOG_LEVEL: 'warn', VRP_HOST: '127.0.0.1', VRP_PORT: '0', ...env },
    encoding: 'utf8',
    timeout: timeoutMs,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
