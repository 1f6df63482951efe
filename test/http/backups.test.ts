import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

const product = DEMO_CATALOG.products[0]!;
const storage = DEMO_CATALOG.products.find((p) => Number(p.config.backup.min) === 0)!;

function order(p = product, overrides: Record<string, unknown> = {}) {
  return {
    product_id: p.id,
    domain_name: 'backup.example.com',
    template_id: p.os_templates[0],
    cpu: Number(p.config.cpu.min),
    ram: Number(p.config.ram.min),
    hdd: Number(p.config.hdd.min),
    ip: Number(p.config.ip.min),
    backup: Number(p.config.backup.min),
    ...overrides,
  };
}

for (const store of testStores()) {
  describe(`backups (${store})`, () => {
    let t: TestApp;
    let token: string;
    let tokenA: string;

    before(async () => {
      t = await createTestApp({}, { worker: true, store });
      token = await t.token();
      tokenA = await t.token({ variant: 'A' });
    });
    after(() => t.close());

    async function running(p = product, overrides: Record<string, unknown> = {}): Promise<string> {
      const res = await call(t, token, 'POST', 'service/create-order', order(p, overrides));
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const id = res.body.data[0].service_id;
      await ok(token, 'POST', `service/${id}/create`);
      await waitForStatus(t, token, id, 'running');
      return id;
    }
    /** A call that must be accepted (200); returns its `data`. */
    async function ok(as: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<any> {
      const res = await call(t, as, method, path, body);
      assert.equal(res.status, 200, `${method} ${path}: ${JSON.stringify(res.body)}`);
      return res.body.data;
    }
    const backups = (id: string) => ok(token, 'GET', `service/${id}/backups`);
    const details = (id: string) => ok(token, 'GET', `service/${id}/details`);

    test('create, list, restore brings back the disk content, delete frees the space', async () => {
      const id = await running();
      assert.deepEqual(await backups(id), []);
      const created = await call(t, token, 'POST', `service/${id}/backup/create`);
      assert.equal(created.status, 200);
      assert.deepEqual(created.body.data, []);
      await waitForStatus(t, token, id, 'running');
      const [b] = await backups(id);
      assert.equal(b.status, 'available');
      assert.equal(b.kind, 'manual');
      assert.ok(b.size_gb > 0);
      assert.equal(b.service_id, id);
      assert.match(b.created_at, /^\d{4}-\d\d-\d\dT/);
      const revisionAtBackup = (await details(id)).disk_revision;

      // Change the disk: a restart and a password change write to it.
      await ok(token, 'POST', `service/${id}/restart`);
      await ok(token, 'POST', `service/${id}/reset-password`, { password: 'Another-pass-9' });
      await waitForStatus(t, token, id, 'running');
      const changed = (await details(id)).disk_revision;
      assert.ok(changed > revisionAtBackup, 'the disk changed after the backup');

      await ok(token, 'POST', `service/${id}/backup/restore/${b.backup_id}`);
      const afterRestore = await waitForStatus(t, token, id, 'running');
      assert.equal(afterRestore.status, 'running', 'restore returns the server to its power state');
      assert.equal((await details(id)).disk_revision, revisionAtBackup, 'the disk is back as it was');

      // The backup is kept in the backup store, off the host: its data and its manifest.
      const stored = await t.ctx.backupStore.list(`${id}/${b.backup_id}/`);
      assert.ok(stored.length >= 2, `the backup is in the backup store: ${stored.join(', ')}`);
      const del = await call(t, tokenA, 'POST', `service/${id}/backup/delete/${b.backup_id}`);
      assert.equal(del.status, 200);
      assert.equal(del.body.success, 'true');
      assert.match(del.body.message, /[Bb]ackup/);
      await waitForStatus(t, token, id, 'running');
      assert.deepEqual(await backups(id), []);
      assert.deepEqual(await t.ctx.backupStore.list(`${id}/`), [], 'deleting freed the backup storage');
    });

    test('restore of a stopped server leaves it stopped', async () => {
      const id = await running();
      await ok(token, 'POST', `service/${id}/backup/create`);
      await ok(token, 'POST', `service/${id}/stop`);
      await waitForStatus(t, token, id, 'stopped');
      const [b] = await backups(id);
      await ok(token, 'POST', `service/${id}/backup/restore/${b.backup_id}`);
      await waitForStatus(t, token, id, 'stopped');
    });

    test('a service with 0 GB of backup space cannot create backups', async () => {
      const id = await running(storage);
      const res = await call(t, token, 'POST', `service/${id}/backup/create`);
      assert.equal(res.status, 400);
      assert.equal(res.body.error_code, 'backups_disabled');
    });

    test('quota: a full quota of manual backups refuses the next; scheduled ones rotate out first', async () => {
      // A backup counts its stored size (a small simulated disk: 0.1 GB each): 1 GB holds ten.
      const id = await running(storage, { backup: 1 });
      const sizes: number[] = [];
      // Fill the 1 GB with manual backups until the next cannot fit.
      for (let i = 0; i < 20; i++) {
        const res = await call(t, token, 'POST', `service/${id}/backup/create`);
        if (res.status === 400) {
          assert.equal(res.body.error_code, 'backup_quota_exceeded');
          break;
        }
        await waitForStatus(t, token, id, 'running');
        const list = await backups(id);
        sizes.push(list[0].size_gb);
      }
      const total = (await backups(id))
        .filter((b: any) => b.status === 'available')
        .reduce((s: number, b: any) => s + b.size_gb, 0);
      assert.ok(total <= 1 + 1e-9, `backups use ${total} GB of 1`);
      assert.ok(sizes.length >= 2);
      // Upgrading BACKUP below what backups use now is refused.
      const shrink = await call(t, token, 'POST', `service/${id}/upgrade`, {
        CPU: 1,
        RAM: 1,
        HDD: Number(storage.config.hdd.min),
        IP: 1,
        BACKUP:
          Math.ceil(total) - 1 >= Number(storage.config.backup.min)
            ? Math.ceil(total) - 1
            : Number(storage.config.backup.min),
      });
      if (Math.ceil(total) - 1 >= Number(storage.config.backup.min)) {
        assert.equal(shrink.status, 400, JSON.stringify(shrink.body));
        assert.equal(shrink.body.error_code, 'backup_quota_exceeded');
      }
    });

    test('scheduled backups are rotated out, oldest first, to make room', async () => {
      // Stored sizes: 0.1 GB a backup here, so 1 GB holds ten.
      const id = await running(storage, { backup: 1 });
      // Mark backups as scheduled ones, as the scheduler makes them.
      for (let i = 0; i < 3; i++) {
        await ok(token, 'POST', `service/${id}/backup/create`);
        await waitForStatus(t, token, id, 'running');
      }
      await t.ctx.store.db
        .updateTable('backups')
        .set({ kind: 'scheduled' })
        .where('service_id', '=', id)
        .execute();
      const before1 = await backups(id);
      const oldest = before1[before1.length - 1].backup_id;
      let rotated = false;
      for (let i = 0; i < 20 && !rotated; i++) {
        const res = await call(t, token, 'POST', `service/${id}/backup/create`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        await waitForStatus(t, token, id, 'running');
        rotated = !(await backups(id)).some((b: any) => b.backup_id === oldest);
      }
      assert.ok(rotated, 'the oldest scheduled backup was rotated out');
      const list = await backups(id);
      assert.ok(list.reduce((s: number, b: any) => s + b.size_gb, 0) <= 1 + 1e-9);
    });

    test('backup operations follow the status table', async () => {
      const id = await running();
      await ok(token, 'POST', `service/${id}/backup/create`);
      await waitForStatus(t, token, id, 'running');
      const [b] = await backups(id);
      await ok(token, 'POST', `service/${id}/suspend`);
      await waitForStatus(t, token, id, 'suspended');
      for (const path of [`service/${id}/backup/create`, `service/${id}/backup/restore/${b.backup_id}`]) {
        const refused = await call(t, token, 'POST', path);
        assert.equal(refused.status, 400, path);
        assert.equal(refused.body.error_code, 'invalid_state', path);
      }
      assert.equal((await call(t, token, 'POST', `service/${id}/backup/delete/${b.backup_id}`)).status, 200);
      await waitForStatus(t, token, id, 'suspended');
      assert.deepEqual(await backups(id), []);
    });

    test('unknown backup ids are 404 backup_not_found', async () => {
      const id = await running();
      for (const bid of ['33333333-3333-4333-8333-333333333333', 'nope']) {
        for (const op of ['restore', 'delete']) {
          const res = await call(t, token, 'POST', `service/${id}/backup/${op}/${bid}`);
          assert.equal(res.status, 404, `${op} ${bid}`);
          assert.equal(res.body.error_code, 'backup_not_found');
        }
      }
      // Another service's backup is not found through this service.
      const other = await running();
      await ok(token, 'POST', `service/${other}/backup/create`);
      await waitForStatus(t, token, other, 'running');
      const [ob] = await backups(other);
      const res = await call(t, token, 'POST', `service/${id}/backup/restore/${ob.backup_id}`);
      assert.equal(res.status, 404);
      assert.equal(res.body.error_code, 'backup_not_found');
    });

    test('terminate deletes the backups and frees their storage', async () => {
      const id = await running();
      await ok(token, 'POST', `service/${id}/backup/create`);
      await ok(token, 'POST', `service/${id}/backup/create`);
      await waitForStatus(t, token, id, 'running');
      assert.equal((await backups(id)).length, 2);
      await ok(token, 'POST', `service/${id}/terminate`);
      await waitForStatus(t, token, id, 'terminated');
      assert.deepEqual(await backups(id), []);
      const left = await t.ctx.store.db
        .selectFrom('sim_backups')
        .select('id')
        .where('vm_id', '=', id)
        .execute();
      assert.deepEqual(left, []);
      assert.deepEqual(
        await t.ctx.backupStore.list(`${id}/`),
        [],
        'nothing of them is left in the backup store',
      );
      const vms = await t.ctx.store.db.selectFrom('sim_vms').select('id').where('id', '=', id).execute();
      assert.deepEqual(vms, []);
      const ips = await t.ctx.store.db
        .selectFrom('ip_addresses')
        .select('address')
        .where('vm_id', '=', id)
        .execute();
      assert.deepEqual(ips, []);
    });
  });
}
