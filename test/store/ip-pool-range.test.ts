import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { systemAudit } from '../../src/store/repos/audit.ts';
import { createPool, updatePool } from '../../src/store/repos/ip-pools.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

for (const store of testStores()) {
  describe(`IP pool addresses written as rows (${store})`, () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({}, { demo: false, store });
    });
    after(() => t.close());

    const stored = async (like: string) =>
      (
        await t.ctx.store.db
          .selectFrom('ip_addresses as a')
          .innerJoin('ip_pools as p', 'p.id', 'a.pool_id')
          .select(['a.address_num', 'a.address', 'p.name'])
          .where('a.address', 'like', like)
          .orderBy('a.address_num')
          .execute()
      ).map((r) => `${Number(r.address_num)} ${r.address} ${r.name}`);

    test('a new pool: every address from first to last, as number and dotted text, the pool’s', async () => {
      await createPool(
        t.ctx.store.db,
        { name: 'small', family: 'ipv4', network: '172.31.255.248/29', first: '172.31.255.250', hosts: [] },
        Date.now(),
        systemAudit('ip_pool.create'),
      );
      const base = 172 * 2 ** 24 + 31 * 2 ** 16 + 255 * 256 + 248;
      assert.deepEqual(
        await stored('172.31.255.%'),
        [2, 3, 4, 5, 6].map((i) => `${base + i} 172.31.255.${248 + i} small`),
      );
    });

    test('a range widened adds just the new addresses', async () => {
      const [pool] = await t.ctx.store.db
        .selectFrom('ip_pools')
        .select('id')
        .where('name', '=', 'small')
        .execute();
      await updatePool(
        t.ctx.store.db,
        pool!.id,
        { first: '172.31.255.249' },
        Date.now(),
        systemAudit('ip_pool.update'),
      );
      const all = await stored('172.31.255.%');
      assert.equal(all.length, 6);
      assert.equal(all[0], `${172 * 2 ** 24 + 31 * 2 ** 16 + 255 * 256 + 249} 172.31.255.249 small`);
    });

    test('a /16 is written in one go', async () => {
      await createPool(
        t.ctx.store.db,
        { name: 'wide', family: 'ipv4', network: '10.200.0.0/16', hosts: [] },
        Date.now(),
        systemAudit('ip_pool.create'),
      );
      assert.equal((await stored('10.200.%')).length, 65536 - 2);
    });
  });
}
