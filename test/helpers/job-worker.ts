/**
 * A worker of the test app's store and driver with a task table of the test's choosing (a task
 * that fails, or one that hangs as if its process had died), and short leases and backoff so
 * recoveries happen within a test. The app's own worker should be stopped first.
 */

import type { TaskTable } from '../../src/jobs/task.ts';
import { TASKS } from '../../src/jobs/tasks/index.ts';
import { createWorker, type Worker } from '../../src/jobs/worker.ts';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { call, type TestApp, waitForStatus } from './app.ts';

export function testWorker(
  t: TestApp,
  tasks: Partial<TaskTable> = {},
  options: { leaseMs?: number; maxAttempts?: number } = {},
): Worker {
  if (!t.driver) throw new Error('testWorker needs an app created with { worker: true }');
  const worker = createWorker({
    store: t.ctx.store,
    driver: t.driver,
    secretBox: t.ctx.secretBox,
    clock: t.ctx.clock,
    log: t.app.log,
    signal: t.ctx.jobSignal,
    tasks: { ...TASKS, ...tasks },
    concurrency: 4,
    leaseMs: options.leaseMs ?? 300,
    retryBaseMs: 10,
    maxAttempts: options.maxAttempts ?? 3,
    stopTimeoutMs: 1000,
    pollMs: 20,
  });
  worker.start();
  return worker;
}

/** Orders and provisions a service with the app's worker, then stops that worker; returns the service id. */
export async function runningServiceAlone(t: TestApp, token: string): Promise<string> {
  const p = DEMO_CATALOG.products[0]!;
  const res = await call(t, token, 'POST', 'service/create-order', {
    product_id: p.id,
    domain_name: 'jobs.example.com',
    template_id: p.os_templates[0],
    cpu: 1,
    ram: 1,
    hdd: 20,
    ip: 1,
    backup: 10,
  });
  const id = res.body.data[0].service_id as string;
  await call(t, token, 'POST', `service/${id}/create`);
  await waitForStatus(t, token, id, 'running');
  await t.background?.stop(1000);
  return id;
}

/** The service's jobs as the API lists them, oldest first. */
export async function serviceJobs(t: TestApp, token: string, id: string): Promise<any[]> {
  const res = await call(t, token, 'GET', `service/${id}/jobs`);
  return (res.body.data as any[]).reverse();
}

/** A promise that never settles: a task awaiting it is a worker that died mid-job. */
export const never = new Promise<never>(() => {});

/** Polls `condition` until it holds (10 s at most). */
export async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
