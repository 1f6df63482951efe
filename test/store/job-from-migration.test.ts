/**
 * The state a job started from moved out of its parameters (`_from`) into a column of
 * its own (migration 005). A job written the old way must read right after the migration.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Kysely, sql } from 'kysely';
import { migrateTo } from '../../src/store/migrate.ts';
import { toRunnableJob } from '../../src/store/repos/jobs.ts';
import { insertOldService, serviceRowBefore012 } from '../helpers/old-rows.ts';
import { storeAtMigration, testStores } from '../helpers/stores.ts';

for (const kind of testStores()) {
  describe(`migration 005: a job's _from becomes its from_state (${kind})`, () => {
    test('old rows are moved: the recorded state to the column, the key out of the parameters', async () => {
      const { store, done } = await storeAtMigration(kind, '004-retention-indexes');
      try {
        const { db } = store;
        const now = Date.now();
        await db
          .insertInto('resellers')
          .values({ id: 'r1', name: 'acme', enabled: 1, created_at: now })
          .execute();
        await insertOldService(
          db,
          serviceRowBefore012({
            id: 's1',
            resellerId: 'r1',
            clientId: 'c1',
            productId: 'p1',
            templateId: 't1',
            domainName: 'old.example.com',
            username: 'root',
            passwordEnc: 'x',
            cpu: 1,
            ram: 1,
            hdd: 10,
            ipCount: 1,
            backup: 0,
            now,
          }),
        );
        // Written as the code before migration 005 did: no from_state column; _from in the params.
        const oldJob = async (id: string, seq: number, action: string, params: unknown) => {
          await sql`insert into jobs (id, service_id, reseller_id, action, params, status, error, attempts,
              seq, run_at, created_at, started_at, finished_at, locked_by, locked_until, step_marker)
            values (${id}, 's1', 'r1', ${action}, ${JSON.stringify(params)}, 'queued', null, 1,
              ${seq}, ${now}, ${now}, ${now}, null, null, null, null)`.execute(db);
        };
        await oldJob('j1', 1, 'suspend', { reason: 'unpaid', _from: { status: 'stopped', resume: null } });
        await oldJob('j2', 2, 'upgrade', { cpu: 2, ram: 2, hdd: 20, ip: 1, backup: 0 });

        // Up to 005 only: later migrations are not this test's subject.
        assert.deepEqual(await migrateTo(db as Kysely<unknown>, '005-job-from-state'), [
          '005-job-from-state',
        ]);

        const rows = await db.selectFrom('jobs').selectAll().orderBy('seq').execute();
        const [suspend, upgrade] = rows.map(toRunnableJob);
        assert.equal(suspend?.action, 'suspend');
        assert.deepEqual(suspend?.params, { reason: 'unpaid' });
        assert.deepEqual(suspend?.from, { status: 'stopped', resume: null });
        assert.ok(!rows[0]!.params.includes('_from'), 'the key is gone from the stored parameters');
        assert.equal(upgrade?.action, 'upgrade');
        assert.deepEqual(upgrade?.params, { cpu: 2, ram: 2, hdd: 20, ip: 1, backup: 0 });
        assert.equal(upgrade?.from, null, 'a job not started yet has no recorded state');
      } finally {
        await done();
      }
    });
  });
}
