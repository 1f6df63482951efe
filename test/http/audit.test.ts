import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createPruner } from '../../src/jobs/prune.ts';
import { isUniqueViolation } from '../../src/store/errors.ts';
import { createOrderPlacer } from '../../src/store/place-order.ts';
import { type AuditEntry, listAuditEntries } from '../../src/store/repos/audit.ts';
import { findResellerByName } from '../../src/store/repos/resellers.ts';
import { API, call, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { createTestOperator, operatorToken } from '../helpers/operator.ts';
import { testStores } from '../helpers/stores.ts';

const DAY = 86_400_000;
const silent = { info() {}, warn() {}, error() {} };

/** What an entry says, without its id and time: what the tests compare. */
function shape(e: AuditEntry) {
  return {
    actor: `${e.actor.type}:${e.actor.id}`,
    action: e.action,
    target: e.target && `${e.target.type}:${e.target.id}`,
    serviceId: e.serviceId,
    resellerId: e.resellerId,
    outcome: e.outcome,
    requestId: e.requestId,
  };
}

for (const store of testStores()) {
  describe(`audit log (${store})`, () => {
    let t: TestApp;
    let token: string;
    let clientId: string;
    let resellerId: string;
    let requests = 0;

    before(async () => {
      t = await createTestApp({}, { worker: true, store });
      const app = await t.client();
      clientId = app.client_id;
      token = await t.token({ client: app });
      resellerId = (await findResellerByName(t.ctx.store.db, 'acme'))!.id;
    });
    after(() => t.close());

    /** Every entry recorded so far, oldest first. */
    const all = async () => listAuditEntries(t.ctx.store.db, { limit: 1000, order: 'oldest' });

    /** Runs `fn` and returns the entries it added, oldest first. */
    async function added(fn: () => Promise<unknown>): Promise<AuditEntry[]> {
      const before = new Set((await all()).map((e) => e.id));
      await fn();
      return (await all()).filter((e) => !before.has(e.id));
    }

    /** An API call with a request id of its own, which the entry must carry. */
    async function api(
      method: 'GET' | 'POST',
      path: string,
      body?: unknown,
      headers: Record<string, string> = {},
    ) {
      requests += 1;
      const requestId = `audit-test-${requests}`;
      const res = await call(t, token, method, path, body, { 'x-request-id': requestId, ...headers });
      return { ...res, requestId };
    }

    async function runningService(domain: string, hdd = 20): Promise<string> {
      const res = await api('POST', 'service/create-order', { ...smallOrder(domain), hdd });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const id = res.body.data[0].service_id as string;
      assert.equal((await api('POST', `service/${id}/create`)).status, 200);
      await waitForStatus(t, token, id, 'running');
      return id;
    }

    const mine = (fields: Partial<ReturnType<typeof shape>>) => ({
      actor: `application:${clientId}`,
      target: null,
      serviceId: null,
      resellerId,
      outcome: 'ok',
      ...fields,
    });

    test('an order and an operation: one entry each, who, what, target, request id', async () => {
      let order: Awaited<ReturnType<typeof api>> | undefined;
      const ordered = await added(async () => {
        order = await api('POST', 'service/create-order', smallOrder('audit-1.example.com'));
      });
      assert.equal(order?.status, 200, JSON.stringify(order?.body));
      const id = order!.body.data[0].service_id;
      assert.deepEqual(ordered.map(shape), [
        mine({
          action: 'service.order',
          target: `service:${id}`,
          serviceId: id,
          requestId: order!.requestId,
        }),
      ]);
      assert.ok(Math.abs(ordered[0]!.createdAt - Date.now()) < 60_000);

      let create: Awaited<ReturnType<typeof api>> | undefined;
      const created = await added(async () => {
        create = await api('POST', `service/${id}/create`);
      });
      assert.equal(create?.status, 200);
      assert.deepEqual(created.map(shape), [
        mine({
          action: 'service.create',
          target: `service:${id}`,
          serviceId: id,
          requestId: create!.requestId,
        }),
      ]);
    });

    test('an order with an Idempotency-Key is recorded once; its replay is not a change', async () => {
      const headers = { 'idempotency-key': 'audit-key-1' };
      const body = smallOrder('audit-key.example.com');
      const first = await added(() => api('POST', 'service/create-order', body, headers));
      assert.deepEqual(
        first.map((e) => e.action),
        ['service.order'],
      );
      const replay = await added(async () => {
        const res = await api('POST', 'service/create-order', body, headers);
        assert.equal(res.headers['idempotent-replayed'], 'true');
      });
      assert.deepEqual(replay, []);
    });

    test('a backup, a schedule, a no-op and a reset password are recorded; no secret or password is', async () => {
      const id = await runningService('audit-backup.example.com');
      const backup = await added(async () => {
        assert.equal((await api('POST', `service/${id}/backup/create`)).status, 200);
      });
      const backups = (await api('GET', `service/${id}/backups`)).body.data;
      assert.equal(backups.length, 1);
      const backupId = backups[0].backup_id;
      assert.deepEqual(
        backup.map((e) => [e.action, e.target, e.serviceId, e.outcome]),
        [['backup.create', { type: 'backup', id: backupId }, id, 'ok']],
      );

      const schedule = { BsTime: '03:30', BSDays: 'mon,thu' };
      const created = await added(async () => {
        assert.equal((await api('POST', `service/${id}/backup-schedule/create`, schedule)).status, 200);
      });
      const scheduleId = (await api('GET', `service/${id}/backup-schedule`)).body.data[0].backup_schedule_id;
      assert.deepEqual(
        created.map((e) => [e.action, e.target, e.serviceId, e.resellerId]),
        [['backup_schedule.create', { type: 'backup_schedule', id: scheduleId }, id, resellerId]],
      );
      // The same schedule again is accepted with nothing to add: still who asked for what.
      const again = await added(() => api('POST', `service/${id}/backup-schedule/create`, schedule));
      assert.deepEqual(
        again.map((e) => [e.action, e.target?.id, e.outcome]),
        [['backup_schedule.create', scheduleId, 'ok']],
      );
      const deleted = await added(async () => {
        const res = await api('POST', `service/${id}/backup-schedule/delete/${scheduleId}`);
        assert.equal(res.status, 200);
      });
      assert.deepEqual(
        deleted.map((e) => [e.action, e.target?.id, e.outcome]),
        [['backup_schedule.delete', scheduleId, 'ok']],
      );

      await waitForStatus(t, token, id, 'running');
      const restore = await added(async () => {
        assert.equal((await api('POST', `service/${id}/backup/restore/${backupId}`)).status, 200);
      });
      assert.deepEqual(
        restore.map((e) => [e.action, e.target?.type, e.target?.id]),
        [['backup.restore', 'backup', backupId]],
      );
      await waitForStatus(t, token, id, 'running');
      // start on a running service: 200 with nothing to do, recorded in the same transaction as its answer.
      const noop = await added(async () => {
        const res = await api('POST', `service/${id}/start`);
        assert.equal(res.status, 200);
        assert.equal(res.headers['x-job-id'], undefined);
      });
      assert.deepEqual(
        noop.map((e) => [e.action, e.outcome]),
        [['service.start', 'ok']],
      );

      const password = 'Audit-Secret-Passw0rd!';
      const reset = await added(async () => {
        assert.equal((await api('POST', `service/${id}/reset-password`, { password })).status, 200);
      });
      assert.deepEqual(
        reset.map((e) => e.action),
        ['service.reset_password'],
      );
      // A variant A order answers the generated password; the log keeps none of these.
      const orderA = await api('POST', 'service/create-order', smallOrder('audit-a.example.com'), {
        'x-envelope-variant': 'A',
      });
      const generated = JSON.parse(orderA.body.data).password as string;
      const text = JSON.stringify(await t.ctx.store.db.selectFrom('audit_log').selectAll().execute());
      for (const secret of [password, generated, token]) {
        assert.ok(!text.includes(secret), 'no secret in the audit log');
      }
    });

    test('reads are not recorded: every GET, and the POST reads of variant A', async () => {
      const id = (await api('POST', 'service/create-order', smallOrder('audit-read.example.com'))).body
        .data[0].service_id;
      const reads = await added(async () => {
        for (const path of [
          'version',
          'products',
          `service/${id}/details`,
          `service/${id}/status`,
          `service/${id}/jobs`,
          `service/${id}/backups`,
          `service/${id}/backup-schedule`,
        ]) {
          assert.equal((await api('GET', path)).status, 200, path);
        }
        for (const path of ['products', `service/${id}/details`, `service/${id}/status`, 'test-connection']) {
          assert.equal((await api('POST', path, {})).status, 200, path);
        }
        // Refused reads are not recorded either.
        assert.equal((await api('GET', 'service/00000000-0000-4000-8000-000000000000/details')).status, 404);
      });
      assert.deepEqual(reads, []);
    });

    test('refused after authentication: recorded with the error code as outcome, nothing else', async () => {
      const pending = (await api('POST', 'service/create-order', smallOrder('audit-refused.example.com')))
        .body.data[0].service_id;
      const otherToken = await t.token({ reseller: 'globex' });
      const foreign = (
        await call(t, otherToken, 'POST', 'service/create-order', smallOrder('audit-foreign.example.com'))
      ).body.data[0].service_id;
      const missingBackup = '11111111-1111-4111-8111-111111111111';
      const cases: [string, unknown, string, string | null, string][] = [
        [`service/${pending}/stop`, undefined, 'service.stop', `service:${pending}`, 'invalid_state'],
        [
          `service/${pending}/upgrade`,
          { CPU: 1 },
          'service.upgrade',
          `service:${pending}`,
          'validation_failed',
        ],
        [
          `service/${foreign}/terminate`,
          undefined,
          'service.terminate',
          `service:${foreign}`,
          'service_not_found',
        ],
        [
          `service/${pending}/backup/restore/${missingBackup}`,
          undefined,
          'backup.restore',
          `backup:${missingBackup}`,
          'invalid_state',
        ],
        [`service/not-a-uuid/start`, undefined, 'service.start', null, 'service_not_found'],
        [
          'service/create-order',
          { ...smallOrder('x.example.com'), cpu: 99 },
          'service.order',
          null,
          'out_of_bounds',
        ],
      ];
      for (const [path, body, action, target, outcome] of cases) {
        let res: Awaited<ReturnType<typeof api>> | undefined;
        const entries = await added(async () => {
          res = await api('POST', path, body);
        });
        assert.equal(res?.body.error_code, outcome, `${path}: ${JSON.stringify(res?.body)}`);
        const serviceId = target?.startsWith('service:') ? target.slice(8) : target ? pending : null;
        assert.deepEqual(
          entries.map(shape),
          [mine({ action, target, serviceId, outcome, requestId: res!.requestId })],
          path,
        );
      }

      // A token without the route's scope: 403, recorded; the operator's too, as the operator's.
      const accessOnly = await t.token({ scopes: ['access'] });
      const scoped = await added(async () => {
        const res = await call(t, accessOnly, 'POST', 'service/create-order', smallOrder('s.example.com'));
        assert.equal(res.status, 403);
      });
      assert.deepEqual(
        scoped.map((e) => [e.actor.type, e.action, e.outcome]),
        [['application', 'service.order', 'insufficient_scope']],
      );
      const operator = await createTestOperator(t, { name: 'audited-operator' });
      const opToken = await operatorToken(t, operator);
      const byOperator = await added(async () => {
        const res = await call(t, opToken, 'POST', `service/${pending}/terminate`);
        assert.equal(res.status, 403);
      });
      const operatorId = (
        await t.ctx.store.db
          .selectFrom('operators')
          .select('id')
          .where('name', '=', 'audited-operator')
          .executeTakeFirstOrThrow()
      ).id;
      assert.deepEqual(byOperator.map(shape), [
        {
          actor: `operator:${operatorId}`,
          action: 'service.terminate',
          target: `service:${pending}`,
          serviceId: pending,
          resellerId: null,
          outcome: 'insufficient_scope',
          requestId: byOperator[0]!.requestId,
        },
      ]);

      // Before authentication nobody is known: nothing to record.
      const anonymous = await added(async () => {
        const res = await t.app.inject({ method: 'POST', url: `${API}/service/${pending}/terminate` });
        assert.equal(res.statusCode, 401);
        const bad = await call(t, 'vrp1.not.valid', 'POST', `service/${pending}/terminate`);
        assert.equal(bad.status, 401);
      });
      assert.deepEqual(anonymous, []);
      const status = await call(t, token, 'GET', `service/${pending}/status`);
      assert.equal(status.body.data.status, 'pending', 'no refused request changed anything');
    });

    test('a change refused inside its transaction leaves no ok entry, only the refusal', async () => {
      const id = await runningService('audit-shrink.example.com', 40);
      const entries = await added(async () => {
        const res = await api('POST', `service/${id}/upgrade`, {
          CPU: 1,
          RAM: 1,
          HDD: 20,
          IP: 1,
          BACKUP: 10,
        });
        assert.equal(res.body.error_code, 'disk_shrink_not_supported');
      });
      assert.deepEqual(
        entries.map((e) => [e.action, e.outcome]),
        [['service.upgrade', 'disk_shrink_not_supported']],
      );
    });

    test('an order whose transaction fails leaves no entry (and no service)', async () => {
      // The key is taken between the request's look-up and its write: the transaction that
      // wrote the service and its entry fails at the key, and all of it is rolled back.
      const placer = createOrderPlacer(t.ctx.store, t.ctx.secretBox);
      await t.ctx.store.db
        .insertInto('idempotency_keys')
        .values({
          reseller_id: resellerId,
          key: 'taken',
          request_hash: 'h',
          response: '{}',
          created_at: Date.now(),
        })
        .execute();
      const audit = {
        actor: { type: 'application' as const, id: clientId, name: null },
        requestId: 'r-1',
        action: 'service.order',
      };
      const order = {
        resellerId,
        clientId,
        productId: '3b0d6a8e-5f4c-4e2a-8b1d-7c9e2f1a0b01',
        templateId: '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a01',
        domainName: 'rolled-back.example.com',
        cpu: 1,
        ram: 1,
        hdd: 20,
        ipCount: 1,
        backup: 10,
      };
      const entries = await added(async () => {
        await assert.rejects(
          placer.place(order, Date.now(), { key: 'taken', requestHash: 'h2' }, audit),
          (err) => isUniqueViolation(err),
        );
      });
      assert.deepEqual(entries, []);
      const services = await t.ctx.store.db
        .selectFrom('services')
        .select('id')
        .where('domain_name', '=', 'rolled-back.example.com')
        .execute();
      assert.deepEqual(services, []);

      // Without a key, orders are group-committed: each with its entry, also in a burst.
      const burst = await added(() =>
        Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            placer.place({ ...order, domainName: `burst-${i}.example.com` }, Date.now(), undefined, audit),
          ),
        ),
      );
      assert.equal(burst.length, 10);
      const burstServices = await t.ctx.store.db
        .selectFrom('services')
        .select('id')
        .where('domain_name', 'like', 'burst-%')
        .execute();
      assert.deepEqual(burst.map((e) => e.serviceId).sort(), burstServices.map((s) => s.id).sort());
    });

    test('concurrent orders with one Idempotency-Key: one service, one entry', async () => {
      const body = smallOrder('audit-race.example.com');
      const entries = await added(async () => {
        const answers = await Promise.all(
          Array.from({ length: 5 }, () =>
            api('POST', 'service/create-order', body, { 'idempotency-key': 'race' }),
          ),
        );
        const ids = new Set(answers.map((a) => a.body.data[0].service_id));
        assert.equal(ids.size, 1);
      });
      assert.deepEqual(
        entries.map((e) => e.action),
        ['service.order'],
      );
    });

    test('listing: newest or oldest first, paged by the last id, filtered by actor, service or reseller', async () => {
      const db = t.ctx.store.db;
      const everything = await listAuditEntries(db, { limit: 1000 });
      assert.ok(everything.length >= 10);
      const ids = everything.map((e) => e.id);
      assert.deepEqual([...ids].sort().reverse(), ids, 'newest first by default');

      // Pages of 3, in both orders, give every entry once.
      for (const order of ['newest', 'oldest'] as const) {
        const seen: string[] = [];
        let after: string | undefined;
        for (;;) {
          const page = await listAuditEntries(db, { limit: 3, order, ...(after && { after }) });
          seen.push(...page.map((e) => e.id));
          if (page.length < 3) break;
          after = page.at(-1)!.id;
        }
        assert.deepEqual(seen, order === 'newest' ? ids : [...ids].reverse(), order);
      }

      const byActor = await listAuditEntries(db, {
        limit: 1000,
        actor: { type: 'application', id: clientId },
      });
      assert.ok(byActor.length > 0 && byActor.every((e) => e.actor.id === clientId));
      const operators = await listAuditEntries(db, { limit: 1000, actor: { type: 'operator' } });
      assert.ok(operators.length > 0 && operators.every((e) => e.actor.type === 'operator'));
      // The first service ordered (the first test's): ordered, then created.
      const serviceId = byActor.findLast((e) => e.action === 'service.create')!.serviceId!;
      const byService = await listAuditEntries(db, { limit: 1000, serviceId });
      assert.deepEqual(byService.map((e) => e.action).reverse(), ['service.order', 'service.create']);
      const byReseller = await listAuditEntries(db, { limit: 1000, resellerId });
      assert.ok(byReseller.length > 0 && byReseller.every((e) => e.resellerId === resellerId));
      const other = await findResellerByName(db, 'globex');
      const ofOther = await listAuditEntries(db, { limit: 1000, resellerId: other!.id });
      assert.deepEqual(
        ofOther.map((e) => e.action),
        ['service.order'],
      );
    });

    test('entries are pruned after the audit retention period, in batches', async () => {
      const count = (await all()).length;
      assert.ok(count > 3);
      const prunerAt = (now: number) =>
        createPruner({
          store: t.ctx.store,
          clock: { now: () => now },
          log: silent,
          retentionMs: 90 * DAY,
          auditRetentionMs: 365 * DAY,
          eventRetentionMs: 30 * DAY,
          serviceConsoleMaxMs: 3_600_000,
          intervalMs: 60_000,
          batch: 3,
        });
      assert.equal((await prunerAt(Date.now() + 364 * DAY).run()).auditEntries, 0);
      assert.equal((await all()).length, count);
      assert.equal((await prunerAt(Date.now() + 366 * DAY).run()).auditEntries, count);
      assert.deepEqual(await all(), []);
    });
  });

  describe(`audit log and rate limiting (${store})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ VRP_RATE_LIMIT: '1', VRP_RATE_BURST: '1' }, { store });
    });
    after(() => t.close());

    test('a request refused for its rate is not recorded (the limit protects the store)', async () => {
      const token = await t.token();
      const id = '00000000-0000-4000-8000-000000000000';
      const first = await call(t, token, 'POST', `service/${id}/start`);
      assert.equal(first.body.error_code, 'service_not_found');
      const second = await call(t, token, 'POST', `service/${id}/start`);
      assert.equal(second.status, 429);
      const entries = await listAuditEntries(t.ctx.store.db, { limit: 10 });
      assert.deepEqual(
        entries.map((e) => e.outcome),
        ['service_not_found'],
      );
    });
  });
}
