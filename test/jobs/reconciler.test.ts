/**
 * Power-state truth over the simulated hypervisor: a VM powered off, started
 * or removed outside the API is found by the reconciler's pass (called directly, no timers) or
 * by the check at a job's start, and the reseller sees it in the status and the events feed.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createDriver } from '../../src/drivers/create-driver.ts';
import type { DiskErrorPause, HypervisorDriver } from '../../src/drivers/driver.ts';
import { outside } from '../../src/drivers/simulated/outside.ts';
import { sweepConditions } from '../../src/jobs/notify-conditions.ts';
import { createReconciler, type HostPass, type ReconcilerOptions } from '../../src/jobs/reconciler.ts';
import { call, createTestApp, orderRunning, type TestApp, testEnv, waitForStatus } from '../helpers/app.ts';
import { never, until, withRunningService } from '../helpers/job-worker.ts';
import { operatorToken, opsCall } from '../helpers/operator.ts';
import { testStores } from '../helpers/stores.ts';

/** The reconciler off (VRP_RECONCILE_INTERVAL=0): the tests call its pass themselves. */
const OFF = { VRP_RECONCILE_INTERVAL: '0' };

function reconciler(
  t: TestApp,
  options: {
    intervalMs?: number;
    realNow?: () => number;
    driver?: HypervisorDriver;
    log?: ReconcilerOptions['log'];
  } = {},
) {
  return createReconciler({
    db: t.ctx.store.db,
    driver: options.driver ?? t.driver!,
    clock: t.ctx.clock,
    log: options.log ?? t.app.log,
    metrics: t.ctx.metrics.power,
    intervalMs: options.intervalMs ?? 0,
    realNow: options.realNow,
  });
}

/** `start` is accepted as a job (not answered "already running") and the service gets running. */
async function startRuns(t: TestApp, token: string, id: string): Promise<void> {
  const start = await call(t, token, 'POST', `service/${id}/start`);
  assert.equal(start.status, 200);
  assert.doesNotMatch(String(start.body.message), /already/);
  await waitForStatus(t, token, id, 'running');
  const [job] = (await call(t, token, 'GET', `service/${id}/jobs`)).body.data;
  assert.deepEqual([job.action, job.status], ['start', 'succeeded']);
}

const statusOf = async (t: TestApp, token: string, id: string) =>
  (await call(t, token, 'GET', `service/${id}/status`, undefined, { 'x-envelope-variant': 'B' })).body.data;

/** The feed's status changes of `id` that no job made. */
async function outsideChanges(t: TestApp, token: string, id: string) {
  const events = (await call(t, token, 'GET', 'events?limit=1000')).body.data as any[];
  return events
    .filter((e) => e.type === 'service.status_changed' && e.data.service_id === id && e.data.job_id === null)
    .map((e) => e.data);
}

const corrections = (passes: HostPass[]) => passes.flatMap((p) => p.corrections);

async function correctionCount(t: TestApp, kind: string): Promise<number> {
  const metric = await t.ctx.metrics.registry.getSingleMetric('vrp_power_corrections_total')!.get();
  return metric.values.find((v) => v.labels['kind'] === kind)?.value ?? 0;
}

const hostOfService = async (t: TestApp, id: string) =>
  (
    await t.ctx.store.db
      .selectFrom('services')
      .select('host_id')
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
  ).host_id;

const power = async (t: TestApp, id: string) => (await t.driver!.inspect(id))?.power;

for (const store of testStores()) {
  describe(`power-state reconciler (${store})`, () => {
    test('a VM powered off outside the API becomes stopped, told as such, and start works', async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'drift-off.example.com');
        assert.ok(await outside.powerOff(t.ctx.store.db, id));
        assert.equal((await statusOf(t, token, id)).status, 'running', 'nobody looked yet');

        const passes = await reconciler(t).pass();
        assert.deepEqual(corrections(passes), [{ serviceId: id, kind: 'stopped_outside_api' }]);
        const status = await statusOf(t, token, id);
        assert.equal(status.status, 'stopped');
        assert.ok(status.allowed_actions.includes('start'));
        assert.deepEqual(await outsideChanges(t, token, id), [
          {
            service_id: id,
            from: 'running',
            to: 'stopped',
            job_id: null,
            reason: 'stopped_outside_api',
            message: 'Stopped outside the API: the hypervisor reports the server shut off',
          },
        ]);
        assert.equal(await correctionCount(t, 'stopped_outside_api'), 1);

        await startRuns(t, token, id);
        assert.equal(await power(t, id), 'running');
        assert.deepEqual(corrections(await reconciler(t).pass()), [], 'agreed now: nothing to correct');
      } finally {
        await t.close();
      }
    });

    test('a VM started outside the API becomes running', async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'drift-on.example.com');
        await call(t, token, 'POST', `service/${id}/stop`);
        await waitForStatus(t, token, id, 'stopped');
        assert.ok(await outside.powerOn(t.ctx.store.db, id));

        assert.deepEqual(corrections(await reconciler(t).pass()), [
          { serviceId: id, kind: 'started_outside_api' },
        ]);
        assert.equal((await statusOf(t, token, id)).status, 'running');
        assert.deepEqual(
          (await outsideChanges(t, token, id)).map((e) => [e.from, e.to, e.reason]),
          [['stopped', 'running', 'started_outside_api']],
        );
        // And stop works again from there.
        await call(t, token, 'POST', `service/${id}/stop`);
        await waitForStatus(t, token, id, 'stopped');
        assert.equal(await power(t, id), 'stopped');
      } finally {
        await t.close();
      }
    });

    test('a VM that vanished makes its service failed (vm_missing); terminate still cleans up', async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const running = await orderRunning(t, token, 'gone-running.example.com');
        const stopped = await orderRunning(t, token, 'gone-stopped.example.com');
        await call(t, token, 'POST', `service/${stopped}/stop`);
        await waitForStatus(t, token, stopped, 'stopped');
        assert.ok(await outside.vanish(t.ctx.store.db, running));
        assert.ok(await outside.vanish(t.ctx.store.db, stopped));

        const made = corrections(await reconciler(t).pass());
        assert.deepEqual(made.map((c) => c.serviceId).sort(), [running, stopped].sort());
        assert.ok(made.every((c) => c.kind === 'vm_missing'));
        for (const [id, from] of [
          [running, 'running'],
          [stopped, 'stopped'],
        ] as const) {
          const status = await statusOf(t, token, id);
          assert.equal(status.status, 'failed');
          assert.deepEqual(status.allowed_actions.sort(), ['create', 'terminate']);
          assert.deepEqual(
            (await outsideChanges(t, token, id)).map((e) => [e.from, e.to, e.reason]),
            [[from, 'failed', 'vm_missing']],
          );
        }
        assert.equal(await correctionCount(t, 'vm_missing'), 2);
        assert.equal((await call(t, token, 'POST', `service/${running}/terminate`)).status, 200);
        await waitForStatus(t, token, running, 'terminated');
      } finally {
        await t.close();
      }
    });

    test('a suspended service stays suspended: its VM found running is powered off again', async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'suspended.example.com');
        await call(t, token, 'POST', `service/${id}/suspend`);
        await waitForStatus(t, token, id, 'suspended');
        assert.equal(await power(t, id), 'stopped');
        await outside.powerOn(t.ctx.store.db, id);
        assert.equal(await power(t, id), 'running');

        assert.deepEqual(corrections(await reconciler(t).pass()), [
          { serviceId: id, kind: 'suspended_powered_off' },
        ]);
        assert.equal(await power(t, id), 'stopped', 'powered off again');
        assert.equal((await statusOf(t, token, id)).status, 'suspended');
        assert.deepEqual(await outsideChanges(t, token, id), [], 'the status did not change');
        assert.equal(await correctionCount(t, 'suspended_powered_off'), 1);
        // Unsuspending brings it back as it was before the suspension.
        await call(t, token, 'POST', `service/${id}/unsuspend`);
        await waitForStatus(t, token, id, 'running');
        assert.equal(await power(t, id), 'running');
      } finally {
        await t.close();
      }
    });

    test("each pass makes the host's boot start the servers the API has running there, and no other (libvirt: autostart)", async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const running = await orderRunning(t, token, 'boots-with-host.example.com');
        const offOutside = await orderRunning(t, token, 'off-outside.example.com');
        const onOutside = await orderRunning(t, token, 'on-outside.example.com');
        const suspended = await orderRunning(t, token, 'suspended-boot.example.com');
        await call(t, token, 'POST', `service/${onOutside}/stop`);
        await waitForStatus(t, token, onOutside, 'stopped');
        await call(t, token, 'POST', `service/${suspended}/suspend`);
        await waitForStatus(t, token, suspended, 'suspended');
        await outside.powerOff(t.ctx.store.db, offOutside);
        await outside.powerOn(t.ctx.store.db, onOutside);

        // The host's boot starts `running` (marked already), the two shut off now, not the one
        // started outside.
        const marked = new Set([running, offOutside, suspended]);
        const set: [string, boolean][] = [];
        const driver: HypervisorDriver = {
          ...t.driver!,
          startingWithHost: async () => marked,
          async setStartWithHost(vmId: string, on: boolean) {
            set.push([vmId, on]);
          },
        };
        const passes = await reconciler(t, { driver }).pass();
        const sorted = <T>(xs: readonly T[]) => [...xs].sort();
        assert.deepEqual(
          sorted(set),
          sorted([
            [onOutside, true],
            [offOutside, false],
            [suspended, false],
          ]),
          'started outside: marked; shut off outside, and suspended: unmarked; the one marked already: left',
        );
        assert.deepEqual(
          sorted(passes.flatMap((p) => p.autostartChanged)),
          sorted([onOutside, offOutside, suspended]),
          'the passes report what they changed',
        );
        assert.equal((await statusOf(t, token, offOutside)).status, 'stopped');
        assert.equal((await statusOf(t, token, onOutside)).status, 'running');
      } finally {
        await t.close();
      }
    });

    test('a start with the host that cannot be set, or marks that cannot be read, are logged and left to the next pass', async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const refused = await orderRunning(t, token, 'boot-refused.example.com');
        const marked: string[] = [];
        const warned: string[] = [];
        const log = {
          info: () => {},
          error: () => {},
          warn: (obj: unknown, msg: string) => {
            warned.push(`${(obj as { serviceId?: string }).serviceId ?? '-'} ${msg}`);
          },
        } as unknown as ReconcilerOptions['log'];
        const failing: HypervisorDriver = {
          ...t.driver!,
          startingWithHost: async () => new Set<string>(),
          async setStartWithHost() {
            throw new Error('virsh autostart: permission denied');
          },
        };
        const first = await reconciler(t, { driver: failing, log }).pass();
        assert.deepEqual(
          first.flatMap((p) => p.autostartChanged),
          [],
          'nothing reported changed',
        );
        assert.ok(
          first.every((p) => p.outcome === 'reconciled'),
          'the pass goes on (leftovers, templates)',
        );
        assert.deepEqual(warned, [
          `${refused} reconciler: a VM's start with its host could not be set; next pass tries again`,
        ]);
        warned.length = 0;
        const unread = await reconciler(t, {
          driver: {
            ...failing,
            startingWithHost: async () => {
              throw new Error('no answer');
            },
          },
          log,
        }).pass();
        assert.deepEqual(
          unread.flatMap((p) => p.autostartChanged),
          [],
        );
        assert.ok(warned.some((w) => /could not be listed for their start with it/.test(w)));
        // The next pass with a host that answers marks it.
        const next = await reconciler(t, {
          driver: {
            ...t.driver!,
            startingWithHost: async () => new Set<string>(),
            async setStartWithHost(vmId: string) {
              marked.push(vmId);
            },
          },
        }).pass();
        assert.deepEqual(marked, [refused]);
        assert.deepEqual(
          next.flatMap((p) => p.autostartChanged),
          [refused],
        );
      } finally {
        await t.close();
      }
    });

    test("a service given a job while the pass sets the host's boot is left to its job", async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const first = await orderRunning(t, token, 'boot-first.example.com');
        const second = await orderRunning(t, token, 'boot-second.example.com');
        await t.background!.worker.stop(1000);
        const set: string[] = [];
        let stopped = false;
        const driver: HypervisorDriver = {
          ...t.driver!,
          // Neither is marked; a stop of the first is accepted once the pass has read the marks.
          async startingWithHost() {
            if (!stopped) {
              stopped = true;
              assert.equal((await call(t, token, 'POST', `service/${first}/stop`)).status, 200);
            }
            return new Set<string>();
          },
          async setStartWithHost(vmId: string) {
            set.push(vmId);
          },
        };
        await reconciler(t, { driver }).pass();
        assert.deepEqual(set, [second], 'the one with a job queued since is not marked');
      } finally {
        await t.close();
      }
    });

    test('a server paused on a failed write to its disk: the operators are told once, it is resumed once its host has room, and told when it runs', async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const db = t.ctx.store.db;
        const token = await t.token();
        const noRoom = await orderRunning(t, token, 'no-room.example.com');
        const badDisk = await orderRunning(t, token, 'bad-disk.example.com');
        const queued = await orderRunning(t, token, 'queued-room.example.com');
        const suspended = await orderRunning(t, token, 'suspended-room.example.com');
        await call(t, token, 'POST', `service/${suspended}/suspend`);
        await waitForStatus(t, token, suspended, 'suspended');
        const hostOf = (id: string) =>
          db
            .selectFrom('services')
            .innerJoin('hypervisor_hosts', 'hypervisor_hosts.id', 'services.host_id')
            .select(['hypervisor_hosts.id', 'hypervisor_hosts.name'])
            .where('services.id', '=', id)
            .executeTakeFirstOrThrow();
        // What the hosts hold paused, by service, and whether their storage has room again.
        let paused = new Map<string, DiskErrorPause>([
          [noRoom, { disk: 'vda', error: 'no_space' }],
          [badDisk, { disk: 'vdb', error: 'io_error' }],
          [queued, { disk: 'vda', error: 'no_space' }],
          [suspended, { disk: 'vda', error: 'no_space' }],
        ]);
        let room = false;
        let unlisted = false;
        let resumeRefused = false;
        const resumedHere: string[] = [];
        const driver: HypervisorDriver = {
          ...t.driver!,
          async pausedByDiskErrors(hostId: string) {
            if (unlisted) throw new Error('virsh domstats: no answer');
            const here = new Map<string, DiskErrorPause>();
            for (const [id, p] of paused) if ((await hostOf(id)).id === hostId) here.set(id, p);
            return {
              paused: here,
              // Room on every host, where the bad disk's server is too: only the reason keeps it paused.
              storageHasRoom: room,
            };
          },
          async resumePaused(vmId: string) {
            if (resumeRefused) throw new Error('virsh resume: operation failed');
            resumedHere.push(vmId);
          },
        };
        const warned: string[] = [];
        const informed: string[] = [];
        const log = {
          info: (_: unknown, msg: string) => {
            informed.push(msg);
          },
          error: () => {},
          warn: (_: unknown, msg: string) => {
            warned.push(msg);
          },
        } as unknown as ReconcilerOptions['log'];
        const PAUSED_LINE = 'reconciler: VMs paused on a failed write to their disk';
        const ops = await operatorToken(t);
        const told = async () =>
          ((await opsCall(t, ops, 'GET', 'notifications?limit=100')).body.data as any[]).filter((n) =>
            n.kind.startsWith('service.paused'),
          );
        const toldKinds = async () => (await told()).map((n) => `${n.kind} ${n.data.domain}`).sort();
        const sorted = (xs: readonly string[]) => [...xs].sort();

        const first = await reconciler(t, { driver, log }).pass();
        assert.deepEqual(
          sorted(first.flatMap((p) => p.pausedOnDiskErrors)),
          sorted([noRoom, badDisk, queued, suspended]),
        );
        assert.deepEqual(
          first.flatMap((p) => p.resumed),
          [],
          'no room yet: none resumed',
        );
        assert.deepEqual(await toldKinds(), [
          'service.paused bad-disk.example.com',
          'service.paused no-room.example.com',
          'service.paused queued-room.example.com',
          'service.paused suspended-room.example.com',
        ]);
        const host = await hostOf(noRoom);
        const [n] = (await told()).filter((x) => x.data.service_id === noRoom);
        assert.equal(
          n.summary,
          `server no-room.example.com on host ${host.name} is paused: its disk vda had no room on the host's storage (it resumes once there is room)`,
        );
        assert.equal(n.subject, noRoom);
        assert.deepEqual(
          { host_id: n.data.host_id, disk: n.data.disk, disk_error: n.data.disk_error },
          { host_id: host.id, disk: 'vda', disk_error: 'no_space' },
        );
        const [bad] = (await told()).filter((x) => x.data.service_id === badDisk);
        assert.equal(
          bad.summary,
          `server bad-disk.example.com on host ${(await hostOf(badDisk)).name} is paused: a write to its disk vdb failed`,
        );

        assert.ok(warned.includes(PAUSED_LINE), 'newly paused: logged at warn');
        // Passes that find the same: nothing told again, and the line at info only (a full pool
        // may last hours).
        warned.length = 0;
        informed.length = 0;
        await reconciler(t, { driver, log }).pass();
        assert.equal((await told()).length, 4);
        assert.deepEqual([warned.includes(PAUSED_LINE), informed.includes(PAUSED_LINE)], [false, true]);

        // The storage has room again: the one paused for want of it and idle is resumed; not the
        // one whose disk failed otherwise, nor the one a job is queued for (its job settles it), nor
        // a suspended one (its VM stays off).
        await t.background!.worker.stop(1000);
        const reset = await call(t, token, 'POST', `service/${queued}/reset-password`, {
          password: 'New-pass-word-3',
        });
        assert.equal(reset.status, 200);
        room = true;
        // A resume the host refuses: logged, nothing reported resumed, the next pass tries again.
        resumeRefused = true;
        warned.length = 0;
        const refused = await reconciler(t, { driver, log }).pass();
        assert.deepEqual(
          refused.flatMap((p) => p.resumed),
          [],
        );
        assert.ok(refused.every((p) => p.outcome === 'reconciled'));
        assert.ok(warned.includes('reconciler: a paused VM could not be resumed; next pass tries again'));
        resumeRefused = false;
        const roomy = await reconciler(t, { driver, log }).pass();
        assert.deepEqual(
          roomy.flatMap((p) => p.resumed),
          [noRoom],
        );
        assert.deepEqual(resumedHere, [noRoom]);

        // It runs: told as no longer paused; the others still are.
        paused = new Map([...paused].filter(([id]) => id !== noRoom));
        await reconciler(t, { driver, log }).pass();
        assert.deepEqual(await toldKinds(), [
          'service.paused bad-disk.example.com',
          'service.paused no-room.example.com',
          'service.paused queued-room.example.com',
          'service.paused suspended-room.example.com',
          'service.paused_cleared no-room.example.com',
        ]);
        const [cleared] = (await told()).filter((x) => x.kind === 'service.paused_cleared');
        assert.equal(cleared.summary, `server no-room.example.com on host ${host.name} is no longer paused`);

        // A host that does not list its paused VMs: logged, nothing told or ended, the pass goes on.
        unlisted = true;
        warned.length = 0;
        const blind = await reconciler(t, { driver, log }).pass();
        assert.ok(blind.every((p) => p.outcome === 'reconciled'));
        assert.ok(
          warned.includes("reconciler: the host's paused VMs could not be listed; next pass tries again"),
        );
        assert.equal((await told()).length, 5);
        assert.deepEqual(resumedHere, [noRoom]);

        // Recorded on another host since (moved while its host did not answer, or that host
        // removed): no pass over its old host ends it, the conditions' sweep does.
        const other = await db
          .selectFrom('hypervisor_hosts')
          .select('id')
          .where('id', '!=', (await hostOf(badDisk)).id)
          .executeTakeFirstOrThrow();
        await db.updateTable('services').set({ host_id: other.id }).where('id', '=', badDisk).execute();
        await sweepConditions(db, t.ctx.clock.now());
        assert.deepEqual(
          (await toldKinds()).filter((k) => k.includes('_cleared')),
          ['service.paused_cleared bad-disk.example.com', 'service.paused_cleared no-room.example.com'],
        );
        await sweepConditions(db, t.ctx.clock.now());
        assert.equal((await told()).length, 6, 'ended once');
      } finally {
        await t.close();
      }
    });

    test("simulated hosts whose storage fills up: the operators are told, the reseller's stop works on a paused server, the others run once there is room", async () => {
      // Two hosts: the conditions of the one are never settled by a pass over the other.
      const t = await createTestApp(
        { ...OFF, VRP_SIM_HOSTS: 'host-1:64:256:4000:100,host-2:64:8:4000:100' },
        { worker: true, store },
      );
      try {
        const db = t.ctx.store.db;
        const token = await t.token();
        const ops = await operatorToken(t);
        // Placed by free memory: a and b on host-1; c on host-2 while host-1 is drained.
        const a = await orderRunning(t, token, 'full-a.example.com');
        const b = await orderRunning(t, token, 'full-b.example.com');
        assert.equal((await opsCall(t, ops, 'POST', 'hosts/host-1/drain')).status, 200);
        const c = await orderRunning(t, token, 'full-c.example.com');
        assert.equal((await opsCall(t, ops, 'POST', 'hosts/host-1/activate')).status, 200);
        assert.deepEqual(
          [await hostOfService(t, a), await hostOfService(t, b), await hostOfService(t, c)],
          ['host-1', 'host-1', 'host-2'],
        );
        const told = async () =>
          ((await opsCall(t, ops, 'GET', 'notifications?limit=100')).body.data as any[])
            .filter((n) => n.kind.startsWith('service.paused'))
            .map((n) => `${n.kind} ${n.data.domain}`)
            .sort();
        const sorted = (xs: readonly string[]) => [...xs].sort();
        const pausedIn = (passes: HostPass[]) => sorted(passes.flatMap((p) => p.pausedOnDiskErrors));
        const resumedIn = (passes: HostPass[]) => sorted(passes.flatMap((p) => p.resumed));

        await outside.storageFull(db, 'host-1');
        await outside.storageFull(db, 'host-2');
        // The hosts taken by another process while their paused VMs were listed: nothing told
        // (the other's pass settles them), nothing resumed, and the passes say they lost them.
        const taking: HypervisorDriver = {
          ...t.driver!,
          async pausedByDiskErrors(hostId: string) {
            const listed = await t.driver!.pausedByDiskErrors!(hostId);
            await db
              .updateTable('reconciler_leases')
              .set({ locked_by: 'another-process' })
              .where('host_id', '=', hostId)
              .execute();
            return listed;
          },
        };
        const lost = await reconciler(t, { driver: taking }).pass();
        assert.deepEqual(
          lost.map((p) => p.outcome),
          ['lost', 'lost'],
        );
        assert.deepEqual(await told(), []);
        await db.updateTable('reconciler_leases').set({ locked_by: null, locked_until: 0 }).execute();

        const full = await reconciler(t).pass();
        assert.deepEqual(pausedIn(full), sorted([a, b, c]));
        assert.deepEqual(resumedIn(full), [], 'no room: none resumed');
        assert.deepEqual(await told(), [
          'service.paused full-a.example.com',
          'service.paused full-b.example.com',
          'service.paused full-c.example.com',
        ]);
        const [n] = ((await opsCall(t, ops, 'GET', 'notifications?limit=100')).body.data as any[]).filter(
          (x) => x.data.service_id === a,
        );
        assert.equal(
          n.summary,
          "server full-a.example.com on host host-1 is paused: its disk vda had no room on the host's storage (it resumes once there is room)",
        );
        // The interface has no paused state: the reseller sees running, and a stop stops it.
        assert.equal((await statusOf(t, token, a)).status, 'running');
        assert.equal((await call(t, token, 'POST', `service/${b}/stop`)).status, 200);
        await waitForStatus(t, token, b, 'stopped');
        assert.equal(await power(t, b), 'stopped');

        // Room again on host-1: its pass resumes the one still paused there and tells that the
        // stopped one no longer is; the next pass finds none paused there. host-2 is still full:
        // c stays paused and told so.
        await outside.storageFreed(db, 'host-1');
        const roomy = await reconciler(t).pass();
        assert.deepEqual(resumedIn(roomy), [a]);
        assert.deepEqual(pausedIn(roomy), sorted([a, c]));
        const after = await reconciler(t).pass();
        assert.deepEqual([pausedIn(after), resumedIn(after)], [[c], []]);
        assert.deepEqual(await told(), [
          'service.paused full-a.example.com',
          'service.paused full-b.example.com',
          'service.paused full-c.example.com',
          'service.paused_cleared full-a.example.com',
          'service.paused_cleared full-b.example.com',
        ]);
        assert.equal((await statusOf(t, token, a)).status, 'running');
        assert.equal((await statusOf(t, token, b)).status, 'stopped');
        assert.deepEqual(
          corrections([...full, ...roomy, ...after]),
          [],
          'a paused server counts as running: no drift',
        );
      } finally {
        await t.close();
      }
    });

    test("a simulated host's reboot brings back the servers the API shows running there, and no other", async () => {
      const t = await createTestApp(
        { ...OFF, VRP_SIM_HOSTS: 'host-1:64:256:4000:100' },
        { worker: true, store },
      );
      try {
        const db = t.ctx.store.db;
        const token = await t.token();
        const up = await orderRunning(t, token, 'reboot-up.example.com');
        const down = await orderRunning(t, token, 'reboot-down.example.com');
        const unmarked = await orderRunning(t, token, 'reboot-unmarked.example.com');
        assert.equal((await call(t, token, 'POST', `service/${down}/stop`)).status, 200);
        await waitForStatus(t, token, down, 'stopped');
        // Its mark taken off by hand: the next pass puts it back.
        await outside.startWithHost(db, unmarked, false);
        const [marking] = await reconciler(t).pass();
        assert.deepEqual(marking!.autostartChanged, [unmarked]);

        await outside.hostReboot(db, 'host-1');
        const [after] = await reconciler(t).pass();
        assert.deepEqual(corrections([after!]), [], 'the API was right');
        assert.deepEqual(
          [await power(t, up), await power(t, unmarked), await power(t, down)],
          ['running', 'running', 'stopped'],
        );
        assert.equal((await statusOf(t, token, up)).status, 'running');
        assert.equal((await statusOf(t, token, down)).status, 'stopped');

        // A mark taken off by hand with no pass before the reboot: that server comes back off,
        // and the reseller sees it stopped, told as stopped outside the API.
        await outside.startWithHost(db, up, false);
        await outside.hostReboot(db, 'host-1');
        const [late] = await reconciler(t).pass();
        assert.deepEqual(corrections([late!]), [{ serviceId: up, kind: 'stopped_outside_api' }]);
        assert.equal((await statusOf(t, token, up)).status, 'stopped');
        assert.equal((await outsideChanges(t, token, up)).length, 1);
        assert.equal(await power(t, unmarked), 'running');

        // Shut down by its guest (its mark kept): the pass records it stopped and takes the mark
        // off, so the next boot of the host leaves it off.
        await outside.powerOff(db, unmarked);
        const [shut] = await reconciler(t).pass();
        assert.deepEqual(corrections([shut!]), [{ serviceId: unmarked, kind: 'stopped_outside_api' }]);
        assert.deepEqual(shut!.autostartChanged, [unmarked]);
        await outside.hostReboot(db, 'host-1');
        assert.equal(await power(t, unmarked), 'stopped');
        assert.equal((await statusOf(t, token, unmarked)).status, 'stopped');
      } finally {
        await t.close();
      }
    });

    test('a service with a queued job is left alone', async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'queued.example.com');
        await t.background!.worker.stop(1000);
        await outside.powerOff(t.ctx.store.db, id);
        const reset = await call(t, token, 'POST', `service/${id}/reset-password`, {
          password: 'New-pass-word-2',
        });
        assert.equal(reset.status, 200);

        assert.deepEqual(corrections(await reconciler(t).pass()), [], 'a job is queued: not touched');
        assert.equal((await statusOf(t, token, id)).status, 'running');
        assert.deepEqual(await outsideChanges(t, token, id), []);
      } finally {
        await t.close();
      }
    });

    test('a service whose job is running is left alone', async () => {
      await withRunningService(store, async (s) => {
        let started = false;
        // A restart that hangs after the job has started (its check done), as a slow hypervisor.
        // It never ends, so the stop at the end need not wait for it (abortWaitMs: 0).
        s.worker(
          {
            restart: async () => {
              started = true;
              return never;
            },
          },
          { abortWaitMs: 0 },
        );
        assert.equal((await call(s.t, s.token, 'POST', `service/${s.id}/restart`)).status, 200);
        await until(() => started, 'the restart to start');
        await outside.powerOff(s.t.ctx.store.db, s.id);
        const r = createReconciler({
          db: s.t.ctx.store.db,
          driver: s.t.driver!,
          clock: s.t.ctx.clock,
          log: s.t.app.log,
          intervalMs: 0,
        });
        assert.deepEqual(corrections(await r.pass()), []);
        assert.equal((await statusOf(s.t, s.token, s.id)).status, 'restarting');
      });
    });

    test('the check at job start: a job on a VM powered off outside leaves it stopped, and start works', async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'jobstart.example.com');
        await outside.powerOff(t.ctx.store.db, id);
        // No reconciler pass at all: only the job's own check can find out.
        const reset = await call(t, token, 'POST', `service/${id}/reset-password`, {
          password: 'New-pass-word-2',
        });
        assert.equal(reset.status, 200);
        await waitForStatus(t, token, id, 'stopped');
        const jobs = (await call(t, token, 'GET', `service/${id}/jobs`)).body.data;
        assert.equal(jobs[0].action, 'reset_password');
        assert.equal(jobs[0].status, 'succeeded');
        assert.deepEqual(
          (await outsideChanges(t, token, id)).map((e) => [e.from, e.to, e.reason]),
          [['running', 'stopped', 'stopped_outside_api']],
        );
        assert.equal(await correctionCount(t, 'stopped_outside_api'), 1);

        await startRuns(t, token, id);
        assert.equal(await power(t, id), 'running');
      } finally {
        await t.close();
      }
    });

    test('the check at job start: a start queued behind a job runs after an outside power-off', async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'queue-start.example.com');
        await t.background!.worker.stop(1000);
        // Stop then start, both accepted against `running`; the VM is then powered off outside.
        await call(t, token, 'POST', `service/${id}/stop`);
        assert.equal((await call(t, token, 'POST', `service/${id}/start`)).status, 200);
        await outside.powerOff(t.ctx.store.db, id);
        t.background!.worker.start();
        await waitForStatus(t, token, id, 'running');
        assert.equal(await power(t, id), 'running');
        const jobs = (await call(t, token, 'GET', `service/${id}/jobs`)).body.data;
        assert.deepEqual(
          jobs.slice(0, 2).map((j: any) => [j.action, j.status]),
          [
            ['start', 'succeeded'],
            ['stop', 'succeeded'],
          ],
        );
        assert.deepEqual(
          (await outsideChanges(t, token, id)).map((e) => e.reason),
          ['stopped_outside_api'],
          'the stop found the VM already off',
        );
      } finally {
        await t.close();
      }
    });

    test('the check at job start: a vanished VM fails the service, and the job says why', async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'jobstart-gone.example.com');
        await outside.vanish(t.ctx.store.db, id);
        await call(t, token, 'POST', `service/${id}/restart`);
        await waitForStatus(t, token, id, 'failed');
        const [job] = (await call(t, token, 'GET', `service/${id}/jobs`)).body.data;
        assert.equal(job.action, 'restart');
        assert.equal(job.status, 'failed');
        assert.equal(
          job.error,
          'Cannot restart a service that is failed (the server no longer exists on its host: it was removed outside the API)',
        );
        assert.deepEqual(
          (await outsideChanges(t, token, id)).map((e) => [e.from, e.to, e.reason]),
          [['running', 'failed', 'vm_missing']],
        );
      } finally {
        await t.close();
      }
    });

    test('two reconcilers on one store never both reconcile a host; each drift is corrected once', async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const ids: string[] = [];
        for (let i = 0; i < 4; i++) ids.push(await orderRunning(t, token, `pair-${i}.example.com`));
        for (const id of ids) await outside.powerOff(t.ctx.store.db, id);
        const hosts = new Set(
          (
            await t.ctx.store.db.selectFrom('services').select('host_id').where('id', 'in', ids).execute()
          ).map((r) => r.host_id),
        );
        assert.equal(hosts.size, 2, 'the services are spread over both simulated hosts');

        const [a, b] = [reconciler(t, { intervalMs: 60_000 }), reconciler(t, { intervalMs: 60_000 })];
        const [pa, pb] = await Promise.all([a.pass(), b.pass()]);
        for (const hostId of ['sim-host-1', 'sim-host-2']) {
          const outcomes = [pa, pb].map((p) => p.find((h) => h.hostId === hostId)!.outcome).sort();
          assert.deepEqual(outcomes, ['reconciled', 'taken'], `host ${hostId}: one reconciler only`);
        }
        assert.deepEqual(
          [...corrections(pa), ...corrections(pb)].map((c) => c.serviceId).sort(),
          [...ids].sort(),
          'each service corrected exactly once',
        );
        for (const id of ids) assert.equal((await outsideChanges(t, token, id)).length, 1);
      } finally {
        await t.close();
      }
    });

    test('a host is reconciled once per interval across processes; a dead holder lets go when its lease ends', async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'lease.example.com');
        let now = Date.now();
        const realNow = () => now;
        const a = reconciler(t, { intervalMs: 15_000, realNow });
        const b = reconciler(t, { intervalMs: 15_000, realNow });
        const outcomes = (passes: HostPass[]) => passes.map((p) => p.outcome);
        assert.deepEqual(outcomes(await a.pass()), ['reconciled', 'reconciled']);
        now += 5000;
        await outside.powerOff(t.ctx.store.db, id);
        assert.deepEqual(
          outcomes(await b.pass()),
          ['taken', 'taken'],
          'not due yet: a reconciled it 5 s ago',
        );
        assert.equal((await statusOf(t, token, id)).status, 'running');
        now += 10_000;
        const due = await b.pass();
        assert.deepEqual(outcomes(due), ['reconciled', 'reconciled'], 'due: whoever comes first');
        assert.deepEqual(corrections(due), [{ serviceId: id, kind: 'stopped_outside_api' }]);

        // A process that died holding a host: nobody else takes it until its hold runs out.
        await t.ctx.store.db
          .updateTable('reconciler_leases')
          .set({ locked_by: 'reconciler-dead', locked_until: now + 60_000 })
          .execute();
        now += 30_000;
        assert.deepEqual(outcomes(await a.pass()), ['taken', 'taken']);
        now += 30_000;
        assert.deepEqual(outcomes(await a.pass()), ['reconciled', 'reconciled']);
      } finally {
        await t.close();
      }
    });

    test('a host that does not answer the listing changes nothing', async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'unreachable.example.com');
        await outside.powerOff(t.ctx.store.db, id);
        // The same store seen through a driver whose every call fails, as a host out of reach.
        const faulty = await createDriver(
          loadConfig(testEnv(t.dataDir, { VRP_SIM_FAULTS: 'transient=1' })),
          t.ctx.store.db,
        );
        try {
          const r = createReconciler({
            db: t.ctx.store.db,
            driver: faulty,
            clock: t.ctx.clock,
            log: t.app.log,
            intervalMs: 0,
          });
          const passes = await r.pass();
          assert.ok(passes.some((p) => p.outcome === 'unreachable'));
          assert.deepEqual(corrections(passes), []);
          assert.equal((await statusOf(t, token, id)).status, 'running');
        } finally {
          await faulty.close();
        }
        assert.deepEqual(corrections(await reconciler(t).pass()), [
          { serviceId: id, kind: 'stopped_outside_api' },
        ]);
      } finally {
        await t.close();
      }
    });

    test("each pass clears the hosts' leftovers, on hosts without services too; what stays is logged", async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'leftovers.example.com');
        const hostOf = await hostOfService(t, id);
        const asked: string[] = [];
        const warned: { obj: Record<string, unknown>; msg: string }[] = [];
        const driver = {
          ...t.driver!,
          powerStates: (h: string) => t.driver!.powerStates(h),
          async clearLeftovers(hostId: string) {
            asked.push(hostId);
            return hostId === hostOf
              ? {
                  cleared: ['gone-vm'],
                  failed: [{ vmId: 'stuck-vm', error: 'Could not delete a storage volume' }],
                }
              : { cleared: [], failed: [] };
          },
        };
        const log = {
          info: () => {},
          error: () => {},
          warn: (...args: unknown[]) => {
            warned.push({ obj: args[0] as Record<string, unknown>, msg: String(args[1]) });
          },
        };
        const passes = await createReconciler({
          db: t.ctx.store.db,
          driver,
          clock: t.ctx.clock,
          log,
          intervalMs: 0,
        }).pass();
        const hosts = passes.map((p) => p.hostId);
        assert.ok(hosts.length >= 2, 'the test has a host without services');
        assert.deepEqual(asked.sort(), [...hosts].sort(), 'every host reconciled, with services or not');
        assert.deepEqual(passes.find((p) => p.hostId === hostOf)?.leftoversCleared, ['gone-vm']);
        assert.deepEqual(
          warned.filter((w) => /old copy/.test(w.msg)).map((w) => [w.obj['hostId'], w.obj['vmId']]),
          [[hostOf, 'stuck-vm']],
        );
        // A host whose listing fails is not cleared (it does not answer).
        asked.length = 0;
        const unreachable = await createReconciler({
          db: t.ctx.store.db,
          driver: {
            ...driver,
            powerStates: async () => {
              throw new Error('no answer');
            },
          },
          clock: t.ctx.clock,
          log,
          intervalMs: 0,
        }).pass();
        assert.equal(unreachable.find((p) => p.hostId === hostOf)?.outcome, 'unreachable');
        assert.ok(hostOf && !asked.includes(hostOf));
        // A driver whose pass over leftovers fails altogether: logged, the pass goes on, the
        // power corrections stand.
        warned.length = 0;
        const failing = await createReconciler({
          db: t.ctx.store.db,
          driver: {
            ...driver,
            clearLeftovers: async () => {
              throw new Error('the leftovers could not be read');
            },
          },
          clock: t.ctx.clock,
          log,
          intervalMs: 0,
        }).pass();
        assert.ok(failing.every((p) => p.outcome === 'reconciled' && p.leftoversCleared.length === 0));
        assert.ok(warned.some((w) => /old copies of VMs could not be listed/.test(w.msg)));
      } finally {
        await t.close();
      }
    });

    test("each pass sweeps the hosts' unused template copies; what was removed and what stays are logged", async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'templates.example.com');
        const hostOf = await hostOfService(t, id);
        const swept: string[] = [];
        const logged: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
        const at =
          (level: string) =>
          (...args: unknown[]) => {
            logged.push({ level, obj: args[0] as Record<string, unknown>, msg: String(args[1]) });
          };
        const log = { info: at('info'), warn: at('warn'), error: at('error') };
        const driver = {
          ...t.driver!,
          async clearUnusedTemplates(hostId: string) {
            swept.push(hostId);
            return hostId === hostOf
              ? {
                  removed: ['template-a-0123456789ab-00000001.qcow2'],
                  failed: [{ volume: 'template-b-0123456789ab-00000002.qcow2', error: 'Could not delete' }],
                }
              : { removed: [], failed: [] };
          },
        };
        const reconcile = (d: typeof driver) =>
          createReconciler({ db: t.ctx.store.db, driver: d, clock: t.ctx.clock, log, intervalMs: 0 }).pass();
        const passes = await reconcile(driver);
        assert.deepEqual(swept.sort(), passes.map((p) => p.hostId).sort(), 'every host swept');
        assert.deepEqual(passes.find((p) => p.hostId === hostOf)?.templatesRemoved, [
          'template-a-0123456789ab-00000001.qcow2',
        ]);
        assert.deepEqual(
          logged
            .filter((l) => /template cop/.test(l.msg))
            .map((l) => [l.level, l.obj['hostId'], l.obj['volumes'] ?? l.obj['volume']]),
          [
            ['info', hostOf, ['template-a-0123456789ab-00000001.qcow2']],
            ['warn', hostOf, 'template-b-0123456789ab-00000002.qcow2'],
          ],
        );
        // A sweep that fails altogether: logged, the pass goes on for every host.
        logged.length = 0;
        const failing = await reconcile({
          ...driver,
          clearUnusedTemplates: async () => {
            throw new Error('the host could not be read');
          },
        });
        assert.ok(failing.every((p) => p.outcome === 'reconciled' && p.templatesRemoved.length === 0));
        assert.ok(
          logged.some((l) => l.level === 'warn' && /template copies could not be checked/.test(l.msg)),
        );
        // A host that does not answer its listing is not swept.
        swept.length = 0;
        const unreachable = await reconcile({
          ...driver,
          powerStates: async () => {
            throw new Error('no answer');
          },
        });
        assert.equal(unreachable.find((p) => p.hostId === hostOf)?.outcome, 'unreachable');
        assert.ok(hostOf && !swept.includes(hostOf));
        // The host taken by another process before the sweep (its hold ran out meanwhile): not
        // swept, and the pass says it lost the host.
        swept.length = 0;
        const taken = await reconcile({
          ...driver,
          async clearLeftovers(hostId: string) {
            if (hostId === hostOf)
              await t.ctx.store.db
                .updateTable('reconciler_leases')
                .set({ locked_by: 'another-process' })
                .where('host_id', '=', hostId)
                .execute();
            return { cleared: [], failed: [] };
          },
        });
        assert.equal(taken.find((p) => p.hostId === hostOf)?.outcome, 'lost');
        assert.ok(hostOf && !swept.includes(hostOf));
        assert.ok(swept.length > 0, 'the other hosts are swept');
      } finally {
        await t.close();
      }
    });

    test('the periodic pass runs on its own at the configured interval', async () => {
      const t = await createTestApp({ VRP_RECONCILE_INTERVAL: '50ms' }, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'periodic.example.com');
        await outside.powerOff(t.ctx.store.db, id);
        await waitForStatus(t, token, id, 'stopped');
        assert.equal((await outsideChanges(t, token, id)).length, 1);
      } finally {
        await t.close();
      }
    });
  });
}
