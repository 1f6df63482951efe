import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { listAuditEntries } from '../../src/store/repos/audit.ts';
import { createTestApp, orderRunning, type TestApp } from '../helpers/app.ts';
import { ownDataDir, vrpInProcess, vrpOn } from '../helpers/cli.ts';
import { operatorToken, opsCall } from '../helpers/operator.ts';
import { testStores } from '../helpers/stores.ts';

test('on a store no server has opened yet, the settings seed the hosts for the first vrp host command', async (t) => {
  const env = { VRP_DATA_DIR: ownDataDir(t), VRP_SIM_HOSTS: 'first-1:8:16:100,first-2:8:16:100' };
  assert.equal((await vrpInProcess(['migrate'], env)).code, 0);
  const list = await vrpInProcess(['host', 'list', '--json'], env);
  assert.equal(list.code, 0, list.err);
  assert.deepEqual(
    list.json().map((h: { name: string; state: string }) => [h.name, h.state]),
    [
      ['first-1', 'active'],
      ['first-2', 'active'],
    ],
  );
  // Once: other settings later change no host.
  const again = await vrpInProcess(['host', 'list', '--json'], { ...env, VRP_SIM_HOSTS: 'other:8:16:100' });
  assert.deepEqual(
    again.json().map((h: { name: string }) => h.name),
    ['first-1', 'first-2'],
  );
});

for (const store of testStores()) {
  describe(`vrp host (${store})`, () => {
    let t: TestApp;
    let ops: string;
    let acme: string;

    before(async () => {
      t = await createTestApp({}, { store, worker: true });
      ops = await operatorToken(t);
      acme = await t.token({ reseller: 'acme' });
    });
    after(() => t.close());

    test('update --rescue-image PATH|none: the host’s own rescue image, shown by the API and the list', async () => {
      const set = await vrpOn(
        t,
        'host',
        'update',
        'sim-host-2',
        '--rescue-image',
        '/srv/rescue/rescue.qcow2',
        '--json',
      );
      assert.equal(set.code, 0, set.err);
      assert.equal(set.json().rescue_image, '/srv/rescue/rescue.qcow2');
      const seen = await opsCall(t, ops, 'GET', 'hosts/sim-host-2');
      assert.equal(seen.body.data.rescue_image, '/srv/rescue/rescue.qcow2');
      assert.match(
        (await vrpOn(t, 'host', 'show', 'sim-host-2')).out,
        /\trescue image \/srv\/rescue\/rescue\.qcow2/,
      );
      const bad = await vrpOn(
        t,
        'host',
        'update',
        'sim-host-2',
        '--rescue-image',
        'relative.qcow2',
        '--json',
      );
      assert.notEqual(bad.code, 0);
      assert.match(bad.out + bad.err, /validation_failed/);
      const cleared = await vrpOn(t, 'host', 'update', 'sim-host-2', '--rescue-image', 'none', '--json');
      assert.equal(cleared.code, 0, cleared.err);
      assert.equal(cleared.json().rescue_image, null);
      assert.equal((await opsCall(t, ops, 'GET', 'hosts/sim-host-2')).body.data.rescue_image, null);
    });

    test('add, list, show, update, drain, activate, evacuate, remove: the API sees each change; audited as the CLI', async () => {
      const added = await vrpOn(
        t,
        'host',
        'add',
        'cli-1',
        '--cpu',
        '8',
        '--ram',
        '16',
        '--disk',
        '200',
        '--json',
      );
      assert.equal(added.code, 0, added.err);
      const h = added.json();
      assert.deepEqual(
        [h.name, h.driver, h.state, h.health, h.capacity.cpu],
        ['cli-1', 'simulated', 'active', 'up', 8],
      );
      assert.equal((await opsCall(t, ops, 'GET', `hosts/${h.host_id}`)).body.data.name, 'cli-1');

      const list = await vrpOn(t, 'host', 'list', '--json');
      assert.deepEqual(
        list.json().map((x: any) => x.name),
        ['cli-1', 'sim-host-1', 'sim-host-2'],
      );
      assert.match((await vrpOn(t, 'host', 'list')).out, /^cli-1\t.*\tactive\tup\tcpu 0\/8/m);
      assert.equal((await vrpOn(t, 'host', 'show', h.host_id, '--json')).json().name, 'cli-1');

      const updated = await vrpOn(t, 'host', 'update', 'cli-1', '--name', 'cli-1b', '--cpu', '12', '--json');
      assert.equal(updated.code, 0, updated.err);
      assert.deepEqual([updated.json().name, updated.json().capacity.cpu], ['cli-1b', 12]);
      for (const [verb, state] of [
        ['drain', 'draining'],
        ['evacuate', 'evacuating'],
        ['activate', 'active'],
      ] as const) {
        const r = await vrpOn(t, 'host', verb, 'cli-1b', '--json');
        assert.equal(r.json().state, state, verb);
      }
      const removed = await vrpOn(t, 'host', 'remove', 'cli-1b');
      assert.equal(removed.code, 0, removed.err);
      assert.match(removed.out, /host "cli-1b" removed/);
      assert.equal((await opsCall(t, ops, 'GET', `hosts/${h.host_id}`)).status, 404);
      const entries = await listAuditEntries(t.ctx.store.db, { limit: 1000, order: 'oldest' });
      assert.deepEqual(
        entries.filter((e) => e.target?.id === h.host_id).map((e) => [e.actor.type, e.action]),
        [
          ['cli', 'host.create'],
          ['cli', 'host.update'],
          ['cli', 'host.drain'],
          ['cli', 'host.evacuate'],
          ['cli', 'host.activate'],
          ['cli', 'host.delete'],
        ],
      );
    });

    test('the same checks as the API, exit 1 with the error code in --json; usage errors exit 2', async () => {
      const taken = await vrpOn(t, 'host', 'add', 'cli-taken', '--cpu', '1', '--ram', '1', '--disk', '1');
      assert.equal(taken.code, 0, `${taken.out} ${taken.err}`);
      for (const [args, code] of [
        [['add', 'bad name', '--cpu', '1', '--ram', '1', '--disk', '1'], 'invalid_host_name'],
        [['add', 'cli-taken', '--cpu', '1', '--ram', '1', '--disk', '1'], 'host_name_taken'],
        [
          [
            'add',
            'kvm',
            '--driver',
            'libvirt',
            '--uri',
            'qemu:///system',
            '--cpu',
            '1',
            '--ram',
            '1',
            '--disk',
            '1',
          ],
          'host_driver_mismatch',
        ],
        [
          ['add', 'sim-uri', '--uri', 'qemu:///system', '--cpu', '1', '--ram', '1', '--disk', '1'],
          'invalid_host_uri',
        ],
        [['add', 'zero', '--cpu', '0', '--ram', '1', '--disk', '1'], 'validation_failed'],
        [['show', 'nope'], 'host_not_found'],
        [['remove', 'nope'], 'host_not_found'],
      ] as const) {
        const r = await vrpOn(t, 'host', ...args, '--json');
        assert.equal(r.code, 1, `${args.join(' ')}: ${r.out} ${r.err}`);
        assert.equal(r.json().error_code, code, args.join(' '));
      }
      const id = await orderRunning(t, acme, 'cli-host.example.com');
      const on = (await opsCall(t, ops, 'GET', `services/${id}`)).body.data.host.host_id;
      const full = await vrpOn(t, 'host', 'remove', on, '--json');
      assert.equal(full.json().error_code, 'host_not_empty');
      const below = await vrpOn(t, 'host', 'update', on, '--cpu', '0', '--json');
      assert.equal(below.json().error_code, 'validation_failed');
      for (const args of [['add', 'x', '--cpu', 'lots'], ['add', 'x', '--bogus'], ['frobnicate'], ['show']]) {
        assert.equal((await vrpOn(t, 'host', ...args)).code, 2, args.join(' '));
      }
    });

    test('host migrate SERVICE_ID [--to HOST] queues the migrate job; the destination is checked', async () => {
      const id = await orderRunning(t, acme, 'cli-migrate.example.com');
      const on = (await opsCall(t, ops, 'GET', `services/${id}`)).body.data.host.host_id;
      const same = await vrpOn(t, 'host', 'migrate', id, '--to', on, '--json');
      assert.equal(same.code, 1);
      assert.equal(same.json().error_code, 'same_host');
      const other = on === 'sim-host-1' ? 'sim-host-2' : 'sim-host-1';
      const queued = await vrpOn(t, 'host', 'migrate', id, '--to', other, '--json');
      assert.equal(queued.code, 0, queued.err);
      const job = await t.ctx.store.db
        .selectFrom('jobs')
        .select(['action', 'params'])
        .where('id', '=', queued.json().job_id)
        .executeTakeFirstOrThrow();
      const params = typeof job.params === 'string' ? JSON.parse(job.params) : job.params;
      assert.equal(job.action, 'migrate');
      assert.deepEqual(params, { host_id: other, from_host_id: on, evacuation: false });
      const unknown = await vrpOn(t, 'host', 'migrate', '00000000-0000-4000-8000-000000000000', '--json');
      assert.equal(unknown.json().error_code, 'service_not_found');
    });
  });
}
