/**
 * A restart whose worker died after the reboot but before the job was marked
 * done must not reboot the guest again when the job re-runs.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Task } from '../../src/jobs/task.ts';
import { TASKS } from '../../src/jobs/tasks/index.ts';
import { call, waitForStatus } from '../helpers/app.ts';
import { never, until, withRunningService } from '../helpers/job-worker.ts';
import { testStores } from '../helpers/stores.ts';

for (const store of testStores()) {
  describe(`restart re-run after a crash (simulated hypervisor, ${store})`, () => {
    for (const when of ['after the reboot', 'before the reboot'] as const) {
      test(`a worker that dies ${when}: the re-run leaves the guest booted once more, exactly`, () =>
        withRunningService(store, async (s) => {
          const before = await s.bootCount();
          let died = false;
          const dies: Task<'restart'> = async (tc) => {
            if (when === 'after the reboot') await TASKS.restart(tc);
            died = true;
            return never;
          };
          await call(s.t, s.token, 'POST', `service/${s.id}/restart`);
          const dying = s.dyingWorker({ restart: dies });
          await until(() => died, 'the first attempt');
          await dying.die();
          s.worker();
          await waitForStatus(s.t, s.token, s.id, 'running');
          const [, restarted] = await s.jobs();
          assert.equal(restarted.status, 'succeeded');
          assert.equal(restarted.attempts, 2, 'run again after the crash');
          assert.equal(await s.bootCount(), before + 1);
        }));
    }
  });
}
