/**
 * Issue 11, item 14: a restart whose worker died after the reboot but before the job was marked
 * done must not reboot the guest again when the job re-runs.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Task } from '../../src/jobs/task.ts';
import { TASKS } from '../../src/jobs/tasks/index.ts';
import type { Worker } from '../../src/jobs/worker.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
import { never, runningServiceAlone, serviceJobs, testWorker, until } from '../helpers/job-worker.ts';
import { testStores } from '../helpers/stores.ts';

const bootCount = async (t: TestApp, id: string): Promise<number> =>
  (
    await t.ctx.store.db
      .selectFrom('sim_vms')
      .select('boot_count')
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
  ).boot_count;

for (const store of testStores()) {
  describe(`restart re-run after a crash (simulated hypervisor, ${store})`, () => {
    for (const when of ['after the reboot', 'before the reboot'] as const) {
      test(`a worker that dies ${when}: the re-run leaves the guest booted once more, exactly`, async () => {
        const t = await createTestApp({}, { worker: true, store });
        let worker: Worker | undefined;
        try {
          const token = await t.token();
          const id = await runningServiceAlone(t, token);
          const before = await bootCount(t, id);
          let died = false;
          const dies: Task = async (tc) => {
            if (when === 'after the reboot') await TASKS.restart(tc);
            died = true;
            return never;
          };
          await call(t, token, 'POST', `service/${id}/restart`);
          const dying = testWorker(t, { restart: dies });
          await until(() => died, 'the first attempt');
          await dying.stop(0);

          worker = testWorker(t);
          await waitForStatus(t, token, id, 'running');
          const [, restarted] = await serviceJobs(t, token, id);
          assert.equal(restarted.status, 'succeeded');
          assert.equal(restarted.attempts, 2, 'run again after the crash');
          assert.equal(await bootCount(t, id), before + 1);
        } finally {
          await worker?.stop(1000);
          await t.close();
        }
      });
    }
  });
}
