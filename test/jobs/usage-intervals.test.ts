/**
 * Usage for invoicing: intervals recorded with the job that changes a service (create, upgrade,
 * suspend, unsuspend, terminate) at the server's clock, and the report summed from them, exact
 * to the second and clipped to its period. A manual clock makes the hours exact numbers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DriverError } from '../../src/drivers/driver.ts';
import { findResellerByName } from '../../src/store/repos/resellers.ts';
import { listServiceIntervals } from '../../src/store/repos/usage-intervals.ts';
import { usageReport } from '../../src/store/usage-report.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { withRunningService } from '../helpers/job-worker.ts';
import { createManualClock, type ManualClock } from '../helpers/manual-clock.ts';
import { testStores } from '../helpers/stores.ts';

const MIN = 60_000;
const HOUR = 60 * MIN;
const T0 = Date.UTC(2020, 0, 6); // a Monday, in the past: the report's "now" never clips it
const STARTER = '3b0d6a8e-5f4c-4e2a-8b1d-7c9e2f1a0b01';

for (const store of testStores()) {
  describe(`usage intervals and the usage report (${store})`, () => {
    let t: TestApp;
    let clock: ManualClock;
    let token: string;
    let resellerId: string;
    let service: string;

    async function act(path: string, body?: unknown, status = 'running') {
      const res = await call(t, token, 'POST', `service/${service}/${path}`, body);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      await waitForStatus(t, token, service, status);
    }
    /** The report for the test's reseller, or (`null`) for every reseller. */
    const report = (from: number, to: number, rid: string | null = resellerId) =>
      usageReport(t.ctx.store.db, { from, to, resellerId: rid ?? undefined }, clock.now());

    before(async () => {
      clock = createManualClock(T0);
      // Tokens expire by the server's clock too: long enough for the hours the test steps through.
      t = await createTestApp({ VRP_TOKEN_TTL: String(30 * 86400) }, { worker: true, store, clock });
      token = await t.token({ reseller: 'invoiced' });
      resellerId = (await findResellerByName(t.ctx.store.db, 'invoiced'))!.id;
      const order = await call(t, token, 'POST', 'service/create-order', smallOrder('billed.example.com'));
      service = order.body.data[0].service_id;
      assert.deepEqual(
        await listServiceIntervals(t.ctx.store.db, service),
        [],
        'an order alone uses nothing',
      );
      // T0: created. +1 h: upgraded. +3 h: suspended. +3.5 h: unsuspended. +4 h: stopped and
      // started (not a change of usage). +4 h 45 min 30 s: terminated.
      await act('create');
      clock.advance(HOUR);
      await act('upgrade', { CPU: 2, RAM: 4, HDD: 40, IP: 2, BACKUP: 20 });
      clock.advance(2 * HOUR);
      await act('suspend', { suspend_reason: 'unpaid' }, 'suspended');
      clock.advance(30 * MIN);
      await act('unsuspend');
      clock.advance(30 * MIN);
      await act('stop', undefined, 'stopped');
      await act('start');
      clock.advance(45 * MIN + 30_000);
      await act('terminate', undefined, 'terminated');
    });
    after(() => t.close());

    test('each change closes an interval and opens the next, at the server clock; terminate closes the last', async () => {
      const intervals = await listServiceIntervals(t.ctx.store.db, service);
      const small = { cpu: 1, ram: 1, hdd: 20, ip: 1, backup: 10 };
      const upgraded = { cpu: 2, ram: 4, hdd: 40, ip: 2, backup: 20 };
      assert.deepEqual(
        intervals.map((i) => ({
          cpu: i.cpu,
          ram: i.ram,
          hdd: i.hdd,
          ip: i.ip,
          backup: i.backup,
          suspended: i.suspended,
          from: Number(i.started_at) - T0,
          to: i.ended_at === null ? null : Number(i.ended_at) - T0,
          product: i.product_id,
          reseller: i.reseller_id,
        })),
        [
          { ...small, suspended: 0, from: 0, to: HOUR },
          { ...upgraded, suspended: 0, from: HOUR, to: 3 * HOUR },
          { ...upgraded, suspended: 1, from: 3 * HOUR, to: 3.5 * HOUR },
          { ...upgraded, suspended: 0, from: 3.5 * HOUR, to: 4.75 * HOUR + 30_000 },
        ].map((i) => ({ ...i, product: STARTER, reseller: resellerId })),
      );
    });

    test('the report: service- and resource-hours exact to the second, suspended time apart', async () => {
      const r = await report(T0 - HOUR, T0 + 24 * HOUR);
      assert.equal(r.from, new Date(T0 - HOUR).toISOString());
      assert.equal(r.to, new Date(T0 + 24 * HOUR).toISOString());
      assert.equal(r.lines.length, 1);
      const running = 1 + 2 + 1.25 + 30 / 3600; // hours not suspended: small 1 h, upgraded 2 h + 1 h 15 min 30 s
      assert.deepEqual(r.lines[0], {
        reseller_id: resellerId,
        reseller_name: 'invoiced',
        product_id: STARTER,
        product_name: 'VPS Starter',
        services: 1,
        service_hours: round(running),
        cpu_hours: round(1 + 2 * (running - 1)),
        ram_gb_hours: round(1 + 4 * (running - 1)),
        hdd_gb_hours: round(20 + 40 * (running - 1)),
        ip_hours: round(1 + 2 * (running - 1)),
        backup_gb_hours: round(10 + 20 * (running - 1)),
        suspended_service_hours: 0.5,
        suspended_cpu_hours: 1,
        suspended_ram_gb_hours: 2,
        suspended_hdd_gb_hours: 20,
        suspended_ip_hours: 1,
        suspended_backup_gb_hours: 10,
        traffic_in_gb: 0,
        traffic_out_gb: 0,
      });
      assert.equal(r.lines[0]!.service_hours, 4.258333, '4 h 15 min 30 s');
    });

    test('intervals are clipped to the period [from, to)', async () => {
      // From 30 min after the create to 3 h 15 min: 30 min small, 2 h upgraded, 15 min suspended.
      const [line] = (await report(T0 + 30 * MIN, T0 + 3 * HOUR + 15 * MIN)).lines;
      assert.equal(line!.service_hours, 2.5);
      assert.equal(line!.cpu_hours, 0.5 + 4);
      assert.equal(line!.hdd_gb_hours, 10 + 80);
      assert.equal(line!.suspended_service_hours, 0.25);
      assert.equal(line!.suspended_ram_gb_hours, 1);
      // One second inside each edge.
      const [edges] = (await report(T0 + HOUR - 1000, T0 + HOUR + 1000)).lines;
      assert.equal(edges!.service_hours, round(2 / 3600));
      assert.equal(edges!.cpu_hours, round(1 / 3600 + 2 / 3600));
      // Periods that touch the service's life only at an edge hold nothing of it.
      assert.deepEqual((await report(T0 - HOUR, T0)).lines, []);
      assert.deepEqual((await report(T0 + 4.75 * HOUR + 30_000, T0 + 5 * HOUR)).lines, []);
      const [first] = (await report(T0 - HOUR, T0 + 1000)).lines;
      assert.equal(first!.service_hours, round(1 / 3600));
    });

    test('a service still running counts until now; the report names that time', async () => {
      const order = await call(t, token, 'POST', 'service/create-order', smallOrder('open.example.com'));
      const id = order.body.data[0].service_id;
      const start = clock.now();
      await call(t, token, 'POST', `service/${id}/create`);
      await waitForStatus(t, token, id, 'running');
      clock.advance(2 * HOUR);
      const r = await report(start, start + 30 * 24 * HOUR);
      assert.equal(r.until, new Date(start + 2 * HOUR).toISOString());
      assert.equal(r.lines[0]!.service_hours, 2);
      assert.equal(r.lines[0]!.services, 1, 'the terminated service had no time in this period');
      // Whole life of both: the sum of the two.
      const both = await report(T0, start + 30 * 24 * HOUR);
      assert.equal(both.lines[0]!.services, 2);
      assert.equal(both.lines[0]!.service_hours, round(4.258333 + 2));
      const stillRunning = await listServiceIntervals(t.ctx.store.db, id);
      assert.equal(stillRunning.length, 1);
      assert.equal(stillRunning[0]!.ended_at, null);
    });

    test('per reseller: a report for one reseller holds only its lines; without one, every reseller', async () => {
      const other = await t.token({ reseller: 'other-reseller' });
      const order = await call(t, other, 'POST', 'service/create-order', smallOrder('other.example.com'));
      const id = order.body.data[0].service_id;
      await call(t, other, 'POST', `service/${id}/create`);
      await waitForStatus(t, other, id, 'running');
      clock.advance(HOUR);
      const all = await report(T0, clock.now() + HOUR, null);
      assert.deepEqual(
        all.lines.map((l) => l.reseller_name),
        ['invoiced', 'other-reseller'],
      );
      const mine = await report(T0, clock.now() + HOUR);
      assert.deepEqual(
        mine.lines.map((l) => l.reseller_name),
        ['invoiced'],
      );
      assert.equal(all.lines[1]!.service_hours, 1);
    });
  });

  test(`a job that fails records no usage change (${store})`, async () => {
    await withRunningService(store, async ({ t, token, id, worker }) => {
      const before = await listServiceIntervals(t.ctx.store.db, id);
      assert.equal(before.length, 1);
      worker({
        upgrade: async () => {
          throw new DriverError('no room on the host', { transient: false });
        },
      });
      await call(t, token, 'POST', `service/${id}/upgrade`, { CPU: 2, RAM: 2, HDD: 20, IP: 1, BACKUP: 10 });
      await waitForStatus(t, token, id, (s, d) => s === 'running' && d.job === null);
      assert.deepEqual(await listServiceIntervals(t.ctx.store.db, id), before);
    });
  });

  test(`a create that fails opens no interval (${store})`, async () => {
    const t = await createTestApp({ VRP_SIM_FAULTS: 'permanent=1' }, { worker: true, store });
    try {
      const token = await t.token();
      const order = await call(t, token, 'POST', 'service/create-order', smallOrder('fails.example.com'));
      const id = order.body.data[0].service_id;
      await call(t, token, 'POST', `service/${id}/create`);
      await waitForStatus(t, token, id, 'failed');
      assert.deepEqual(await listServiceIntervals(t.ctx.store.db, id), []);
    } finally {
      await t.close();
    }
  });
}

function round(hours: number): number {
  return Math.round(hours * 1e6) / 1e6;
}
