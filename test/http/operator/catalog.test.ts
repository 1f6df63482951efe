import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parseCatalogFile } from '../../../src/domain/catalog-file.ts';
import { exportCatalog, importCatalog } from '../../../src/store/catalog-import.ts';
import { listAuditEntries } from '../../../src/store/repos/audit.ts';
import { call, createTestApp, type TestApp } from '../../helpers/app.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { createTestOperator, operatorToken, opsCall } from '../../helpers/operator.ts';
import { testStores } from '../../helpers/stores.ts';

const B = { 'x-envelope-variant': 'B' };
const STARTER = '3b0d6a8e-5f4c-4e2a-8b1d-7c9e2f1a0b01';
const DEBIAN = '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a01';
const UBUNTU = '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a02';

const config = (cpuMax = 4) => ({
  ram: { min: 1, max: 8 },
  ip: { min: 1, max: 4 },
  cpu: { min: 1, max: cpuMax },
  hdd: { min: 20, max: 160 },
  backup: { min: 0, max: 100 },
});

for (const store of testStores()) {
  describe(`operator API: catalogue (${store})`, () => {
    let t: TestApp;
    let ops: string;
    let support: string;
    let billing: string;
    let acme: string;

    before(async () => {
      t = await createTestApp({}, { store });
      ops = await operatorToken(t);
      support = await operatorToken(t, await createTestOperator(t, { role: 'support' }));
      billing = await operatorToken(t, await createTestOperator(t, { role: 'billing' }));
      acme = await t.token({ reseller: 'acme' });
    });
    after(() => t.close());

    const exported = () => exportCatalog(t.ctx.store.db);
    const offered = async () =>
      ((await call(t, acme, 'GET', 'products', undefined, B)).body.data as any[]).map((p) => p.id);
    const order = (body: Record<string, unknown>) => call(t, acme, 'POST', 'service/create-order', body, B);
    async function ordered(body: Record<string, unknown>): Promise<string> {
      const res = await order(body);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.data[0].service_id;
    }

    test('lists products with their plans and templates with their use, retired ones marked', async () => {
      const products = await opsCall(t, ops, 'GET', 'products');
      assert.equal(products.status, 200, JSON.stringify(products.body));
      const starter = products.body.data.find((p: any) => p.id === STARTER);
      assert.equal(starter.name, 'VPS Starter');
      assert.deepEqual(starter.config.cpu, { min: 1, max: 4 });
      assert.equal(starter.retired, false);
      assert.ok(starter.plans.length > 0 && starter.plans.every((p: any) => p.product_id === STARTER));
      const templates = await opsCall(t, support, 'GET', 'os-templates');
      assert.equal(templates.status, 200);
      const debian = templates.body.data.find((x: any) => x.id === DEBIAN);
      assert.ok(debian.products.includes(STARTER));
      assert.equal(debian.retired, false);
      assert.equal((await opsCall(t, billing, 'GET', 'products')).status, 200);
    });

    test('creates a template, a product with plans and a plan; resellers can order it; export round-trips', async () => {
      const tpl = await opsCall(t, ops, 'POST', 'os-templates', { name: 'FreeBSD 14', image: null });
      assert.equal(tpl.status, 200, JSON.stringify(tpl.body));
      assert.match(tpl.body.data.id, /^[0-9a-f-]{36}$/);
      const created = await opsCall(t, ops, 'POST', 'products', {
        name: ' Tiny VPS ',
        template: 'kvm',
        config: { ...config(), hdd: { min: '10', max: '40', unit: 'GB' } },
        os_templates: [tpl.body.data.id, DEBIAN],
        plans: [{ name: 'Tiny S', cpu: 1, ram: 1, hdd: 10, price: 2.5 }],
        traffic_gb: 500,
        traffic_over: 'suspend',
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const p = created.body.data;
      assert.equal(p.name, 'Tiny VPS');
      assert.deepEqual(p.config.hdd, { min: 10, max: 40 });
      assert.deepEqual(p.os_templates, [tpl.body.data.id, DEBIAN]);
      assert.equal(p.plans.length, 1);
      assert.equal(p.traffic_over, 'suspend');
      const plan = await opsCall(t, ops, 'POST', `products/${p.id}/plans`, {
        name: 'Tiny M',
        cpu: 2,
        ram: 2,
        hdd: 40,
        price: 5,
      });
      assert.equal(plan.status, 200, JSON.stringify(plan.body));
      assert.equal(plan.body.data.product_id, p.id);

      // The reseller API sees it at once (this process drops its cached catalogue).
      assert.ok((await offered()).includes(p.id));
      const plans = await call(t, acme, 'GET', `product/${p.id}/plans`, undefined, B);
      assert.deepEqual(
        plans.body.data.default_plans.map((x: any) => x.name),
        ['Tiny S', 'Tiny M'],
      );
      await ordered({ ...smallOrder('tiny.example.com'), product_id: p.id, hdd: 10, backup: 0 });

      const file = await exported();
      const mine = file.products.find((x) => x.id === p.id);
      assert.equal(mine?.plans.length, 2);
      await importCatalog(t.ctx.store.db, parseCatalogFile(JSON.parse(JSON.stringify(file))), Date.now());
      assert.deepEqual(await exported(), file);
    });

    test('bad bodies: 400 validation_failed naming the problem, nothing changed', async () => {
      const before = await exported();
      const good = { name: 'Bad', template: 'kvm', config: config(), os_templates: [DEBIAN] };
      const cases: [string, string, Record<string, unknown>, RegExp][] = [
        ['POST', 'products', { ...good, colour: 'red' }, /colour/],
        [
          'POST',
          'products',
          { ...good, config: { ...config(), cpu: { min: 4, max: 2 } } },
          /config\.cpu\.max must be >= min/,
        ],
        [
          'POST',
          'products',
          { ...good, os_templates: ['6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7aff'] },
          /os_templates\[0\] names no template/,
        ],
        [
          'POST',
          'products',
          { ...good, plans: [{ name: 'X', cpu: 9, ram: 1, hdd: 20, price: 1 }] },
          /plans\[0\]\.cpu must lie within/,
        ],
        ['POST', 'products', { ...good, plans: 'none' }, /plans must be (an )?array/],
        ['POST', 'products', { ...good, id: STARTER }, /id repeats/],
        ['POST', 'products', { ...good, traffic_gb: 10 }, /traffic_over/],
        ['POST', 'products', { ...good, retired: 'yes' }, /retired must be (true or false|boolean)/],
        ['POST', 'products', { ...good, name: '' }, /name must be a non-empty string/],
        [
          'PATCH',
          `products/${STARTER}`,
          { config: { cpu: { min: 1, max: 4 } } },
          /config\.ram must be an object/,
        ],
        ['PATCH', `products/${STARTER}`, { plans: [] }, /plans/],
        [
          'POST',
          `products/${STARTER}/plans`,
          { name: 'Huge', cpu: 64, ram: 1, hdd: 20, price: 1 },
          /cpu must lie within the product's cpu bounds 1\.\.4/,
        ],
        [
          'POST',
          `products/${STARTER}/plans`,
          { name: 'Free', cpu: 1, ram: 1, hdd: 20, price: -1 },
          /price must be a number >= 0/,
        ],
        ['POST', 'os-templates', { name: 'x', image: 7 }, /image must be (a non-empty )?string/],
        ['POST', 'os-templates', { name: 'x', flavour: 'y' }, /flavour/],
        ['POST', 'os-templates', { id: 'not-a-uuid', name: 'x' }, /id must be a UUID/],
      ];
      for (const [method, path, body, message] of cases) {
        const res = await opsCall(t, ops, method as 'POST', path, body);
        const what = `${method} ${path} ${JSON.stringify(body)}: ${JSON.stringify(res.body)}`;
        assert.equal(res.status, 400, what);
        assert.equal(res.body.error_code, 'validation_failed', what);
        assert.match(res.body.message, message, what);
      }
      assert.deepEqual(await exported(), before);
    });

    test('unknown ids: 404 with the kind named', async () => {
      const none = '00000000-0000-4000-8000-000000000000';
      for (const [method, path, code] of [
        ['PATCH', `products/${none}`, 'product_not_found'],
        ['POST', `products/${none}/retire`, 'product_not_found'],
        ['POST', `products/nope/delete`, 'product_not_found'],
        ['POST', `products/${none}/plans`, 'product_not_found'],
        ['PATCH', `plans/${none}`, 'plan_not_found'],
        ['POST', `plans/${none}/delete`, 'plan_not_found'],
        ['PATCH', `os-templates/${none}`, 'template_not_found'],
        ['POST', `os-templates/${none}/unretire`, 'template_not_found'],
      ] as const) {
        const res = await opsCall(t, ops, method, path, method === 'PATCH' ? { name: 'x' } : undefined);
        assert.equal(res.status, 404, `${path}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error_code, code);
      }
    });

    test('a retired product is neither listed nor orderable, and its services keep working; un-retired it is back', async () => {
      const service = await ordered(smallOrder('keeps.example.com'));
      const retired = await opsCall(t, ops, 'POST', `products/${STARTER}/retire`);
      assert.equal(retired.status, 200, JSON.stringify(retired.body));
      assert.equal(retired.body.data.retired, true);
      assert.ok(!(await offered()).includes(STARTER));
      const refused = await order(smallOrder('new.example.com'));
      assert.equal(refused.status, 404);
      assert.equal(refused.body.error_code, 'product_not_found');
      const plans = await call(t, acme, 'GET', `product/${STARTER}/plans`, undefined, B);
      assert.equal(plans.body.error_code, 'product_not_found');
      const status = await call(t, acme, 'GET', `service/${service}/status`, undefined, B);
      assert.equal(status.status, 200);
      assert.equal(status.body.data.status, 'pending');
      const details = await call(t, acme, 'GET', `service/${service}/details`, undefined, B);
      assert.equal(details.status, 200, JSON.stringify(details.body));
      const listed = await opsCall(t, ops, 'GET', 'products');
      assert.equal(listed.body.data.find((p: any) => p.id === STARTER).retired, true);
      assert.equal((await exported()).products.find((p) => p.id === STARTER)?.retired, true);

      const back = await opsCall(t, ops, 'POST', `products/${STARTER}/unretire`);
      assert.equal(back.body.data.retired, false);
      assert.ok((await offered()).includes(STARTER));
      assert.equal((await exported()).products.find((p) => p.id === STARTER)?.retired, undefined);
    });

    test('a retired template or plan is no longer offered; services on the template keep it', async () => {
      const service = await ordered({ ...smallOrder('ubuntu.example.com'), template_id: UBUNTU });
      assert.equal((await opsCall(t, ops, 'POST', `os-templates/${UBUNTU}/retire`)).status, 200);
      const product = (await call(t, acme, 'GET', 'products', undefined, B)).body.data.find(
        (p: any) => p.id === STARTER,
      );
      assert.ok(!product.os_templates.some((x: any) => x.template_id === UBUNTU));
      const refused = await order({ ...smallOrder('ubuntu2.example.com'), template_id: UBUNTU });
      assert.equal(refused.status, 400);
      assert.equal(refused.body.error_code, 'invalid_template');
      assert.equal((await call(t, acme, 'GET', `service/${service}/details`, undefined, B)).status, 200);
      assert.equal((await opsCall(t, ops, 'POST', `os-templates/${UBUNTU}/unretire`)).status, 200);
      assert.equal((await order({ ...smallOrder('ubuntu3.example.com'), template_id: UBUNTU })).status, 200);

      const plan = (await opsCall(t, ops, 'GET', 'products')).body.data.find((p: any) => p.id === STARTER)
        .plans[0];
      const res = await opsCall(t, ops, 'POST', `plans/${plan.id}/retire`);
      assert.equal(res.body.data.retired, true);
      const plans = await call(t, acme, 'GET', `product/${STARTER}/plans`, undefined, B);
      assert.ok(!plans.body.data.default_plans.some((x: any) => x.uuid === plan.id));
      assert.equal((await opsCall(t, ops, 'POST', `plans/${plan.id}/unretire`)).body.data.retired, false);
      const renamed = await opsCall(t, ops, 'PATCH', `plans/${plan.id}`, { price: 3.25 });
      assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
      assert.equal(renamed.body.data.price, 3.25);
    });

    test('a change that would make a service invalid is 409 invalidates_services, nothing changed', async () => {
      const product = await opsCall(t, ops, 'POST', 'products', {
        name: 'Shrinkable',
        template: 'kvm',
        config: config(8),
        os_templates: [DEBIAN, UBUNTU],
      });
      const id = product.body.data.id;
      await ordered({ ...smallOrder('big.example.com'), product_id: id, cpu: 6, template_id: UBUNTU });
      const before = await exported();
      for (const body of [
        { config: config(4) },
        { config: { ...config(8), ram: { min: 2, max: 8 } } },
        { os_templates: [DEBIAN] },
      ]) {
        const res = await opsCall(t, ops, 'PATCH', `products/${id}`, body);
        assert.equal(res.status, 409, JSON.stringify(res.body));
        assert.equal(res.body.error_code, 'invalidates_services');
        assert.match(res.body.message, /big\.example\.com/);
      }
      assert.deepEqual(await exported(), before);
      // Within what the service has, the same kind of change is taken.
      const ok = await opsCall(t, ops, 'PATCH', `products/${id}`, { config: config(6), name: 'Shrunk' });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal(ok.body.data.services, 1);
    });

    test('removal: only of what nothing uses; in use is 409, retire instead', async () => {
      const inUse = await opsCall(t, ops, 'POST', `products/${STARTER}/delete`);
      assert.equal(inUse.status, 409);
      assert.equal(inUse.body.error_code, 'product_in_use');
      const offeredTpl = await opsCall(t, ops, 'POST', `os-templates/${DEBIAN}/delete`);
      assert.equal(offeredTpl.status, 409);
      assert.equal(offeredTpl.body.error_code, 'template_in_use');

      const tpl = (await opsCall(t, ops, 'POST', 'os-templates', { name: 'Spare' })).body.data.id;
      const product = await opsCall(t, ops, 'POST', 'products', {
        name: 'Unused',
        template: 'kvm',
        config: config(),
        os_templates: [tpl],
        plans: [{ name: 'U', cpu: 1, ram: 1, hdd: 20, price: 1 }],
      });
      const { id, plans } = product.body.data;
      assert.equal(
        (await opsCall(t, ops, 'POST', `os-templates/${tpl}/delete`)).body.error_code,
        'template_in_use',
      );
      const planGone = await opsCall(t, ops, 'POST', `plans/${plans[0].id}/delete`);
      assert.equal(planGone.status, 200);
      assert.equal(planGone.body.message, 'Plan removed');
      const gone = await opsCall(t, ops, 'POST', `products/${id}/delete`);
      assert.equal(gone.status, 200, JSON.stringify(gone.body));
      assert.equal((await opsCall(t, ops, 'POST', `os-templates/${tpl}/delete`)).status, 200);
      const file = await exported();
      assert.ok(!file.products.some((p) => p.id === id));
      assert.ok(!file.os_templates.some((x) => x.id === tpl));
    });

    test('roles: support and billing may list but change nothing (403 insufficient_role)', async () => {
      const before = await exported();
      for (const token of [support, billing]) {
        for (const [method, path, body] of [
          ['POST', 'os-templates', { name: 'Sneaky' }],
          ['PATCH', `products/${STARTER}`, { name: 'Sneaky' }],
          ['POST', `products/${STARTER}/retire`, undefined],
          ['POST', `os-templates/${DEBIAN}/delete`, undefined],
        ] as const) {
          const res = await opsCall(t, token, method, path, body);
          assert.equal(res.status, 403, `${path}: ${JSON.stringify(res.body)}`);
          assert.equal(res.body.error_code, 'insufficient_role');
        }
      }
      assert.deepEqual(await exported(), before);
    });

    test('every change is audited with its target', async () => {
      const entries = await listAuditEntries(t.ctx.store.db, { limit: 1000 });
      const actions = new Set(entries.filter((e) => e.outcome === 'ok').map((e) => e.action));
      for (const action of [
        'os_template.create',
        'product.create',
        'plan.create',
        'product.retire',
        'product.unretire',
        'os_template.retire',
        'plan.retire',
        'plan.update',
        'product.update',
        'plan.delete',
        'product.delete',
        'os_template.delete',
      ]) {
        assert.ok(actions.has(action), action);
      }
      const retire = entries.find((e) => e.action === 'product.retire' && e.outcome === 'ok');
      assert.deepEqual(retire?.target, { type: 'product', id: STARTER });
      const refused = entries.find((e) => e.action === 'product.delete' && e.outcome === 'product_in_use');
      assert.ok(refused, 'a refusal is recorded with its code');
    });
  });
}
