/**
 * Migration 035: console links and sessions end for good with what allowed them. Links stored
 * before it name no client: those of a reseller already disabled end at the migration for good,
 * the others hold while their reseller is enabled.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { findConsoleLinkSession } from '../../src/store/repos/service-console-links.ts';
import { storeAtMigration, testStores } from '../helpers/stores.ts';

const NOW = 1_700_000_000_000;
const HOUR = 3600_000;

for (const kind of testStores()) {
  describe(`migration 035: console sessions end (${kind})`, () => {
    test('a disabled reseller’s sessions end at the migration; an enabled one’s hold while it is enabled', async () => {
      const { store, done } = await storeAtMigration(kind, '034-libvirt-leftovers');
      try {
        const db = store.db;
        const resellers = [
          ['00000000-0000-4000-8000-0000000000a1', 'on', 1],
          ['00000000-0000-4000-8000-0000000000b2', 'off', 0],
        ] as const;
        for (const [id, name, enabled] of resellers) {
          await db.insertInto('resellers').values({ id, name, enabled, created_at: 1 }).execute();
          await db
            .insertInto('service_console_links')
            .values({
              id: `link-${name}`,
              token_hash: `token-${name}`,
              service_id: `service-${name}`,
              reseller_id: id,
              created_at: NOW,
              open_until: NOW + 60_000,
              opened_at: NOW,
              session_hash: `session-${name}`,
              session_until: NOW + HOUR,
            })
            .execute();
        }
        await migrateToLatest(db as Kysely<unknown>);
        const live = async (name: string) =>
          (await findConsoleLinkSession(db, `session-${name}`, NOW)) !== undefined;
        assert.equal(await live('on'), true);
        assert.equal(await live('off'), false);
        const row = await db
          .selectFrom('service_console_links')
          .selectAll()
          .where('id', '=', 'link-on')
          .executeTakeFirst();
        assert.equal(row?.client_id, null);

        await db.updateTable('resellers').set({ enabled: 0 }).where('name', '=', 'on').execute();
        assert.equal(await live('on'), false);
        // Made before the migration, it names no client: it holds while its reseller is enabled
        // (docs/api.md). One the migration ended stays ended.
        await db.updateTable('resellers').set({ enabled: 1 }).execute();
        assert.equal(await live('on'), true, 'no client recorded: its reseller alone');
        assert.equal(await live('off'), false, 'ended by the migration: for good');
      } finally {
        await done();
      }
    });
  });
}
