import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { listAuditEntries } from '../../../src/store/repos/audit.ts';
import { findResellerByName } from '../../../src/store/repos/resellers.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../../helpers/app.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { withLibvirtMac } from '../../helpers/libvirt.ts';
import { operatorToken, opsCall } from '../../helpers/operator.ts';
import { testStores } from '../../helpers/stores.ts';

const MISSING = '00000000-0000-7000-8000-000000000000';

for (const store of testStores()) {
  describe(`operator API: services across resellers (${store})`, () => {
    let t: TestApp;
    let ops: string;
    let acme: string;
    let beta: string;
    let acmeId: string;
    let betaId: string;

    before(async () => {
      t = await createTestApp({}, { store, worker: true });
      ops = await operatorToken(t);
      acme = await t.token({ reseller: 'acme' });
      beta = await t.token({ reseller: 'beta' });
      acmeId = (await findResellerByName(t.ctx.store.db, 'acme'))!.id;
      betaId = (await findResellerByName(t.ctx.store.db, 'beta'))!.id;
    });
    after(() => t.close());

    async function order(token: string, domain: string): Promise<string> {
      const res = await call(t, token, 'POST', 'service/create-order', smallOrder(domain), {
        'x-envelope-variant': 'B',
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.data[0].service_id;
    }

    /** Every page of `path` (with its query), following next_cursor. */
    async function allPages(path: string, between?: () => Promise<unknown>): Promise<any[]> {
      const items: any[] = [];
      let cursor: string | null = null;
      do {
        const sep = path.includes('?') ? '&' : '?';
        const res: any = await opsCall(t, ops, 'GET', `${path}${cursor ? `${sep}cursor=${cursor}` : ''}`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        items.push(...res.body.data.items);
        cursor = res.body.data.next_cursor;
        if (cursor && between) await between();
      } while (cursor);
      return items;
    }

    test('the list shows every reseller’s services, newest first, filtered by reseller, status and q', async () => {
      const a = await order(acme, 'alpha.example.com');
      const b = await order(beta, 'bravo.example.net');
      const all = await allPages('services?limit=1000');
      const ids = all.map((s) => s.service_id);
      assert.ok(ids.indexOf(b) < ids.indexOf(a), 'newest first');
      assert.equal(all.find((s) => s.service_id === a).reseller_id, acmeId);

      const onlyBeta = await allPages(`services?reseller_id=${betaId}`);
      assert.ok(onlyBeta.every((s) => s.reseller_id === betaId));
      assert.ok(onlyBeta.some((s) => s.service_id === b));
      const pending = await allPages(`services?status=pending&reseller_id=${acmeId}`);
      assert.ok(pending.some((s) => s.service_id === a));

      assert.deepEqual(
        (await allPages('services?q=bravo.example.net')).map((s) => s.service_id),
        [b],
      );
      assert.deepEqual(
        (await allPages('services?q=BRAVO.example.net')).map((s) => s.service_id),
        [b],
      );
      assert.deepEqual(
        (await allPages(`services?q=${a.slice(0, 13)}`)).map((s) => s.service_id).includes(a),
        true,
      );
      assert.deepEqual(
        (await allPages(`services?q=${a}`)).map((s) => s.service_id),
        [a],
      );
      assert.deepEqual(await allPages('services?q=nothing.example.org'), []);
      // An unknown or malformed reseller id names no services.
      assert.deepEqual(await allPages(`services?reseller_id=${MISSING}`), []);
      assert.deepEqual(await allPages('services?reseller_id=nope'), []);
    });

    test('q finds a service by an address it holds once its server exists', async () => {
      const id = await order(acme, 'ip.example.com');
      assert.equal((await opsCall(t, ops, 'POST', `services/${id}/create`)).status, 200);
      await waitForStatus(t, acme, id, 'running');
      const details = await opsCall(t, ops, 'GET', `services/${id}`);
      const ip = details.body.data.ip;
      assert.match(ip, /^\d+\.\d+\.\d+\.\d+$/);
      assert.deepEqual(
        (await allPages(`services?q=${ip}`)).map((s) => s.service_id),
        [id],
      );
      assert.deepEqual(await allPages('services?q=203.0.113.254'), []);
    });

    test('bad filters are 400 validation_failed, never 500', async () => {
      for (const q of ['status=nope', 'limit=0', 'limit=1001', 'limit=-1', `q=${'x'.repeat(254)}`, 'q=']) {
        const res = await opsCall(t, ops, 'GET', `services?${q}`);
        assert.equal(res.status, 400, q);
        assert.equal(res.body.error_code, 'validation_failed', q);
      }
      for (const q of ['cursor=%%%', 'cursor=abc']) {
        const res = await opsCall(t, ops, 'GET', `services?${q}`);
        assert.equal(res.status, 400, q);
        assert.equal(res.body.error_code, 'invalid_cursor', q);
      }
      // A cursor of another list is refused too.
      const jobs = await opsCall(t, ops, 'GET', 'resellers?limit=1');
      const other = jobs.body.data.next_cursor;
      if (other) assert.equal((await opsCall(t, ops, 'GET', `services?cursor=${other}`)).status, 400);
    });

    test('paging while services are ordered: no service skipped, none repeated', async () => {
      const reseller = await t.token({ reseller: 'pager' });
      const resellerId = (await findResellerByName(t.ctx.store.db, 'pager'))!.id;
      const existing = new Set<string>();
      for (let i = 0; i < 25; i++) existing.add(await order(reseller, `p${i}.example.com`));
      let n = 0;
      // Between pages, and during the reads, more orders come in.
      const seen = await allPages(`services?limit=4&reseller_id=${resellerId}`, async () => {
        await Promise.all([
          order(reseller, `late${n++}.example.com`),
          order(reseller, `late${n++}.example.com`),
        ]);
      });
      const ids = seen.map((s) => s.service_id);
      assert.equal(new Set(ids).size, ids.length, 'no service twice');
      for (const id of existing) assert.ok(ids.includes(id), `${id} was skipped`);
      // The same over every reseller with the status filter.
      const statusSeen = await allPages('services?limit=3&status=pending', async () => {
        await order(reseller, `later${n++}.example.com`);
      });
      const statusIds = statusSeen.map((s) => s.service_id);
      assert.equal(new Set(statusIds).size, statusIds.length);
      for (const id of existing) assert.ok(statusIds.includes(id));
    });

    test('details: all fields, host, jobs and backups; unknown ids are 404', async () => {
      const id = await order(beta, 'detail.example.com');
      await opsCall(t, ops, 'POST', `services/${id}/create`);
      await waitForStatus(t, beta, id, 'running');
      const backup = await opsCall(t, ops, 'POST', `services/${id}/backup/create`);
      assert.equal(backup.status, 200, JSON.stringify(backup.body));
      assert.match(String(backup.headers['x-job-id']), /^[0-9a-f-]{36}$/);
      await waitForStatus(t, beta, id, 'running');
      const res = await opsCall(t, ops, 'GET', `services/${id}`);
      assert.equal(res.status, 200);
      const d = res.body.data;
      assert.equal(d.reseller_id, betaId);
      assert.equal(d.status, 'running');
      assert.equal(d.projected_status, 'running');
      assert.equal(d.password, null, 'the password only with reveal=true');
      const revealed = await opsCall(t, ops, 'GET', `services/${id}?reveal=true`);
      assert.equal(revealed.status, 200, JSON.stringify(revealed.body));
      assert.ok(revealed.body.data.password.length >= 12);
      assert.match(d.host.host_id, /^sim-host-/);
      assert.equal(d.host.state, 'active');
      assert.equal(d.host.mac, null, 'the simulated hypervisor gives none');
      // A libvirt server's MAC address (its driver's row) is shown as stored.
      await withLibvirtMac(t.ctx.store.db, id, '52:54:0a:0b:0c:0d', async () => {
        const shown = await opsCall(t, ops, 'GET', `services/${id}`);
        assert.equal(shown.body.data.host.mac, '52:54:0a:0b:0c:0d');
      });
      assert.deepEqual(
        d.jobs.map((j: any) => [j.action, j.status]),
        [
          ['backup_create', 'succeeded'],
          ['create', 'succeeded'],
        ],
      );
      assert.equal(d.backups.length, 1);
      assert.equal(d.backups[0].status, 'available');
      for (const path of [`services/${MISSING}`, 'services/xyz']) {
        const missing = await opsCall(t, ops, 'GET', path);
        assert.equal(missing.status, 404);
        assert.equal(missing.body.error_code, 'service_not_found');
      }
    });

    test('operations act for the reseller through the same rules, recorded as the operator’s', async () => {
      const id = await order(acme, 'ops.example.com');
      // Refused as the reseller would be: stop on a pending service, bounds on upgrade, weak password.
      const stop = await opsCall(t, ops, 'POST', `services/${id}/stop`);
      assert.equal(stop.status, 400);
      assert.equal(stop.body.error_code, 'invalid_state');
      await opsCall(t, ops, 'POST', `services/${id}/create`);
      await waitForStatus(t, acme, id, 'running');
      const big = await opsCall(t, ops, 'POST', `services/${id}/upgrade`, {
        CPU: 999,
        RAM: 1,
        HDD: 20,
        IP: 1,
        BACKUP: 10,
      });
      assert.equal(big.status, 400);
      assert.equal(big.body.error_code, 'out_of_bounds');
      const weak = await opsCall(t, ops, 'POST', `services/${id}/reset-password`, { password: 'short' });
      assert.equal(weak.body.error_code, 'weak_password');
      const missing = await opsCall(t, ops, 'POST', `services/${MISSING}/start`);
      assert.equal(missing.status, 404);
      const mismatch = await opsCall(t, ops, 'POST', `services/${id}/stop`, { service_id: MISSING });
      assert.equal(mismatch.body.error_code, 'service_id_mismatch');

      assert.equal(
        (await opsCall(t, ops, 'POST', `services/${id}/suspend`, { suspend_reason: 'unpaid' })).status,
        200,
      );
      const s = await waitForStatus(t, acme, id, 'suspended');
      assert.equal(s.status, 'suspended');
      const again = await opsCall(t, ops, 'POST', `services/${id}/suspend`);
      assert.equal(again.status, 200);
      assert.match(again.body.message, /already suspended/);
      const seen = await call(t, acme, 'GET', `service/${id}/details`, undefined, {
        'x-envelope-variant': 'B',
      });
      assert.equal(seen.body.data.suspend_reason, 'unpaid');

      const entries = await listAuditEntries(t.ctx.store.db, { serviceId: id, limit: 100, order: 'oldest' });
      const byOperator = entries.filter((e) => e.actor.type === 'operator');
      assert.deepEqual(
        byOperator.map((e) => [e.action, e.outcome, e.resellerId ?? null]),
        [
          ['service.stop', 'invalid_state', null],
          ['service.create', 'ok', acmeId],
          ['service.upgrade', 'out_of_bounds', null],
          ['service.reset_password', 'weak_password', null],
          ['service.stop', 'service_id_mismatch', null],
          ['service.suspend', 'ok', acmeId],
          ['service.suspend', 'ok', acmeId],
        ],
      );
    });

    test('backup schedules too: created and deleted for the reseller, who sees them', async () => {
      const id = await order(beta, 'sched.example.com');
      const early = await opsCall(t, ops, 'POST', `services/${id}/backup-schedule/create`, {
        BsTime: '03:00',
        BSDays: 'mon,thu',
      });
      assert.equal(early.status, 400);
      assert.equal(early.body.error_code, 'invalid_state');
      await opsCall(t, ops, 'POST', `services/${id}/create`);
      await waitForStatus(t, beta, id, 'running');
      const made = await opsCall(t, ops, 'POST', `services/${id}/backup-schedule/create`, {
        BsTime: '03:00',
        BSDays: 'mon,thu',
      });
      assert.equal(made.status, 200, JSON.stringify(made.body));
      const bad = await opsCall(t, ops, 'POST', `services/${id}/backup-schedule/create`, {
        BsTime: '25:00',
        BSDays: 'mon',
      });
      assert.equal(bad.body.error_code, 'validation_failed');
      const seen = await call(t, beta, 'GET', `service/${id}/backup-schedule`, undefined, {
        'x-envelope-variant': 'B',
      });
      assert.equal(seen.body.data.length, 1);
      const scheduleId = seen.body.data[0].backup_schedule_id;
      const gone = await opsCall(t, ops, 'POST', `services/${id}/backup-schedule/delete/${scheduleId}`);
      assert.equal(gone.status, 200);
      const none = await call(t, beta, 'GET', `service/${id}/backup-schedule`, undefined, {
        'x-envelope-variant': 'B',
      });
      assert.deepEqual(none.body.data, []);
      const missing = await opsCall(t, ops, 'POST', `services/${id}/backup-schedule/delete/${scheduleId}`);
      assert.equal(missing.body.error_code, 'backup_schedule_not_found');
      const entries = await listAuditEntries(t.ctx.store.db, { serviceId: id, limit: 100, order: 'oldest' });
      assert.deepEqual(
        entries
          .filter((e) => e.action.startsWith('backup_schedule.'))
          .map((e) => [e.actor.type, e.action, e.outcome]),
        [
          ['operator', 'backup_schedule.create', 'invalid_state'],
          ['operator', 'backup_schedule.create', 'ok'],
          ['operator', 'backup_schedule.create', 'validation_failed'],
          ['operator', 'backup_schedule.delete', 'ok'],
          ['operator', 'backup_schedule.delete', 'backup_schedule_not_found'],
        ],
      );
    });

    test('a reseller token reaches no operator service route', async () => {
      const id = await order(acme, 'mine.example.com');
      for (const [method, path] of [
        ['GET', 'services'],
        ['GET', `services/${id}`],
        ['POST', `services/${id}/terminate`],
        ['POST', `services/${id}/backup/create`],
      ] as const) {
        const res = await opsCall(t, acme, method, path);
        assert.equal(res.status, 403, path);
        assert.equal(res.body.error_code, 'insufficient_scope');
      }
      const status = await call(t, acme, 'GET', `service/${id}/status`);
      assert.equal(status.body.data?.status ?? JSON.parse(status.body.data).status, 'pending');
    });
  });
}
