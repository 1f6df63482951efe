/**
 * Graceful shutdown on SIGTERM/SIGINT: every step runs in order even when an earlier one fails
 * (a failed HTTP close must not leave the store open), each failure is logged, and the process
 * exits in every case: 0 if all went well, 1 if a step failed or the whole took longer than
 * `forceMs`.
 */
export interface ShutdownStep {
  readonly name: string;
  run(): Promise<unknown>;
}

interface ShutdownLog {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** Runs the steps in order; resolves to the exit code (1 if any failed). */
async function runShutdown(steps: readonly ShutdownStep[], log: ShutdownLog): Promise<number> {
  let code = 0;
  for (const step of steps) {
    try {
      await step.run();
    } catch (err) {
      code = 1;
      log.error({ err, step: step.name }, 'shutdown step failed');
    }
  }
  return code;
}

/** Shuts down once on the first SIGTERM or SIGINT, then exits the process. */
export function exitOnSignals(
  steps: () => readonly ShutdownStep[],
  log: ShutdownLog,
  forceMs = 30_000,
): void {
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      log.error({ forceMs }, 'shutdown took too long; exiting');
      process.exit(1);
    }, forceMs);
    force.unref();
    runShutdown(steps(), log)
      .catch((err: unknown) => {
        log.error({ err }, 'shutdown failed');
        return 1;
      })
      .then((code) => process.exit(code));
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}
