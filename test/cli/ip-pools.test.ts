import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { listAuditEntries } from '../../src/store/repos/audit.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { vrpOn } from '../helpers/cli.ts';
import { operatorToken, opsCall } from '../helpers/operator.ts';
import { testStores } from '../helpers/stores.ts';

for (const store of testStores()) {
  describe(`vrp ip-pool (${store})`, () => {
    let t: TestApp;
    let ops: string;

    before(async () => {
      t = await createTestApp({}, { store });
      ops = await operatorToken(t);
    });
    after(() => t.close());

    test('create, list, update and delete: what the operator API shows, audited as the cli', async () => {
      const made = await vrpOn(
        t,
        'ip-pool',
        'create',
        'cli-v4',
        '--family',
        'ipv4',
        '--network',
        '203.0.113.0/28',
        '--reserved',
        '203.0.113.5,203.0.113.6',
        '--hosts',
        'sim-host-1',
        '--json',
      );
      assert.equal(made.code, 0, made.err);
      const pool = made.json();
      assert.deepEqual(
        [pool.network, pool.gateway, pool.first, pool.last, pool.reserved, pool.host_ids, pool.usage.total],
        [
          '203.0.113.0/28',
          '203.0.113.1',
          '203.0.113.1',
          '203.0.113.14',
          ['203.0.113.5', '203.0.113.6'],
          ['sim-host-1'],
          11,
        ],
      );
      const v6 = await vrpOn(
        t,
        'ip-pool',
        'create',
        'cli-v6',
        '--family',
        'ipv6',
        '--network',
        '2001:db8:9000::/56',
        '--assign-prefix',
        '60',
      );
      assert.equal(v6.code, 0, v6.err);
      const listed = await vrpOn(t, 'ip-pool', 'list');
      assert.match(
        listed.out,
        /^cli-v4\t.*\tipv4\t203\.0\.113\.0\/28\tgateway 203\.0\.113\.1\t.*used 0\/11\thosts sim-host-1\treserved 203\.0\.113\.5,203\.0\.113\.6$/m,
      );
      assert.match(
        listed.out,
        /^cli-v6\t.*\tipv6\t2001:db8:9000::\/56\tgateway fe80::1\t\/60 each\tused 0\/16\thosts \(hosts no pool names\)$/m,
      );
      const changed = await vrpOn(
        t,
        'ip-pool',
        'update',
        'cli-v4',
        '--name',
        'cli-v4b',
        '--hosts',
        '',
        '--json',
      );
      assert.equal(changed.code, 0, changed.err);
      assert.deepEqual([changed.json().name, changed.json().host_ids], ['cli-v4b', []]);
      const api = (await opsCall(t, ops, 'GET', 'ip-pools')).body.data.find(
        (p: any) => p.pool_id === pool.pool_id,
      );
      assert.equal(api.name, 'cli-v4b');
      const bad = await vrpOn(
        t,
        'ip-pool',
        'create',
        'bad',
        '--family',
        'ipv4',
        '--network',
        '203.0.113.0/29',
        '--json',
      );
      assert.notEqual(bad.code, 0);
      assert.match(bad.err + bad.out, /pool_overlap/);
      for (const name of ['cli-v4b', 'cli-v6']) {
        const gone = await vrpOn(t, 'ip-pool', 'delete', name);
        assert.equal(gone.code, 0, gone.err);
      }
      const missing = await vrpOn(t, 'ip-pool', 'delete', 'cli-v6', '--json');
      assert.notEqual(missing.code, 0);
      assert.match(missing.err + missing.out, /pool_not_found/);
      const entries = await listAuditEntries(t.ctx.store.db, { limit: 50 });
      const mine = entries.filter((e) => e.action.startsWith('ip_pool.'));
      assert.deepEqual(mine.map((e) => [e.action, e.actor.type]).sort(), [
        ['ip_pool.create', 'cli'],
        ['ip_pool.create', 'cli'],
        ['ip_pool.delete', 'cli'],
        ['ip_pool.delete', 'cli'],
        ['ip_pool.update', 'cli'],
      ]);
    });

    test('wrong arguments: usage errors (exit 2) naming what is wrong; nothing written', async () => {
      const before = (await opsCall(t, ops, 'GET', 'ip-pools')).body.data.length;
      for (const [args, message] of [
        [
          ['create', 'x', '--family', 'ipv4', '--network', '198.51.100.0/29', '--name', 'y'],
          /ip-pool create: unknown option --name/,
        ],
        [['create', 'x', '--family', 'ipv4'], /--family and --network are required/],
        [
          ['create', 'x', '--family', 'ipv6', '--network', '2001:db8:a000::/48', '--assign-prefix', 'big'],
          /--assign-prefix must be a whole number, got "big"/,
        ],
        [
          ['create', '--family', 'ipv4', '--network', '198.51.100.0/29'],
          /ip-pool create: a NAME is required/,
        ],
        [
          ['create', 'x', 'y', '--family', 'ipv4', '--network', '198.51.100.0/29'],
          /ip-pool create: unexpected arguments: y/,
        ],
        [['update', 'default', '--family', 'ipv6'], /ip-pool update: unknown option --family/],
        [['list', 'extra'], /ip-pool list: unexpected arguments: extra/],
        [['delete', 'default', '--hosts', 'a'], /ip-pool delete: unknown option --hosts/],
        [['resize'], /unknown command: ip-pool resize/],
      ] as const) {
        const res = await vrpOn(t, 'ip-pool', ...args);
        assert.equal(res.code, 2, `${args.join(' ')}: ${res.err}`);
        assert.match(res.err, message);
      }
      const unknown = await vrpOn(t, 'ip-pool', 'update', 'nowhere', '--name', 'z');
      assert.notEqual(unknown.code, 0);
      assert.match(unknown.err, /no address pool nowhere/);
      assert.equal((await opsCall(t, ops, 'GET', 'ip-pools')).body.data.length, before);
    });
  });
}
