/**
 * A restore of a backup and its deletion, asked for in that order: the restore runs first, as
 * asked, and leaves the backup showing `deleting` as it found it (or as a deletion accepted
 * while it ran made it); a second deletion is refused as for any backup being deleted, and the
 * deletion queued behind removes it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Task } from '../../src/jobs/task.ts';
import { TASKS } from '../../src/jobs/tasks/index.ts';
import { call } from '../helpers/app.ts';
import { type ServiceFixture, until, withRunningService } from '../helpers/job-worker.ts';
import { testStores } from '../helpers/stores.ts';

for (const store of testStores()) {
  describe(`a restore, then a deletion of its backup (${store})`, () => {
    test('queued behind the restore: the restore runs and leaves the backup deleting; the deletion removes it', () =>
      withRunningService(store, async (s) => {
        const backupId = await takeBackup(s);
        await accepted(s, `restore/${backupId}`);
        await accepted(s, `delete/${backupId}`);
        assert.equal(await shown(s, backupId), 'deleting');
        const deletion = heldDeletion();
        s.worker({ backup_delete: deletion.task });
        await until(deletion.started, 'the deletion to start, the restore done');
        assert.equal((await job(s, 'backup_restore')).status, 'succeeded', 'restored, as asked first');
        await refusedAsDeleting(s, backupId);
        deletion.release();
        await until(async () => (await job(s, 'backup_delete')).status === 'succeeded', 'the deletion');
        assert.deepEqual(await backups(s), []);
      }));

    test('accepted while the restore runs: the backup shows deleting after it; the deletion removes it', () =>
      withRunningService(store, async (s) => {
        const backupId = await takeBackup(s);
        await accepted(s, `restore/${backupId}`);
        // The restore waits in the driver's import of the disk until the deletion is accepted.
        let importing = false;
        let resume = () => {};
        const resumed = new Promise<void>((r) => {
          resume = r;
        });
        const restore: Task<'backup_restore'> = (tc) => {
          const importDisk: typeof tc.driver.importDisk = async (...args) => {
            importing = true;
            await resumed;
            return tc.driver.importDisk(...args);
          };
          return TASKS.backup_restore({ ...tc, driver: { ...tc.driver, importDisk } });
        };
        const deletion = heldDeletion();
        s.worker({ backup_restore: restore, backup_delete: deletion.task });
        await until(() => importing, 'the restore to import the disk');
        assert.equal(await shown(s, backupId), 'restoring');
        await accepted(s, `delete/${backupId}`);
        resume();
        await until(deletion.started, 'the deletion to start, the restore done');
        assert.equal((await job(s, 'backup_restore')).status, 'succeeded');
        await refusedAsDeleting(s, backupId);
        deletion.release();
        await until(async () => (await job(s, 'backup_delete')).status === 'succeeded', 'the deletion');
        assert.deepEqual(await backups(s), []);
      }));
  });
}

/** The backup_delete task held at its start until `release()`; `started()` once it was called. */
function heldDeletion() {
  let started = false;
  let release = () => {};
  const released = new Promise<void>((r) => {
    release = r;
  });
  const task: Task<'backup_delete'> = async (tc) => {
    started = true;
    await released;
    return TASKS.backup_delete(tc);
  };
  return { task, started: () => started, release: () => release() };
}

/** A backup request `path` (under `service/{id}/backup/`) the reseller makes, accepted. */
async function accepted(s: ServiceFixture, path: string) {
  const res = await call(s.t, s.token, 'POST', `service/${s.id}/backup/${path}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

/** As for any backup being deleted: a second deletion and a restore are refused. */
async function refusedAsDeleting(s: ServiceFixture, backupId: string) {
  assert.equal(await shown(s, backupId), 'deleting', 'the deletion still queued');
  for (const [op, message] of [
    ['delete', 'The backup is already being deleted'],
    ['restore', 'Cannot restore a backup that is deleting'],
  ] as const) {
    const res = await call(s.t, s.token, 'POST', `service/${s.id}/backup/${op}/${backupId}`);
    assert.equal(res.status, 400, `${op}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error_code, 'invalid_state');
    assert.equal(res.body.message, message);
  }
}

/** Takes a backup of the fixture's service with a worker of its own (stopped after); its id. */
async function takeBackup(s: ServiceFixture): Promise<string> {
  const w = s.worker();
  await accepted(s, 'create');
  await until(async () => (await job(s, 'backup_create'))?.status === 'succeeded', 'the backup');
  await w.stop(1000);
  const [b] = await backups(s);
  assert.equal(b.status, 'available');
  return b.backup_id;
}

/** The service's backups as the reseller lists them. */
async function backups(s: ServiceFixture): Promise<any[]> {
  const res = await call(s.t, s.token, 'GET', `service/${s.id}/backups`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data;
}

/** The status the reseller sees of the backup. */
async function shown(s: ServiceFixture, backupId: string): Promise<string> {
  return (await backups(s)).find((b) => b.backup_id === backupId)?.status;
}

/** The service's newest job of `action`, as the API lists it. */
async function job(s: ServiceFixture, action: string): Promise<any> {
  return (await s.jobs()).findLast((j) => j.action === action);
}
