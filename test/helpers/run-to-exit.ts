/**
 * Runs a real process of ours (`node <args>` in the project directory) to its exit, for
 * start-up failures: a process that keeps running instead is killed after `timeoutMs` and its
 * code is null, which fails the test's exit-code assertion. Asynchronous, so that a test can
 * run several at once (each spends most of a second loading our code).
 */
import { spawn } from 'node:child_process';
import { WAIT_MS } from './budget.ts';

export interface Exited {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function runToExit(args: string[], env: Record<string, string>, timeoutMs = WAIT_MS): Promise<Exited> {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, VRP_LOG_LEVEL: 'warn', VRP_HOST: '127.0.0.1', VRP_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: timeoutMs,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}
