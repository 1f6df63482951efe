import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { createRescueSweep } from '../../src/jobs/rescue-sweep.ts';
import { call, createTestApp, orderRunning, type TestApp, waitForStatus } from '../helpers/app.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { createManualClock } from '../helpers/manual-clock.ts';
import { OPS, operatorToken, opsCall } from '../helpers/operator.ts';
import { testStores } from '../helpers/stores.ts';

const A = { 'x-envelope-variant': 'A' };
const B = { 'x-envelope-variant': 'B' };
const MAX_MS = 30 * 60_000;

for (const store of testStores()) {
  describe(`rescue (simulated hypervisor, ${store})`, () => {
    let t: TestApp;
    let token: string;
    let ops: string;
    const clock = createManualClock(Date.parse('2026-11-27T10:00:00Z'));
    const logged: string[] = [];
    const log = new Writable({
      write(chunk, _enc, done) {
        logged.push(String(chunk));
        done();
      },
    });

    before(async () => {
      // The worker's own sweep passes once at start and then not again during the test: the
      // tests run passes themselves, on the manual clock.
      t = await createTestApp(
        { VRP_RESCUE_MAX: `${MAX_MS}ms`, VRP_SCHEDULER_INTERVAL: '1h' },
        { worker: true, store, clock, log },
      );
      token = await t.token({ reseller: 'acme' });
      ops = await operatorToken(t);
    });
    after(() => t.close());

    const rescue = (id: string, headers = B) => call(t, token, 'POST', `service/${id}/rescue`, {}, headers);
    const unrescue = (id: string) => call(t, token, 'POST', `service/${id}/unrescue`, {}, B);
    const details = async (id: string) =>
      (await call(t, token, 'GET', `service/${id}/details`, undefined, B)).body.data;
    const statusChanges = async (id: string) =>
      ((await call(t, token, 'GET', 'events?limit=1000', undefined, B)).body.data as any[])
        .filter((e) => e.type === 'service.status_changed' && e.data.service_id === id)
        .map((e) => e.data.to);
    const simVm = (id: string) =>
      t.ctx.store.db.selectFrom('sim_vms').selectAll().where('id', '=', id).executeTakeFirst();

    async function inRescue(id: string): Promise<string> {
      const res = await rescue(id);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      await waitForStatus(t, token, id, 'rescue');
      return res.body.data.password;
    }

    test('rescue answers the login once; the service is in rescue until unrescue; events and audit tell it, never the password', async () => {
      const id = await orderRunning(t, token, 'rescue1.example.com');
      const before = await details(id);
      const res = await rescue(id);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.status, 'Success');
      assert.equal(res.body.data.username, 'root');
      const password: string = res.body.data.password;
      assert.match(password, /^.{20}$/);
      assert.match(String(res.headers['x-job-id']), /^[0-9a-f-]{36}$/);

      await waitForStatus(t, token, id, 'rescue');
      const d = await details(id);
      assert.equal(d.status, 'rescue');
      assert.equal(d.rescue_until, new Date(clock.now() + MAX_MS).toISOString());
      assert.deepEqual([...d.allowed_actions].sort(), ['suspend', 'terminate', 'unrescue']);
      assert.equal(d.password, before.password, 'the server’s own login stays');
      const st = (await call(t, token, 'GET', `service/${id}/status`, undefined, B)).body.data;
      assert.equal(st.status, 'rescue');
      assert.equal((await simVm(id))?.power, 'running', 'the rescue system runs');

      const listed = await opsCall(t, ops, 'GET', 'services?status=rescue');
      assert.equal(listed.status, 200);
      assert.deepEqual(
        listed.body.data.items.map((s: any) => s.service_id),
        [id],
        'the listing filters by rescue',
      );

      const left = await unrescue(id);
      assert.equal(left.status, 200, JSON.stringify(left.body));
      assert.deepEqual(left.body.data, []);
      assert.match(String(left.headers['x-job-id']), /^[0-9a-f-]{36}$/);
      await waitForStatus(t, token, id, 'running');
      assert.equal((await details(id)).rescue_until, null);
      assert.equal((await simVm(id))?.rescue_password_hash, null, 'the own system runs again');

      assert.deepEqual((await statusChanges(id)).slice(-4), ['rescuing', 'rescue', 'starting', 'running']);
      const audit = await opsCall(t, ops, 'GET', `audit?service_id=${id}`);
      assert.equal(audit.status, 200);
      const actions = (audit.body.data.items as any[]).map((e) => `${e.action}:${e.outcome}`);
      assert.ok(actions.includes('service.rescue:ok'), JSON.stringify(actions));
      assert.ok(actions.includes('service.unrescue:ok'), JSON.stringify(actions));

      // The password is in the one answer only.
      const jobs = await call(t, token, 'GET', `service/${id}/jobs`, undefined, B);
      const opsDetails = await opsCall(t, ops, 'GET', `services/${id}`);
      const events = await call(t, token, 'GET', 'events?limit=1000', undefined, B);
      const opsJobs = await opsCall(t, ops, 'GET', `jobs?service_id=${id}`);
      for (const [what, text] of [
        ['audit', JSON.stringify(audit.body)],
        ['jobs', JSON.stringify(jobs.body)],
        ['operator jobs', JSON.stringify(opsJobs.body)],
        ['operator details', JSON.stringify(opsDetails.body)],
        ['events', JSON.stringify(events.body)],
        ['logs', logged.join('')],
      ] as const) {
        assert.ok(!text.includes(password), `the rescue password is not in the ${what}`);
      }
      assert.ok(logged.length > 0, 'the app logged');
    });

    test('variant A: the login in its envelope; from stopped, unrescue ends running', async () => {
      const id = await orderRunning(t, token, 'rescue2.example.com');
      assert.equal((await call(t, token, 'POST', `service/${id}/stop`, {}, B)).status, 200);
      await waitForStatus(t, token, id, 'stopped');
      const res = await rescue(id, A);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.success, 'true');
      const login = JSON.parse(res.body.data);
      assert.equal(login.username, 'root');
      assert.equal(typeof login.password, 'string');
      await waitForStatus(t, token, id, 'rescue');
      assert.equal((await unrescue(id)).status, 200);
      await waitForStatus(t, token, id, 'running');
    });

    test('bad states: 400 invalid_state, nothing queued', async () => {
      const ordered = await call(
        t,
        token,
        'POST',
        'service/create-order',
        smallOrder('rescue3.example.com'),
        B,
      );
      const pending = ordered.body.data[0].service_id as string;
      const refused = async (res: Awaited<ReturnType<typeof rescue>>) => {
        assert.equal(res.status, 400, JSON.stringify(res.body));
        assert.equal(res.body.error_code, 'invalid_state');
        assert.equal(res.headers['x-job-id'], undefined);
      };
      await refused(await rescue(pending));
      await refused(await unrescue(pending));

      const id = await orderRunning(t, token, 'rescue4.example.com');
      await refused(await unrescue(id));
      await inRescue(id);
      await refused(await rescue(id));
      for (const op of ['start', 'stop', 'restart', 'upgrade', 'reset-password', 'backup/create'])
        assert.equal((await call(t, token, 'POST', `service/${id}/${op}`, {}, B)).status, 400, op);

      assert.equal((await call(t, token, 'POST', `service/${id}/suspend`, {}, B)).status, 200);
      await waitForStatus(t, token, id, 'suspended');
      await refused(await rescue(id));
      await refused(await unrescue(id));
    });

    test('suspend from rescue: the own system, off; unsuspend runs it. Terminate from rescue removes the VM', async () => {
      const id = await orderRunning(t, token, 'rescue5.example.com');
      await inRescue(id);
      assert.equal((await call(t, token, 'POST', `service/${id}/suspend`, {}, B)).status, 200);
      await waitForStatus(t, token, id, 'suspended');
      const vm = await simVm(id);
      assert.equal(vm?.power, 'stopped');
      assert.equal(vm?.rescue_password_hash, null, 'it left rescue');
      assert.equal((await details(id)).rescue_until, null);
      assert.equal((await call(t, token, 'POST', `service/${id}/unsuspend`, {}, B)).status, 200);
      await waitForStatus(t, token, id, 'running');
      assert.equal((await simVm(id))?.power, 'running');

      await inRescue(id);
      assert.equal((await call(t, token, 'POST', `service/${id}/terminate`, {}, B)).status, 200);
      await waitForStatus(t, token, id, 'terminated');
      assert.equal(await simVm(id), undefined, 'the VM in rescue is gone');
      assert.equal((await details(id)).rescue_until, null);
    });

    test('the operator door: rescue and unrescue of any reseller’s service', async () => {
      const id = await orderRunning(t, token, 'rescue6.example.com');
      const res = await opsCall(t, ops, 'POST', `services/${id}/rescue`, {});
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.data.username, 'root');
      assert.match(String(res.headers['x-job-id']), /^[0-9a-f-]{36}$/);
      await waitForStatus(t, token, id, 'rescue');
      const seen = await opsCall(t, ops, 'GET', `services/${id}`);
      assert.equal(seen.body.data.status, 'rescue');
      assert.equal(typeof seen.body.data.rescue_until, 'string');
      const again = await opsCall(t, ops, 'POST', `services/${id}/rescue`, {});
      assert.equal(again.body.error_code, 'invalid_state');
      assert.equal((await opsCall(t, ops, 'POST', `services/${id}/unrescue`, {})).status, 200);
      await waitForStatus(t, token, id, 'running');
      const audit = await opsCall(t, ops, 'GET', `audit?service_id=${id}&actor=operator`);
      const actions = (audit.body.data.items as any[]).map((e) => e.action);
      assert.ok(actions.includes('service.rescue') && actions.includes('service.unrescue'));
    });

    test('PATCH OPS/hosts/{id} rescue_image: a path, then null (the global one); a relative path is refused', async () => {
      const patch = (body: unknown) =>
        t.app.inject({
          method: 'PATCH',
          url: `${OPS}/hosts/sim-host-1`,
          headers: { authorization: `Bearer ${ops}`, 'content-type': 'application/json' },
          payload: JSON.stringify(body),
        });
      assert.equal((await opsCall(t, ops, 'GET', 'hosts/sim-host-1')).body.data.rescue_image, null);
      const set = await patch({ rescue_image: '/var/lib/vrp/rescue' });
      assert.equal(set.statusCode, 200, set.body);
      assert.equal(set.json().data.rescue_image, '/var/lib/vrp/rescue');
      const listed = (await opsCall(t, ops, 'GET', 'hosts')).body.data.items as any[];
      assert.equal(listed.find((h) => h.host_id === 'sim-host-1').rescue_image, '/var/lib/vrp/rescue');
      for (const bad of ['rescue.qcow2', '', '/a\nb', 42]) {
        const r = await patch({ rescue_image: bad });
        assert.equal(r.statusCode, 400, `${JSON.stringify(bad)}: ${r.body}`);
        assert.equal(r.json().error_code, 'validation_failed');
      }
      const other = await patch({ name: 'sim-host-1' });
      assert.equal(
        other.json().data.rescue_image,
        '/var/lib/vrp/rescue',
        'a change of something else keeps it',
      );
      const cleared = await patch({ rescue_image: null });
      assert.equal(cleared.statusCode, 200, cleared.body);
      assert.equal(cleared.json().data.rescue_image, null);
      const row = await t.ctx.store.db
        .selectFrom('hypervisor_hosts')
        .select('rescue_image')
        .where('id', '=', 'sim-host-1')
        .executeTakeFirstOrThrow();
      assert.equal(row.rescue_image, null);
    });

    test('a rescue ends by itself after VRP_RESCUE_MAX: one unrescue, however many sweeps', async () => {
      const expired = await orderRunning(t, token, 'rescue7.example.com');
      const leaving = await orderRunning(t, token, 'rescue8.example.com');
      await inRescue(expired);
      await inRescue(leaving);
      const sweeps = [1, 2, 3].map(() =>
        createRescueSweep({ db: t.ctx.store.db, clock, log: t.app.log, maxMs: MAX_MS, intervalMs: 60_000 }),
      );
      const sweepAll = async () => (await Promise.all(sweeps.map((s) => s.pass()))).flat();

      clock.advance(MAX_MS - 1000);
      assert.deepEqual(await sweepAll(), [], 'not over yet: nothing');
      // One of them is being suspended already: that ends its rescue.
      assert.equal((await call(t, token, 'POST', `service/${leaving}/suspend`, {}, B)).status, 200);
      clock.advance(1000);
      const outcomes = await sweepAll();
      const queued = outcomes.filter((o) => o.outcome === 'queued');
      assert.equal(queued.length, 1, JSON.stringify(outcomes));
      assert.equal(queued[0]?.serviceId, expired);
      assert.ok(
        outcomes.every((o) => o.serviceId === expired),
        'the service being suspended is left alone',
      );

      await waitForStatus(t, token, expired, 'running');
      await waitForStatus(t, token, leaving, 'suspended');
      const jobs = (await call(t, token, 'GET', `service/${expired}/jobs`, undefined, B)).body.data as any[];
      assert.equal(jobs.filter((j) => j.action === 'unrescue').length, 1, 'one unrescue');
      const row = await t.ctx.store.db
        .selectFrom('jobs')
        .select('params')
        .where('id', '=', queued[0]!.jobId!)
        .executeTakeFirstOrThrow();
      assert.deepEqual(JSON.parse(String(row.params)), { expired: true });
      assert.deepEqual(await sweepAll(), [], 'nothing left to end');
      assert.equal((await details(expired)).rescue_until, null);
    });
  });
}
