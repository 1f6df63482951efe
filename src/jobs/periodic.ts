import type { FastifyBaseLogger } from 'fastify';
import { isStoreUnavailable } from '../store/errors.ts';

export interface PeriodicOptions {
  /** What one pass does; a failure is logged and the next pass comes as usual. */
  readonly pass: () => Promise<unknown>;
  readonly intervalMs: number;
  /** Wait before the first pass (default: none). */
  readonly firstDelayMs?: number;
  /** Names the task in its log lines ("scheduler", "pruner"). */
  readonly name: string;
  readonly log: Pick<FastifyBaseLogger, 'warn' | 'error'>;
}

export interface Periodic {
  start(): void;
  /** No pass starts after this; resolves once the pass under way (if any) has ended. */
  stop(): Promise<void>;
  /**
   * Runs the next pass now rather than at the next interval; during a pass, once it ends. Does
   * nothing unless started.
   */
  wake(): void;
  /** True between start() and stop(). */
  readonly active: boolean;
}

/**
 * A background task that runs a pass, waits `intervalMs`, and runs the next, in one process.
 * A store out of reach is a warning (the next pass tries again), anything else an error; neither
 * stops the task. The timer does not keep the process alive.
 */
export function createPeriodic(o: PeriodicOptions): Periodic {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let active = false;
  let woken = false;

  function schedule(delayMs: number) {
    if (!active) return;
    timer = setTimeout(() => {
      timer = undefined;
      running = o
        .pass()
        .then(
          () => undefined,
          (err) => {
            if (isStoreUnavailable(err)) o.log.warn({ error: String(err) }, `${o.name}: store unavailable`);
            else o.log.error({ err }, `${o.name}: pass failed; trying again next time`);
          },
        )
        .finally(() => {
          running = undefined;
          const again = woken;
          woken = false;
          schedule(again ? 0 : o.intervalMs);
        });
    }, delayMs);
    timer.unref();
  }

  return {
    get active() {
      return active;
    },
    wake() {
      if (!active) return;
      if (running) {
        woken = true;
        return;
      }
      clearTimeout(timer);
      schedule(0);
    },
    start() {
      if (active) return;
      active = true;
      schedule(o.firstDelayMs ?? 0);
    },
    async stop() {
      active = false;
      clearTimeout(timer);
      timer = undefined;
      await running;
    },
  };
}
