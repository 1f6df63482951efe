/** Migration 030 adds resellers' external billing id: resellers that exist keep working, with none. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import { migrateToLatest } from '../../src/store/migrate.ts';
import {
  findResellerByName,
  listResellers,
  setResellerBillingIdRecorded,
} from '../../src/store/repos/resellers.ts';
import { storeAtMigration, testStores } from '../helpers/stores.ts';

for (const kind of testStores()) {
  describe(`migration 030: billing id (${kind})`, () => {
    test('resellers stored before get none, and can be given one', async () => {
      const { store, done } = await storeAtMigration(kind, '026-audit-actors');
      try {
        const { db } = store;
        for (const [id, name] of [
          ['00000000-0000-4000-8000-0000000000a1', 'acme'],
          ['00000000-0000-4000-8000-0000000000b2', 'beta'],
        ] as const) {
          await db.insertInto('resellers').values({ id, name, enabled: 1, created_at: 1 }).execute();
        }
        await migrateToLatest(db as Kysely<unknown>);
        assert.deepEqual(
          (await listResellers(db)).map((r) => [r.name, r.enabled, r.externalBillingId]),
          [
            ['acme', true, null],
            ['beta', true, null],
          ],
        );
        const audit = {
          actor: { type: 'cli', id: 'root', name: 'root' },
          requestId: null,
          action: 'reseller.update',
        } as const;
        await setResellerBillingIdRecorded(db, '00000000-0000-4000-8000-0000000000b2', 'B-7', 2, audit);
        assert.equal((await findResellerByName(db, 'beta'))?.externalBillingId, 'B-7');
        assert.equal((await findResellerByName(db, 'acme'))?.externalBillingId, null);
      } finally {
        await done();
      }
    });
  });
}
