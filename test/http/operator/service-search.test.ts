import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createMonotonicUuidv7 } from '../../../src/domain/ids.ts';
import { encodeCursor } from '../../../src/http/operator/paging.ts';
import { DEMO_CATALOG } from '../../../src/store/demo-catalog.ts';
import { findResellerByName } from '../../../src/store/repos/resellers.ts';
import { SERVICE_SORTS } from '../../../src/store/repos/service-list.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../../helpers/app.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { operatorToken, opsCall } from '../../helpers/operator.ts';
import { plainServiceRow } from '../../helpers/service-rows.ts';
import { testStores } from '../../helpers/stores.ts';

const MISSING = '00000000-0000-7000-8000-000000000000';
const B = { 'x-envelope-variant': 'B' };
const BUSINESS = DEMO_CATALOG.products[1]!;

/** Byte order, as the list sorts domain names and statuses (not the locale's). */
const bytes = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

for (const store of testStores()) {
  describe(`operator API: services search, filters, orders and totals (${store})`, () => {
    let t: TestApp;
    let ops: string;

    before(async () => {
      t = await createTestApp({}, { store, worker: true });
      ops = await operatorToken(t);
    });
    after(() => t.close());

    /** A reseller of the test's own, so each test counts only its services. */
    async function reseller(name: string): Promise<{ token: string; id: string }> {
      const token = await t.token({ reseller: name });
      return { token, id: (await findResellerByName(t.ctx.store.db, name))!.id };
    }

    async function order(token: string, domain: string, body: object = smallOrder(domain)): Promise<string> {
      const res = await call(t, token, 'POST', 'service/create-order', { ...body, domain_name: domain }, B);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.data[0].service_id;
    }

    async function list(query: string): Promise<any> {
      const res = await opsCall(t, ops, 'GET', `services?${query}`);
      assert.equal(res.status, 200, `${query}: ${JSON.stringify(res.body)}`);
      return res.body.data;
    }

    const domains = async (query: string) => (await list(query)).items.map((s: any) => s.domain_name).sort();

    test('q finds domains holding it, or starting with it; shorter than 3 characters, starting with it', async () => {
      const r = await reseller('searcher');
      const only = `reseller_id=${r.id}&limit=1000`;
      for (const d of [
        'web1.shop.example.com',
        'web2.shop.example.com',
        'mail.shop.example.org',
        'db.internal.example.net',
        'ab.example.com',
      ])
        await order(r.token, d);

      assert.deepEqual(await domains(`${only}&q=shop`), [
        'mail.shop.example.org',
        'web1.shop.example.com',
        'web2.shop.example.com',
      ]);
      assert.deepEqual(await domains(`${only}&q=SHOP.EXAMPLE.C`), [
        'web1.shop.example.com',
        'web2.shop.example.com',
      ]);
      assert.deepEqual(await domains(`${only}&q=example.org`), ['mail.shop.example.org']);
      // A prefix search matches at the start only.
      assert.deepEqual(await domains(`${only}&q=shop&match=prefix`), []);
      assert.deepEqual(await domains(`${only}&q=web&match=prefix`), [
        'web1.shop.example.com',
        'web2.shop.example.com',
      ]);
      assert.deepEqual(await domains(`${only}&q=web2.shop.example.com&match=prefix`), [
        'web2.shop.example.com',
      ]);
      // One or two characters: a prefix, even when `contains` is asked.
      assert.deepEqual(await domains(`${only}&q=ai`), []);
      assert.deepEqual(await domains(`${only}&q=ma`), ['mail.shop.example.org']);
      assert.deepEqual(await domains(`${only}&q=a&match=contains`), ['ab.example.com']);
      assert.deepEqual(await domains(`${only}&q=d`), ['db.internal.example.net']);
      // What no domain name holds finds nothing, and is no error.
      for (const q of ['%25', 'a_b', 'x%27y', 'no such thing', '*'])
        assert.deepEqual(await domains(`${only}&q=${q}`), [], q);
      // Across resellers too: the search is not bound to one.
      assert.deepEqual(await domains('q=internal.example'), ['db.internal.example.net']);
    });

    test('filters by host and by product; an unknown one is an empty list, a malformed one 400', async () => {
      const r = await reseller('filterer');
      const running = await order(r.token, 'on-host.filter.example.com');
      assert.equal((await call(t, r.token, 'POST', `service/${running}/create`, undefined, B)).status, 200);
      await waitForStatus(t, r.token, running, 'running');
      const business = await order(r.token, 'business.filter.example.com', {
        product_id: BUSINESS.id,
        template_id: BUSINESS.os_templates[0],
        cpu: 2,
        ram: 4,
        hdd: 80,
        ip: 1,
        backup: 20,
      });
      const hostId = (await opsCall(t, ops, 'GET', `services/${running}`)).body.data.host.host_id;

      const onHost = await list(`host_id=${hostId}&limit=1000`);
      assert.ok(onHost.items.some((s: any) => s.service_id === running));
      assert.ok(onHost.items.every((s: any) => s.host_id === hostId));
      assert.equal(onHost.total, onHost.items.length);

      const ofProduct = await list(`product_id=${BUSINESS.id}&reseller_id=${r.id}`);
      assert.deepEqual(
        ofProduct.items.map((s: any) => s.service_id),
        [business],
      );
      assert.equal(ofProduct.total, 1);
      assert.deepEqual(
        (await list(`product_id=${DEMO_CATALOG.products[0]!.id}&reseller_id=${r.id}`)).items.map(
          (s: any) => s.service_id,
        ),
        [running],
      );

      for (const q of [`host_id=no-such-host`, `product_id=${MISSING}`, 'product_id=nope', 'product_id=']) {
        const none = await list(q);
        assert.deepEqual(
          none,
          { items: [], next_cursor: null, prev_cursor: null, total: 0, total_capped: false },
          q,
        );
      }
      for (const q of ['host_id=', `host_id=${'h'.repeat(101)}`, `product_id=${'p'.repeat(65)}`]) {
        const res = await opsCall(t, ops, 'GET', `services?${q}`);
        assert.equal(res.status, 400, q);
        assert.equal(res.body.error_code, 'validation_failed', q);
      }
    });

    test('each order pages forwards and backwards with services ordered in between: none skipped, none twice', async () => {
      const r = await reseller('sorter');
      const names = ['kilo', 'alpha', 'mike', 'bravo', 'juliet', 'charlie', 'lima', 'delta', 'echo', 'golf'];
      const existing = new Map<string, string>();
      for (const n of names) existing.set(await order(r.token, `${n}.sort.example.com`), n);
      // Two statuses, so the status order has ties and a boundary.
      const first = [...existing.keys()][0]!;
      await call(t, r.token, 'POST', `service/${first}/create`, undefined, B);
      await waitForStatus(t, r.token, first, 'running');
      let added = 0;
      const more = () => order(r.token, `${names[added % names.length]}${added++}.sort.example.com`);

      for (const sort of SERVICE_SORTS) {
        const by = sort.replace('-', '');
        const sign = sort.startsWith('-') ? -1 : 1;
        const keyOf = (s: any) =>
          by === 'domain' ? s.domain_name : by === 'status' ? s.status : s.service_id;
        const compare = (a: any, b: any) =>
          sign * (bytes(keyOf(a), keyOf(b)) || bytes(a.service_id, b.service_id));
        const base = `reseller_id=${r.id}&limit=3&sort=${sort}`;

        // Forwards, to the last page.
        const pages: any[][] = [];
        let page = await list(base);
        assert.equal(page.prev_cursor, null, `${sort}: the first page has no previous one`);
        pages.push(page.items);
        while (page.next_cursor) {
          await more();
          page = await list(`${base}&cursor=${page.next_cursor}`);
          assert.ok(page.prev_cursor, `${sort}: a page after the first has a previous one`);
          pages.push(page.items);
        }
        const forwards = pages.flat();
        for (let i = 1; i < forwards.length; i++)
          assert.ok(compare(forwards[i - 1], forwards[i]) < 0, `${sort}: in order, none twice (${i})`);
        for (const id of existing.keys())
          assert.ok(
            forwards.some((s) => s.service_id === id),
            `${sort}: ${existing.get(id)} skipped forwards`,
          );

        // Backwards from the last page, to the first.
        const back: any[] = [...page.items];
        while (page.prev_cursor) {
          await more();
          page = await list(`${base}&cursor=${page.prev_cursor}`);
          assert.ok(page.next_cursor, `${sort}: a page before another has a next one`);
          assert.ok(page.items.length > 0 && page.items.length <= 3);
          back.unshift(...page.items);
        }
        for (let i = 1; i < back.length; i++)
          assert.ok(compare(back[i - 1], back[i]) < 0, `${sort}: in order backwards, none twice (${i})`);
        for (const id of existing.keys())
          assert.ok(
            back.some((s) => s.service_id === id),
            `${sort}: ${existing.get(id)} skipped backwards`,
          );
        // Back at the start, the page going forwards again is the one after.
        const again = await list(`${base}&cursor=${page.next_cursor}`);
        assert.ok(compare(page.items.at(-1), again.items[0]) < 0, `${sort}: next after previous`);
      }
    });

    test('a cursor belongs to its order; bad sort, match and cursors are 400', async () => {
      const r = await reseller('cursors');
      for (let i = 0; i < 3; i++) await order(r.token, `c${i}.cursor.example.com`);
      const byDomain = await list(`reseller_id=${r.id}&limit=1&sort=domain`);
      assert.ok(byDomain.next_cursor);
      const other = await opsCall(
        t,
        ops,
        'GET',
        `services?reseller_id=${r.id}&limit=1&cursor=${byDomain.next_cursor}`,
      );
      assert.equal(other.status, 400);
      assert.equal(other.body.error_code, 'invalid_cursor');
      // Signed by this server, but with no direction this list gives.
      const odd = encodeCursor(t.ctx.keys.cursorKey, 'services', ['x', '-created', 'k', MISSING]);
      const sideways = await opsCall(t, ops, 'GET', `services?cursor=${odd}`);
      assert.equal(sideways.body.error_code, 'invalid_cursor');
      const tampered = `${byDomain.next_cursor.slice(0, -2)}AA`;
      const bad = await opsCall(t, ops, 'GET', `services?sort=domain&cursor=${tampered}`);
      assert.equal(bad.body.error_code, 'invalid_cursor');
      for (const q of [
        'sort=nope',
        'sort=created_desc',
        'sort=',
        'sort=-id',
        'match=suffix',
        'match=',
        'total=true',
      ]) {
        const res = await opsCall(t, ops, 'GET', `services?${q}`);
        assert.equal(res.status, 400, q);
        assert.equal(res.body.error_code, 'validation_failed', q);
      }
    });

    test('totals count what the filters match, up to 10,000, then say there are more', async () => {
      const r = await reseller('bulk');
      const id = await order(r.token, 'seed.bulk.example.com');
      const seed = (await opsCall(t, ops, 'GET', `services/${id}`)).body.data;
      assert.deepEqual(
        {
          total: (await list(`reseller_id=${r.id}`)).total,
          capped: (await list(`reseller_id=${r.id}`)).total_capped,
        },
        { total: 1, capped: false },
      );
      // 10,050 more, written straight into the store (ordering them one by one takes minutes).
      const nextId = createMonotonicUuidv7(() => randomBytes(16));
      const now = Date.now();
      const rows = Array.from({ length: 10_050 }, (_, i) =>
        plainServiceRow({
          id: nextId(now + i),
          resellerId: r.id,
          clientId: seed.client_id,
          productId: seed.product_id,
          templateId: seed.template_id,
          domainName: i === 77 ? 'needle.haystack.example.com' : `hay${i}.haystack.example.com`,
          backup: 10,
          now: now + i,
        }),
      );
      for (let i = 0; i < rows.length; i += 500)
        await t.ctx.store.db
          .insertInto('services')
          .values(rows.slice(i, i + 500))
          .execute();

      const all = await list(`reseller_id=${r.id}&limit=5`);
      assert.equal(all.total, 10_000);
      assert.equal(all.total_capped, true);
      // A search matching more than 10,000: its first page still holds only matches, newest first.
      const many = await list('q=haystack&limit=5');
      assert.equal(many.total_capped, true);
      assert.equal(many.items.length, 5);
      assert.ok(many.items.every((s: any) => s.domain_name.includes('haystack')));
      assert.equal(many.items[0].domain_name, 'hay10049.haystack.example.com');
      const manyOfOne = await list(`q=haystack&reseller_id=${r.id}&status=pending&limit=5`);
      assert.equal(manyOfOne.total_capped, true);
      // A search matching a few counts them exactly.
      const few = await list(`q=hay1000&reseller_id=${r.id}`);
      assert.deepEqual(few.items.map((s: any) => s.domain_name).sort(), [
        'hay1000.haystack.example.com',
        'hay10000.haystack.example.com',
        'hay10001.haystack.example.com',
        'hay10002.haystack.example.com',
        'hay10003.haystack.example.com',
        'hay10004.haystack.example.com',
        'hay10005.haystack.example.com',
        'hay10006.haystack.example.com',
        'hay10007.haystack.example.com',
        'hay10008.haystack.example.com',
        'hay10009.haystack.example.com',
      ]);
      assert.deepEqual([few.total, few.total_capped], [11, false]);
      const needle = await list('q=needle');
      assert.deepEqual(
        [needle.items.map((s: any) => s.domain_name), needle.total],
        [['needle.haystack.example.com'], 1],
      );
      // Sorted by domain, the first page of the reseller's is the byte order's first.
      assert.deepEqual(
        (await list(`reseller_id=${r.id}&sort=domain&limit=3`)).items.map((s: any) => s.domain_name),
        ['hay0.haystack.example.com', 'hay1.haystack.example.com', 'hay10.haystack.example.com'],
      );
    });

    test('each service names its product and its plan (null when its sizes are no plan’s)', async () => {
      const r = await reseller('namer');
      const planned = await order(r.token, 'planned.names.example.com');
      const custom = await order(r.token, 'custom.names.example.com', { ...smallOrder('x'), cpu: 2 });
      const items = (await list(`reseller_id=${r.id}`)).items;
      const byId = new Map(items.map((s: any) => [s.service_id, s]));
      assert.deepEqual(
        (({ product_id, product_name, plan_id, plan_name }: any) => ({
          product_id,
          product_name,
          plan_id,
          plan_name,
        }))(byId.get(planned)),
        {
          product_id: DEMO_CATALOG.products[0]!.id,
          product_name: 'VPS Starter',
          plan_id: DEMO_CATALOG.products[0]!.plans[0]!.id,
          plan_name: 'Starter S',
        },
      );
      assert.deepEqual(
        [
          (byId.get(custom) as any).product_name,
          (byId.get(custom) as any).plan_id,
          (byId.get(custom) as any).plan_name,
        ],
        ['VPS Starter', null, null],
      );
    });
  });
}
