import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { ensureReseller } from '../../src/auth/applications.ts';
import type { StableStatus } from '../../src/domain/status-machine.ts';
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
      // Terminating removes the schedules; a terminated service accepts no schedule change.
      await call(t, token, 'POST', `service/${other}/terminate`);
      await waitForStatus(t, token, other, 'terminated');
      assert.deepEqual(await list(other), []);
      const r7 = await call(t, token, 'POST', `service/${other}/backup-schedule/create`, {
        BsTime: '05:00',
        BSDays: 'sun',
      });
      assert.equal(r7.status, 400);
      assert.equal(r7.body.error_code, 'invalid_state');
      const r8 = await call(
        t,
        token,
        'POST',
        `service/${other}/backup-schedule/delete/${theirs.backup_schedule_id}`,
      );
      assert.equal(r8.body.error_code, 'invalid_state');
    });
  });
}

/**
 * Schedules need no job, so these tests write services directly in the status they need, and
 * run no worker (hence no scheduler): next_run_at stays as created. The server's clock is
 * nearly stopped on Monday 2026-11-23 10:00:30 UTC.
 */
for (const store of testStores()) {
  describe(`backup schedules by service status (${store})`, () => {
    let t: TestApp;
    let token: string;
    let tokenA: string;
    let otherToken: string;
    let acme: string;
    before(async () => {
      t = await createTestApp(
        { VRP_CLOCK_START: '2026-11-23T10:00:30Z', VRP_CLOCK_RATE: '0.001' },
        { store, demo: false },
      );
      token = await t.token();
      tokenA = await t.token({ variant: 'A' });
      otherToken = await t.token({ reseller: 'globex' });
      acme = (await ensureReseller(t.ctx.store.db, 'acme', Date.now())).id;
    });
    after(() => t.close());

    async function service(
      status: StableStatus,
      o: { projected?: StableStatus; backup?: number } = {},
    ): Promise<string> {
      const id = randomUUID();
      const projected = o.projected ?? status;
      await t.ctx.store.db
        .insertInto('services')
        .values({
          id,
          reseller_id: acme,
          client_id: 'c',
          product_id: 'p',
          template_id: 'tpl',
          domain_name: 'sched.example.com',
          username: 'root',
          password_enc: 'x',
          cpu: 1,
          ram: 1,
          hdd: 20,
          ip_count: 1,
          backup: o.backup ?? 50,
          status,
          resume_status: status === 'suspended' ? 'running' : null,
          suspend_reason: null,
          projected_status: projected,
          projected_resume: projected === 'suspended' ? 'running' : null,
          pending_jobs: projected === status ? 0 : 1,
          job_seq: projected === status ? 0 : 1,
          active_job_id: null,
          host_id: null,
          ips: '[]',
          disk_revision: null,
          created_at: 0,
          updated_at: 0,
          terminated_at: null,
          ssh_keys: '[]',
          rescue_since: null,
        })
        .execute();
      return id;
    }
    const create = (id: string, BsTime: unknown, BSDays: unknown, tok = token) =>
      call(t, tok, 'POST', `service/${id}/backup-schedule/create`, { BsTime, BSDays });
    const list = async (id: string) =>
      (await call(t, token, 'GET', `service/${id}/backup-schedule`)).body.data;

    test('next_run_at is the first slot from the current minute on, in UTC', async () => {
      const cases: [string, string, string][] = [
        ['10:00', 'mon', '2026-11-23T10:00:00.000Z'], // this minute: it runs now
        ['09:59', 'mon', '2026-11-30T09:59:00.000Z'], // a minute ago: next week
        ['10:01', 'tue,mon', '2026-11-23T10:01:00.000Z'],
        ['00:00', 'sun', '2026-11-29T00:00:00.000Z'],
        ['23:59', 'sat,sun', '2026-11-28T23:59:00.000Z'],
        ['08:00', 'mon,tue,wed,thu,fri,sat,sun', '2026-11-24T08:00:00.000Z'],
      ];
      for (const [time, days, expected] of cases) {
        const id = await service('running');
        const res = await create(id, time, days);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.deepEqual(res.body, { status: 'Success', message: '', data: [] });
        const [s] = await list(id);
        assert.deepEqual(Object.keys(s).sort(), [
          'BSDays',
          'BsTime',
          'backup_schedule_id',
          'created_at',
          'next_run_at',
          'timezone',
        ]);
        assert.equal(s.next_run_at, expected, `${time} ${days}`);
        assert.equal(s.BSDays, days, 'BSDays as given');
        assert.equal(s.timezone, 'UTC');
        assert.match(s.created_at, /^2026-11-23T10:00:3\d\.\d{3}Z$/, 'created_at from the server clock');
      }
    });

    test('variant A: create, list and delete, with service_id in the body', async () => {
      const id = await service('stopped');
      const res = await call(t, tokenA, 'POST', `service/${id}/backup-schedule/create`, {
        service_id: id,
        BsTime: '04:00',
        BSDays: 'wed',
      });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { success: 'true', message: '', data: '[]' });
      const mismatch = await call(t, tokenA, 'POST', `service/${id}/backup-schedule/create`, {
        service_id: randomUUID(),
        BsTime: '04:00',
        BSDays: 'wed',
      });
      assert.equal(mismatch.status, 400);
      assert.equal(mismatch.body.success, 'false');
      assert.equal(mismatch.body.error_code, 'service_id_mismatch');
      const listed = await call(t, tokenA, 'GET', `service/${id}/backup-schedule`);
      const schedules = JSON.parse(listed.body.data);
      assert.equal(schedules.length, 1);
      assert.equal(schedules[0].next_run_at, '2026-11-25T04:00:00.000Z');
      const del = await call(
        t,
        tokenA,
        'POST',
        `service/${id}/backup-schedule/delete/${schedules[0].backup_schedule_id}`,
        { service_id: id },
      );
      assert.deepEqual(del.body, { success: 'true', message: 'Backup schedule deleted', data: '[]' });
      assert.deepEqual(await list(id), []);
    });

    test('status rules: running and stopped accept both; suspended only delete; the projection counts', async () => {
      for (const status of ['running', 'stopped'] as const) {
        const id = await service(status);
        assert.equal((await create(id, '01:00', 'mon')).status, 200, status);
      }
      const suspended = await service('running');
      assert.equal((await create(suspended, '01:00', 'mon')).status, 200);
      const [s] = await list(suspended);
      await t.ctx.store.db
        .updateTable('services')
        .set({ status: 'suspended', projected_status: 'suspended', resume_status: 'running' })
        .where('id', '=', suspended)
        .execute();
      const refused = await create(suspended, '02:00', 'mon');
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error_code, 'invalid_state');
      assert.match(refused.body.message, /suspended/);
      const del = await call(
        t,
        token,
        'POST',
        `service/${suspended}/backup-schedule/delete/${s.backup_schedule_id}`,
      );
      assert.equal(del.status, 200);
      assert.deepEqual(await list(suspended), []);

      const states: [StableStatus, StableStatus | undefined][] = [
        ['pending', undefined],
        ['failed', undefined],
        ['terminated', undefined],
        ['running', 'suspended'], // a suspend is queued: checked against where the service is going
        ['running', 'terminated'],
      ];
      for (const [status, projected] of states) {
        const id = await service(status, { projected });
        const r = await create(id, '01:00', 'mon');
        assert.equal(r.status, 400, `${status} -> ${projected}`);
        assert.equal(r.body.error_code, 'invalid_state');
        assert.deepEqual(await list(id), [], 'the list still answers');
      }
      const terminated = await service('terminated');
      const r = await call(t, token, 'POST', `service/${terminated}/backup-schedule/delete/${randomUUID()}`);
      assert.equal(r.body.error_code, 'invalid_state');
    });

    test('no backup space: backups_disabled', async () => {
      const id = await service('running', { backup: 0 });
      const r = await create(id, '01:00', 'mon');
      assert.equal(r.status, 400);
      assert.equal(r.body.error_code, 'backups_disabled');
    });

    test('validation: 400 validation_failed naming the field', async () => {
      const id = await service('running');
      const cases: [unknown, unknown, RegExp][] = [
        ['12:60', 'mon', /BsTime/],
        [' 12:00', 'mon', /BsTime/],
        ['12:00:00', 'mon', /BsTime/],
        ['12:00', 'mon,', /BSDays/],
        ['12:00', 'mon, tue', /BSDays/],
        ['12:00', 'monday', /BSDays/],
        ['12:00', ['mon'], /BSDays/],
        [null, 'mon', /BsTime/],
      ];
      for (const [time, days, msg] of cases) {
        const r = await create(id, time, days);
        assert.equal(r.status, 400, JSON.stringify([time, days]));
        assert.equal(r.body.error_code, 'validation_failed');
        assert.match(r.body.message, msg);
      }
      const missing = await call(t, token, 'POST', `service/${id}/backup-schedule/create`, { BSDays: 'mon' });
      assert.equal(missing.body.error_code, 'validation_failed');
      assert.match(missing.body.message, /BsTime/);
      assert.deepEqual(await list(id), []);
    });

    test("unknown, malformed or another reseller's service or schedule: 404", async () => {
      const mine = await service('running');
      assert.equal((await create(mine, '01:00', 'mon')).status, 200);
      const [s] = await list(mine);
      for (const sid of [randomUUID(), 'not-a-uuid']) {
        for (const [method, path, body] of [
          ['GET', `service/${sid}/backup-schedule`, undefined],
          ['POST', `service/${sid}/backup-schedule/create`, { BsTime: '01:00', BSDays: 'mon' }],
          ['POST', `service/${sid}/backup-schedule/delete/${s.backup_schedule_id}`, undefined],
        ] as const) {
          const r = await call(t, token, method, path, body);
          assert.equal(r.status, 404, path);
          assert.equal(r.body.error_code, 'service_not_found');
        }
      }
      // Another reseller sees nothing of this service and cannot change it.
      const theirs = await call(t, otherToken, 'GET', `service/${mine}/backup-schedule`);
      assert.equal(theirs.status, 404);
      assert.equal(theirs.body.error_code, 'service_not_found');
      assert.equal((await create(mine, '02:00', 'mon', otherToken)).status, 404);
      const del = await call(
        t,
        otherToken,
        'POST',
        `service/${mine}/backup-schedule/delete/${s.backup_schedule_id}`,
      );
      assert.equal(del.status, 404);
      assert.equal((await list(mine)).length, 1);
      // Unknown schedules, including one of another service, and ids that are not UUIDs.
      const other = await service('running');
      for (const bad of [randomUUID(), 'x', s.backup_schedule_id.toUpperCase().replace(/.$/, '0')]) {
        const r = await call(t, token, 'POST', `service/${other}/backup-schedule/delete/${bad}`);
        assert.equal(r.status, 404);
        assert.equal(r.body.error_code, 'backup_schedule_not_found');
      }
      const cross = await call(
        t,
        token,
        'POST',
        `service/${other}/backup-schedule/delete/${s.backup_schedule_id}`,
      );
      assert.equal(cross.body.error_code, 'backup_schedule_not_found');
      // Ids are matched case-insensitively.
      const upper = await call(
        t,
        token,
        'POST',
        `service/${mine}/backup-schedule/delete/${s.backup_schedule_id.toUpperCase()}`,
      );
      assert.equal(upper.status, 200);
    });

    test('the same time and days again is already done: 200, one schedule, also at the cap', async () => {
      const id = await service('running');
      assert.equal((await create(id, '03:30', 'tue,fri')).status, 200);
      const again = await create(id, '03:30', 'fri,tue');
      assert.equal(again.status, 200);
      assert.deepEqual(again.body.data, []);
      const schedules = await list(id);
      assert.equal(schedules.length, 1);
      assert.equal(schedules[0].BSDays, 'tue,fri', 'the first one stays as it was');
      assert.equal((await create(id, '03:30', 'tue')).status, 200, 'a different day set is another schedule');
      for (let i = 0; i < 8; i++) assert.equal((await create(id, `1${i}:00`, 'mon')).status, 200);
      assert.equal((await list(id)).length, 10);
      assert.equal((await create(id, '03:30', 'tue,fri')).status, 200, 'a duplicate at the cap');
      const over = await create(id, '23:00', 'mon');
      assert.equal(over.status, 400);
      assert.equal(over.body.error_code, 'schedule_limit_reached');
      assert.equal((await list(id)).length, 10);
    });

    test('the cap holds under concurrent creates', async () => {
      const id = await service('running');
      const results = await Promise.all(
        Array.from({ length: 16 }, (_, i) => create(id, `${String(i).padStart(2, '0')}:15`, 'thu')),
      );
      const codes = results.map((r) => (r.status === 200 ? 'ok' : r.body.error_code));
      assert.equal(codes.filter((c) => c === 'ok').length, 10, JSON.stringify(codes));
      assert.equal(codes.filter((c) => c === 'schedule_limit_reached').length, 6, JSON.stringify(codes));
      assert.equal((await list(id)).length, 10);
    });
  });
}
