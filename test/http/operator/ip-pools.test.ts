import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { listAuditEntries } from '../../../src/store/repos/audit.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../../helpers/app.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { operatorToken, opsCall } from '../../helpers/operator.ts';
import { testStores } from '../../helpers/stores.ts';

const B = { 'x-envelope-variant': 'B' };
const A = { 'x-envelope-variant': 'A' };

for (const store of testStores()) {
  describe(`operator API: address pools (${store})`, () => {
    let t: TestApp;
    let ops: string;
    let acme: string;

    before(async () => {
      t = await createTestApp({}, { store, worker: true });
      ops = await operatorToken(t);
      acme = await t.token({ reseller: 'acme' });
    });
    after(() => t.close());

    const pools = async () => (await opsCall(t, ops, 'GET', 'ip-pools')).body.data as any[];
    const poolNamed = async (name: string) => (await pools()).find((p) => p.name === name);
    const create = (body: Record<string, unknown>) => opsCall(t, ops, 'POST', 'ip-pools', body);
    /** Only `host` takes new servers while `body` runs. */
    async function onHost<T>(host: string, body: () => Promise<T>): Promise<T> {
      const other = host === 'sim-host-1' ? 'sim-host-2' : 'sim-host-1';
      assert.equal((await opsCall(t, ops, 'POST', `hosts/${other}/drain`)).status, 200);
      try {
        return await body();
      } finally {
        assert.equal((await opsCall(t, ops, 'POST', `hosts/${other}/activate`)).status, 200);
      }
    }
    async function running(domain: string): Promise<string> {
      const res = await call(t, acme, 'POST', 'service/create-order', smallOrder(domain), B);
      const id = res.body.data[0].service_id;
      assert.equal((await call(t, acme, 'POST', `service/${id}/create`, undefined, B)).status, 200);
      await waitForStatus(t, acme, id, 'running');
      return id;
    }
    const details = async (id: string) =>
      (await call(t, acme, 'GET', `service/${id}/details`, undefined, B)).body.data;

    test('a fresh store has the pool default, made from the old setting, serving every host', async () => {
      const res = await opsCall(t, ops, 'GET', 'ip-pools');
      assert.equal(res.status, 200);
      const [d] = res.body.data;
      assert.equal(res.body.data.length, 1);
      assert.deepEqual(
        {
          name: d.name,
          family: d.family,
          network: d.network,
          gateway: d.gateway,
          first: d.first,
          last: d.last,
          reserved: d.reserved,
          host_ids: d.host_ids,
          assign: d.assign_prefix_length,
          total: d.usage.total,
        },
        {
          name: 'default',
          family: 'ipv4',
          network: '10.80.0.0/24',
          gateway: '10.80.0.1',
          first: '10.80.0.2',
          last: '10.80.0.254',
          reserved: [],
          host_ids: [],
          assign: null,
          total: 253,
        },
      );
    });

    test('bad input: 400 with a code for each rule, nothing written', async () => {
      const v4 = { name: 'bad', family: 'ipv4', network: '192.0.2.0/24' };
      const v6 = { name: 'bad6', family: 'ipv6', network: '2001:db8:4000::/48' };
      const cases: [Record<string, unknown>, string][] = [
        [{ family: 'ipv4', network: '192.0.2.0/24' }, 'validation_failed'],
        [{ ...v4, family: 'ipv5' }, 'validation_failed'],
        [{ ...v4, name: 'no spaces' }, 'validation_failed'],
        [{ ...v4, colour: 'red' }, 'validation_failed'],
        [{ ...v4, first: 'not-an-address' }, 'validation_failed'],
        [{ ...v4, assign_prefix_length: 64 }, 'validation_failed'],
        [{ ...v6, first: '2001:db8:4000::10' }, 'validation_failed'],
        [{ ...v6, reserved: ['2001:db8:4000::10'] }, 'validation_failed'],
        [{ ...v4, network: '192.0.2.5/24' }, 'invalid_network'],
        [{ ...v4, network: '192.0.2.0' }, 'invalid_network'],
        [{ ...v4, network: '10.0.0.0/8' }, 'invalid_network'],
        [{ ...v4, network: '2001:db8::/48' }, 'invalid_network'],
        [{ ...v6, network: '2001:db8:4000::/96' }, 'invalid_network'],
        [{ ...v6, network: '192.0.2.0/24' }, 'invalid_network'],
        [{ ...v4, gateway: '198.51.100.1' }, 'gateway_outside_network'],
        [{ ...v4, gateway: '192.0.2.255' }, 'gateway_outside_network'],
        [{ ...v6, gateway: '2001:db8:5000::1' }, 'gateway_outside_network'],
        [{ ...v4, first: '192.0.3.1' }, 'range_outside_network'],
        [{ ...v4, last: '192.0.2.255' }, 'range_outside_network'],
        [{ ...v4, first: '192.0.2.100', last: '192.0.2.50' }, 'range_outside_network'],
        [{ ...v4, reserved: ['192.0.2.9', '192.0.9.9'] }, 'range_outside_network'],
        [{ ...v6, assign_prefix_length: 40 }, 'prefix_too_small'],
        [{ ...v6, assign_prefix_length: 80 }, 'prefix_too_small'],
        [{ ...v4, network: '10.80.0.128/25' }, 'pool_overlap'],
        [{ ...v4, network: '10.80.0.0/16' }, 'pool_overlap'],
        [{ ...v4, name: 'default' }, 'pool_name_taken'],
        [{ ...v4, host_ids: ['sim-host-1', 'no-such-host'] }, 'unknown_host'],
      ];
      for (const [body, code] of cases) {
        const res = await create(body);
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error_code, code, `${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
      }
      assert.deepEqual(
        (await pools()).map((p) => p.name),
        ['default'],
      );
      const unknown = '00000000-0000-4000-8000-000000000000';
      const patched = await opsCall(t, ops, 'PATCH', `ip-pools/${unknown}`, { name: 'x' });
      assert.equal(patched.status, 404);
      assert.equal(patched.body.error_code, 'pool_not_found');
      const deleted = await opsCall(t, ops, 'POST', `ip-pools/${unknown}/delete`);
      assert.equal(deleted.status, 404);
      assert.equal(deleted.body.error_code, 'pool_not_found');
      // A change is checked as a new pool is.
      const d = await poolNamed('default');
      for (const [body, code] of [
        [{ gateway: '192.0.2.1' }, 'gateway_outside_network'],
        [{ last: '10.80.1.5' }, 'range_outside_network'],
        [{ host_ids: ['nope'] }, 'unknown_host'],
        [{ family: 'ipv6' }, 'validation_failed'],
      ] as const) {
        const res = await opsCall(t, ops, 'PATCH', `ip-pools/${d.pool_id}`, body);
        assert.equal(res.status, 400, JSON.stringify(res.body));
        assert.equal(res.body.error_code, code, JSON.stringify(res.body));
      }
      assert.deepEqual(await poolNamed('default'), d);
    });

    test('a host’s pools give its servers their addresses: IPv4 with the pool’s gateway, an IPv6 prefix; other hosts keep the default pool and no IPv6', async () => {
      const v4 = await create({
        name: 'rack-1',
        family: 'ipv4',
        network: '192.0.2.0/28',
        gateway: '192.0.2.1',
        first: '192.0.2.2',
        last: '192.0.2.14',
        reserved: ['192.0.2.2', '192.0.2.3'],
        host_ids: ['sim-host-1'],
      });
      assert.equal(v4.status, 200, JSON.stringify(v4.body));
      assert.equal(v4.body.data.usage.total, 11);
      assert.deepEqual(v4.body.data.host_ids, ['sim-host-1']);
      const v6 = await create({
        name: 'rack-1-v6',
        family: 'ipv6',
        network: '2001:db8:4000::/48',
        host_ids: ['sim-host-1'],
      });
      assert.equal(v6.status, 200, JSON.stringify(v6.body));
      assert.equal(v6.body.data.assign_prefix_length, 64);
      assert.equal(v6.body.data.gateway, 'fe80::1');
      assert.equal(v6.body.data.usage.total, 65536);

      const one = await onHost('sim-host-1', () => running('one.example.com'));
      const d1 = await details(one);
      assert.deepEqual(d1.ips, ['192.0.2.4'], 'the first address that is not reserved');
      assert.deepEqual(d1.ipv6, {
        prefix: '2001:db8:4000::/64',
        address: '2001:db8:4000::1',
        gateway: 'fe80::1',
      });
      const a = await call(t, acme, 'POST', `service/${one}/details`, {}, A);
      assert.deepEqual(
        JSON.parse(a.body.data).ipv6,
        d1.ipv6,
        'variant A shows it too (its data is a JSON text)',
      );
      const opsView = (await opsCall(t, ops, 'GET', `services/${one}`)).body.data;
      assert.deepEqual(opsView.ipv6, d1.ipv6);

      const two = await onHost('sim-host-2', () => running('two.example.com'));
      const d2 = await details(two);
      assert.match(d2.ips[0], /^10\.80\.0\./);
      assert.equal(d2.ipv6, null);

      const listed = await pools();
      assert.equal(listed.find((p) => p.name === 'rack-1').usage.used, 1);
      assert.equal(listed.find((p) => p.name === 'rack-1-v6').usage.used, 1);

      // In use: 409, the pool stays.
      for (const name of ['rack-1', 'rack-1-v6']) {
        const p = listed.find((x) => x.name === name);
        const res = await opsCall(t, ops, 'POST', `ip-pools/${p.pool_id}/delete`);
        assert.equal(res.status, 409, JSON.stringify(res.body));
        assert.equal(res.body.error_code, 'pool_in_use');
      }
      assert.equal((await pools()).length, 3);

      // The operator gives the server on the other host IPv6 once that host has a pool.
      const refused = await opsCall(t, ops, 'POST', `services/${two}/ipv6`);
      assert.equal(refused.status, 409, JSON.stringify(refused.body));
      assert.equal(refused.body.error_code, 'no_ipv6_pool');
      const bound = await opsCall(t, ops, 'PATCH', `ip-pools/${v6.body.data.pool_id}`, {
        host_ids: ['sim-host-1', 'sim-host-2'],
      });
      assert.deepEqual(bound.body.data.host_ids, ['sim-host-1', 'sim-host-2']);
      const given = await opsCall(t, ops, 'POST', `services/${two}/ipv6`);
      assert.equal(given.status, 200, JSON.stringify(given.body));
      assert.deepEqual(given.body.data, {
        prefix: '2001:db8:4000:1::/64',
        address: '2001:db8:4000:1::1',
        gateway: 'fe80::1',
      });
      assert.deepEqual((await details(two)).ipv6, given.body.data);
      const again = await opsCall(t, ops, 'POST', `services/${two}/ipv6`);
      assert.deepEqual(again.body.data, given.body.data, 'asked again: the same prefix');

      // Terminated: everything back, the pools can go.
      for (const id of [one, two]) {
        assert.equal((await call(t, acme, 'POST', `service/${id}/terminate`, undefined, B)).status, 200);
        await waitForStatus(t, acme, id, 'terminated');
      }
      const afterTerminate = await pools();
      assert.equal(afterTerminate.find((p) => p.name === 'rack-1').usage.used, 0);
      assert.equal(afterTerminate.find((p) => p.name === 'rack-1-v6').usage.used, 0);
      const noServer = await opsCall(t, ops, 'POST', `services/${one}/ipv6`);
      assert.equal(noServer.status, 400);
      assert.equal(noServer.body.error_code, 'invalid_state');
      for (const name of ['rack-1', 'rack-1-v6']) {
        const p = afterTerminate.find((x) => x.name === name);
        const res = await opsCall(t, ops, 'POST', `ip-pools/${p.pool_id}/delete`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
      }
      assert.deepEqual(
        (await pools()).map((p) => p.name),
        ['default'],
      );
      const actions = (await listAuditEntries(t.ctx.store.db, { limit: 100 })).map((e) => e.action);
      for (const action of ['ip_pool.create', 'ip_pool.update', 'ip_pool.delete', 'service.ipv6'])
        assert.ok(actions.includes(action), `${action} in ${actions.join(', ')}`);
    });

    test('a narrowed range keeps the addresses in use; a freed prefix is handed out again first; the prefix holding the gateway never', async () => {
      const created = await create({
        name: 'narrow',
        family: 'ipv4',
        network: '198.51.100.0/29',
        host_ids: ['sim-host-1'],
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const v6 = await create({
        name: 'narrow-v6',
        family: 'ipv6',
        network: '2001:db8:5000::/60',
        assign_prefix_length: 62,
        gateway: '2001:db8:5000::1',
        host_ids: ['sim-host-1'],
      });
      assert.equal(v6.status, 200, JSON.stringify(v6.body));
      assert.equal(v6.body.data.usage.total, 3, 'four /62s, but the one with the gateway');
      const id = await onHost('sim-host-1', () => running('narrow.example.com'));
      const d = await details(id);
      assert.deepEqual(d.ips, ['198.51.100.2'], 'the gateway .1 is never handed out');
      assert.deepEqual(d.ipv6, {
        prefix: '2001:db8:5000:4::/62',
        address: '2001:db8:5000:4::1',
        gateway: '2001:db8:5000::1',
      });
      const narrowed = await opsCall(t, ops, 'PATCH', `ip-pools/${created.body.data.pool_id}`, {
        first: '198.51.100.5',
        name: 'narrowed',
      });
      assert.equal(narrowed.status, 200, JSON.stringify(narrowed.body));
      assert.equal(narrowed.body.data.first, '198.51.100.5');
      assert.equal(narrowed.body.data.name, 'narrowed');
      assert.equal(narrowed.body.data.usage.used, 1, 'the address outside the range is still held');
      assert.deepEqual((await details(id)).ips, ['198.51.100.2']);
      const next = await onHost('sim-host-1', () => running('narrow2.example.com'));
      assert.deepEqual((await details(next)).ips, ['198.51.100.5']);
      assert.equal((await details(next)).ipv6.prefix, '2001:db8:5000:8::/62');
      assert.equal((await call(t, acme, 'POST', `service/${id}/terminate`, undefined, B)).status, 200);
      await waitForStatus(t, acme, id, 'terminated');
      const third = await onHost('sim-host-1', () => running('narrow3.example.com'));
      assert.equal((await details(third)).ipv6.prefix, '2001:db8:5000:4::/62', 'the released prefix first');
      assert.notDeepEqual((await details(third)).ips, ['198.51.100.2'], 'outside the narrowed range');
    });
  });
}

for (const store of testStores()) {
  test(`concurrent orders through the API take distinct addresses and prefixes from the hosts' pools (${store})`, async () => {
    const t = await createTestApp({}, { store, worker: true });
    try {
      const ops = await operatorToken(t);
      const acme = await t.token({ reseller: 'acme' });
      const hosts = ['sim-host-1', 'sim-host-2'];
      const v4 = await opsCall(t, ops, 'POST', 'ip-pools', {
        name: 'race-v4',
        family: 'ipv4',
        network: '203.0.113.0/28',
        gateway: '203.0.113.1',
        host_ids: hosts,
      });
      assert.equal(v4.status, 200, JSON.stringify(v4.body));
      const v6 = await opsCall(t, ops, 'POST', 'ip-pools', {
        name: 'race-v6',
        family: 'ipv6',
        network: '2001:db8:6000::/56',
        host_ids: hosts,
      });
      assert.equal(v6.status, 200, JSON.stringify(v6.body));
      // Twelve orders at once, each created at once: their jobs run side by side.
      const ids = await Promise.all(
        Array.from({ length: 12 }, async (_, i) => {
          const res = await call(
            t,
            acme,
            'POST',
            'service/create-order',
            smallOrder(`race${i}.example.com`),
            B,
          );
          assert.equal(res.status, 200, JSON.stringify(res.body));
          const id = res.body.data[0].service_id as string;
          assert.equal((await call(t, acme, 'POST', `service/${id}/create`, undefined, B)).status, 200);
          return id;
        }),
      );
      await Promise.all(ids.map((id) => waitForStatus(t, acme, id, 'running')));
      const all = await Promise.all(
        ids.map(async (id) => (await call(t, acme, 'GET', `service/${id}/details`, undefined, B)).body.data),
      );
      const ips = all.flatMap((d) => d.ips as string[]);
      assert.equal(ips.length, 12);
      assert.equal(new Set(ips).size, 12, 'no address twice');
      assert.ok(
        ips.every((ip) => /^203\.0\.113\.([2-9]|1[0-4])$/.test(ip)),
        ips.join(' '),
      );
      const prefixes = all.map((d) => d.ipv6?.prefix);
      assert.equal(new Set(prefixes).size, 12, 'no prefix twice');
      assert.ok(
        prefixes.every((p) => /^2001:db8:6000:([0-9a-f]{1,2}:)?:\/64$/.test(p)),
        prefixes.join(' '),
      );
      const listed = (await opsCall(t, ops, 'GET', 'ip-pools')).body.data as any[];
      assert.deepEqual(
        ['race-v4', 'race-v6'].map((n) => listed.find((p) => p.name === n).usage.used),
        [12, 12],
      );
    } finally {
      await t.close();
    }
  });
}
