import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { API, BASE, call, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

const product = DEMO_CATALOG.products[0]!;

function order(overrides: Record<string, unknown> = {}) {
  return {
    product_id: product.id,
    domain_name: 'web1.example.com',
    template_id: product.os_templates[0],
    cpu: Number(product.config.cpu.min),
    ram: Number(product.config.ram.min),
    hdd: Number(product.config.hdd.min),
    ip: Number(product.config.ip.min),
    backup: Math.max(10, Number(product.config.backup.min)),
    ...overrides,
  };
}

for (const store of testStores()) {
  describe(`service lifecycle over HTTP (simulated hypervisor, speed 0, ${store})`, () => {
    let t: TestApp;
    let token: string;
    let tokenA: string;

    before(async () => {
      t = await createTestApp({}, { worker: true, store });
      token = await t.token({ reseller: 'acme' });
      tokenA = await t.token({ reseller: 'acme', variant: 'A' });
    });
    after(() => t.close());

    async function ordered(overrides: Record<string, unknown> = {}): Promise<string> {
      const res = await call(t, token, 'POST', 'service/create-order', order(overrides));
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.data[0].service_id;
    }
    async function running(overrides: Record<string, unknown> = {}): Promise<string> {
      const id = await ordered(overrides);
      assert.equal((await call(t, token, 'POST', `service/${id}/create`)).status, 200);
      await waitForStatus(t, token, id, 'running');
      return id;
    }

    test('create order: variant B gives [{service_id}], the service is pending with nothing allocated', async () => {
      const res = await call(t, token, 'POST', 'service/create-order', order());
      assert.equal(res.status, 200);
      assert.equal(res.body.status, 'Success');
      assert.equal(res.body.data.length, 1);
      const id = res.body.data[0].service_id;
      assert.match(id, /^[0-9a-f-]{36}$/);
      const details = await call(t, token, 'GET', `service/${id}/details`);
      assert.equal(details.body.data.status, 'pending');
      assert.equal(details.body.data.ip, '');
      assert.equal(details.body.data.username, 'root');
      assert.deepEqual(details.body.data.allowed_actions.sort(), ['create', 'terminate']);
    });

    test('status and details show committed data only, never a transaction still open', async () => {
      const id = await ordered();
      const rolledBack = new Error('roll back');
      await assert.rejects(
        t.ctx.store.db.transaction().execute(async (trx) => {
          await trx.updateTable('services').set({ status: 'stopped' }).where('id', '=', id).execute();
          const during = await call(t, token, 'GET', `service/${id}/status`);
          assert.equal(during.body.data.status, 'pending');
          const details = await call(t, token, 'GET', `service/${id}/details`);
          assert.equal(details.body.data.status, 'pending');
          throw rolledBack;
        }),
        rolledBack,
      );
      assert.equal((await call(t, token, 'GET', `service/${id}/status`)).body.data.status, 'pending');
    });

    test('create order: variant A gives {service_id, username, password} as a JSON string', async () => {
      const res = await call(t, tokenA, 'POST', 'service/create-order', order());
      assert.equal(res.status, 200);
      assert.equal(res.body.success, 'true');
      const data = JSON.parse(res.body.data);
      assert.equal(data.username, 'root');
      assert.ok(data.password.length >= 16);
      const details = await call(t, tokenA, 'POST', `service/${data.service_id}/details`, {
        service_id: data.service_id,
      });
      assert.equal(JSON.parse(details.body.data).password, data.password);
    });

    test('the variant B alias path creates orders too', async () => {
      const res = await call(t, token, 'POST', `${BASE}/v2/service/create-order`, order());
      assert.equal(res.status, 200);
      assert.ok(res.body.data[0].service_id);
    });

    test('order validation: bounds, template, host name, types, product', async () => {
      const cases: [Record<string, unknown>, number, string][] = [
        [{ cpu: Number(product.config.cpu.max) + 1 }, 400, 'out_of_bounds'],
        [{ ram: Number(product.config.ram.min) - 1 }, 400, 'out_of_bounds'],
        [{ hdd: 0 }, 400, 'out_of_bounds'],
        [{ template_id: '00000000-0000-4000-8000-000000000000' }, 400, 'invalid_template'],
        [{ domain_name: 'bad_host!.example' }, 400, 'validation_failed'],
        [{ domain_name: '-start.example.com' }, 400, 'validation_failed'],
        [{ domain_name: `${'a'.repeat(64)}.example.com` }, 400, 'validation_failed'],
        [{ cpu: '2' }, 400, 'validation_failed'],
        [{ cpu: 1.5 }, 400, 'validation_failed'],
        [{ ram: -1 }, 400, 'validation_failed'],
        [{ product_id: '00000000-0000-4000-8000-000000000000' }, 404, 'product_not_found'],
        [{ product_id: 'nope' }, 404, 'product_not_found'],
      ];
      for (const [overrides, status, code] of cases) {
        const res = await call(t, token, 'POST', 'service/create-order', order(overrides));
        assert.equal(res.status, status, JSON.stringify(overrides));
        assert.equal(res.body.error_code, code, JSON.stringify(overrides));
        assert.equal(res.body.status, 'Error');
        assert.deepEqual(res.body.data, []);
      }
      const bounds = await call(t, token, 'POST', 'service/create-order', order({ cpu: 999 }));
      assert.match(bounds.body.message, /cpu/);
      const { backup: _b, ...missing } = order();
      const res = await call(t, token, 'POST', 'service/create-order', missing);
      assert.equal(res.status, 400);
      assert.match(res.body.message, /backup/);
    });

    test('bounds are inclusive', async () => {
      const max = order({
        cpu: Number(product.config.cpu.max),
        ram: Number(product.config.ram.max),
        hdd: Number(product.config.hdd.max),
        ip: Number(product.config.ip.max),
        backup: Number(product.config.backup.max),
      });
      assert.equal((await call(t, token, 'POST', 'service/create-order', max)).status, 200);
    });

    test('Idempotency-Key: same body replays, another body is refused, keys are per reseller', async () => {
      const key = { 'idempotency-key': 'order-42' };
      const first = await call(t, token, 'POST', 'service/create-order', order(), key);
      const again = await call(t, token, 'POST', 'service/create-order', order(), key);
      assert.equal(first.status, 200);
      assert.deepEqual(again.body, first.body);
      assert.equal(again.headers['idempotent-replayed'], 'true');
      const other = await call(t, token, 'POST', 'service/create-order', order({ cpu: 2 }), key);
      assert.equal(other.status, 400);
      assert.equal(other.body.error_code, 'idempotency_key_reused');
      const otherReseller = await t.token({ reseller: 'globex' });
      const theirs = await call(t, otherReseller, 'POST', 'service/create-order', order(), key);
      assert.equal(theirs.status, 200);
      assert.notEqual(theirs.body.data[0].service_id, first.body.data[0].service_id);
      // Concurrent requests with one key create one service.
      const k2 = { 'idempotency-key': 'order-43' };
      const results = await Promise.all(
        Array.from({ length: 5 }, () => call(t, token, 'POST', 'service/create-order', order(), k2)),
      );
      assert.equal(new Set(results.map((r) => r.body.data[0].service_id)).size, 1);
    });

    test('order -> create -> running: addresses and details', async () => {
      const id = await ordered({ ip: 2 });
      const res = await call(t, token, 'POST', `service/${id}/create`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.data, []);
      assert.ok(res.headers['x-job-id']);
      const status = await waitForStatus(t, token, id, 'running');
      assert.ok(status.allowed_actions.includes('stop'));
      const details = (await call(t, token, 'GET', `service/${id}/details`)).body.data;
      assert.match(details.ip, /^\d+\.\d+\.\d+\.\d+$/);
      assert.equal(details.ips.length, 2);
      assert.equal(details.ips[0], details.ip);
      const jobs = (await call(t, token, 'GET', `service/${id}/jobs`)).body.data;
      assert.equal(jobs.length, 1);
      assert.equal(jobs[0].action, 'create');
      assert.equal(jobs[0].status, 'succeeded');
    });

    test('stop, start, restart and the safe repeats', async () => {
      const id = await running();
      const again = await call(t, token, 'POST', `service/${id}/start`);
      assert.equal(again.status, 200);
      assert.match(again.body.message, /already running/);
      await call(t, token, 'POST', `service/${id}/stop`);
      await waitForStatus(t, token, id, 'stopped');
      const stopAgain = await call(t, token, 'POST', `service/${id}/stop`);
      assert.match(stopAgain.body.message, /already stopped/);
      const restart = await call(t, token, 'POST', `service/${id}/restart`);
      assert.equal(restart.status, 400);
      assert.equal(restart.body.error_code, 'invalid_state');
      assert.match(restart.body.message, /stopped/);
      await call(t, token, 'POST', `service/${id}/start`);
      await waitForStatus(t, token, id, 'running');
      await call(t, token, 'POST', `service/${id}/restart`);
      await waitForStatus(t, token, id, 'running');
      const actions = (await call(t, token, 'GET', `service/${id}/jobs`)).body.data.map(
        (j: { action: string }) => j.action,
      );
      assert.deepEqual(actions, ['restart', 'start', 'stop', 'create']);
    });

    test('suspend with a reason, unsuspend back to the power state before', async () => {
      const id = await running();
      await call(t, token, 'POST', `service/${id}/stop`);
      await call(t, token, 'POST', `service/${id}/suspend`, { suspend_reason: 'invoice overdue' });
      await waitForStatus(t, token, id, 'suspended');
      const details = (await call(t, token, 'GET', `service/${id}/details`)).body.data;
      assert.equal(details.suspend_reason, 'invoice overdue');
      assert.deepEqual(details.allowed_actions.sort(), [
        'backup_delete',
        'schedule_delete',
        'terminate',
        'unsuspend',
      ]);
      const start = await call(t, token, 'POST', `service/${id}/start`);
      assert.equal(start.body.error_code, 'invalid_state');
      const repeat = await call(t, token, 'POST', `service/${id}/suspend`);
      assert.match(repeat.body.message, /already suspended/);
      await call(t, token, 'POST', `service/${id}/unsuspend`);
      await waitForStatus(t, token, id, 'stopped');
      assert.equal((await call(t, token, 'GET', `service/${id}/details`)).body.data.suspend_reason, null);
    });

    test('suspend then terminate back to back both work', async () => {
      const id = await running();
      const s = await call(t, token, 'POST', `service/${id}/suspend`, { suspend_reason: 'billing' });
      const x = await call(t, token, 'POST', `service/${id}/terminate`);
      assert.equal(s.status, 200);
      assert.equal(x.status, 200);
      await waitForStatus(t, token, id, 'terminated');
      const details = (await call(t, token, 'GET', `service/${id}/details`)).body.data;
      assert.equal(details.ip, '');
      assert.deepEqual(details.allowed_actions, []);
      const again = await call(t, token, 'POST', `service/${id}/terminate`);
      assert.match(again.body.message, /already terminated/);
      const start = await call(t, token, 'POST', `service/${id}/start`);
      assert.equal(start.body.error_code, 'invalid_state');
    });

    test('terminate a pending service', async () => {
      const id = await ordered();
      await call(t, token, 'POST', `service/${id}/terminate`);
      await waitForStatus(t, token, id, 'terminated');
    });

    test('upgrade: bounds, grow-only disk, more addresses, power state kept', async () => {
      const id = await running();
      const base = { CPU: 2, RAM: 2, HDD: Number(product.config.hdd.min) + 10, IP: 2, BACKUP: 20 };
      const bad: [Record<string, unknown>, string][] = [
        [{ ...base, CPU: Number(product.config.cpu.max) + 1 }, 'out_of_bounds'],
        [{ ...base, HDD: Number(product.config.hdd.min) - 1 }, 'out_of_bounds'],
        [{ ...base, RAM: '4' }, 'validation_failed'],
        [{ CPU: 2, RAM: 2, HDD: 40, IP: 1 }, 'validation_failed'],
      ];
      for (const [body, code] of bad) {
        const res = await call(t, token, 'POST', `service/${id}/upgrade`, body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(res.body.error_code, code, JSON.stringify(body));
      }
      assert.equal((await call(t, token, 'POST', `service/${id}/upgrade`, base)).status, 200);
      await waitForStatus(t, token, id, 'running');
      const d = (await call(t, token, 'GET', `service/${id}/details`)).body.data;
      assert.deepEqual([d.cpu, d.ram, d.hdd, d.ip_count, d.backup], [2, 2, base.HDD, 2, 20]);
      assert.equal(d.ips.length, 2);
      const shrink = await call(t, token, 'POST', `service/${id}/upgrade`, { ...base, HDD: base.HDD - 1 });
      assert.equal(shrink.body.error_code, 'disk_shrink_not_supported');
      // Fewer addresses: the primary stays.
      await call(t, token, 'POST', `service/${id}/stop`);
      await call(t, token, 'POST', `service/${id}/upgrade`, { ...base, IP: 1 });
      await waitForStatus(t, token, id, 'stopped');
      const after1 = (await call(t, token, 'GET', `service/${id}/details`)).body.data;
      assert.deepEqual(after1.ips, [d.ips[0]]);
    });

    test('reset password: strength rules, then details shows the new one', async () => {
      const id = await running();
      for (const weak of [
        'short1A',
        'alllowercaseletters',
        'ALLUPPER123',
        'x'.repeat(129),
        `Aa1-${'x'.repeat(5000)}`,
      ]) {
        const res = await call(t, token, 'POST', `service/${id}/reset-password`, { password: weak });
        assert.equal(res.status, 400, weak);
        assert.equal(res.body.error_code, 'weak_password', weak);
      }
      const missing = await call(t, token, 'POST', `service/${id}/reset-password`, {});
      assert.equal(missing.body.error_code, 'validation_failed');
      const ok = await call(t, token, 'POST', `service/${id}/reset-password`, {
        password: 'N3w-Secret-pass',
      });
      assert.equal(ok.status, 200);
      await waitForStatus(t, token, id, 'running');
      assert.equal(
        (await call(t, token, 'GET', `service/${id}/details`)).body.data.password,
        'N3w-Secret-pass',
      );
      const stored = await t.ctx.store.db
        .selectFrom('services')
        .select('password_enc')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      assert.ok(!stored.password_enc.includes('N3w-Secret-pass'), 'stored encrypted');
      const jobs = await t.ctx.store.db
        .selectFrom('jobs')
        .select('params')
        .where('service_id', '=', id)
        .execute();
      assert.ok(
        jobs.every((j) => !j.params.includes('N3w-Secret-pass')),
        'job params hold no plain password',
      );
    });

    test('status and details answer on GET and POST in both variants', async () => {
      const id = await running();
      for (const method of ['GET', 'POST'] as const) {
        const b = await call(t, token, method, `service/${id}/status`);
        assert.equal(b.body.data.status, 'running');
        assert.equal(b.body.data.job, null);
        const a = await call(t, tokenA, method, `service/${id}/status`);
        assert.equal(JSON.parse(a.body.data).status, 'running');
        const da = JSON.parse((await call(t, tokenA, method, `service/${id}/details`)).body.data);
        assert.ok(da.ip && da.username && da.password);
      }
    });

    test('variant A body service_id must match the path', async () => {
      const id = await ordered();
      const res = await call(t, tokenA, 'POST', `service/${id}/create`, {
        service_id: '11111111-1111-4111-8111-111111111111',
      });
      assert.equal(res.status, 400);
      assert.equal(res.body.success, 'false');
      assert.equal(res.body.error_code, 'service_id_mismatch');
    });

    test("unknown, malformed and other resellers' service ids are 404 on every route", async () => {
      const mine = await ordered();
      const other = await t.token({ reseller: 'initech' });
      const routes: ['GET' | 'POST', string, unknown?][] = [
        ['GET', 'details'],
        ['POST', 'details'],
        ['GET', 'status'],
        ['POST', 'status'],
        ['GET', 'jobs'],
        ['POST', 'create'],
        ['POST', 'terminate'],
        ['POST', 'suspend'],
        ['POST', 'unsuspend'],
        ['POST', 'start'],
        ['POST', 'stop'],
        ['POST', 'restart'],
        ['POST', 'upgrade', { CPU: 1, RAM: 1, HDD: 20, IP: 1, BACKUP: 0 }],
        ['POST', 'reset-password', { password: 'Str0ng-password' }],
        ['GET', 'backups'],
        ['POST', 'backup/create'],
        ['POST', 'backup/restore/11111111-1111-4111-8111-111111111111'],
        ['POST', 'backup/delete/11111111-1111-4111-8111-111111111111'],
        ['GET', 'backup-schedule'],
        ['POST', 'backup-schedule/create', { BsTime: '03:00', BSDays: 'mon' }],
        ['POST', 'backup-schedule/delete/11111111-1111-4111-8111-111111111111'],
      ];
      for (const id of [mine, '22222222-2222-4222-8222-222222222222', 'not-a-uuid']) {
        for (const [method, path, body] of routes) {
          const res = await call(t, other, method, `service/${id}/${path}`, body);
          assert.equal(res.status, 404, `${method} ${path} ${id}`);
          assert.equal(res.body.error_code, 'service_not_found', `${method} ${path}`);
        }
      }
    });

    test('the 11th waiting job is refused with service_busy', async () => {
      const id = await running();
      // Hold the worker off this service: mark a job as running by another (dead-looking) worker.
      await t.background!.stop(1000);
      const results = [];
      for (let i = 0; i < 11; i++) {
        results.push(await call(t, token, 'POST', `service/${id}/${i % 2 === 0 ? 'stop' : 'start'}`));
      }
      assert.deepEqual(
        results.slice(0, 10).map((r) => r.status),
        Array(10).fill(200),
      );
      assert.equal(results[10]!.status, 400);
      assert.equal(results[10]!.body.error_code, 'service_busy');
      const status = (await call(t, token, 'GET', `service/${id}/status`)).body.data;
      assert.equal(status.job.status, 'queued');
      assert.equal(status.job.action, 'stop');
    });
  });

  describe(`jobs and failures (fault injection, ${store})`, () => {
    test('transient faults are retried until the job succeeds', async () => {
      const t = await createTestApp(
        { VRP_SIM_FAULTS: 'transient=0.25', VRP_JOB_RETRY_BASE: '1ms', VRP_JOB_MAX_ATTEMPTS: '30' },
        { worker: true, store },
      );
      try {
        const token = await t.token();
        const ids: string[] = [];
        // 40 creates at a fault rate of 0.25: that none needs a retry has odds of 1 in 100,000;
        // that one needs 12 attempts or more (backoff past a few seconds), 1 in 16,000,000 per
        // job. (At 0.5 and 12 creates, a job failing 12 times in a row was 1 in 4,096 each and
        // outlasted the wait once in CI.)
        for (let i = 0; i < 40; i++) {
          const res = await call(t, token, 'POST', 'service/create-order', order());
          ids.push(res.body.data[0].service_id);
          await call(t, token, 'POST', `service/${res.body.data[0].service_id}/create`);
        }
        for (const id of ids) await waitForStatus(t, token, id, 'running');
        const jobs = await t.ctx.store.db.selectFrom('jobs').select(['attempts', 'status']).execute();
        assert.ok(jobs.every((j) => j.status === 'succeeded'));
        assert.ok(
          jobs.some((j) => j.attempts > 1),
          'some job needed a retry',
        );
      } finally {
        await t.close();
      }
    });

    test('a permanent fault fails provisioning; the queued start then fails too; create retries', async () => {
      const t = await createTestApp({ VRP_SIM_FAULTS: 'permanent=1' }, { worker: true, store });
      try {
        const token = await t.token();
        const id = (await call(t, token, 'POST', 'service/create-order', order())).body.data[0].service_id;
        await t.background!.stop(1000);
        await call(t, token, 'POST', `service/${id}/create`);
        const stop = await call(t, token, 'POST', `service/${id}/stop`);
        assert.equal(stop.status, 200, 'accepted against the projected status (running)');
        t.background!.worker.start();
        const status = await waitForStatus(t, token, id, (s, d) => s === 'failed' && d.job === null);
        assert.deepEqual(status.allowed_actions.sort(), ['create', 'terminate']);
        const jobs = (await call(t, token, 'GET', `service/${id}/jobs`)).body.data;
        assert.equal(jobs[1].action, 'create');
        assert.equal(jobs[1].status, 'failed');
        assert.match(jobs[1].error, /Simulated/i);
        assert.equal(jobs[0].action, 'stop');
        assert.equal(jobs[0].status, 'failed');
        assert.match(jobs[0].error, /failed/);
      } finally {
        await t.close();
      }
    });
  });
}

test('routes of this capability exist under the API prefix', () => {
  assert.equal(API, '/vps_reseller_provider/public/api/v2');
});
