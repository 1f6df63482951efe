/**
 * The operator's services search as the store reads it (src/store/repos/service-list.ts). On
 * SQLite a search reads its matches' rowids once and then the services by rowid, in a statement
 * of its own: a service deleted in between, whose rowid the next service takes, must not appear
 * in the page as a match of a search it does not match.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import type { KyselyPlugin, PluginTransformResultArgs, QueryResult, UnknownRow } from 'kysely';
import { createMonotonicUuidv7 } from '../../src/domain/ids.ts';
import { findResellerByName } from '../../src/store/repos/resellers.ts';
import { listServices } from '../../src/store/repos/service-list.ts';
import { call, createTestApp } from '../helpers/app.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { plainServiceRow } from '../helpers/service-rows.ts';
import { testStores } from '../helpers/stores.ts';

/** Runs `between` once, after the first statement it sees ends (its result is kept as it was). */
function afterFirstStatement(between: () => Promise<void>): KyselyPlugin {
  let ran = false;
  return {
    transformQuery: (args) => args.node,
    async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
      if (!ran) {
        ran = true;
        await between();
      }
      return args.result;
    },
  };
}

for (const store of testStores()) {
  test(`a search's page holds only services that match it, whatever changed since its matches were read (${store})`, async () => {
    const t = await createTestApp({}, { store });
    try {
      const token = await t.token({ reseller: 'lists' });
      const resellerId = (await findResellerByName(t.ctx.store.db, 'lists'))!.id;
      const seed = await call(t, token, 'POST', 'service/create-order', smallOrder('seed.lists.example.com'));
      assert.equal(seed.status, 200, JSON.stringify(seed.body));
      const row = await t.ctx.store.db
        .selectFrom('services')
        .select(['client_id', 'product_id', 'template_id'])
        .executeTakeFirstOrThrow();
      const nextId = createMonotonicUuidv7(() => randomBytes(16));
      const service = (domainName: string, i: number) =>
        plainServiceRow({
          id: nextId(Date.now() + i),
          resellerId,
          clientId: row.client_id,
          productId: row.product_id,
          templateId: row.template_id,
          domainName,
          now: Date.now(),
        });
      const db = t.ctx.store.db;
      await db.insertInto('services').values(service('needle-one.lists.example.com', 1)).execute();
      // The last row written: on SQLite, the next one written after its deletion takes its rowid.
      const last = service('needle-two.lists.example.com', 2);
      await db.insertInto('services').values(last).execute();
      const hay = service('hay.lists.example.com', 3);

      const page = await listServices(
        db.withPlugin(
          afterFirstStatement(async () => {
            await db.deleteFrom('services').where('id', '=', last.id).execute();
            await db.insertInto('services').values(hay).execute();
          }),
        ),
        { q: 'needle', sort: '-created', limit: 10 },
      );
      const shown = page.services.map((s) => s.domainName);
      assert.ok(!shown.includes('hay.lists.example.com'), `the page shows ${shown.join(', ')}`);
      assert.ok(shown.includes('needle-one.lists.example.com'), `the page shows ${shown.join(', ')}`);
      // What a search finds now.
      const now = await listServices(db, { q: 'needle', sort: '-created', limit: 10 });
      assert.deepEqual(
        now.services.map((s) => s.domainName),
        ['needle-one.lists.example.com'],
      );
      assert.deepEqual([now.total, now.capped], [1, false]);
      const none = await listServices(db, { q: 'no-such-name', sort: '-created', limit: 10 });
      assert.deepEqual([none.services, none.total, none.capped, none.more], [[], 0, false, false]);
    } finally {
      await t.close();
    }
  });
}
