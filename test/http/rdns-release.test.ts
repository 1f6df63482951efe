import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, orderRunning, type TestApp, waitForStatus } from '../helpers/app.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { type PowerDns, startApiProxy, startPowerDns, waitForPtrRetry } from '../helpers/powerdns.ts';
import { testStores } from '../helpers/stores.ts';
import { missingTool } from '../helpers/tools.ts';

const B = { 'x-envelope-variant': 'B' };
const defaultOf = (ip: string) => `ip-${ip.replace(/\./g, '-')}.rdns.example.net`;

/**
 * An address a service gives back (an upgrade to fewer addresses, a terminate) takes none of its
 * PTR with it: the next service to get it sees its own record in DNS and in GET, and the first
 * service's later terminate leaves that record alone. Each store runs on a /29 of its own, so
 * that the address given back is handed out again within a few orders.
 */
describe('PTR records of addresses given back', { skip: missingTool('pdns') || missingTool('dig') }, () => {
  let pdns: PowerDns;
  before(async () => {
    pdns = await startPowerDns();
  });
  after(() => pdns?.close());

  for (const [i, store] of testStores().entries()) {
    describe(`(${store})`, () => {
      let t: TestApp;
      let proxy: Awaited<ReturnType<typeof startApiProxy>>;
      before(async () => {
        proxy = await startApiProxy(pdns.apiUrl);
        t = await createTestApp(
          {
            VRP_SIM_IP_POOL: `10.95.${i}.0/29`,
            VRP_PDNS_API_URL: proxy.url,
            VRP_PDNS_API_KEY: pdns.apiKey,
            VRP_RDNS_DEFAULT: 'ip-{ip}.rdns.example.net',
            VRP_RDNS_NAMESERVERS: 'ns1.example.net,ns2.example.net',
            VRP_JOB_RETRY_BASE: '20ms',
            VRP_JOB_MAX_ATTEMPTS: '100',
          },
          { worker: true, store },
        );
      });
      after(async () => {
        await t?.close();
        await proxy?.close();
      });

      const ipsOf = async (token: string, id: string): Promise<string[]> =>
        (await call(t, token, 'GET', `service/${id}/details`, undefined, B)).body.data.ips;
      const rdnsOf = async (token: string, id: string) => {
        const res = await call(t, token, 'GET', `service/${id}/rdns`, undefined, B);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        return res.body.data;
      };
      const setPtr = async (token: string, id: string, ip: string, ptr: string) => {
        const res = await call(t, token, 'POST', `service/${id}/rdns`, { ip, ptr }, B);
        assert.equal(res.status, 200, JSON.stringify(res.body));
      };
      const upgrade = async (token: string, id: string, ip: number) => {
        const res = await call(t, token, 'POST', `service/${id}/upgrade`, {
          CPU: 1,
          RAM: 1,
          HDD: 20,
          IP: ip,
          BACKUP: 10,
        });
        assert.equal(res.status, 200, JSON.stringify(res.body));
      };
      const terminate = async (token: string, id: string) => {
        assert.equal((await call(t, token, 'POST', `service/${id}/terminate`, undefined, B)).status, 200);
        await waitForStatus(t, token, id, 'terminated');
      };
      const dig = async (ip: string, expected: string | null) =>
        assert.deepEqual(
          await pdns.digUntil(ip, expected),
          expected === null ? [] : [expected],
          `dig -x ${ip}`,
        );

      /** A running service of acme's with two addresses, the second's PTR set to `ptr`. */
      const twoAddresses = async (acme: string, domain: string, ptr: string) => {
        const order = await call(
          t,
          acme,
          'POST',
          'service/create-order',
          { ...smallOrder(domain), ip: 2 },
          B,
        );
        assert.equal(order.status, 200, JSON.stringify(order.body));
        const id: string = order.body.data[0].service_id;
        assert.equal((await call(t, acme, 'POST', `service/${id}/create`, undefined, B)).status, 200);
        await waitForStatus(t, acme, id, 'running');
        const [x1, x2] = await ipsOf(acme, id);
        assert.ok(x1 && x2);
        await dig(x2, defaultOf(x2));
        await setPtr(acme, id, x2, ptr);
        await dig(x2, ptr);
        return { id, x1, x2 };
      };

      test('the next holder of an address sees its own PTR, and the old holder’s terminate leaves it alone', async () => {
        const acme = await t.token({ reseller: 'acme' });
        const globex = await t.token({ reseller: 'globex' });
        const { id: a, x1, x2 } = await twoAddresses(acme, 'rel-a.example.com', 'evil.acme.example');

        await upgrade(acme, a, 1);
        await waitForStatus(t, acme, a, 'running');
        assert.deepEqual(await ipsOf(acme, a), [x1]);
        assert.deepEqual(await rdnsOf(acme, a), [{ ip: x1, ptr: defaultOf(x1) }]);
        await dig(x2, null);
        const rows = await t.ctx.store.db
          .selectFrom('service_ptrs')
          .select('address')
          .where('service_id', '=', a)
          .execute();
        assert.deepEqual(rows, [], 'the row went with the address');

        // globex orders until it is handed the address acme gave back.
        const others: string[] = [];
        let b: string | undefined;
        for (let n = 0; n < 8 && b === undefined; n++) {
          const id = await orderRunning(t, globex, `rel-b${n}.example.com`);
          if ((await ipsOf(globex, id)).includes(x2)) b = id;
          else others.push(id);
        }
        assert.ok(b, `globex was handed ${x2}`);
        await dig(x2, defaultOf(x2));
        assert.deepEqual(await rdnsOf(globex, b), [{ ip: x2, ptr: defaultOf(x2) }]);
        await setPtr(globex, b, x2, 'mine.globex.example');
        await dig(x2, 'mine.globex.example');

        // Room in the pool again; acme goes back to two addresses: the one it gains has its
        // default, as at a create.
        for (const id of others) await terminate(globex, id);
        await upgrade(acme, a, 2);
        await waitForStatus(t, acme, a, 'running');
        const [first, gained] = await ipsOf(acme, a);
        assert.equal(first, x1);
        assert.ok(gained && gained !== x2);
        assert.deepEqual(await rdnsOf(acme, a), [
          { ip: x1, ptr: defaultOf(x1) },
          { ip: gained, ptr: defaultOf(gained) },
        ]);
        await dig(gained, defaultOf(gained));

        // acme's terminate removes the records of the addresses it holds, and no other.
        await terminate(acme, a);
        await dig(x1, null);
        await dig(gained, null);
        await dig(x2, 'mine.globex.example');
        assert.deepEqual(await rdnsOf(globex, b), [{ ip: x2, ptr: 'mine.globex.example' }]);
      });

      test('an address is not given back while the DNS API fails to remove its record: the upgrade is retried', async () => {
        const acme = await t.token({ reseller: 'acme' });
        const { id, x1, x2 } = await twoAddresses(acme, 'rel-down.example.com', 'kept.acme.example');
        proxy.failing = true;
        try {
          await upgrade(acme, id, 1);
          await waitForPtrRetry(t.ctx.store.db, id, 'upgrade');
          const held = await t.ctx.store.db
            .selectFrom('ip_addresses')
            .select('vm_id')
            .where('address', '=', x2)
            .executeTakeFirstOrThrow();
          assert.equal(held.vm_id, id, 'still the service’s');
          assert.deepEqual(pdns.ptrOf(x2), ['kept.acme.example']);
        } finally {
          proxy.failing = false;
        }
        await waitForStatus(t, acme, id, 'running');
        assert.deepEqual(await rdnsOf(acme, id), [{ ip: x1, ptr: defaultOf(x1) }]);
        await dig(x2, null);
      });
    });
  }
});
