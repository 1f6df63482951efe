/**
 * Migration 026 names the actors of the audit log. Entries written before it: an operator's get
 * the operator's name, the CLI's its local user, the product's own (recorded as the command `cli`
 * with the id `system`) become the actor kind `system`; an application's stay unnamed. None has
 * a credential, an address or a reason.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { listAuditEntries } from '../../src/store/repos/audit.ts';
import { storeAtMigration, testStores } from '../helpers/stores.ts';

for (const kind of testStores()) {
  describe(`migration 026: audit actors (${kind})`, () => {
    test('old entries get their operator’s name, the CLI’s user, the kind system; applications none', async () => {
      const { store, done } = await storeAtMigration(kind, '025-two-factor');
      try {
        const { db } = store;
        const now = Date.now();
        await db
          .insertInto('operators')
          .values({
            id: 'op-1',
            name: 'alice',
            password_hash: null,
            enabled: 1,
            role: 'admin',
            created_at: now,
            updated_at: now,
          })
          .execute();
        const entry = (id: string, actor_type: 'operator' | 'cli' | 'application', actor_id: string) =>
          db
            .insertInto('audit_log')
            .values({
              id,
              created_at: now,
              actor_type,
              actor_id,
              action: 'host.drain',
              target_type: null,
              target_id: null,
              service_id: null,
              reseller_id: null,
              outcome: 'ok',
              request_id: null,
            })
            .execute();
        await entry('00000000-0000-7000-8000-000000000001', 'operator', 'op-1');
        await entry('00000000-0000-7000-8000-000000000002', 'cli', 'root');
        await entry('00000000-0000-7000-8000-000000000003', 'cli', 'system');
        await entry('00000000-0000-7000-8000-000000000004', 'application', 'vrp_abc');
        await migrateToLatest(db as Kysely<unknown>);
        const entries = await listAuditEntries(db, { limit: 10, order: 'oldest' });
        assert.deepEqual(
          entries.map((e) => [e.actor, e.credential, e.address, e.reason]),
          [
            [{ type: 'operator', id: 'op-1', name: 'alice' }, null, null, null],
            [{ type: 'cli', id: 'root', name: 'root' }, null, null, null],
            [{ type: 'system', id: 'system', name: 'system' }, null, null, null],
            [{ type: 'application', id: 'vrp_abc', name: null }, null, null, null],
          ],
        );
        const named = await listAuditEntries(db, { limit: 10, actorName: 'alice' });
        assert.deepEqual(
          named.map((e) => e.actor.id),
          ['op-1'],
        );
      } finally {
        await done();
      }
    });
  });
}
