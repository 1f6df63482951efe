import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { API, createTestApp, type TestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

type Reply = { status: number; body: any; headers: Record<string, unknown> };

// Section 2.2 of the interface document.
const UNITS: Record<string, string> = { ram: 'GB', ip: 'IP', cpu: 'vCore', hdd: 'GB', backup: 'GB' };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const templateNames = new Map<string, string>(DEMO_CATALOG.os_templates.map((t) => [t.id, t.name]));

type CatalogProduct = (typeof DEMO_CATALOG.products)[number];

/** What the API must show for a catalogue product: bounds as numeric strings with units. */
function expectedProduct(p: CatalogProduct) {
  const config: Record<string, { min: string; max: string; unit: string }> = {};
  for (const key of Object.keys(UNITS)) {
    const bounds = (p.config as Record<string, { min: number | string; max: number | string }>)[key]!;
    config[key] = { min: String(bounds.min), max: String(bounds.max), unit: UNITS[key]! };
  }
  return {
    id: p.id,
    name: p.name,
    template: p.template,
    config,
    os_templates: p.os_templates.map((id) => ({ template_id: id, name: templateNames.get(id) })),
  };
}

function expectedPlans(p: CatalogProduct) {
  return p.plans.map((plan) => ({
    uuid: plan.id,
    name: plan.name,
    cpu: plan.cpu,
    ram: plan.ram,
    hdd: plan.hdd,
    price: plan.price,
  }));
}

for (const store of testStores()) {
  describe(`products scope: product list and plans (${store})`, () => {
    let t: TestApp;
    let token: string;
    let tokenA: string;
    let accessOnly: string;

    before(async () => {
      t = await createTestApp({}, { store });
      token = await t.token();
      tokenA = await t.token({ variant: 'A' });
      accessOnly = await t.token({ scopes: ['access'] });
    });
    after(() => t.close());

    async function request(
      method: 'GET' | 'POST',
      path: string,
      options: { token?: string; headers?: Record<string, string>; payload?: string } = {},
    ): Promise<Reply> {
      const res = await t.app.inject({
        method,
        url: `${API}/${path}`,
        headers: { authorization: `Bearer ${options.token ?? token}`, ...options.headers },
        payload: options.payload,
      });
      return { status: res.statusCode, body: res.json(), headers: res.headers };
    }

    test('the demo catalogue has products with plans to test against', () => {
      assert.ok(DEMO_CATALOG.products.length > 0);
      assert.ok(DEMO_CATALOG.products.some((p) => p.plans.length > 0));
    });

    test('GET /products lists the catalogue, in catalogue order, as section 2.2 shapes it', async () => {
      const res = await request('GET', 'products');
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.status, 'Success');
      assert.equal(res.body.message, '');
      assert.deepEqual(res.body.data, DEMO_CATALOG.products.map(expectedProduct));
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8');
      // Made once per catalogue: the next answer is the same, whole and in its envelope.
      const again = await request('GET', 'products');
      assert.deepEqual(again.body, res.body);
      assert.equal(again.headers['content-type'], 'application/json; charset=utf-8');
    });

    test('every product has the documented fields and types', async () => {
      const { body } = await request('GET', 'products');
      for (const p of body.data) {
        assert.deepEqual(Object.keys(p).sort(), ['config', 'id', 'name', 'os_templates', 'template']);
        assert.match(p.id, UUID);
        assert.equal(typeof p.name, 'string');
        assert.equal(typeof p.template, 'string');
        assert.deepEqual(Object.keys(p.config).sort(), ['backup', 'cpu', 'hdd', 'ip', 'ram']);
        for (const [key, bounds] of Object.entries(p.config) as [
          string,
          { min: string; max: string; unit: string },
        ][]) {
          assert.deepEqual(Object.keys(bounds).sort(), ['max', 'min', 'unit'], `${p.name} ${key}`);
          assert.match(bounds.min, /^\d+$/, `${p.name} ${key}.min is a numeric string`);
          assert.match(bounds.max, /^\d+$/, `${p.name} ${key}.max is a numeric string`);
          assert.ok(Number(bounds.min) <= Number(bounds.max), `${p.name} ${key}: min <= max`);
          assert.equal(bounds.unit, UNITS[key], `${p.name} ${key}.unit`);
        }
        assert.ok(Array.isArray(p.os_templates) && p.os_templates.length > 0);
        for (const os of p.os_templates) {
          assert.deepEqual(Object.keys(os).sort(), ['name', 'template_id']);
          assert.match(os.template_id, UUID);
          assert.equal(typeof os.name, 'string');
          assert.ok(os.name.length > 0);
        }
      }
    });

    test("POST /products (variant A's method) gives the same list", async () => {
      const get = await request('GET', 'products');
      for (const payload of [undefined, '', '{}']) {
        const post = await request('POST', 'products', {
          headers: { 'content-type': 'application/json' },
          payload,
        });
        assert.equal(post.status, 200, JSON.stringify(post.body));
        assert.deepEqual(post.body, get.body);
      }
    });

    test('variant A: data is a string holding the same JSON', async () => {
      const b = await request('GET', 'products');
      for (const method of ['GET', 'POST'] as const) {
        const a = await request(method, 'products', { token: tokenA });
        assert.equal(a.status, 200);
        assert.equal(a.body.success, 'true');
        assert.equal(typeof a.body.data, 'string');
        assert.deepEqual(JSON.parse(a.body.data), b.body.data);
      }
    });

    test('plans of every product: default_plans with integer cpu, ram, hdd and a number price', async () => {
      for (const product of DEMO_CATALOG.products) {
        const res = await request('GET', `product/${product.id}/plans`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.equal(res.body.status, 'Success');
        assert.deepEqual(Object.keys(res.body.data), ['default_plans']);
        assert.deepEqual(res.body.data.default_plans, expectedPlans(product), product.name);
        for (const plan of res.body.data.default_plans) {
          assert.deepEqual(Object.keys(plan).sort(), ['cpu', 'hdd', 'name', 'price', 'ram', 'uuid']);
          assert.match(plan.uuid, UUID);
          assert.equal(typeof plan.name, 'string');
          for (const key of ['cpu', 'ram', 'hdd'])
            assert.ok(Number.isInteger(plan[key]), `${plan.name}.${key}`);
          assert.equal(typeof plan.price, 'number');
          assert.ok(Number.isFinite(plan.price));
        }
      }
    });

    test('plans in variant A, and with the product id in upper case', async () => {
      const product = DEMO_CATALOG.products.find((p) => p.plans.length > 0)!;
      const a = await request('GET', `product/${product.id}/plans`, { token: tokenA });
      assert.equal(a.status, 200);
      assert.equal(a.body.success, 'true');
      assert.deepEqual(JSON.parse(a.body.data), { default_plans: expectedPlans(product) });

      const upper = await request('GET', `product/${product.id.toUpperCase()}/plans`);
      assert.equal(upper.status, 200, JSON.stringify(upper.body));
      assert.deepEqual(upper.body.data, { default_plans: expectedPlans(product) });
    });

    test('an unknown product or an id that is not a UUID is 404 product_not_found', async () => {
      for (const id of [
        '00000000-0000-4000-8000-000000000000',
        'abc',
        '1',
        `${DEMO_CATALOG.products[0]!.id}0`,
      ]) {
        const res = await request('GET', `product/${id}/plans`);
        assert.equal(res.status, 404, `${id}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.status, 'Error');
        assert.deepEqual(res.body.data, []);
        assert.equal(res.body.error_code, 'product_not_found');
      }
      const a = await request('GET', 'product/00000000-0000-4000-8000-000000000000/plans', { token: tokenA });
      assert.equal(a.status, 404);
      assert.equal(a.body.success, 'false');
      assert.equal(a.body.data, '[]');
      assert.equal(a.body.error_code, 'product_not_found');
    });

    test('the products scope is needed: an access-only token gets 403 insufficient_scope', async () => {
      const product = DEMO_CATALOG.products[0]!;
      for (const [method, path] of [
        ['GET', 'products'],
        ['POST', 'products'],
        ['GET', `product/${product.id}/plans`],
      ] as const) {
        const res = await request(method, path, { token: accessOnly });
        assert.equal(res.status, 403, `${method} ${path}`);
        assert.equal(res.body.error_code, 'insufficient_scope');
        assert.match(String(res.headers['www-authenticate']), /scope="products"/);
      }
    });

    test('no token is 401 invalid_token', async () => {
      const res = await t.app.inject({ method: 'GET', url: `${API}/products` });
      assert.equal(res.statusCode, 401);
      assert.equal(res.json().error_code, 'invalid_token');
    });
  });
}

describe('products: an empty catalogue', () => {
  test('lists [] and knows no product', async (ctx) => {
    const t = await createTestApp({}, { demo: false });
    ctx.after(() => t.close());
    const token = await t.token();
    const list = await t.app.inject({
      method: 'GET',
      url: `${API}/products`,
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(list.statusCode, 200);
    assert.deepEqual(list.json().data, []);
    const plans = await t.app.inject({
      method: 'GET',
      url: `${API}/product/${DEMO_CATALOG.products[0]?.id ?? '00000000-0000-4000-8000-000000000000'}/plans`,
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(plans.statusCode, 404);
    assert.equal(plans.json().error_code, 'product_not_found');
  });
});
