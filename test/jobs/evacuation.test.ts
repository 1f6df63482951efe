/**
 * Evacuating a host: its services are migrated off, at most VRP_EVACUATE_CONCURRENCY at a time,
 * each to the host placement picks; the host ends `draining`, with an audit entry.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createDriver } from '../../src/drivers/create-driver.ts';
import { DriverError, type HypervisorDriver } from '../../src/drivers/driver.ts';
import { type Background, startBackground } from '../../src/jobs/background.ts';
import type { HostState, JobStatus } from '../../src/store/schema.ts';
import {
  call,
  createTestApp,
  orderCreating,
  orderRunning,
  type TestApp,
  waitForStatus,
} from '../helpers/app.ts';
import { interceptDriver } from '../helpers/driver-calls.ts';
import { until } from '../helpers/job-worker.ts';
import { operatorToken, opsCall } from '../helpers/operator.ts';
import { testStores } from '../helpers/stores.ts';

const HOSTS = 'src:64:64:1000:10,dst-1:64:64:1000:10,dst-2:64:64:1000:10';

type Db = TestApp['ctx']['store']['db'];

/** Puts every host but `src` in `state` (`draining`: new servers go to `src`). */
async function setOthers(db: Db, state: HostState): Promise<void> {
  await db.updateTable('hypervisor_hosts').set({ state }).where('id', '!=', 'src').execute();
}

const hostOf = async (db: Db, id: string) =>
  (await db.selectFrom('services').select('host_id').where('id', '=', id).executeTakeFirstOrThrow()).host_id;

const srcState = async (db: Db) =>
  (await db.selectFrom('hypervisor_hosts').select('state').where('id', '=', 'src').executeTakeFirstOrThrow())
    .state;

for (const store of testStores()) {
  describe(`evacuation (${store})`, () => {
    for (const failing of [false, true]) {
      test(
        failing
          ? 'a move that fails is counted, not retried; the host still ends draining, the audit says so'
          : '5 services, concurrency 2: never more than 2 moves in flight, all end elsewhere, host draining',
        async () => {
          const t = await createTestApp({ VRP_SIM_HOSTS: HOSTS, VRP_EVACUATE_CONCURRENCY: '2' }, { store });
          const db = t.ctx.store.db;
          const driver = await createDriver(t.ctx.config, db);
          let background: Background | undefined;
          try {
            // Every service on `src`: the others take none while they are drained.
            await setOthers(db, 'draining');
            const inFlight: number[] = [];
            const attempts = new Map<string, number>();
            let refused: string | undefined;
            const wrapped: HypervisorDriver = {
              ...driver,
              async migrate(vmId, to) {
                const n = await db
                  .selectFrom('jobs')
                  .select((eb) => eb.fn.countAll<number | string>().as('n'))
                  .where('action', '=', 'migrate')
                  .where('status', 'in', ['queued', 'running'])
                  .executeTakeFirstOrThrow();
                inFlight.push(Number(n.n));
                attempts.set(vmId, (attempts.get(vmId) ?? 0) + 1);
                if (failing && (refused === undefined || refused === vmId)) {
                  refused = vmId;
                  throw new DriverError('Simulated permanent fault: migrate refused', { transient: false });
                }
                return driver.migrate(vmId, to);
              },
            };
            background = startBackground(t.ctx, wrapped, t.app.log, { pollMs: 20 });
            const token = await t.token();
            const ids: string[] = [];
            for (let i = 0; i < 5; i++) ids.push(await orderRunning(t, token, `evac${i}.example.com`));
            await setOthers(db, 'active');
            await db
              .updateTable('hypervisor_hosts')
              .set({ state: 'evacuating', evacuation_started_at: t.ctx.clock.now() })
              .where('id', '=', 'src')
              .execute();
            background.evacuator.wake();
            await until(async () => (await srcState(db)) === 'draining', 'the evacuation to end');

            assert.equal(inFlight.length, 5, 'one move per service, none retried');
            assert.ok(
              inFlight.every((n) => n <= 2),
              `at most 2 moves in flight when each started: ${inFlight.join(',')}`,
            );
            assert.equal(Math.max(...inFlight), 2, 'the concurrency is used');
            assert.ok([...attempts.values()].every((n) => n === 1));
            const services = await db.selectFrom('services').select(['id', 'host_id']).execute();
            const left = services.filter((s) => s.host_id === 'src').map((s) => s.id);
            assert.deepEqual(left, failing ? [refused] : []);
            const moves = await db
              .selectFrom('host_evacuation_moves as m')
              .innerJoin('jobs as j', 'j.id', 'm.job_id')
              .select(['j.status', 'j.params'])
              .where('m.host_id', '=', 'src')
              .execute();
            assert.equal(moves.length, 5);
            assert.ok(moves.every((m) => JSON.parse(m.params).evacuation === true));
            assert.equal(moves.filter((m) => m.status === 'failed').length, failing ? 1 : 0);
            const audit = await db
              .selectFrom('audit_log')
              .selectAll()
              .where('action', '=', 'host.evacuated')
              .execute();
            assert.equal(audit.length, 1);
            assert.equal(audit[0]?.target_id, 'src');
            assert.equal(audit[0]?.outcome, failing ? 'moves_failed' : 'ok');
            const src = await db
              .selectFrom('hypervisor_hosts')
              .selectAll()
              .where('id', '=', 'src')
              .executeTakeFirstOrThrow();
            assert.equal(src.used_cpu, failing ? 1 : 0);
          } finally {
            await background?.stop(1000);
            await driver.close();
            await t.close();
          }
        },
      );
    }

    test('evacuated again while the first evacuation’s moves run: they count against the concurrency and are not queued twice', async () => {
      const t = await createTestApp({ VRP_SIM_HOSTS: HOSTS, VRP_EVACUATE_CONCURRENCY: '2' }, { store });
      const db = t.ctx.store.db;
      const driver = await createDriver(t.ctx.config, db);
      // Every move waits until released.
      let release: () => void = () => {};
      const released = new Promise<void>((r) => {
        release = r;
      });
      const holding = interceptDriver(driver, {
        async migrate(vmId, to) {
          await released;
          return driver.migrate(vmId, to);
        },
      });
      const background = startBackground(t.ctx, holding, t.app.log, { pollMs: 20 });
      const migrateJobs = async (statuses: JobStatus[]) =>
        Number(
          (
            await db
              .selectFrom('jobs')
              .select((eb) => eb.fn.countAll<number | string>().as('n'))
              .where('action', '=', 'migrate')
              .where('status', 'in', statuses)
              .executeTakeFirstOrThrow()
          ).n,
        );
      const evacuate = (at: number) =>
        db
          .updateTable('hypervisor_hosts')
          .set({ state: 'evacuating', evacuation_started_at: at })
          .where('id', '=', 'src')
          .execute();
      try {
        await setOthers(db, 'draining');
        const token = await t.token();
        const ids: string[] = [];
        for (let i = 0; i < 3; i++) ids.push(await orderRunning(t, token, `again${i}.example.com`));
        await setOthers(db, 'active');
        const first = t.ctx.clock.now();
        await evacuate(first);
        await background.evacuator.pass();
        assert.equal(await migrateJobs(['queued', 'running']), 2);
        // Drained and evacuated again while both moves are under way.
        await db.updateTable('hypervisor_hosts').set({ state: 'draining' }).where('id', '=', 'src').execute();
        await evacuate(first + 60_000);
        for (let i = 0; i < 3; i++) await background.evacuator.pass();
        assert.equal(await migrateJobs(['queued', 'running']), 2, 'the concurrency holds');
        // The operator sees the moves under way, and the one server waiting for its turn.
        const ops = await operatorToken(t);
        const view = (await opsCall(t, ops, 'GET', 'hosts/src')).body.data.evacuation;
        assert.deepEqual([view.running, view.left, view.done, view.failed], [2, 1, 0, 0]);
        release();
        await until(async () => (await srcState(db)) === 'draining', 'the evacuation to end');
        for (const id of ids) assert.notEqual(await hostOf(db, id), 'src');
        assert.equal(
          await migrateJobs(['queued', 'running', 'succeeded', 'failed']),
          3,
          'one move per service',
        );
      } finally {
        release();
        await background.stop(1000);
        await driver.close();
        await t.close();
      }
    });

    test('a failed create’s VM left on the host: the evacuation ends, its outcome says servers are left, the host view counts it', async () => {
      const t = await createTestApp({ VRP_SIM_HOSTS: HOSTS }, { store });
      const db = t.ctx.store.db;
      const driver = await createDriver(t.ctx.config, db);
      // This server's create places and boots its VM, then fails for good: the VM stays.
      const keeping = interceptDriver(driver, {
        async create(spec) {
          const vm = await driver.create(spec);
          if (spec.hostname !== 'kept.example.com') return vm;
          throw new DriverError('Simulated: the guest never answered', { transient: false });
        },
      });
      const background = startBackground(t.ctx, keeping, t.app.log, { pollMs: 20 });
      try {
        await setOthers(db, 'draining');
        const token = await t.token();
        const moving = await orderRunning(t, token, 'moving.example.com');
        const kept = await orderCreating(t, token, 'kept.example.com');
        await waitForStatus(t, token, kept, 'failed');
        const vmHost = async (id: string) =>
          (await db.selectFrom('sim_vms').select('host_id').where('id', '=', id).executeTakeFirst())?.host_id;
        assert.equal(await vmHost(kept), 'src', 'the failed create kept its VM');
        await setOthers(db, 'active');
        const ops = await operatorToken(t);
        assert.equal((await opsCall(t, ops, 'POST', 'hosts/src/evacuate')).status, 200);
        await until(async () => (await srcState(db)) === 'draining', 'the evacuation to end');
        assert.notEqual(await hostOf(db, moving), 'src');
        assert.equal(await vmHost(kept), 'src');
        const audit = await db
          .selectFrom('audit_log')
          .select('outcome')
          .where('action', '=', 'host.evacuated')
          .execute();
        assert.deepEqual(audit, [{ outcome: 'servers_left' }]);
        const view = (await opsCall(t, ops, 'GET', 'hosts/src')).body.data.evacuation;
        assert.deepEqual([view.done, view.failed, view.running, view.left], [1, 0, 0, 1]);
        // Terminated, it leaves the host empty: it can be removed.
        assert.equal((await call(t, token, 'POST', `service/${kept}/terminate`)).status, 200);
        await waitForStatus(t, token, kept, 'terminated');
        assert.equal((await opsCall(t, ops, 'POST', 'hosts/src/delete')).status, 200);
      } finally {
        await background.stop(1000);
        await driver.close();
        await t.close();
      }
    });

    test('a server in rescue does not move while its rescue runs; once it has ended, it moves and the host ends draining', async () => {
      const t = await createTestApp({ VRP_SIM_HOSTS: HOSTS }, { store });
      const db = t.ctx.store.db;
      const driver = await createDriver(t.ctx.config, db);
      const background = startBackground(t.ctx, driver, t.app.log, { pollMs: 20 });
      try {
        await setOthers(db, 'draining');
        const token = await t.token();
        const moving = await orderRunning(t, token, 'moves.example.com');
        const rescued = await orderRunning(t, token, 'rescued.example.com');
        assert.equal((await call(t, token, 'POST', `service/${rescued}/rescue`)).status, 200);
        await waitForStatus(t, token, rescued, 'rescue');
        await setOthers(db, 'active');
        await db
          .updateTable('hypervisor_hosts')
          .set({ state: 'evacuating', evacuation_started_at: t.ctx.clock.now() })
          .where('id', '=', 'src')
          .execute();
        background.evacuator.wake();
        await until(async () => (await hostOf(db, moving)) !== 'src', 'the other server to move');
        await waitForStatus(t, token, moving, 'running');
        // A few more passes: the server in rescue stays, and so does the evacuation.
        for (let i = 0; i < 3; i++) await background.evacuator.pass();
        assert.equal(await hostOf(db, rescued), 'src');
        assert.equal((await waitForStatus(t, token, rescued, 'rescue')).status, 'rescue');
        assert.equal(await srcState(db), 'evacuating');

        assert.equal((await call(t, token, 'POST', `service/${rescued}/unrescue`)).status, 200);
        await until(async () => (await srcState(db)) === 'draining', 'the evacuation to end');
        assert.notEqual(await hostOf(db, rescued), 'src');
        await waitForStatus(t, token, rescued, 'running');
      } finally {
        await background.stop(1000);
        await driver.close();
        await t.close();
      }
    });

    test('a server still arriving on the host (its create placed there) keeps the evacuation open; once it lands, it moves and the host ends draining', async () => {
      const t = await createTestApp({ VRP_SIM_HOSTS: HOSTS }, { store });
      const db = t.ctx.store.db;
      const driver = await createDriver(t.ctx.config, db);
      const placed = Promise.withResolvers<void>();
      const release = Promise.withResolvers<void>();
      // The create places the VM on `src` and then waits: the service records its host only when its job ends.
      const held = interceptDriver(driver, {
        async create(spec) {
          const vm = await driver.create(spec);
          placed.resolve();
          await release.promise;
          return vm;
        },
      });
      const background = startBackground(t.ctx, held, t.app.log, { pollMs: 20 });
      try {
        await setOthers(db, 'draining');
        const token = await t.token();
        const arriving = await orderCreating(t, token, 'arriving.example.com');
        await placed.promise;
        await setOthers(db, 'active');
        const ops = await operatorToken(t);
        assert.equal((await opsCall(t, ops, 'POST', 'hosts/src/evacuate')).status, 200);
        const evacuated = () =>
          db.selectFrom('audit_log').select('outcome').where('action', '=', 'host.evacuated').execute();

        for (let i = 0; i < 3; i++) await background.evacuator.pass();
        assert.equal(await hostOf(db, arriving), null, 'the create has not ended');
        assert.equal(await srcState(db), 'evacuating', 'not over while a server is arriving');
        assert.deepEqual(await evacuated(), []);

        release.resolve();
        await waitForStatus(t, token, arriving, 'running');
        assert.equal(await hostOf(db, arriving), 'src');
        await background.evacuator.pass();
        await until(async () => (await srcState(db)) === 'draining', 'the evacuation to end');
        assert.notEqual(await hostOf(db, arriving), 'src');
        await waitForStatus(t, token, arriving, 'running');
        assert.deepEqual(await evacuated(), [{ outcome: 'ok' }]);
        const src = await db
          .selectFrom('hypervisor_hosts')
          .select('used_cpu')
          .where('id', '=', 'src')
          .executeTakeFirstOrThrow();
        assert.equal(src.used_cpu, 0);
      } finally {
        release.resolve();
        await background.stop(1000);
        await driver.close();
        await t.close();
      }
    });
  });
}
