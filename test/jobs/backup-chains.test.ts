/**
 * Backups in the backup store, as chains, on the simulated hypervisor (whose disk has real bytes:
 * drivers/simulated/disk.ts): a full backup then incremental ones, each restorable to its own
 * content, a deleted or rotated backup merged into the next, rotation leaving the backup a queued
 * restore names, restores onto another host, a wrong key, damage found by verify, backups kept
 * after termination, a backup store that fails.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { backupKeyOf } from '../../src/context.ts';
import { type BackupArchive, createArchive } from '../../src/drivers/backup-store/archive.ts';
import { type BackupStore, BackupStoreError } from '../../src/drivers/backup-store/store.ts';
import { DriverError, type HypervisorDriver } from '../../src/drivers/driver.ts';
import { type BackupDeps, backupDeps } from '../../src/jobs/backup-chain.ts';
import { backupRestoreOperation } from '../../src/jobs/backup-operation.ts';
import { createPruner } from '../../src/jobs/prune.ts';
import { enqueueInTransaction } from '../../src/jobs/queue.ts';
import { TASKS } from '../../src/jobs/tasks/index.ts';
import { createWorker, type Worker } from '../../src/jobs/worker.ts';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { backupsNamedByPendingJobs, markBackupDeleting } from '../../src/store/repos/backups.ts';
import { call, createTestApp, type TestApp, testEnv, waitForStatus } from '../helpers/app.ts';
import { vrpOn } from '../helpers/cli.ts';
import { interceptDriver } from '../helpers/driver-calls.ts';
import { until } from '../helpers/job-worker.ts';
import { legacySimBackup } from '../helpers/legacy-backup.ts';
import { operatorToken, opsCall } from '../helpers/operator.ts';
import { promiseState } from '../helpers/promise-state.ts';
import { testStores } from '../helpers/stores.ts';

const product = DEMO_CATALOG.products[0]!;
const DAY = 86_400_000;
const GIB = 1024 ** 3;

/** The app's pruner as if it ran at `at`, with the backup store (kept backups go too). */
function prunerAt(t: TestApp, at: number) {
  return createPruner({
    store: t.ctx.store,
    clock: { now: () => at },
    log: t.app.log,
    retentionMs: 90 * DAY,
    auditRetentionMs: 365 * DAY,
    eventRetentionMs: 30 * DAY,
    serviceConsoleMaxMs: 3_600_000,
    intervalMs: DAY,
    archive: backupDeps(t.ctx).archive,
  });
}

function order() {
  return {
    product_id: product.id,
    domain_name: 'chain.example.com',
    template_id: product.os_templates[0],
    cpu: 1,
    ram: 1,
    hdd: Number(product.config.hdd.min),
    ip: 1,
    backup: 20,
  };
}

for (const store of testStores()) {
  describe(`backup chains (${store})`, () => {
    let t: TestApp;
    let token: string;
    let ops: string;

    before(async () => {
      t = await createTestApp(
        { VRP_SIM_HOSTS: 'host-a:16:64:2000:100,host-b:16:64:2000:100' },
        { worker: true, store },
      );
      token = await t.token();
      ops = await operatorToken(t);
    });
    after(() => t.close());

    async function ok(method: 'GET' | 'POST', path: string, body?: unknown): Promise<any> {
      const res = await call(t, token, method, path, body);
      assert.equal(res.status, 200, `${method} ${path}: ${JSON.stringify(res.body)}`);
      return res.body.data;
    }
    async function running(): Promise<string> {
      const [created] = await ok('POST', 'service/create-order', order());
      const id = created.service_id;
      await ok('POST', `service/${id}/create`);
      await waitForStatus(t, token, id, 'running');
      return id;
    }
    const revision = async (id: string): Promise<number> =>
      (await ok('GET', `service/${id}/details`)).disk_revision;
    /** Writes to the disk: a restart is one write (its boot). */
    async function write(id: string, times = 1) {
      for (let i = 0; i < times; i++) {
        await ok('POST', `service/${id}/restart`);
        await waitForStatus(t, token, id, 'running');
      }
    }
    /** Takes a backup; returns the operator's view of it. */
    async function backup(id: string): Promise<any> {
      await ok('POST', `service/${id}/backup/create`);
      await waitForStatus(t, token, id, 'running');
      return (await opsBackups(id))[0];
    }
    async function opsBackups(id: string): Promise<any[]> {
      const res = await opsCall(t, ops, 'GET', `services/${id}`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.data.backups;
    }
    async function restore(id: string, backupId: string) {
      await ok('POST', `service/${id}/backup/restore/${backupId}`);
      await waitForStatus(t, token, id, 'running');
    }
    /** A backup row as a store migrated from before the backup store holds it (no format: legacy). */
    async function legacyRow(id: string, legacyId: string, sizeGb: number) {
      await t.ctx.store.db
        .insertInto('backups')
        .values({
          id: legacyId,
          service_id: id,
          reseller_id: 'acme',
          status: 'available',
          kind: 'manual',
          size_gb: sizeGb,
          created_at: Date.now(),
          updated_at: Date.now(),
        })
        .execute();
    }
    /**
     * The app's backup archive whose removals fail: refused for good (permission denied) or for
     * now (connection refused); `removes()` counts them.
     */
    function refusingRemoves(transient: boolean): BackupArchive & { removes(): number } {
      let removes = 0;
      return {
        ...backupDeps(t.ctx).archive,
        async remove() {
          removes++;
          throw new BackupStoreError(
            `Backup store test: cannot delete (${transient ? 'connection refused' : 'permission denied'})`,
            { transient },
          );
        },
        removes: () => removes,
      };
    }
    /** The service's newest job of that action (the list is newest first). */
    async function lastJob(id: string, action: string): Promise<any> {
      const jobs = (await ok('GET', `service/${id}/jobs`)) as any[];
      return jobs.find((j) => j.action === action);
    }

    test('a full backup, then incrementals: each restores its own content; deleting the full keeps the next restorable', async () => {
      const id = await running();
      await write(id, 8);
      const full = await backup(id);
      const atFull = await revision(id);
      assert.equal(full.format, 'archive');
      assert.equal(full.parent_id, null, 'the first backup is full');
      await write(id);
      const inc = await backup(id);
      const atInc = await revision(id);
      assert.equal(inc.parent_id, full.backup_id, 'the second carries the changes since the first');
      assert.ok(
        inc.stored_bytes * 4 < full.stored_bytes,
        `the incremental stores much less (${inc.stored_bytes} against ${full.stored_bytes} bytes)`,
      );
      assert.equal(inc.size_gb, 0.1, 'size_gb is the stored size, rounded up to 0.1 GB');
      await write(id, 2);

      await restore(id, full.backup_id);
      assert.equal(await revision(id), atFull, 'the full backup brings its content back');
      await restore(id, inc.backup_id);
      assert.equal(await revision(id), atInc, 'the incremental brings its content back, through its chain');

      await ok('POST', `service/${id}/backup/delete/${full.backup_id}`);
      await waitForStatus(t, token, id, 'running');
      const [left] = await opsBackups(id);
      assert.equal(left.backup_id, inc.backup_id);
      assert.equal(left.parent_id, null, 'the full backup was merged into it: it stands alone');
      assert.deepEqual(await t.ctx.backupStore.list(`${id}/${full.backup_id}/`), []);
      await write(id);
      await restore(id, inc.backup_id);
      assert.equal(await revision(id), atInc, 'still restorable without the backup it was taken against');
    });

    test('a deletion that fails after its merge leaves two backups on one parent: removing that parent merges it into both', async () => {
      const id = await running();
      await write(id, 2);
      const first = await backup(id);
      await write(id);
      const second = await backup(id);
      const atSecond = await revision(id);
      await write(id);
      const atThird = await revision(id);
      // With no worker: a backup is asked for, then the deletion of the one before it, which
      // runs after it and fails for good (the store refuses it).
      await t.background?.worker.stop(1000);
      await ok('POST', `service/${id}/backup/create`);
      await ok('POST', `service/${id}/backup/delete/${second.backup_id}`);
      const refusing = refusingRemoves(false);
      await withWorker({ archive: refusing, keepAfterTerminateMs: 0 }, async () => {
        await until(
          async () => (await lastJob(id, 'backup_delete')).status === 'failed',
          'the deletion to fail',
        );
      });
      const [third, again] = await opsBackups(id);
      assert.equal(again.backup_id, second.backup_id);
      assert.equal(again.status, 'available');
      // The deletion merged the second into the third before the store refused it: both stand on
      // the first now. The first goes: merged into each of them, and both still restore.
      assert.deepEqual([third.parent_id, again.parent_id], [first.backup_id, first.backup_id]);
      await ok('POST', `service/${id}/backup/delete/${first.backup_id}`);
      await waitForStatus(t, token, id, 'running');
      assert.deepEqual(
        (await opsBackups(id)).map((b) => b.backup_id),
        [third.backup_id, second.backup_id],
      );
      await restore(id, second.backup_id);
      assert.equal(await revision(id), atSecond);
      await restore(id, third.backup_id);
      assert.equal(await revision(id), atThird);
    });

    test('rotation merges the rotated backup into the next, which stays restorable', async () => {
      const id = await running();
      await write(id, 3);
      const first = await backup(id);
      await write(id);
      const second = await backup(id);
      const atSecond = await revision(id);
      await t.ctx.store.db
        .updateTable('backups')
        .set({ kind: 'scheduled' })
        .where('service_id', '=', id)
        .execute();
      // 1 GB that the two fill (as if each took half of it): the next backup rotates the oldest out.
      await t.ctx.store.db
        .updateTable('backups')
        .set({ size_gb: 0.5 })
        .where('service_id', '=', id)
        .execute();
      await t.ctx.store.db.updateTable('services').set({ backup: 1 }).where('id', '=', id).execute();
      await write(id);
      const third = await backup(id);
      const after = await opsBackups(id);
      assert.deepEqual(
        after.map((b) => b.backup_id),
        [third.backup_id, second.backup_id],
        'the oldest scheduled backup was rotated out',
      );
      assert.equal(after[1].parent_id, null, 'the next one took its place as the full backup');
      assert.equal(after[1].kind, 'scheduled', 'and kept its kind');
      assert.equal(after[1].size_gb, 0.1, 'its size is its stored size again');
      assert.equal(after[0].parent_id, second.backup_id);
      assert.deepEqual(await t.ctx.backupStore.list(`${id}/${first.backup_id}/`), []);
      await restore(id, second.backup_id);
      assert.equal(await revision(id), atSecond);
    });

    test('rotation passes over backups whose chain is broken in the store and rotates the next oldest', async () => {
      const id = await running();
      await write(id, 3);
      const first = await backup(id);
      const atFirst = await revision(id);
      await write(id);
      const second = await backup(id);
      await write(id);
      const third = await backup(id);
      await t.ctx.store.db
        .updateTable('backups')
        .set({ kind: 'scheduled', size_gb: 0.35 })
        .where('service_id', '=', id)
        .execute();
      await t.ctx.store.db.updateTable('services').set({ backup: 1 }).where('id', '=', id).execute();
      // The second's manifest is lost: the first cannot be merged into it, nor it into the third.
      rmSync(join(t.dataDir, 'backups', id, second.backup_id, 'manifest'));
      await write(id);
      const fourth = await backup(id);
      assert.equal(fourth.status, 'available', 'the new backup is kept');
      const after = await opsBackups(id);
      assert.deepEqual(
        after.map((b) => b.backup_id),
        [fourth.backup_id, second.backup_id, first.backup_id],
        'the third, the oldest that could be rotated out, went',
      );
      assert.equal(after[0].parent_id, second.backup_id, 'the third was merged into the new backup');
      await restore(id, first.backup_id);
      assert.equal(await revision(id), atFirst, 'the first still restores');
      assert.deepEqual(await t.ctx.backupStore.list(`${id}/${third.backup_id}/`), []);
    });

    test('rotation that cannot make room leaves the old backups as they were: the parent merged into the new backup is not lost with it', async () => {
      const id = await running();
      await write(id, 3);
      const parent = await backup(id);
      const atParent = await revision(id);
      // A scheduled full backup that fills the quota (as if it took 19 of its 19 GB)...
      await t.ctx.store.db
        .updateTable('backups')
        .set({ kind: 'scheduled', size_gb: 19 })
        .where('id', '=', parent.backup_id)
        .execute();
      await t.ctx.store.db.updateTable('services').set({ backup: 19 }).where('id', '=', id).execute();
      // ...and a merge that makes the next backup hold its 19 GB as well (a full of that size
      // merged into its incremental stores both): rotating the full out frees nothing.
      const archive = backupDeps(t.ctx).archive;
      const growing: BackupArchive = {
        ...archive,
        async mergeIntoChild(p, c) {
          const merged = await archive.mergeIntoChild(p, c);
          return { ...merged, storedBytes: merged.storedBytes + 19 * GIB };
        },
      };
      await write(id);
      await withWorker({ archive: growing, keepAfterTerminateMs: 0 }, async () => {
        await ok('POST', `service/${id}/backup/create`);
        await waitForStatus(t, token, id, 'running');
      });
      const job = await lastJob(id, 'backup_create');
      assert.equal(job.status, 'failed');
      assert.match(job.error, /^Backup quota exceeded/);
      const left = await opsBackups(id);
      assert.deepEqual(
        left.map((b) => [b.backup_id === parent.backup_id ? 'parent' : 'new', b.status]),
        [
          ['new', 'failed'],
          ['parent', 'available'],
        ],
        'the old backup is still there',
      );
      await restore(id, parent.backup_id);
      assert.equal(await revision(id), atParent, 'and still restores');
    });

    for (const failing of ['the store refuses it', 'the checkpoint cannot be dropped'] as const)
      test(`rotation whose removal of the rotated-out backup fails keeps the new backup (${failing})`, async () => {
        const id = await running();
        await write(id, 3);
        const first = await backup(id);
        await write(id);
        const second = await backup(id);
        await t.ctx.store.db
          .updateTable('backups')
          .set({ kind: 'scheduled', size_gb: 0.5 })
          .where('service_id', '=', id)
          .execute();
        await t.ctx.store.db.updateTable('services').set({ backup: 1 }).where('id', '=', id).execute();
        await write(id);
        const atThird = await revision(id);
        // Refused by the store: nothing of it removed. The checkpoint: removed from the store first.
        const byStore = failing === 'the store refuses it';
        const refusingCheckpoint = interceptDriver(t.driver!, {
          async dropCheckpoint() {
            throw new DriverError('Simulated: the checkpoint cannot be dropped', { transient: false });
          },
        });
        await withWorker(
          { archive: byStore ? refusingRemoves(false) : backupDeps(t.ctx).archive, keepAfterTerminateMs: 0 },
          async () => {
            await ok('POST', `service/${id}/backup/create`);
            await waitForStatus(t, token, id, 'running');
          },
          byStore ? t.driver! : refusingCheckpoint,
        );
        assert.equal((await lastJob(id, 'backup_create')).status, 'succeeded');
        const after = await opsBackups(id);
        assert.deepEqual(
          after.map((b) => [
            b.backup_id === first.backup_id ? 'first' : b.backup_id === second.backup_id ? 'second' : 'new',
            b.status,
          ]),
          [
            ['new', 'available'],
            ['second', 'available'],
            // Still whole, for the next rotation to remove; or nothing left of it to restore.
            ['first', byStore ? 'available' : 'failed'],
          ],
          'the new backup is kept',
        );
        assert.equal(after[2].size_gb, byStore ? 0.5 : 0);
        assert.equal(after[1].parent_id, null, 'the next one stands without the rotated-out one');
        await restore(id, after[0].backup_id);
        assert.equal(await revision(id), atThird);
        if (!byStore) return;
        // The next backup's rotation removes it (as if it took 0.9 GB: the next one would not fit).
        await t.ctx.store.db
          .updateTable('backups')
          .set({ size_gb: 0.9 })
          .where('id', '=', first.backup_id)
          .execute();
        await write(id);
        const fourth = await backup(id);
        assert.ok(!(await opsBackups(id)).some((b) => b.backup_id === first.backup_id), 'removed now');
        assert.equal(fourth.status, 'available');
      });

    test('a delete given up without its task (its workers kept dying) leaves the backup available again', async () => {
      const id = await running();
      await write(id);
      const b = await backup(id);
      await t.background?.worker.stop(1000);
      await ok('POST', `service/${id}/backup/delete/${b.backup_id}`);
      // Every attempt's process died: the next claim is one more than allowed.
      await t.ctx.store.db
        .updateTable('jobs')
        .set({ attempts: 3 })
        .where('service_id', '=', id)
        .where('action', '=', 'backup_delete')
        .execute();
      await withWorker(backupDeps(t.ctx), async () => {
        await until(
          async () => (await lastJob(id, 'backup_delete')).status === 'failed',
          'the job to give up',
        );
      });
      assert.match((await lastJob(id, 'backup_delete')).error, /^Gave up after 3 attempts/);
      assert.equal((await opsBackups(id))[0].status, 'available', 'not stuck deleting');
      await ok('POST', `service/${id}/backup/delete/${b.backup_id}`);
      await waitForStatus(t, token, id, 'running');
      assert.deepEqual(await opsBackups(id), []);
    });

    test('a terminate that failed leaves the backups kept for it to the service: the pruner does not remove them', async () => {
      const id = await running();
      await write(id, 2);
      const kept = await backup(id);
      // The terminate keeps the backups (VRP_BACKUP_KEEP_AFTER_TERMINATE), then the VM cannot be
      // destroyed: the job fails for good and the service runs on.
      const refusing = interceptDriver(t.driver!, {
        async destroy() {
          throw new DriverError('Simulated: the VM cannot be destroyed', { transient: false });
        },
      });
      await withWorker(
        { archive: backupDeps(t.ctx).archive, keepAfterTerminateMs: 7 * DAY },
        async () => {
          await ok('POST', `service/${id}/terminate`);
          await waitForStatus(t, token, id, 'running');
        },
        refusing,
      );
      assert.equal((await lastJob(id, 'terminate')).status, 'failed');
      assert.equal((await opsBackups(id))[0].keep_until, null, 'no end of its own while the service runs');
      await write(id);
      const next = await backup(id);
      const atNext = await revision(id);
      assert.equal(next.parent_id, kept.backup_id, 'the next backup is taken against the kept one');
      await prunerAt(t, Date.now() + 8 * DAY).run();
      assert.deepEqual(
        (await opsBackups(id)).map((b) => [b.backup_id, b.status]),
        [
          [next.backup_id, 'available'],
          [kept.backup_id, 'available'],
        ],
        'the running service keeps its backups past the keeping time',
      );
      await write(id);
      await restore(id, next.backup_id);
      assert.equal(await revision(id), atNext, 'and its chain still restores');
    });

    test('a delete whose every attempt fails leaves the backup available again: restorable, and deleted when asked again', async () => {
      const id = await running();
      await write(id, 2);
      const b = await backup(id);
      const at = await revision(id);
      const unreachable = refusingRemoves(true);
      await withWorker({ archive: unreachable, keepAfterTerminateMs: 0 }, async () => {
        await ok('POST', `service/${id}/backup/delete/${b.backup_id}`);
        await waitForStatus(t, token, id, 'running');
      });
      const job = await lastJob(id, 'backup_delete');
      assert.equal(job.status, 'failed');
      assert.match(job.error, /cannot delete \(connection refused\)/);
      assert.equal(unreachable.removes(), 3, 'each of the 3 attempts tried');
      assert.equal((await opsBackups(id))[0].status, 'available', 'not stuck deleting');
      await write(id);
      await restore(id, b.backup_id);
      assert.equal(await revision(id), at);
      await ok('POST', `service/${id}/backup/delete/${b.backup_id}`);
      await waitForStatus(t, token, id, 'running');
      assert.deepEqual(await opsBackups(id), []);
    });

    test('a delete that fails for good after the backup left the store shows it failed, not available', async () => {
      const id = await running();
      await write(id);
      const b = await backup(id);
      const refusing = interceptDriver(t.driver!, {
        async dropCheckpoint() {
          throw new DriverError('Simulated: the checkpoint cannot be dropped', { transient: false });
        },
      });
      await withWorker(
        backupDeps(t.ctx),
        async () => {
          await ok('POST', `service/${id}/backup/delete/${b.backup_id}`);
          await waitForStatus(t, token, id, 'running');
        },
        refusing,
      );
      assert.equal((await lastJob(id, 'backup_delete')).status, 'failed');
      assert.deepEqual(await t.ctx.backupStore.list(`${id}/${b.backup_id}/`), [], 'its objects went');
      const [left] = await opsBackups(id);
      assert.deepEqual([left.status, left.size_gb], ['failed', 0], 'nothing to restore, no quota used');
      const res = await call(t, token, 'POST', `service/${id}/backup/restore/${b.backup_id}`);
      assert.deepEqual([res.status, res.body.error_code], [400, 'invalid_state']);
      await ok('POST', `service/${id}/backup/delete/${b.backup_id}`);
      await waitForStatus(t, token, id, 'running');
      assert.deepEqual(await opsBackups(id), [], 'a new delete removes its record');
    });

    test('a legacy backup (taken on the host before the backup store) still restores and deletes', async () => {
      const id = await running();
      await write(id, 2);
      const at = await revision(id);
      const legacyId = '44444444-4444-4444-8444-444444444444';
      // As a store migrated from before the backup store has it: a copy on the host, and its row.
      await legacySimBackup(t.ctx.store.db, id, legacyId);
      await legacyRow(id, legacyId, 2);
      assert.equal((await opsBackups(id))[0].format, 'legacy', 'rows without a format are legacy');
      await write(id);
      await restore(id, legacyId);
      assert.equal(await revision(id), at);
      await ok('POST', `service/${id}/backup/delete/${legacyId}`);
      await waitForStatus(t, token, id, 'running');
      assert.deepEqual(await opsBackups(id), []);
      const onHost = await t.ctx.store.db
        .selectFrom('sim_backups')
        .select('id')
        .where('id', '=', legacyId)
        .execute();
      assert.deepEqual(onHost, [], 'the driver deleted it on its host');
    });

    test('a backup restores onto the host the service moved to', async () => {
      const id = await running();
      await write(id, 2);
      const b = await backup(id);
      const at = await revision(id);
      const from = b.host_id;
      const to = from === 'host-a' ? 'host-b' : 'host-a';
      const moved = await opsCall(t, ops, 'POST', `services/${id}/migrate`, { host_id: to });
      assert.equal(moved.status, 200, JSON.stringify(moved.body));
      await waitForStatus(t, token, id, 'running');
      const res = await opsCall(t, ops, 'GET', `services/${id}`);
      assert.equal(res.body.data.host.host_id, to);
      await write(id, 2);
      await restore(id, b.backup_id);
      assert.equal(await revision(id), at);
      assert.equal((await lastJob(id, 'backup_restore')).status, 'succeeded');
    });

    test('verify: an intact backup is ok; a flipped byte in its data object names the bad segment; CLI too', async () => {
      const id = await running();
      await write(id, 3);
      const b = await backup(id);
      const good = await opsCall(t, ops, 'POST', `backups/${b.backup_id}/verify`);
      assert.equal(good.status, 200, JSON.stringify(good.body));
      assert.equal(good.body.data.ok, true);
      assert.ok(good.body.data.segments > 0);
      assert.deepEqual(good.body.data.bad, []);
      const cliGood = await vrpOn(t, 'backup', 'verify', b.backup_id, '--json');
      assert.equal(cliGood.code, 0, cliGood.err);
      assert.equal(cliGood.json().ok, true);

      const dir = join(t.dataDir, 'backups', id, b.backup_id);
      const data = readdirSync(dir).find((f) => f.startsWith('data'));
      assert.ok(data, 'the data object is in the local backup store');
      const file = join(dir, data);
      const bytes = readFileSync(file);
      const at = Math.floor(bytes.length / 2);
      bytes[at] = (bytes[at] ?? 0) ^ 0xff;
      writeFileSync(file, bytes);

      const bad = await opsCall(t, ops, 'POST', `backups/${b.backup_id}/verify`);
      assert.equal(bad.status, 200);
      assert.equal(bad.body.data.ok, false);
      assert.equal(bad.body.data.bad.length, 1, JSON.stringify(bad.body.data));
      assert.ok(bad.body.data.bad[0].segment >= 0);
      assert.ok(bad.body.data.bad[0].length > 0);
      const cliBad = await vrpOn(t, 'backup', 'verify', b.backup_id, '--json');
      assert.equal(cliBad.code, 1);
      assert.equal(cliBad.json().ok, false);
      assert.equal(cliBad.json().bad[0].segment, bad.body.data.bad[0].segment);
      const human = await vrpOn(t, 'backup', 'verify', b.backup_id);
      assert.equal(human.code, 1);
      assert.match(human.out, new RegExp(`segment ${bad.body.data.bad[0].segment} `));

      const missing = await opsCall(t, ops, 'POST', 'backups/33333333-3333-4333-8333-333333333333/verify');
      assert.equal(missing.status, 404);
      assert.equal(missing.body.error_code, 'backup_not_found');
      const cliMissing = await vrpOn(t, 'backup', 'verify', '33333333-3333-4333-8333-333333333333');
      assert.equal(cliMissing.code, 1);
    });

    test('verify refuses what is not in the store, says so of a lost manifest, and answers 503 when the store does not', async () => {
      const id = await running();
      await write(id);
      const b = await backup(id);
      const { db } = t.ctx.store;
      // A legacy backup (kept on its host) and a failed one are not in the store: 400 invalid_state.
      const legacyId = '55555555-5555-4555-8555-555555555555';
      await legacyRow(id, legacyId, 1);
      const legacy = await opsCall(t, ops, 'POST', `backups/${legacyId}/verify`);
      assert.deepEqual([legacy.status, legacy.body.error_code], [400, 'invalid_state']);
      assert.match(legacy.body.message, /kept on its host/);
      const cliLegacy = await vrpOn(t, 'backup', 'verify', legacyId, '--json');
      assert.equal(cliLegacy.code, 1);
      assert.equal(cliLegacy.json().error_code, 'invalid_state');
      await db.updateTable('backups').set({ status: 'failed' }).where('id', '=', legacyId).execute();
      const failed = await opsCall(t, ops, 'POST', `backups/${legacyId}/verify`);
      assert.deepEqual([failed.status, failed.body.error_code], [400, 'invalid_state']);
      await db.deleteFrom('backups').where('id', '=', legacyId).execute();

      // A store that does not answer: 503 store_unavailable.
      const store = t.ctx.backupStore as { size: BackupStore['size'] };
      const size = store.size;
      store.size = async () => {
        throw new BackupStoreError('Backup store test: cannot reach the bucket: connection refused', {
          transient: true,
        });
      };
      try {
        const down = await opsCall(t, ops, 'POST', `backups/${b.backup_id}/verify`);
        assert.deepEqual([down.status, down.body.error_code], [503, 'store_unavailable']);
        // A 5xx message never reaches the client (the log has the store's words).
        assert.match(down.body.message, /^Internal error \(request /);
      } finally {
        store.size = size;
      }

      // The manifest lost: a failed verification whose one entry is the manifest (segment -1).
      rmSync(join(t.dataDir, 'backups', id, b.backup_id, 'manifest'));
      const lost = await opsCall(t, ops, 'POST', `backups/${b.backup_id}/verify`);
      assert.equal(lost.status, 200, JSON.stringify(lost.body));
      assert.equal(lost.body.data.ok, false);
      assert.deepEqual(
        lost.body.data.bad.map((x: any) => [x.segment, x.reason]),
        [[-1, `Backup ${b.backup_id} has no manifest in the store`]],
      );
      const human = await vrpOn(t, 'backup', 'verify', b.backup_id);
      assert.equal(human.code, 1);
      assert.match(human.out, /DAMAGED\t0 segments\n {2}manifest: Backup .* has no manifest in the store/);

      // The command's own refusals: exit 2 with the reason; an id that is no UUID names no backup.
      for (const args of [[], ['check'], ['verify'], ['verify', b.backup_id, 'extra']]) {
        const r = await vrpOn(t, 'backup', ...args);
        assert.equal(r.code, 2, `vrp backup ${args.join(' ')}: ${r.err}`);
        assert.match(r.err, /^vrp: backup/);
      }
      const notId = await vrpOn(t, 'backup', 'verify', 'not-an-id');
      assert.equal(notId.code, 1);
      assert.match(notId.err, /Backup not found/);
    });

    test('a chain missing a link in the store: restore and delete fail naming it, and change nothing', async () => {
      const id = await running();
      await write(id, 2);
      const full = await backup(id);
      await write(id);
      const inc = await backup(id);
      assert.equal(inc.parent_id, full.backup_id);
      await write(id);
      const before = await revision(id);
      // The full backup's manifest is lost from the store (an operator's mistake on the bucket).
      rmSync(join(t.dataDir, 'backups', id, full.backup_id, 'manifest'));
      await ok('POST', `service/${id}/backup/restore/${inc.backup_id}`);
      await waitForStatus(t, token, id, 'running');
      const restoreJob = await lastJob(id, 'backup_restore');
      assert.equal(restoreJob.status, 'failed');
      assert.equal(
        restoreJob.error,
        `Backup ${inc.backup_id} needs backup ${full.backup_id}, which is not in the backup store`,
      );
      assert.equal(await revision(id), before, 'the disk is as it was');
      // Deleting the full one would merge it into the incremental: it cannot, and says so.
      await ok('POST', `service/${id}/backup/delete/${full.backup_id}`);
      await waitForStatus(t, token, id, 'running');
      const deleteJob = await lastJob(id, 'backup_delete');
      assert.equal(deleteJob.status, 'failed');
      assert.equal(
        deleteJob.error,
        `Backup ${full.backup_id} is not in the backup store: backup ${inc.backup_id} cannot stand alone`,
      );
      const left = await opsBackups(id);
      assert.equal(left.find((b) => b.backup_id === inc.backup_id)?.parent_id, full.backup_id);
      // Not stuck `deleting`: available again, so the deletion can be asked again.
      assert.equal(left.find((b) => b.backup_id === full.backup_id)?.status, 'available');
    });

    test("a backup whose child's manifest is missing from the store is kept: its deletion fails naming the child", async () => {
      const id = await running();
      await write(id, 2);
      const full = await backup(id);
      const atFull = await revision(id);
      await write(id);
      const inc = await backup(id);
      assert.equal(inc.parent_id, full.backup_id);
      // The incremental's manifest is gone (a replace torn on a server without posix-rename, or
      // an operator's mistake): its data may still be there, and it needs the full one's.
      rmSync(join(t.dataDir, 'backups', id, inc.backup_id, 'manifest'));
      await ok('POST', `service/${id}/backup/delete/${full.backup_id}`);
      await waitForStatus(t, token, id, 'running');
      const deleteJob = await lastJob(id, 'backup_delete');
      assert.equal(deleteJob.status, 'failed');
      assert.equal(
        deleteJob.error,
        `Backup ${inc.backup_id}, taken after backup ${full.backup_id}, has no manifest in the backup store: ${full.backup_id} is kept`,
      );
      const left = await opsBackups(id);
      assert.equal(left.find((b) => b.backup_id === full.backup_id)?.status, 'available');
      assert.notDeepEqual(await t.ctx.backupStore.list(`${id}/${full.backup_id}/`), []);
      await write(id);
      await restore(id, full.backup_id);
      assert.equal(await revision(id), atFull, 'the full backup still restores');
    });

    test('a restore with another backup key fails "backup cannot be decrypted" and changes nothing', async () => {
      const id = await running();
      await write(id, 2);
      const b = await backup(id);
      await write(id);
      const before = await revision(id);
      const other = loadConfig(testEnv(t.dataDir, { VRP_BACKUP_KEY: 'ab'.repeat(32) }));
      const deps: BackupDeps = {
        archive: createArchive(t.ctx.backupStore, backupKeyOf(other, t.ctx.keys)),
        keepAfterTerminateMs: 0,
      };
      await withWorker(deps, async () => {
        await ok('POST', `service/${id}/backup/restore/${b.backup_id}`);
        await waitForStatus(t, token, id, 'running');
      });
      const job = await lastJob(id, 'backup_restore');
      assert.equal(job.status, 'failed');
      assert.equal(job.error, 'backup cannot be decrypted');
      assert.equal(await revision(id), before, 'the disk is as it was');
      assert.equal((await opsBackups(id))[0].status, 'available');
    });

    test('a backup store that keeps failing: the job retries, then fails with its message; nothing of the backup is left', async () => {
      const id = await running();
      await write(id);
      let puts = 0;
      const failing: BackupStore = {
        ...t.ctx.backupStore,
        async put(key, data) {
          // The data object goes in; the manifest (written last) never does.
          if (key.endsWith('/manifest')) {
            puts++;
            throw new BackupStoreError('Backup store test: cannot write (connection refused)', {
              transient: true,
            });
          }
          return t.ctx.backupStore.put(key, data);
        },
      };
      await withWorker(
        { archive: createArchive(failing, t.ctx.backupKey), keepAfterTerminateMs: 0 },
        async () => {
          await ok('POST', `service/${id}/backup/create`);
          await waitForStatus(t, token, id, 'running');
        },
      );
      const job = await lastJob(id, 'backup_create');
      assert.equal(job.status, 'failed');
      assert.match(job.error, /cannot write \(connection refused\)/);
      assert.equal(puts, 3, 'each of the 3 attempts tried');
      const [b] = await opsBackups(id);
      assert.equal(b.status, 'failed');
      assert.equal(b.size_gb, 0, 'a failed backup counts nothing');
      assert.deepEqual(await t.ctx.backupStore.list(`${id}/`), [], 'no object of it is left');
    });

    /** The service's backups as the reseller sees them (newest first). */
    const listed = (id: string): Promise<any[]> => ok('GET', `service/${id}/backups`);

    /**
     * A running service with one scheduled backup, S1, that fills its 1 GB of backup space (as if
     * it took all of it): the next backup rotates S1 out. The disk changes after it.
     */
    async function fullOfS1(): Promise<{ id: string; s1: string; atS1: number }> {
      const id = await running();
      await write(id);
      const s1 = (await backup(id)).backup_id;
      const atS1 = await revision(id);
      await t.ctx.store.db
        .updateTable('backups')
        .set({ kind: 'scheduled', size_gb: 1 })
        .where('id', '=', s1)
        .execute();
      await t.ctx.store.db.updateTable('services').set({ backup: 1 }).where('id', '=', id).execute();
      await write(id);
      return { id, s1, atS1 };
    }

    /** The app's archive, holding the first call of `method` on backup `held` until `release()`. */
    function holding(method: 'mergeIntoChild' | 'remove', held: string) {
      const archive = backupDeps(t.ctx).archive;
      const reached = Promise.withResolvers<void>();
      const released = Promise.withResolvers<void>();
      const hold = async (backupId: string) => {
        if (backupId !== held) return;
        reached.resolve();
        await released.promise;
      };
      const deps: BackupDeps = {
        archive: {
          ...archive,
          async mergeIntoChild(parent, child) {
            if (method === 'mergeIntoChild') await hold(parent.backupId);
            return archive.mergeIntoChild(parent, child);
          },
          async remove(serviceId, backupId) {
            if (method === 'remove') await hold(backupId);
            return archive.remove(serviceId, backupId);
          },
        },
        keepAfterTerminateMs: 0,
      };
      return { deps, reached: reached.promise, release: () => released.resolve() };
    }

    test('a restore queued behind a backup whose rotation would remove its backup: it is kept and restored, the next rotation removes it', async () => {
      const { id, s1, atS1 } = await fullOfS1();
      // A backup is queued (a scheduled one alike), then the restore of the oldest backup, the
      // one that backup's rotation is to remove.
      await t.background?.worker.stop(1000);
      await ok('POST', `service/${id}/backup/create`);
      await ok('POST', `service/${id}/backup/restore/${s1}`);
      t.background?.worker.start();
      await waitForStatus(t, token, id, 'running');
      const create = await lastJob(id, 'backup_create');
      const restore = await lastJob(id, 'backup_restore');
      assert.equal(create.status, 'succeeded', JSON.stringify(create));
      assert.equal(restore.status, 'succeeded', JSON.stringify(restore));
      assert.equal(await revision(id), atS1, 'the disk is back as it was at S1');
      assert.deepEqual(
        (await listed(id)).map((b) => [b.backup_id === s1 ? 'S1' : 'new', b.status]),
        [
          ['new', 'available'],
          ['S1', 'available'],
        ],
        'S1 is kept (over the quota for now), the new backup too',
      );

      // The next backup's rotation, no restore waiting, removes S1.
      await ok('POST', `service/${id}/backup/create`);
      await waitForStatus(t, token, id, 'running');
      assert.equal((await lastJob(id, 'backup_create')).status, 'succeeded');
      const left = await listed(id);
      assert.ok(!left.some((b) => b.backup_id === s1), 'S1 is rotated out now');
      assert.deepEqual(
        left.map((b) => b.status),
        ['available', 'available'],
      );
    });

    test('a restore asked for while the rotation removes its backup is refused, 400 invalid_state', async () => {
      const { id, s1 } = await fullOfS1();
      const held = holding('remove', s1);
      await withWorker(held.deps, async () => {
        await ok('POST', `service/${id}/backup/create`);
        await held.reached;
        assert.equal((await listed(id)).find((b) => b.backup_id === s1)?.status, 'deleting');
        const refused = await call(t, token, 'POST', `service/${id}/backup/restore/${s1}`);
        assert.equal(refused.status, 400, JSON.stringify(refused.body));
        assert.equal(refused.body.error_code, 'invalid_state');
        assert.equal(refused.body.message, 'Cannot restore a backup that is deleting');
        held.release();
        await waitForStatus(t, token, id, 'running');
      });
      assert.equal(await lastJob(id, 'backup_restore'), undefined, 'no restore was queued');
      assert.equal((await lastJob(id, 'backup_create')).status, 'succeeded');
      assert.ok(!(await listed(id)).some((b) => b.backup_id === s1), 'S1 was rotated out');
    });

    test('a restore accepted while the rotation runs, before it holds the backup: the backup is kept and restored', async () => {
      const { id, s1, atS1 } = await fullOfS1();
      // Held while S1 is merged into the new backup: chosen for rotation, not marked yet.
      const held = holding('mergeIntoChild', s1);
      await withWorker(held.deps, async () => {
        await ok('POST', `service/${id}/backup/create`);
        await held.reached;
        await ok('POST', `service/${id}/backup/restore/${s1}`);
        held.release();
        await waitForStatus(t, token, id, 'running');
      });
      assert.equal((await lastJob(id, 'backup_restore')).status, 'succeeded');
      assert.equal(await revision(id), atS1);
      assert.deepEqual(
        (await listed(id)).map((b) => [b.backup_id === s1 ? 'S1' : 'new', b.status]),
        [
          ['new', 'available'],
          ['S1', 'available'],
        ],
      );
    });

    test("rotation's mark made while a restore's acceptance is open waits for its commit, then its read sees the job", async () => {
      const { id, s1 } = await fullOfS1();
      const { db } = t.ctx.store;
      const { reseller_id: resellerId } = await db
        .selectFrom('services')
        .select('reseller_id')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      await t.background?.worker.stop(1000);
      try {
        let mark: Promise<boolean> | undefined;
        await db.transaction().execute(async (tx) => {
          const req = { resellerId, serviceId: id, ...backupRestoreOperation(s1) };
          assert.equal((await enqueueInTransaction(tx, req, Date.now())).kind, 'queued');
          // Not awaited here: the commit of this transaction is what it waits for.
          mark = markBackupDeleting(db, s1, Date.now());
          await new Promise((r) => setTimeout(r, 200));
          assert.equal(await promiseState(mark), 'pending', 'the mark waits for the acceptance');
        });
        assert.equal(await mark, true);
        assert.deepEqual(
          (await backupsNamedByPendingJobs(db, id)).map((j) => [j.backupId, j.action]),
          [[s1, 'backup_restore']],
          'a read after the mark sees the restore',
        );
        // As the rotation then does: S1 available again, kept.
        await db.updateTable('backups').set({ status: 'available' }).where('id', '=', s1).execute();
      } finally {
        t.background?.worker.start();
      }
      await waitForStatus(t, token, id, 'running');
      assert.equal((await lastJob(id, 'backup_restore')).status, 'succeeded');
    });

    test('a backup a rotation left deleting (its process died before the removal) is settled by the next backup job', async () => {
      const { id, s1 } = await fullOfS1();
      // No deletion names it; and room enough: nothing is rotated out this time.
      await t.ctx.store.db.updateTable('backups').set({ status: 'deleting' }).where('id', '=', s1).execute();
      await t.ctx.store.db.updateTable('services').set({ backup: 20 }).where('id', '=', id).execute();
      await backup(id);
      assert.equal((await listed(id)).find((b) => b.backup_id === s1)?.status, 'available');
      await restore(id, s1);
      assert.equal((await lastJob(id, 'backup_restore')).status, 'succeeded');
    });

    /**
     * Runs `body` with the app's worker replaced by one that uses `deps` and `driver` (3 attempts,
     * short backoff).
     */
    async function withWorker(
      deps: BackupDeps,
      body: () => Promise<void>,
      driver: HypervisorDriver = t.driver!,
    ): Promise<void> {
      await t.background?.worker.stop(1000);
      const w: Worker = createWorker({
        store: t.ctx.store,
        driver,
        backups: deps,
        secretBox: t.ctx.secretBox,
        clock: t.ctx.clock,
        log: t.app.log,
        signal: t.ctx.jobSignal,
        tasks: TASKS,
        concurrency: 4,
        leaseMs: 5000,
        retryBaseMs: 5,
        maxAttempts: 3,
        stopTimeoutMs: 1000,
        pollMs: 20,
      });
      w.start();
      try {
        await body();
      } finally {
        await w.stop(1000);
        t.background?.worker.start();
      }
    }
  });

  describe(`backups kept after termination (${store})`, () => {
    test('VRP_BACKUP_KEEP_AFTER_TERMINATE keeps them; the pruner removes them once the time is over', async () => {
      const t = await createTestApp({ VRP_BACKUP_KEEP_AFTER_TERMINATE: '7d' }, { worker: true, store });
      try {
        const token = await t.token();
        const res = await call(t, token, 'POST', 'service/create-order', order());
        const id = res.body.data[0].service_id;
        await call(t, token, 'POST', `service/${id}/create`);
        await waitForStatus(t, token, id, 'running');
        for (let i = 0; i < 2; i++) {
          await call(t, token, 'POST', `service/${id}/backup/create`);
          await waitForStatus(t, token, id, 'running');
        }
        await call(t, token, 'POST', `service/${id}/terminate`);
        await waitForStatus(t, token, id, 'terminated');
        const kept = await t.ctx.store.db
          .selectFrom('backups')
          .select(['id', 'keep_until'])
          .where('service_id', '=', id)
          .execute();
        assert.equal(kept.length, 2, 'the backups are kept');
        for (const k of kept) assert.ok(k.keep_until !== null && k.keep_until > Date.now() + 6 * DAY);
        assert.ok((await t.ctx.backupStore.list(`${id}/`)).length >= 4, 'with their objects');

        await prunerAt(t, Date.now() + 6 * DAY).run();
        assert.equal(
          (await t.ctx.store.db.selectFrom('backups').select('id').where('service_id', '=', id).execute())
            .length,
          2,
          'not before the time is over',
        );
        await prunerAt(t, Date.now() + 8 * DAY).run();
        assert.deepEqual(
          await t.ctx.store.db.selectFrom('backups').select('id').where('service_id', '=', id).execute(),
          [],
        );
        assert.deepEqual(await t.ctx.backupStore.list(`${id}/`), [], 'their objects are gone');
      } finally {
        await t.close();
      }
    });
  });
}
