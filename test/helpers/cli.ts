/**
 * The `vrp` command run in the test's own process, through `runCli` (the one entry bin/vrp.js
 * calls): what a person sees of it is its exit code, stdout and stderr, and those are what a
 * run returns. A Node process per command cost the CLI tests most of their time; the tests
 * where the process boundary itself is the point (exit status, stdin, signals) still spawn one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { runCli } from '../../src/cli/run.ts';
import type { TestApp } from './app.ts';

export interface CliRun {
  /** The exit code bin/vrp.js would exit with (undefined: `serve` keeps running). */
  readonly code: number | undefined;
  readonly out: string;
  readonly err: string;
  /** stdout parsed as JSON. */
  json(): any;
}

// Commands write to process.stdout/stderr; runs are queued so that two never share a capture.
let queue: Promise<unknown> = Promise.resolve();

/** Runs `vrp ARGS` with `env` as its whole environment; returns what it printed. */
export function vrpInProcess(args: string[], env: Record<string, string>): Promise<CliRun> {
  const run = queue.then(() => capture(args, env));
  queue = run.catch(() => undefined);
  return run;
}

/** `vrp ARGS` on the store of a running test app (its data dir, or its PostgreSQL database). */
export function vrpOn(t: TestApp, ...args: string[]): Promise<CliRun> {
  return vrpInProcess(args, {
    VRP_DATA_DIR: t.dataDir,
    VRP_LOG_LEVEL: 'silent',
    ...(t.ctx.config.databaseUrl ? { VRP_DATABASE_URL: t.ctx.config.databaseUrl } : {}),
  });
}

async function capture(args: string[], env: Record<string, string>): Promise<CliRun> {
  let out = '';
  let err = '';
  const stdoutWrite = process.stdout.write;
  const stderrWrite = process.stderr.write;
  // Only strings are the command's: the test runner reports to its parent over stdout in
  // binary chunks, and those must pass through untouched.
  const intercept = (stream: NodeJS.WriteStream, original: typeof stdoutWrite, add: (s: string) => void) =>
    ((chunk: unknown, ...rest: unknown[]) => {
      if (typeof chunk !== 'string') return Reflect.apply(original, stream, [chunk, ...rest]);
      add(chunk);
      return true;
    }) as typeof stdoutWrite;
  process.stdout.write = intercept(process.stdout, stdoutWrite, (s) => {
    out += s;
  });
  process.stderr.write = intercept(process.stderr, stderrWrite, (s) => {
    err += s;
  });
  let code: number | undefined;
  try {
    code = await runCli(args, env);
  } finally {
    process.stdout.write = stdoutWrite;
    process.stderr.write = stderrWrite;
  }
  return {
    code,
    out,
    err,
    json: () => JSON.parse(out),
  };
}

/** A data directory of the test's own, removed when the test ends. */
export function ownDataDir(t: TestContext, prefix = 'vrp-cli-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
