/**
 * A store a newer version has migrated further: this version uses it as it is (a process of the
 * old version starting beside the new ones during a rolling upgrade), and names what it does
 * not know; a store with a migration it does not know that is not newer is refused.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { migrateToLatest, migrationsAhead, pendingMigrations } from '../../src/store/migrate.ts';
import { storeAtMigration, testStores } from '../helpers/stores.ts';

for (const kind of testStores()) {
  describe(`migrations of a newer version (${kind})`, () => {
    const record = (db: Kysely<unknown>, name: string) =>
      sql`insert into schema_migrations (name, timestamp) values (${name}, 'then')`.execute(db);

    test('a store migrated further by a newer version is used as it is, its extra migrations named', async () => {
      const { store, done } = await storeAtMigration(kind, '001-initial');
      try {
        const db = store.db as Kysely<unknown>;
        const all = await pendingMigrations(db);
        assert.ok(all.length > 20 && !all.includes('001-initial'), all.join(' '));
        await migrateToLatest(db);
        assert.deepEqual(await pendingMigrations(db), []);
        assert.deepEqual(await migrationsAhead(db), []);
        await record(db, '999-a-newer-one');
        await record(db, '998-another');
        assert.deepEqual(await migrateToLatest(db), [], 'nothing to apply, and no refusal');
        assert.deepEqual(await migrationsAhead(db), ['998-another', '999-a-newer-one']);
        assert.deepEqual(await pendingMigrations(db), []);
      } finally {
        await done();
      }
    });

    test('an unknown migration older than the newest known one is refused, naming it', async () => {
      const { store, done } = await storeAtMigration(kind, '001-initial');
      try {
        const db = store.db as Kysely<unknown>;
        await migrateToLatest(db);
        await record(db, '000-unknown');
        await assert.rejects(migrateToLatest(db), (err: Error) =>
          /000-unknown/.test(`${err.message} ${String(err.cause)}`),
        );
      } finally {
        await done();
      }
    });

    test('a store that lacks a known migration and has a newer one goes to the migrator, which refuses', async () => {
      const { store, done } = await storeAtMigration(kind, '001-initial');
      try {
        const db = store.db as Kysely<unknown>;
        await record(db, '999-a-newer-one');
        assert.ok((await pendingMigrations(db)).length > 0);
        await assert.rejects(migrateToLatest(db), (err: Error) =>
          /999-a-newer-one/.test(`${err.message} ${String(err.cause)}`),
        );
      } finally {
        await done();
      }
    });
  });
}
