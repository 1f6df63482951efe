/**
 * Jobs run by workers of the test's choosing: a task table that fails, or whose task hangs as
 * if its process had died, with short backoff so recoveries happen within a test.
 */
import type { Kysely, Selectable } from 'kysely';
import type { JobAction } from '../../src/domain/status-machine.ts';
import type { HypervisorDriver } from '../../src/drivers/driver.ts';
import { type BackupDeps, backupDeps } from '../../src/jobs/backup-chain.ts';
import type { TaskTable } from '../../src/jobs/task.ts';
import { TASKS } from '../../src/jobs/tasks/index.ts';
import { createWorker, type Worker } from '../../src/jobs/worker.ts';
import type { Database, JobTable } from '../../src/store/schema.ts';
import { call, createTestApp, type TestApp, waitForStatus } from './app.ts';
import { waitUntil } from './budget.ts';
import { smallOrder } from './e2e.ts';
import type { StoreKind } from './stores.ts';

export interface ServiceFixture {
  readonly t: TestApp;
  readonly token: string;
  /** A running service; the app's own worker is stopped, so only the test's workers run its jobs. */
  readonly id: string;
  /**
   * Starts a worker with `tasks` over the usual ones (stopped at the end of the test).
   * `abortWaitMs`: how long its stop() waits for aborted tasks (the worker's default, 2 s,
   * unless given); a worker whose task never ends, to play a dead process, passes 0. `driver`:
   * the one it calls instead of the app's (a test's wrapper); `backups`: its backup store's
   * archive, instead of the app's.
   */
  worker(
    tasks?: Partial<TaskTable>,
    options?: {
      maxAttempts?: number;
      abortWaitMs?: number;
      driver?: HypervisorDriver;
      backups?: BackupDeps;
      /**
       * Its claims' lease: 10 minutes unless given, which no pause of a loaded machine outlasts,
       * so a job's attempts are those the test makes. A test about leases running out gives a
       * short one (and a worker that plays a dead process is `dyingWorker`).
       */
      leaseMs?: number;
      /** How long a job whose host is unreachable waits before it looks again (the worker's default, 10 s, unless given). */
      hostWaitMs?: number;
    },
  ): Worker;
  /**
   * A worker with `tasks` over the usual ones that plays a process dying in the middle of a job
   * (its task never ends, so it is not waited for). Its lease is long, so that a loaded machine's
   * pause cannot take the job from it while the task does what the test lets it do before it
   * dies; `die()` stops it and ends its lease at once, as a dead process's runs out, so the next
   * worker recovers the job without waiting.
   */
  dyingWorker(tasks: Partial<TaskTable>): { die(): Promise<void> };
  /** The service's jobs as the API lists them, oldest first. */
  jobs(): Promise<any[]>;
  /** The stored row of the service's (first) job of `action`. */
  jobRow(action: JobAction): Promise<Selectable<JobTable>>;
  /** How many times the simulated hypervisor booted the service's VM. */
  bootCount(): Promise<number>;
}

export async function withRunningService(
  store: StoreKind,
  body: (s: ServiceFixture) => Promise<void>,
): Promise<void> {
  const t = await createTestApp({}, { worker: true, store });
  const workers: Worker[] = [];
  try {
    const token = await t.token();
    const res = await call(t, token, 'POST', 'service/create-order', smallOrder('jobs.example.com'));
    const id = res.body.data[0].service_id as string;
    await call(t, token, 'POST', `service/${id}/create`);
    await waitForStatus(t, token, id, 'running');
    await t.background?.stop(1000);
    const fixture: ServiceFixture = {
      t,
      token,
      id,
      worker(tasks = {}, options = {}) {
        const w = createWorker({
          store: t.ctx.store,
          driver: options.driver ?? t.driver!,
          backups: options.backups ?? backupDeps(t.ctx),
          secretBox: t.ctx.secretBox,
          clock: t.ctx.clock,
          log: t.app.log,
          signal: t.ctx.jobSignal,
          tasks: { ...TASKS, ...tasks },
          concurrency: 4,
          leaseMs: options.leaseMs ?? 600_000,
          retryBaseMs: 10,
          maxAttempts: options.maxAttempts ?? 3,
          stopTimeoutMs: 1000,
          abortWaitMs: options.abortWaitMs,
          hostWaitMs: options.hostWaitMs,
          pollMs: 20,
        });
        workers.push(w);
        w.start();
        return w;
      },
      dyingWorker(tasks) {
        const w = fixture.worker(tasks, { abortWaitMs: 0, leaseMs: 600_000 });
        return {
          async die() {
            await w.stop(0);
            await t.ctx.store.db
              .updateTable('jobs')
              .set({ locked_until: 0 })
              .where('service_id', '=', id)
              .where('status', '=', 'running')
              .execute();
          },
        };
      },
      jobRow(action) {
        return t.ctx.store.db
          .selectFrom('jobs')
          .selectAll()
          .where('service_id', '=', id)
          .where('action', '=', action)
          .orderBy('seq')
          .executeTakeFirstOrThrow();
      },
      async jobs() {
        return ((await call(t, token, 'GET', `service/${id}/jobs`)).body.data as any[]).reverse();
      },
      async bootCount() {
        const vm = await t.ctx.store.db
          .selectFrom('sim_vms')
          .select('boot_count')
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
        return vm.boot_count;
      },
    };
    await body(fixture);
  } finally {
    for (const w of workers) await w.stop(0);
    await t.close();
  }
}

/**
 * Another worker owns the job now, as after a recovery and a new claim, with a lease of its own
 * (so the old owner's recovery leaves it alone, and its renewals no longer reach the job's row).
 */
export const giveToAnotherWorker = (db: Kysely<Database>, jobId: string) =>
  db
    .updateTable('jobs')
    .set({ locked_by: 'another-worker', locked_until: Date.now() + 600_000 })
    .where('id', '=', jobId)
    .execute();

/** A promise that never settles: a task awaiting it is a worker that died mid-job. */
export const never = new Promise<never>(() => {});

/** Polls `condition` until it holds (within the wait budget, test/helpers/budget.ts). */
export async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  await waitUntil(what, condition, { everyMs: 10 });
}
