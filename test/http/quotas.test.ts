import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { cliAudit } from '../../src/cli/audit.ts';
import { type Quota, UNLIMITED } from '../../src/domain/quotas.ts';
import { setQuota } from '../../src/store/repos/quotas.ts';
import { findResellerByName } from '../../src/store/repos/resellers.ts';
import { API, call, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { testStores } from '../helpers/stores.ts';

const TEST_AUDIT = cliAudit('reseller.quota');

const RESOURCES = ['services', 'cpu', 'ram', 'hdd', 'ip', 'backup'] as const;
const UNITS = { services: 'services', cpu: 'vCore', ram: 'GB', hdd: 'GB', ip: 'IP', backup: 'GB' };
/** smallOrder's amounts, as the use of one such service. */
const ONE = { services: 1, cpu: 1, ram: 1, hdd: 20, ip: 1, backup: 10 };
let seq = 0;
const amount = (r: keyof typeof UNITS, n: number) =>
  r === 'services' && n === 1 ? '1 service' : `${n} ${UNITS[r]}`;

for (const store of testStores()) {
  describe(`reseller quotas (${store})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({}, { worker: true, store });
    });
    after(() => t.close());

    /** A reseller of the test's own, with a token, and a way to set its quota (the CLI's and operator API's function). */
    async function reseller(options: { variant?: 'A' | 'B' } = {}) {
      const name = `quota-${store}-${++seq}`;
      const token = await t.token({ reseller: name, variant: options.variant });
      const { id } = (await findResellerByName(t.ctx.store.db, name))!;
      return {
        name,
        id,
        token,
        caps: (caps: Partial<Quota>) =>
          setQuota(t.ctx.store.db, id, { ...UNLIMITED, ...caps }, Date.now(), TEST_AUDIT),
        order: (overrides: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
          call(
            t,
            token,
            'POST',
            'service/create-order',
            { ...smallOrder(`q${seq}.example.com`), ...overrides },
            headers,
          ),
        usage: async () => {
          const res = await call(t, token, 'GET', 'usage', undefined, { 'x-envelope-variant': 'B' });
          assert.equal(res.status, 200, JSON.stringify(res.body));
          return res.body.data as { quota: Record<string, number | null>; use: Record<string, number> };
        },
      };
    }

    async function running(r: Awaited<ReturnType<typeof reseller>>): Promise<string> {
      const res = await r.order();
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const id = res.body.data[0].service_id;
      assert.equal((await call(t, r.token, 'POST', `service/${id}/create`)).status, 200);
      await waitForStatus(t, r.token, id, 'running');
      return id;
    }

    test('without a quota, orders are unlimited; GET usage shows null caps and the use', async () => {
      const r = await reseller();
      assert.deepEqual(await r.usage(), {
        quota: { services: null, cpu: null, ram: null, hdd: null, ip: null, backup: null },
        use: { services: 0, cpu: 0, ram: 0, hdd: 0, ip: 0, backup: 0 },
      });
      for (let i = 0; i < 3; i++) assert.equal((await r.order({ cpu: 4, ram: 8, hdd: 160 })).status, 200);
      assert.deepEqual((await r.usage()).use, { services: 3, cpu: 12, ram: 24, hdd: 480, ip: 3, backup: 30 });
    });

    test('GET usage in variant A: the payload is the JSON text in data', async () => {
      const r = await reseller({ variant: 'A' });
      await r.caps({ services: 4, ram: 16 });
      const res = await call(t, r.token, 'GET', 'usage');
      assert.equal(res.status, 200);
      assert.equal(res.body.success, 'true');
      assert.deepEqual(JSON.parse(res.body.data).quota, {
        services: 4,
        cpu: null,
        ram: 16,
        hdd: null,
        ip: null,
        backup: null,
      });
    });

    for (const resource of RESOURCES) {
      test(`an order over the ${resource} quota: 400 quota_exceeded naming resource, quota and use; nothing is written`, async () => {
        const r = await reseller();
        // Room for exactly one small service in this resource; the others unlimited.
        const cap = ONE[resource];
        await r.caps({ [resource]: cap });
        assert.equal((await r.order()).status, 200, 'the first order fits');
        const refused = await r.order();
        assert.equal(refused.status, 400, JSON.stringify(refused.body));
        assert.equal(refused.body.status, 'Error');
        assert.equal(refused.body.error_code, 'quota_exceeded');
        const n = amount(resource, ONE[resource]);
        assert.equal(
          refused.body.message,
          `Quota exceeded for ${resource}: the quota is ${n}, ${n} in use, and this order needs ${n} more`,
        );
        assert.deepEqual((await r.usage()).use, ONE, 'the refused order left nothing behind');
        assert.equal((await r.usage()).quota[resource], cap);
      });
    }

    test('an order that reaches the cap exactly fits; one that adds nothing to a capped resource is not refused by it', async () => {
      const r = await reseller();
      await r.caps({ ram: 3, backup: 10 });
      assert.equal((await r.order({ ram: 2 })).status, 200);
      assert.equal(
        (await r.order({ ram: 1, backup: 0 })).status,
        400,
        'backup 0 is below the product minimum',
      );
      assert.equal((await r.order({ ram: 1 })).status, 400, 'backup 20 > 10');
      await r.caps({ ram: 3 });
      assert.equal((await r.order({ ram: 1 })).status, 200, 'ram 3 of 3');
      assert.equal((await r.order({ ram: 1 })).body.error_code, 'quota_exceeded');
    });

    test('variant A gets quota_exceeded in its envelope', async () => {
      const r = await reseller({ variant: 'A' });
      await r.caps({ services: 0 });
      const res = await r.order();
      assert.equal(res.status, 400);
      assert.equal(res.body.success, 'false');
      assert.equal(res.body.error_code, 'quota_exceeded');
      assert.equal(res.body.data, '[]');
    });

    test('an idempotent order over the quota records no key: once the quota is raised, the same key places it', async () => {
      const r = await reseller();
      await r.caps({ services: 0 });
      const key = { 'idempotency-key': `k-${seq}` };
      assert.equal((await r.order({}, key)).body.error_code, 'quota_exceeded');
      assert.equal(
        (await r.order({}, key)).body.error_code,
        'quota_exceeded',
        'the refusal is not replayed as success',
      );
      await r.caps({ services: 1 });
      const placed = await r.order({}, key);
      assert.equal(placed.status, 200, JSON.stringify(placed.body));
      const replayed = await r.order({}, key);
      assert.equal(replayed.headers['idempotent-replayed'], 'true');
      assert.deepEqual(replayed.body.data, placed.body.data);
      assert.equal((await r.usage()).use.services, 1);
    });

    test('the quota can be lifted: with no caps left, orders are unlimited again', async () => {
      const r = await reseller();
      await r.caps({ services: 0 });
      assert.equal((await r.order()).status, 400);
      await r.caps({});
      assert.equal((await r.order()).status, 200);
      assert.deepEqual((await r.usage()).quota, UNLIMITED);
    });

    const UPGRADE = { cpu: 'CPU', ram: 'RAM', hdd: 'HDD', ip: 'IP', backup: 'BACKUP' } as const;
    const upgradeBody = (a: typeof ONE) => ({
      CPU: a.cpu,
      RAM: a.ram,
      HDD: a.hdd,
      IP: a.ip,
      BACKUP: a.backup,
    });

    for (const resource of ['cpu', 'ram', 'hdd', 'ip', 'backup'] as const) {
      test(`an upgrade over the ${resource} quota: 400 quota_exceeded; within it, accepted and counted`, async () => {
        const r = await reseller();
        const id = await running(r);
        await r.caps({ [resource]: ONE[resource] + 1 });
        const over = await call(t, r.token, 'POST', `service/${id}/upgrade`, {
          ...upgradeBody(ONE),
          [UPGRADE[resource]]: ONE[resource] + 2,
        });
        assert.equal(over.status, 400, JSON.stringify(over.body));
        assert.equal(over.body.error_code, 'quota_exceeded');
        assert.match(
          over.body.message,
          new RegExp(
            `^Quota exceeded for ${resource}: the quota is ${ONE[resource] + 1} ${UNITS[resource]}, ` +
              `${ONE[resource]} ${UNITS[resource]} in use, and this upgrade needs 2 ${UNITS[resource]} more$`,
          ),
        );
        assert.equal(
          (await call(t, r.token, 'GET', `service/${id}/jobs`)).body.data.length,
          1,
          'no job queued',
        );
        const within = await call(t, r.token, 'POST', `service/${id}/upgrade`, {
          ...upgradeBody(ONE),
          [UPGRADE[resource]]: ONE[resource] + 1,
        });
        assert.equal(within.status, 200, JSON.stringify(within.body));
        await waitForStatus(t, r.token, id, 'running');
        assert.equal((await r.usage()).use[resource], ONE[resource] + 1);
      });
    }

    test('an upgrade adds no service, and growing nothing passes a cap the reseller is already over', async () => {
      const r = await reseller();
      const id = await running(r);
      await r.caps({ services: 1, ram: 0 });
      const res = await call(t, r.token, 'POST', `service/${id}/upgrade`, upgradeBody({ ...ONE, cpu: 2 }));
      assert.equal(res.status, 200, JSON.stringify(res.body));
      await waitForStatus(t, r.token, id, 'running');
      assert.equal((await r.usage()).use.cpu, 2);
    });

    test('terminated services free their quota; failed and pending ones hold it', async () => {
      const r = await reseller();
      await r.caps({ services: 1 });
      const first = (await r.order()).body.data[0].service_id;
      assert.equal((await r.order()).body.error_code, 'quota_exceeded');
      assert.equal((await call(t, r.token, 'POST', `service/${first}/terminate`)).status, 200);
      await waitForStatus(t, r.token, first, 'terminated');
      assert.equal((await r.order()).status, 200);
      assert.deepEqual((await r.usage()).use, ONE);
    });

    test('20 concurrent orders against a quota of 5 services create exactly 5 (inject)', async () => {
      const r = await reseller();
      await r.caps({ services: 5 });
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          r.order({ domain_name: `c${i}.example.com` }, i % 2 ? { 'idempotency-key': `c-${seq}-${i}` } : {}),
        ),
      );
      assert.equal(results.filter((x) => x.status === 200).length, 5);
      const refused = results.filter((x) => x.status !== 200);
      assert.equal(refused.length, 15);
      for (const x of refused) assert.equal(x.body.error_code, 'quota_exceeded');
      assert.equal((await r.usage()).use.services, 5);
      const stored = await t.ctx.store.db
        .selectFrom('services')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('reseller_id', '=', r.id)
        .executeTakeFirstOrThrow();
      assert.equal(Number(stored.n), 5);
    });

    test('20 concurrent orders over real HTTP against a quota of 5 services create exactly 5', async () => {
      const r = await reseller();
      await r.caps({ services: 5, ram: 100 });
      const address = await t.app.listen({ host: '127.0.0.1', port: 0 });
      const statuses = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const res = await fetch(`${address}${API}/service/create-order`, {
            method: 'POST',
            headers: { authorization: `Bearer ${r.token}`, 'content-type': 'application/json' },
            body: JSON.stringify(smallOrder(`h${i}.example.com`)),
          });
          const body = (await res.json()) as { error_code?: string };
          return res.status === 200 ? 'placed' : body.error_code;
        }),
      );
      assert.equal(statuses.filter((s) => s === 'placed').length, 5);
      assert.equal(statuses.filter((s) => s === 'quota_exceeded').length, 15);
      assert.equal((await r.usage()).use.services, 5);
    });

    test("GET usage shows only the caller's reseller: quota and use of others never", async () => {
      const a = await reseller();
      const b = await reseller();
      await a.caps({ services: 7, cpu: 9 });
      await a.order();
      await a.order();
      assert.deepEqual(await b.usage(), {
        quota: UNLIMITED,
        use: { services: 0, cpu: 0, ram: 0, hdd: 0, ip: 0, backup: 0 },
      });
      assert.equal((await a.usage()).use.services, 2);
      await b.caps({ services: 1 });
      assert.equal((await b.order()).status, 200, "a's services do not count against b's quota");
      assert.equal((await a.usage()).quota.services, 7);
    });

    test('GET usage needs the service scope and a token', async () => {
      const token = await t.token({ reseller: `quota-${store}-scope`, scopes: ['access', 'products'] });
      const res = await call(t, token, 'GET', 'usage');
      assert.equal(res.status, 403);
      assert.equal(res.body.error_code, 'insufficient_scope');
      const anonymous = await t.app.inject({ method: 'GET', url: `${API}/usage` });
      assert.equal(anonymous.statusCode, 401);
    });
  });

  test(`an upgrade still waiting counts at its new size (${store})`, async () => {
    const t = await createTestApp({}, { worker: true, store });
    try {
      const token = await t.token({ reseller: 'waiting' });
      const { id: resellerId } = (await findResellerByName(t.ctx.store.db, 'waiting'))!;
      const order = await call(t, token, 'POST', 'service/create-order', smallOrder('w.example.com'));
      const id = order.body.data[0].service_id;
      await call(t, token, 'POST', `service/${id}/create`);
      await waitForStatus(t, token, id, 'running');
      // No worker from here on: the upgrade stays queued.
      await t.background?.stop(1000);
      await setQuota(t.ctx.store.db, resellerId, { ...UNLIMITED, cpu: 4, ram: 4 }, Date.now(), TEST_AUDIT);
      const up = await call(t, token, 'POST', `service/${id}/upgrade`, {
        CPU: 3,
        RAM: 1,
        HDD: 20,
        IP: 1,
        BACKUP: 10,
      });
      assert.equal(up.status, 200, JSON.stringify(up.body));
      const usage = await call(t, token, 'GET', 'usage');
      assert.equal(usage.body.data.use.cpu, 3, 'the waiting upgrade counts at its new size');
      const over = await call(t, token, 'POST', 'service/create-order', {
        ...smallOrder('x.example.com'),
        cpu: 2,
      });
      assert.equal(over.body.error_code, 'quota_exceeded');
      assert.match(over.body.message, /the quota is 4 vCore, 3 vCore in use/);
      // A second upgrade of the same service counts from the waiting size, not from the current one.
      const again = await call(t, token, 'POST', `service/${id}/upgrade`, {
        CPU: 4,
        RAM: 1,
        HDD: 20,
        IP: 1,
        BACKUP: 10,
      });
      assert.equal(again.status, 200, JSON.stringify(again.body));
      assert.equal((await call(t, token, 'GET', 'usage')).body.data.use.cpu, 4);
      const more = await call(t, token, 'POST', 'service/create-order', {
        ...smallOrder('y.example.com'),
        cpu: 1,
      });
      assert.equal(more.body.error_code, 'quota_exceeded');
      // A waiting downgrade frees nothing until it has succeeded.
      const down = await call(t, token, 'POST', `service/${id}/upgrade`, {
        CPU: 1,
        RAM: 1,
        HDD: 20,
        IP: 1,
        BACKUP: 10,
      });
      assert.equal(down.status, 200);
      assert.equal((await call(t, token, 'GET', 'usage')).body.data.use.cpu, 4);
    } finally {
      await t.close();
    }
  });
}
