import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

const product = DEMO_CATALOG.products[0]!;
const storage = DEMO_CATALOG.products.find((p) => Number(p.config.backup.min) === 0)!;

for (const store of testStores()) {
  describe(`backup schedules (${store})`, () => {
    let t: TestApp;
    let token: string;
    let tokenA: string;
    before(async () => {
      // The server's clock starts on a Monday at 12:00 UTC.
      t = await createTestApp({ VRP_CLOCK_START: '2026-11-23T12:00:00Z' }, { worker: true, store });
      token = await t.token();
      tokenA = await t.token({ variant: 'A' });
    });
    after(() => t.close());

    async function service(p = product, start = true): Promise<string> {
      const res = await call(t, token, 'POST', 'service/create-order', {
        product_id: p.id,
        domain_name: 'sched.example.com',
        template_id: p.os_templates[0],
        cpu: Number(p.config.cpu.min),
        ram: Number(p.config.ram.min),
        hdd: Number(p.config.hdd.min),
        ip: Number(p.config.ip.min),
        backup: Number(p.config.backup.min),
      });
      const id = res.body.data[0].service_id;
      if (start) {
        await call(t, token, 'POST', `service/${id}/create`);
        await waitForStatus(t, token, id, 'running');
      }
      return id;
    }
    const list = async (id: string) =>
      (await call(t, token, 'GET', `service/${id}/backup-schedule`)).body.data;

    test('create, list with next_run_at in UTC, delete; both variants', async () => {
      const id = await service();
      const res = await call(t, token, 'POST', `service/${id}/backup-schedule/create`, {
        BsTime: '03:30',
        BSDays: 'tue,fri',
      });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.data, []);
      const [s] = await list(id);
      assert.equal(s.BsTime, '03:30');
      assert.equal(s.BSDays, 'tue,fri');
      assert.equal(s.timezone, 'UTC');
      assert.equal(s.next_run_at, '2026-11-24T03:30:00.000Z');
      assert.match(s.backup_schedule_id, /^[0-9a-f-]{36}$/);
      const a = await call(t, tokenA, 'GET', `service/${id}/backup-schedule`);
      assert.deepEqual(JSON.parse(a.body.data), [s]);
      const del = await call(
        t,
        tokenA,
        'POST',
        `service/${id}/backup-schedule/delete/${s.backup_schedule_id}`,
      );
      assert.equal(del.body.success, 'true');
      assert.equal(del.body.message, 'Backup schedule deleted');
      assert.deepEqual(await list(id), []);
      const again = await call(
        t,
        token,
        'POST',
        `service/${id}/backup-schedule/delete/${s.backup_schedule_id}`,
      );
      assert.equal(again.status, 404);
      assert.equal(again.body.error_code, 'backup_schedule_not_found');
    });

    test('validation errors name the field', async () => {
      const id = await service();
      const cases: [unknown, RegExp][] = [
        [{ BsTime: '24:00', BSDays: 'mon' }, /BsTime/],
        [{ BsTime: '7:00', BSDays: 'mon' }, /BsTime/],
        [{ BsTime: '07:00', BSDays: 'mon,mon' }, /BSDays|mon/],
        [{ BsTime: '07:00', BSDays: '' }, /BSDays/],
        [{ BsTime: '07:00', BSDays: 'Mon' }, /BSDays/],
        [{ BsTime: '07:00' }, /BSDays/],
        [{ BsTime: 700, BSDays: 'mon' }, /BsTime/],
      ];
      for (const [body, msg] of cases) {
        const res = await call(t, token, 'POST', `service/${id}/backup-schedule/create`, body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(res.body.error_code, 'validation_failed');
        assert.match(res.body.message, msg);
      }
    });

    test('status rules, disabled backups, the cap and unknown ids', async () => {
      const pending = await service(product, false);
      const r1 = await call(t, token, 'POST', `service/${pending}/backup-schedule/create`, {
        BsTime: '01:00',
        BSDays: 'mon',
      });
      assert.equal(r1.body.error_code, 'invalid_state');
      const noBackup = await service(storage);
      const r2 = await call(t, token, 'POST', `service/${noBackup}/backup-schedule/create`, {
        BsTime: '01:00',
        BSDays: 'mon',
      });
      assert.equal(r2.body.error_code, 'backups_disabled');

      const id = await service();
      for (let i = 0; i < 10; i++) {
        const r = await call(t, token, 'POST', `service/${id}/backup-schedule/create`, {
          BsTime: `0${i}:00`,
          BSDays: 'mon',
        });
        assert.equal(r.status, 200);
      }
      const r3 = await call(t, token, 'POST', `service/${id}/backup-schedule/create`, {
        BsTime: '11:00',
        BSDays: 'mon',
      });
      assert.equal(r3.body.error_code, 'schedule_limit_reached');
      const [first] = await list(id);
      await call(t, token, 'POST', `service/${id}/suspend`);
      await waitForStatus(t, token, id, 'suspended');
      const r4 = await call(t, token, 'POST', `service/${id}/backup-schedule/create`, {
        BsTime: '11:00',
        BSDays: 'mon',
      });
      assert.equal(r4.body.error_code, 'invalid_state');
      const r5 = await call(
        t,
        token,
        'POST',
        `service/${id}/backup-schedule/delete/${first.backup_schedule_id}`,
      );
      assert.equal(r5.status, 200, 'delete is allowed while suspended');
      for (const bad of ['44444444-4444-4444-8444-444444444444', 'x']) {
        const r = await call(t, token, 'POST', `service/${id}/backup-schedule/delete/${bad}`);
        assert.equal(r.body.error_code, 'backup_schedule_not_found');
      }
      // Another service's schedule is not found through this one.
      const other = await service();
      await call(t, token, 'POST', `service/${other}/backup-schedule/create`, {
        BsTime: '05:00',
        BSDays: 'sun',
      });
      const [theirs] = await list(other);
      const r6 = await call(
        t,
        token,
        'POST',
        `service/${id}/backup-schedule/delete/${theirs.backup_schedule_id}`,
      );
      assert.equal(r6.body.error_code, 'backup_schedule_not_found');
      // Terminating removes the schedules.
      await call(t, token, 'POST', `service/${other}/terminate`);
      await waitForStatus(t, token, other, 'terminated');
      assert.deepEqual(await list(other), []);
    });
  });
}
