/**
 * Traffic accounting and limits over the simulated hypervisor: the sampler's passes are called
 * directly (VRP_TRAFFIC_SAMPLE_INTERVAL=0), traffic is made with `outside.traffic` (bytes through
 * the VM's interface), and the server's clock is a manual one, so a new month is a step, not a
 * wait. What is asserted is what a reseller and an operator see: details, events, the usage
 * report and its CSV, /metrics, and the VM's rate limit on the hypervisor.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseCatalogFile } from '../../src/domain/catalog-file.ts';
import { outside } from '../../src/drivers/simulated/outside.ts';
import { createTrafficSampler, type TrafficHostPass } from '../../src/jobs/traffic-sampler.ts';
import { importCatalog } from '../../src/store/catalog-import.ts';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { call, createTestApp, orderRunning, type TestApp, waitForStatus } from '../helpers/app.ts';
import { interceptDriver } from '../helpers/driver-calls.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { createManualClock, type ManualClock } from '../helpers/manual-clock.ts';
import { createTestOperator, OPS, operatorToken } from '../helpers/operator.ts';
import { testStores } from '../helpers/stores.ts';

/** Sampler and reconciler off: the tests run the sampler's passes themselves. */
const ENV = { VRP_TRAFFIC_SAMPLE_INTERVAL: '0', VRP_RECONCILE_INTERVAL: '0' };
const GB = 1_000_000_000;
const MID_MARCH = Date.UTC(2026, 2, 15, 12);
const APRIL = Date.UTC(2026, 3, 1, 0, 5);

function sampler(t: TestApp) {
  return createTrafficSampler({
    db: t.ctx.store.db,
    driver: t.driver!,
    clock: t.ctx.clock,
    log: t.app.log,
    intervalMs: 0,
  });
}

const counted = (passes: TrafficHostPass[]) =>
  passes.flatMap((p) => p.counted).reduce((n, c) => n + c.inBytes + c.outBytes, 0);

async function details(t: TestApp, token: string, id: string) {
  const res = await call(t, token, 'GET', `service/${id}/details`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data;
}

/** The demo catalogue with the order's product limited to `gb` GB a month, `over` past it. */
async function limitProduct(t: TestApp, gb: number, over: string): Promise<void> {
  const productId = smallOrder('x.example.com').product_id;
  const file = {
    ...DEMO_CATALOG,
    products: DEMO_CATALOG.products.map((p) =>
      p.id === productId ? { ...p, traffic_gb: gb, traffic_over: over } : p,
    ),
  };
  await importCatalog(t.ctx.store.db, parseCatalogFile(file), Date.now());
  t.ctx.catalog.invalidate();
}

async function trafficEvents(t: TestApp, token: string, id: string) {
  const events = (await call(t, token, 'GET', 'events?limit=1000')).body.data as any[];
  return events.filter((e) => e.type === 'service.traffic_exceeded' && e.data.service_id === id);
}

async function app(store: ReturnType<typeof testStores>[number], clock: ManualClock) {
  return createTestApp(ENV, { worker: true, store, clock });
}

for (const store of testStores()) {
  describe(`traffic accounting and limits (${store})`, () => {
    test('counters that grow are counted; a reset (reboot) counts whole, never negative; details show the month in GB in both variants', async () => {
      const t = await app(store, createManualClock(MID_MARCH));
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'traffic.example.com');
        const s = sampler(t);
        await s.pass();
        assert.equal((await details(t, token, id)).traffic_in_gb, 0);

        await outside.traffic(t.ctx.store.db, id, 2 * GB, GB / 2);
        await s.pass();
        await outside.traffic(t.ctx.store.db, id, GB, 0);
        await s.pass();
        let d = await details(t, token, id);
        assert.deepEqual([d.traffic_in_gb, d.traffic_out_gb], [3, 0.5]);
        assert.deepEqual([d.traffic_gb, d.traffic_over], [null, null], 'the product has no quota');

        // A reboot outside the API: the counters start from zero and pass the old reading (3 GB)
        // before the next sample; all 4 GB came after the last reading.
        await outside.powerOff(t.ctx.store.db, id);
        await outside.powerOn(t.ctx.store.db, id);
        await outside.traffic(t.ctx.store.db, id, 4 * GB, GB);
        await s.pass();
        d = await details(t, token, id);
        assert.deepEqual([d.traffic_in_gb, d.traffic_out_gb], [7, 1.5]);

        // Another reboot, counters below the last reading: counted whole too.
        await outside.powerOff(t.ctx.store.db, id);
        await outside.powerOn(t.ctx.store.db, id);
        await outside.traffic(t.ctx.store.db, id, 1_234_567_890, 1000);
        await s.pass();
        d = await details(t, token, id);
        assert.deepEqual([d.traffic_in_gb, d.traffic_out_gb], [8.234568, 1.500001]);

        // Variant A reads details with POST: the same figures.
        const a = await t.token({ variant: 'A' });
        const viaPost = await call(t, a, 'POST', `service/${id}/details`, {});
        assert.equal(viaPost.status, 200, JSON.stringify(viaPost.body));
        // Variant A's envelope carries the payload as JSON text.
        const asA = JSON.parse(viaPost.body.data);
        assert.deepEqual([asA.traffic_in_gb, asA.traffic_out_gb], [8.234568, 1.500001]);

        // A stopped VM has no counters: nothing is counted, nothing is lost.
        await outside.powerOff(t.ctx.store.db, id);
        await s.pass();
        assert.equal((await details(t, token, id)).traffic_in_gb, 8.234568);
      } finally {
        await t.close();
      }
    });

    test('two samplers at once count every byte once', async () => {
      const t = await app(store, createManualClock(MID_MARCH));
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'traffic-two.example.com');
        const [a, b] = [sampler(t), sampler(t)];
        let total = 0;
        for (let round = 1; round <= 5; round++) {
          await outside.traffic(t.ctx.store.db, id, round * 1_000_000, round * 1000);
          const passes = await Promise.all([a.pass(), b.pass()]);
          total += counted(passes.flat());
          assert.equal(total, (1_000_000 + 1000) * ((round * (round + 1)) / 2), `round ${round}`);
        }
        const d = await details(t, token, id);
        assert.deepEqual([d.traffic_in_gb, d.traffic_out_gb], [0.015, 0.000015]);
      } finally {
        await t.close();
      }
    });

    test('past a throttle quota: throttled once, told once; the next UTC month lifts it and starts from zero', async () => {
      const clock = createManualClock(MID_MARCH);
      const t = await app(store, clock);
      try {
        await limitProduct(t, 1, 'throttle:10');
        let token = await t.token();
        const id = await orderRunning(t, token, 'traffic-throttle.example.com');
        const s = sampler(t);
        await outside.traffic(t.ctx.store.db, id, GB / 2, GB / 2);
        let passes = await s.pass();
        assert.deepEqual(
          passes.flatMap((p) => p.exceeded),
          [],
          'exactly the quota is not past it',
        );
        assert.equal((await t.driver!.inspect(id))?.bandwidthMbit, null);

        await outside.traffic(t.ctx.store.db, id, 1000, 0);
        passes = await s.pass();
        assert.deepEqual(
          passes.flatMap((p) => p.exceeded),
          [{ serviceId: id, action: 'throttle' }],
        );
        assert.equal((await t.driver!.inspect(id))?.bandwidthMbit, 10);
        const d = await details(t, token, id);
        assert.deepEqual([d.traffic_gb, d.traffic_over, d.status], [1, 'throttle:10', 'running']);

        await outside.traffic(t.ctx.store.db, id, GB, GB);
        passes = await s.pass();
        assert.deepEqual(
          passes.flatMap((p) => p.exceeded),
          [],
          'once per month',
        );
        const events = await trafficEvents(t, token, id);
        assert.deepEqual(
          events.map((e) => e.data),
          [
            {
              service_id: id,
              month: '2026-03',
              traffic_gb: 1,
              traffic_in_gb: 0.500001,
              traffic_out_gb: 0.5,
              action: 'throttle',
              throttle_mbit: 10,
            },
          ],
        );

        // April (UTC): the throttle is lifted by itself, and the month counts from zero.
        clock.advance(APRIL - MID_MARCH);
        token = await t.token();
        await s.pass();
        assert.equal((await t.driver!.inspect(id))?.bandwidthMbit, null);
        const april = await details(t, token, id);
        assert.deepEqual([april.traffic_in_gb, april.traffic_out_gb], [0, 0]);
        assert.equal((await trafficEvents(t, token, id)).length, 1);
      } finally {
        await t.close();
      }
    });

    test("two processes at a month's turn: a throttle set again by a pass that began in the old month is lifted again", async () => {
      const clock = createManualClock(MID_MARCH);
      const t = await app(store, clock);
      try {
        await limitProduct(t, 1, 'throttle:10');
        const token = await t.token();
        const id = await orderRunning(t, token, 'traffic-turn.example.com');
        const a = sampler(t);
        await outside.traffic(t.ctx.store.db, id, GB, 1000);
        await a.pass();
        assert.equal((await t.driver!.inspect(id))?.bandwidthMbit, 10);

        // Another process's pass, begun a minute before April: its throttles of March are set
        // again, the setting held on the hypervisor's side until April has begun.
        const held = Promise.withResolvers<void>();
        const setting = Promise.withResolvers<void>();
        const driver = interceptDriver(t.driver!, {
          async setBandwidth(serviceId, mbit) {
            if (mbit !== null) {
              setting.resolve();
              await held.promise;
            }
            return t.driver!.setBandwidth(serviceId, mbit);
          },
        });
        const b = createTrafficSampler({
          db: t.ctx.store.db,
          driver,
          clock: t.ctx.clock,
          log: t.app.log,
          intervalMs: 0,
        });
        clock.advance(APRIL - MID_MARCH - 6 * 60_000);
        const late = b.pass();
        await setting.promise;
        clock.advance(6 * 60_000);
        await a.pass();
        assert.equal((await t.driver!.inspect(id))?.bandwidthMbit, null, 'April lifted it');
        held.resolve();
        await late;
        assert.equal((await t.driver!.inspect(id))?.bandwidthMbit, 10, 'the late pass set it again');
        // The next pass, five minutes on: lifted again.
        clock.advance(5 * 60_000);
        await a.pass();
        assert.equal((await t.driver!.inspect(id))?.bandwidthMbit, null);
        // An hour on, the lifts of March are done with: a pass sets nothing on the hypervisor.
        clock.advance(60 * 60_000);
        let calls = 0;
        const counting = createTrafficSampler({
          db: t.ctx.store.db,
          driver: interceptDriver(t.driver!, {
            async setBandwidth(serviceId, mbit) {
              calls++;
              return t.driver!.setBandwidth(serviceId, mbit);
            },
          }),
          clock: t.ctx.clock,
          log: t.app.log,
          intervalMs: 0,
        });
        await counting.pass();
        assert.equal(calls, 0);
      } finally {
        await t.close();
      }
    });

    test('a host that does not answer: its pass counts nothing and says so; the bytes count when it answers; a throttle it cannot lift is lifted at a later pass', async () => {
      const clock = createManualClock(MID_MARCH);
      const t = await app(store, clock);
      try {
        await limitProduct(t, 1, 'throttle:20');
        let token = await t.token();
        const id = await orderRunning(t, token, 'traffic-down.example.com');
        const db = t.ctx.store.db;
        const { host_id: hostId } = await db
          .selectFrom('services')
          .select('host_id')
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
        const s = sampler(t);
        await s.pass();

        await outside.traffic(db, id, 2 * GB, 0);
        await outside.hostDown(db, hostId!);
        let passes = await s.pass();
        assert.deepEqual(
          passes.filter((p) => p.hostId === hostId).map((p) => [p.outcome, p.counted.length]),
          [['unreachable', 0]],
        );
        assert.equal((await details(t, token, id)).traffic_in_gb, 0, 'nothing counted while it is down');

        await outside.hostUp(db, hostId!);
        passes = await s.pass();
        assert.deepEqual(
          passes.flatMap((p) => p.exceeded),
          [{ serviceId: id, action: 'throttle' }],
        );
        assert.equal(
          (await details(t, token, id)).traffic_in_gb,
          2,
          'the bytes of the outage count once it answers',
        );
        assert.equal((await t.driver!.inspect(id))?.bandwidthMbit, 20);

        // April, the host down: the throttle cannot be lifted yet, and stays until it can.
        clock.advance(APRIL - MID_MARCH);
        token = await t.token();
        await outside.hostDown(db, hostId!);
        await s.pass();
        await outside.hostUp(db, hostId!);
        assert.equal((await t.driver!.inspect(id))?.bandwidthMbit, 20, 'not lifted while the host was down');
        await s.pass();
        assert.equal((await t.driver!.inspect(id))?.bandwidthMbit, null);
        assert.equal((await details(t, token, id)).status, 'running');
      } finally {
        await t.close();
      }
    });

    test('past a suspend quota: suspended with reason traffic_exceeded, told once; the next month does not unsuspend', async () => {
      const clock = createManualClock(MID_MARCH);
      const t = await app(store, clock);
      try {
        await limitProduct(t, 2, 'suspend');
        let token = await t.token();
        const id = await orderRunning(t, token, 'traffic-suspend.example.com');
        const s = sampler(t);
        await outside.traffic(t.ctx.store.db, id, 2 * GB, 1);
        const passes = await s.pass();
        assert.deepEqual(
          passes.flatMap((p) => p.exceeded),
          [{ serviceId: id, action: 'suspend' }],
        );
        await waitForStatus(t, token, id, 'suspended');
        const d = await details(t, token, id);
        assert.deepEqual(
          [d.suspend_reason, d.traffic_gb, d.traffic_over],
          ['traffic_exceeded', 2, 'suspend'],
        );
        const events = await trafficEvents(t, token, id);
        assert.deepEqual(
          events.map((e) => [e.data.action, e.data.month, e.data.traffic_in_gb, e.data.throttle_mbit]),
          [['suspend', '2026-03', 2, undefined]],
        );
        assert.equal((await t.driver!.inspect(id))?.power, 'stopped');
        // The product suspended it: its suspension history and the audit log say `system`.
        const ops = await operatorToken(t);
        const opsDetails = await call(t, ops, 'GET', `${OPS}/services/${id}`);
        const system = { type: 'system', id: 'system', name: 'system' };
        assert.deepEqual(
          opsDetails.body.data.suspensions.map((x: any) => [x.suspended_by, x.reason, x.lifted_at]),
          [[system, 'traffic_exceeded', null]],
        );
        const entries = await call(t, ops, 'GET', `${OPS}/audit?service_id=${id}&action=service.suspend`);
        assert.deepEqual(
          entries.body.data.items.map((e: any) => [e.actor, e.reason, e.credential, e.source_address]),
          [[system, 'traffic_exceeded', null, null]],
        );

        clock.advance(APRIL - MID_MARCH);
        token = await t.token();
        await s.pass();
        assert.equal((await details(t, token, id)).status, 'suspended', 'an operator unsuspends');
        assert.equal((await trafficEvents(t, token, id)).length, 1);
      } finally {
        await t.close();
      }
    });

    test('the usage report and its CSV have traffic columns; /metrics has per-host totals', async () => {
      const t = await app(store, createManualClock(MID_MARCH));
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'traffic-usage.example.com');
        const other = await orderRunning(t, token, 'traffic-usage-2.example.com');
        await outside.traffic(t.ctx.store.db, id, 3 * GB, GB);
        await outside.traffic(t.ctx.store.db, other, GB, 500_000_000);
        await sampler(t).pass();

        const ops = await operatorToken(t, await createTestOperator(t));
        const period = 'from=2026-03-01&to=2026-04-01';
        const json = await call(t, ops, 'GET', `${OPS}/usage?${period}`);
        assert.equal(json.status, 200, JSON.stringify(json.body));
        const [line] = json.body.data.lines;
        assert.deepEqual([line.traffic_in_gb, line.traffic_out_gb], [4, 1.5]);
        const csv = await t.app.inject({
          method: 'GET',
          url: `${OPS}/usage?${period}`,
          headers: { authorization: `Bearer ${ops}`, accept: 'text/csv' },
        });
        const [head, row] = csv.body.trimEnd().split('\r\n');
        const columns = head!.split(',');
        const cells = row!.split(',');
        assert.deepEqual(columns.slice(-2), ['traffic_in_gb', 'traffic_out_gb']);
        assert.deepEqual(cells.slice(-2), ['4', '1.5']);
        // A period that holds none of those days has none of that traffic.
        const february = await call(t, ops, 'GET', `${OPS}/usage?from=2026-02-01&to=2026-03-01`);
        assert.deepEqual(february.body.data.lines, []);

        const host = (await t.driver!.inspect(id))!.hostId;
        const hostName = (await t.ctx.store.db
          .selectFrom('hypervisor_hosts')
          .select('name')
          .where('id', '=', host)
          .executeTakeFirstOrThrow())!.name;
        const otherHost = (await t.driver!.inspect(other))!.hostId;
        const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
        const value = (direction: string) =>
          Number(
            new RegExp(
              `^vrp_traffic_bytes_total\\{host="${hostName}",direction="${direction}"\\} (\\d+)$`,
              'm',
            ).exec(metrics)?.[1],
          );
        const sameHost = otherHost === host;
        assert.equal(value('in'), sameHost ? 4 * GB : 3 * GB);
        assert.equal(value('out'), sameHost ? 1.5 * GB : GB);
        assert.doesNotMatch(metrics, /vrp_traffic_bytes_total\{[^}]*service/, 'per host, not per service');
      } finally {
        await t.close();
      }
    });
  });
}
