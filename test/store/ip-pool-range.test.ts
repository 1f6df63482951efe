import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createIpPool } from '../../src/drivers/ip-pool.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

for (const store of testStores()) {
  describe(`IP pool addresses written at start-up (${store})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({}, { demo: false, store });
    });
    after(() => t.close());

    const stored = async () =>
      (
        await t.ctx.store.db
          .selectFrom('ip_addresses')
          .select(['address_num', 'address'])
          .orderBy('address_num')
          .execute()
      ).map((r) => `${Number(r.address_num)} ${r.address}`);

    test('every usable address of the CIDR, as number and dotted text, and only those', async () => {
      await createIpPool(t.ctx.store.db, '172.31.255.248/29', Date.now);
      const base = 172 * 2 ** 24 + 31 * 2 ** 16 + 255 * 256 + 248;
      assert.deepEqual(
        await stored(),
        [2, 3, 4, 5, 6].map((i) => `${base + i} 172.31.255.${248 + i}`),
      );
    });

    test('opening the pool again adds nothing; a wider setting adds just the new addresses', async () => {
      await createIpPool(t.ctx.store.db, '172.31.255.248/29', Date.now);
      assert.equal((await stored()).length, 5);
      await createIpPool(t.ctx.store.db, '172.31.255.240/28', Date.now);
      const all = await stored();
      assert.equal(all.length, 5 + 8);
      assert.equal(all[0], `${172 * 2 ** 24 + 31 * 2 ** 16 + 255 * 256 + 242} 172.31.255.242`);
      assert.equal(new Set(all).size, all.length);
    });

    test('a /16 is written in one go', async () => {
      await createIpPool(t.ctx.store.db, '10.200.0.0/16', Date.now);
      const n = await t.ctx.store.db
        .selectFrom('ip_addresses')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('address', 'like', '10.200.%')
        .executeTakeFirstOrThrow();
      assert.equal(Number(n.n), 65536 - 3);
    });
  });
}
