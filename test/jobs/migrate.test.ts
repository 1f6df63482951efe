/**
 * The migrate job end to end: queued the way the operator's route queues it (requestMigration),
 * run by a worker on the simulated hypervisor, seen by the reseller's API; its failures leave
 * nothing reserved; a process that dies mid-migration leaves work another worker finishes.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApiError } from '../../src/domain/errors.ts';
import { DriverError } from '../../src/drivers/driver.ts';
import { createIpPool } from '../../src/drivers/ip-pool.ts';
import { outside } from '../../src/drivers/simulated/outside.ts';
import { createSimulatedDriver } from '../../src/drivers/simulated/simulated-driver.ts';
import { recoverExpiredJobs } from '../../src/jobs/claim.ts';
import { requestMigration } from '../../src/jobs/migration-queue.ts';
import type { Store } from '../../src/store/database.ts';
import { recordProbeAnswered } from '../../src/store/repos/host-health.ts';
import { call, waitForStatus } from '../helpers/app.ts';
import { interceptDriver } from '../helpers/driver-calls.ts';
import { never, type ServiceFixture, until, withRunningService } from '../helpers/job-worker.ts';
import { operatorToken, opsCall } from '../helpers/operator.ts';
import { testStores } from '../helpers/stores.ts';

/** The host's reserved room: vCPU, GB RAM, GB disk. */
async function used(store: Store, hostId: string) {
  const h = await store.db
    .selectFrom('hypervisor_hosts')
    .select(['used_cpu', 'used_ram_gb', 'used_disk_gb'])
    .where('id', '=', hostId)
    .executeTakeFirstOrThrow();
  return [h.used_cpu, h.used_ram_gb, h.used_disk_gb];
}

async function placement(store: Store, serviceId: string) {
  const service = await store.db
    .selectFrom('services')
    .select('host_id')
    .where('id', '=', serviceId)
    .executeTakeFirstOrThrow();
  const vm = await store.db
    .selectFrom('sim_vms')
    .selectAll()
    .where('id', '=', serviceId)
    .executeTakeFirstOrThrow();
  return { serviceHost: service.host_id, vm };
}

const other = (hostId: string | null) => (hostId === 'sim-host-1' ? 'sim-host-2' : 'sim-host-1');

/**
 * A migration whose first attempt copies the VM and then its process hangs for ever (it never
 * switches over), then is gone: its lease ran out (it renews it no more), its worker stopped.
 */
async function firstAttemptDies(s: ServiceFixture) {
  const st = s.t.ctx.store;
  const before = await placement(st, s.id);
  let copied = false;
  const dying = createSimulatedDriver({
    db: st.db,
    ipPool: await createIpPool(st.db, '10.80.0.0/24', Date.now),
    faults: { transient: 0, permanent: 0 },
    speed: 0,
    beforeMigrationEnds: async () => {
      copied = true;
      await never;
    },
  });
  const job = await requestMigration(st.db, 'simulated', s.id, null, undefined, Date.now());
  const first = s.worker({}, { driver: dying, abortWaitMs: 0 });
  await until(() => copied, 'the first attempt to copy the VM');
  const to = (await placement(st, s.id)).vm.migrating_to;
  // Nothing it would still write counts (its stop aborts the run, whose failure would be written).
  // Its lease is the fixture's long one, so its upkeep does not look for ended leases again (and
  // recover this job) before it stops.
  await st.db
    .updateTable('jobs')
    .set({ locked_by: 'a-dead-process', locked_until: Date.now() - 1 })
    .where('id', '=', job.id)
    .execute();
  await first.stop(0);
  return { before, to, dying, jobId: job.id };
}

/** A third simulated host, added as the operator adds one; its id. */
async function thirdHost(s: ServiceFixture, ops: string): Promise<string> {
  const res = await opsCall(s.t, ops, 'POST', 'hosts', {
    name: 'sim-host-3',
    driver: 'simulated',
    cpu: 1024,
    ram_gb: 4096,
    disk_gb: 100000,
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data.host_id as string;
}

/** A worker terminates the service: the room of the move's reservation and of the VM's host both come back. */
async function terminateFreesBoth(s: ServiceFixture, reservedOn: string, vmHost: string) {
  const st = s.t.ctx.store;
  s.worker();
  assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/terminate`)).status, 200);
  await waitForStatus(s.t, s.token, s.id, 'terminated');
  assert.deepEqual(await used(st, reservedOn), [0, 0, 0], "the reservation's host");
  assert.deepEqual(await used(st, vmHost), [0, 0, 0], "the VM's host");
}

/**
 * A migration of the service's VM begun outside any job (on a driver of its own, whose move hangs
 * before it switches over): what a migrate job given up before the fix left behind, the
 * destination reserved and recorded on the VM.
 */
async function strandedMove(s: ServiceFixture, to: string | null) {
  const st = s.t.ctx.store;
  const stranded = createSimulatedDriver({
    db: st.db,
    ipPool: await createIpPool(st.db, '10.81.0.0/24', Date.now),
    faults: { transient: 0, permanent: 0 },
    speed: 0,
    beforeMigrationEnds: () => never,
  });
  void stranded.migrate(s.id, to);
  await until(async () => (await placement(st, s.id)).vm.migrating_to !== null, 'the move to reserve');
  return { stranded, held: (await placement(st, s.id)).vm.migrating_to ?? '' };
}

for (const store of testStores()) {
  describe(`migrate job (${store})`, () => {
    test('the service follows its VM to the other host; a reseller request queued behind runs after it', () =>
      withRunningService(store, async (s) => {
        const st = s.t.ctx.store;
        const before = await placement(st, s.id);
        const boots = await s.bootCount();
        const job = await requestMigration(st.db, 'simulated', s.id, null, undefined, Date.now());
        assert.deepEqual(job.action, 'migrate');
        const stop = await call(s.t, s.token, 'POST', `service/${s.id}/stop`);
        assert.equal(stop.status, 200);
        s.worker();
        await waitForStatus(s.t, s.token, s.id, 'stopped');

        const after = await placement(st, s.id);
        assert.equal(after.vm.host_id, other(before.vm.host_id));
        assert.equal(after.serviceHost, after.vm.host_id, "the service records its VM's host");
        assert.equal(after.vm.migrating_to, null);
        assert.equal(await s.bootCount(), boots, 'moved live: no reboot');
        assert.deepEqual(await used(st, before.vm.host_id), [0, 0, 0]);
        assert.deepEqual(await used(st, after.vm.host_id), [after.vm.cpu, after.vm.ram_gb, after.vm.disk_gb]);

        const jobs = await s.jobs();
        const migrate = jobs.find((j) => j.action === 'migrate');
        const stopped = jobs.find((j) => j.action === 'stop');
        assert.equal(migrate?.status, 'succeeded', 'the jobs list shows the migration');
        assert.equal(stopped?.status, 'succeeded');
        const rows = await st.db
          .selectFrom('jobs')
          .select(['action', 'started_at', 'finished_at', 'params'])
          .where('service_id', '=', s.id)
          .where('action', 'in', ['migrate', 'stop'])
          .execute();
        const m = rows.find((r) => r.action === 'migrate');
        const sp = rows.find((r) => r.action === 'stop');
        assert.ok(m?.finished_at != null && sp?.started_at != null && sp.started_at >= m.finished_at);
        assert.deepEqual(JSON.parse(m.params), {
          host_id: null,
          from_host_id: before.vm.host_id,
          evacuation: false,
        });
      }));

    test('a suspended service moves cold and stays suspended; a service that cannot move is refused', () =>
      withRunningService(store, async (s) => {
        const st = s.t.ctx.store;
        s.worker();
        assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/suspend`)).status, 200);
        await waitForStatus(s.t, s.token, s.id, 'suspended');
        const before = await placement(st, s.id);
        await requestMigration(st.db, 'simulated', s.id, null, undefined, Date.now());
        await until(async () => (await s.jobRow('migrate')).status === 'succeeded', 'the migration');
        const after = await placement(st, s.id);
        assert.equal(after.vm.host_id, other(before.vm.host_id));
        assert.equal(after.vm.power, 'stopped');
        assert.equal((await waitForStatus(s.t, s.token, s.id, () => true)).status, 'suspended');

        assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/terminate`)).status, 200);
        await assert.rejects(
          requestMigration(st.db, 'simulated', s.id, null, undefined, Date.now()),
          (e: unknown) => e instanceof ApiError && e.code === 'invalid_state' && /terminated/.test(e.message),
        );
      }));

    test('a destination that never answers: the last attempt fails and nothing stays reserved', () =>
      withRunningService(store, async (s) => {
        const st = s.t.ctx.store;
        const before = await placement(st, s.id);
        const to = other(before.vm.host_id);
        await outside.hostDown(st.db, to);
        await requestMigration(st.db, 'simulated', s.id, to, undefined, Date.now());
        s.worker({}, { maxAttempts: 2 });
        await until(async () => (await s.jobRow('migrate')).status === 'failed', 'the migration to fail');
        const row = await s.jobRow('migrate');
        assert.equal(row.attempts, 2, 'retried as transient');
        assert.match(row.error ?? '', new RegExp(`Host ${to} does not answer`));
        const after = await placement(st, s.id);
        assert.equal(after.vm.host_id, before.vm.host_id);
        assert.equal(after.vm.migrating_to, null);
        assert.deepEqual(await used(st, to), [0, 0, 0], 'nothing reserved on the destination');
        assert.equal((await waitForStatus(s.t, s.token, s.id, () => true)).status, 'running');
      }));

    test('the process died after the VM moved but before the job ended: the re-run records it, no second move', () =>
      withRunningService(store, async (s) => {
        const st = s.t.ctx.store;
        const before = await placement(st, s.id);
        const job = await requestMigration(st.db, 'simulated', s.id, null, undefined, Date.now());
        // Its first attempt moved the VM, and its process died before saving the job's end.
        const moved = await s.t.driver?.migrate(s.id, null);
        await st.db.updateTable('jobs').set({ attempts: 1 }).where('id', '=', job.id).execute();
        s.worker();
        await until(async () => (await s.jobRow('migrate')).status === 'succeeded', 'the re-run');
        const after = await placement(st, s.id);
        assert.equal(after.vm.host_id, moved?.hostId);
        assert.equal(after.serviceHost, moved?.hostId, 'the service records where its VM is');
        assert.notEqual(after.vm.host_id, before.vm.host_id);
        assert.deepEqual(await used(st, before.vm.host_id), [0, 0, 0], 'moved once, not back');
      }));

    test('the process dies mid-migration: another worker re-runs the job and it ends on one host', () =>
      withRunningService(store, async (s) => {
        const st = s.t.ctx.store;
        const { before, to, dying } = await firstAttemptDies(s);
        assert.equal(to, other(before.vm.host_id), 'the destination is reserved and recorded');
        s.worker();
        await until(async () => (await s.jobRow('migrate')).status === 'succeeded', 'the re-run to finish');
        const row = await s.jobRow('migrate');
        assert.equal(row.attempts, 2);
        const after = await placement(st, s.id);
        assert.equal(after.vm.host_id, to);
        assert.equal(after.serviceHost, to);
        assert.equal(after.vm.migrating_to, null);
        assert.deepEqual(await used(st, before.vm.host_id), [0, 0, 0]);
        assert.deepEqual(await used(st, to ?? ''), [after.vm.cpu, after.vm.ram_gb, after.vm.disk_gb]);
        await dying.close();
      }));

    for (const oldHost of ['answers again', 'stays unreachable'] as const)
      test(`an attempt that failed after the switch-over while the old host was unreachable (its attempt given back): the re-run records the move, the old host ${oldHost}`, () =>
        withRunningService(store, async (s) => {
          const st = s.t.ctx.store;
          const before = await placement(st, s.id);
          const from = before.vm.host_id;
          const to = other(from);
          const driver = s.t.driver;
          assert.ok(driver);
          const unreachable = () =>
            st.db
              .updateTable('hypervisor_hosts')
              .set({ health: 'unreachable' })
              .where('id', '=', from)
              .execute();
          let moves = 0;
          const failingAfterSwitch = interceptDriver(driver, {
            async migrate(id, toHost) {
              moves++;
              await driver.migrate(id, toHost);
              // The VM switched over; then its old host stopped answering while its copy there
              // was removed, and host health noticed.
              await unreachable();
              throw new DriverError('Could not remove the VM from its old host (the host did not answer)', {
                transient: true,
              });
            },
          });
          await requestMigration(st.db, 'simulated', s.id, to, undefined, Date.now());
          // Answering again: the job waits for the old host (a minute) until host health finds it
          // answering, which makes the job due at once.
          s.worker({}, { driver: failingAfterSwitch, hostWaitMs: oldHost === 'answers again' ? 60_000 : 20 });
          if (oldHost === 'answers again') {
            await until(
              async () => /Waiting for host/.test((await s.jobRow('migrate')).error ?? ''),
              'the job to wait for the old host',
            );
            const waiting = await s.jobRow('migrate');
            assert.deepEqual([waiting.status, waiting.attempts], ['queued', 0], 'the attempt was given back');
            assert.equal(await recordProbeAnswered(st.db, from, Date.now()), true);
          }
          await until(
            async () => ['succeeded', 'failed'].includes((await s.jobRow('migrate')).status),
            'the re-run to end',
          );
          const row = await s.jobRow('migrate');
          assert.equal(row.status, 'succeeded', row.error ?? '');
          assert.equal(moves, 1, 'moved once');
          const after = await placement(st, s.id);
          assert.equal(after.vm.host_id, to);
          assert.equal(after.serviceHost, to, 'the service records where its VM is');
        }));

    test('an attempt that recorded the move and could not start the server there: the re-run starts it, as it ran, and moves nothing', () =>
      withRunningService(store, async (s) => {
        const st = s.t.ctx.store;
        const to = other((await placement(st, s.id)).vm.host_id);
        const driver = s.t.driver;
        assert.ok(driver);
        let moves = 0;
        const stoppedThere = interceptDriver(driver, {
          async migrate(id, toHost) {
            moves++;
            await driver.migrate(id, toHost);
            // As the libvirt driver's look that finds a switch-over whose guest stopped there
            // since: the move recorded, then its start there refused.
            await driver.stop(id, { timeoutMs: 0 });
            throw new DriverError('Could not start the VM', { transient: true });
          },
        });
        await requestMigration(st.db, 'simulated', s.id, to, undefined, Date.now());
        s.worker({}, { driver: stoppedThere });
        await until(
          async () => ['succeeded', 'failed'].includes((await s.jobRow('migrate')).status),
          'the re-run to end',
        );
        const row = await s.jobRow('migrate');
        assert.equal(row.status, 'succeeded', row.error ?? '');
        assert.equal(row.attempts, 2);
        assert.equal(moves, 1, 'moved once');
        assert.equal((await placement(st, s.id)).vm.host_id, to);
        assert.equal((await driver.inspect(s.id))?.power, 'running', 'started on its new host');
        const status = await call(s.t, s.token, 'GET', `service/${s.id}/status`);
        assert.equal(status.body.data.status, 'running');
      }));

    test('a migrate queued again after an attempt that began cannot be cancelled; its re-run ends it on one host', () =>
      withRunningService(store, async (s) => {
        const st = s.t.ctx.store;
        const { before, to, dying, jobId } = await firstAttemptDies(s);
        // Recovery puts the job back in the queue.
        assert.equal(await recoverExpiredJobs(st, Date.now(), Date.now(), 10), 1);
        assert.equal((await s.jobRow('migrate')).status, 'queued');
        const ops = await operatorToken(s.t);
        const refused = await opsCall(s.t, ops, 'POST', `jobs/${jobId}/cancel`);
        assert.equal(refused.status, 409, JSON.stringify(refused.body));
        assert.equal(refused.body.error_code, 'job_not_queued');
        assert.match(refused.body.message, /has begun/);
        s.worker();
        await until(async () => (await s.jobRow('migrate')).status === 'succeeded', 'the re-run to finish');
        const after = await placement(st, s.id);
        assert.equal(after.vm.host_id, to);
        assert.equal(after.serviceHost, to, 'the service records where its VM is');
        assert.equal(after.vm.migrating_to, null);
        assert.deepEqual(await used(st, before.vm.host_id), [0, 0, 0], 'nothing left on the old host');
        await dying.close();
      }));

    test('a migrate whose attempts all die is given up: nothing stays reserved, and a later migration goes elsewhere than the now draining host', () =>
      withRunningService(store, async (s) => {
        const st = s.t.ctx.store;
        const { before, to, dying } = await firstAttemptDies(s);
        assert.ok(to);
        // Claimed once more than allowed: given up without its task.
        s.worker({}, { maxAttempts: 1 });
        await until(async () => (await s.jobRow('migrate')).status === 'failed', 'the job to be given up');
        assert.match((await s.jobRow('migrate')).error ?? '', /Gave up after 1 attempts/);
        const after = await placement(st, s.id);
        assert.equal(after.vm.host_id, before.vm.host_id, 'the VM stays where it was');
        assert.equal(after.vm.migrating_to, null, 'no move under way');
        assert.equal(after.vm.power, 'running');
        assert.deepEqual(await used(st, to), [0, 0, 0], "the destination's room given back");
        assert.equal((await waitForStatus(s.t, s.token, s.id, () => true)).status, 'running');

        // The destination drained, another host added: the next migration goes there.
        const ops = await operatorToken(s.t);
        assert.equal((await opsCall(s.t, ops, 'POST', `hosts/${to}/drain`)).status, 200);
        const third = await thirdHost(s, ops);
        await requestMigration(st.db, 'simulated', s.id, null, undefined, Date.now());
        const second = async () =>
          st.db
            .selectFrom('jobs')
            .select(['status', 'error'])
            .where('service_id', '=', s.id)
            .where('action', '=', 'migrate')
            .orderBy('seq', 'desc')
            .executeTakeFirstOrThrow();
        await until(
          async () => ['succeeded', 'failed'].includes((await second()).status),
          'the second migration',
        );
        assert.equal((await second()).status, 'succeeded', (await second()).error ?? '');
        assert.equal((await placement(st, s.id)).vm.host_id, third);
        assert.equal((await placement(st, s.id)).serviceHost, third);
        assert.deepEqual(await used(st, to), [0, 0, 0], 'nothing on the drained host');
        const deleted = await opsCall(s.t, ops, 'POST', `hosts/${to}/delete`);
        assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
        await dying.close();
      }));

    test('a give-up whose undo the driver cannot do now: the job still fails, the move stays recorded until the server is terminated', () =>
      withRunningService(store, async (s) => {
        const st = s.t.ctx.store;
        const { before, to, dying } = await firstAttemptDies(s);
        assert.ok(to);
        const refusing = interceptDriver(s.t.driver!, {
          async abandonMigration() {
            throw new DriverError('Simulated: the host does not answer', { transient: true });
          },
        });
        s.worker({}, { maxAttempts: 1, driver: refusing });
        await until(async () => (await s.jobRow('migrate')).status === 'failed', 'the job to be given up');
        assert.match((await s.jobRow('migrate')).error ?? '', /Gave up after 1 attempts/);
        const after = await placement(st, s.id);
        assert.equal(after.vm.host_id, before.vm.host_id, 'the VM stays where it was');
        assert.equal(after.vm.migrating_to, to, 'the move stays recorded, for the next migration to check');
        assert.notDeepEqual(await used(st, to), [0, 0, 0]);
        assert.equal((await waitForStatus(s.t, s.token, s.id, () => true)).status, 'running');
        await terminateFreesBoth(s, to, before.vm.host_id);
        await dying.close();
      }));

    for (const state of ['draining', 'evacuating'] as const)
      test(`a re-run whose destination is ${state} since its first attempt fails, the VM left where it was and nothing reserved`, () =>
        withRunningService(store, async (s) => {
          const st = s.t.ctx.store;
          const { before, to, dying } = await firstAttemptDies(s);
          assert.ok(to);
          const ops = await operatorToken(s.t);
          const path = `hosts/${to}/${state === 'draining' ? 'drain' : 'evacuate'}`;
          assert.equal((await opsCall(s.t, ops, 'POST', path)).status, 200);
          s.worker();
          await until(
            async () => ['succeeded', 'failed'].includes((await s.jobRow('migrate')).status),
            'the re-run to end',
          );
          const row = await s.jobRow('migrate');
          assert.equal(row.status, 'failed');
          assert.equal(row.attempts, 2, 'not retried: the destination cannot take it');
          assert.match(
            row.error ?? '',
            new RegExp(`Host ${to} is ${state}; the migration under way was undone`),
          );
          const after = await placement(st, s.id);
          assert.equal(after.vm.host_id, before.vm.host_id);
          assert.equal(after.serviceHost, before.vm.host_id);
          assert.equal(after.vm.migrating_to, null);
          assert.equal(after.vm.power, 'running');
          assert.deepEqual(await used(st, to), [0, 0, 0], "the destination's room given back");
          assert.deepEqual(await used(st, before.vm.host_id), [
            after.vm.cpu,
            after.vm.ram_gb,
            after.vm.disk_gb,
          ]);
          assert.equal((await waitForStatus(s.t, s.token, s.id, () => true)).status, 'running');
          await dying.close();
        }));

    test('a migration asked for another host than a reservation left by an earlier job: that reservation goes, the VM goes where asked', () =>
      withRunningService(store, async (s) => {
        const st = s.t.ctx.store;
        const before = await placement(st, s.id);
        const { stranded, held } = await strandedMove(s, other(before.vm.host_id));
        const third = await thirdHost(s, await operatorToken(s.t));
        await requestMigration(st.db, 'simulated', s.id, third, undefined, Date.now());
        s.worker();
        await until(
          async () => ['succeeded', 'failed'].includes((await s.jobRow('migrate')).status),
          'the migration to end',
        );
        const row = await s.jobRow('migrate');
        assert.equal(row.status, 'succeeded', row.error ?? '');
        const after = await placement(st, s.id);
        assert.equal(after.vm.host_id, third);
        assert.equal(after.vm.migrating_to, null);
        assert.deepEqual(await used(st, held), [0, 0, 0], 'the reservation left behind is given back');
        assert.deepEqual(await used(st, before.vm.host_id), [0, 0, 0]);
        await stranded.close();
      }));

    test("terminating a service whose VM holds a reservation elsewhere gives that host's room back too", () =>
      withRunningService(store, async (s) => {
        const st = s.t.ctx.store;
        const before = await placement(st, s.id);
        const { stranded, held } = await strandedMove(s, null);
        assert.notDeepEqual(await used(st, held), [0, 0, 0]);
        await terminateFreesBoth(s, held, before.vm.host_id);
        await stranded.close();
      }));
  });
}
