/**
 * On PostgreSQL the migrations give way to the serving processes: while another connection holds
 * a lock a pending migration needs, the migrations wait at most a moment for it, roll back, and
 * run again, so they never sit in a deadlock with a request; once the lock is free they apply.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { isLockConflict, isStoreUnavailable } from '../../src/store/errors.ts';
import { migrateToLatest } from '../../src/store/migrate.ts';
import { waitUntil } from '../helpers/budget.ts';
import { storeAtMigration } from '../helpers/stores.ts';

test('PostgreSQL: the migrations give way to a lock held elsewhere, retry, and apply once it is free', {
  skip: !process.env['VRP_TEST_PG_URL'] && 'needs npm test (PostgreSQL)',
}, async () => {
  // At 028, the next migrations alter `services` and `jobs`, which a serving process uses.
  const { store, done, env } = await storeAtMigration('postgres', '028-catalog-admin');
  const holder = new pg.Client({ connectionString: env['VRP_DATABASE_URL'] });
  await holder.connect();
  const watcher = new pg.Client({ connectionString: env['VRP_DATABASE_URL'] });
  await watcher.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE jobs IN ACCESS SHARE MODE');
    await holder.query('LOCK TABLE services IN ACCESS SHARE MODE');
    const migrating = migrateToLatest(store.db as Kysely<unknown>);
    // Two different attempts seen waiting for a lock: the first gave way and the run came back.
    const starts = new Set<string>();
    await waitUntil(
      'the migrations to wait for the lock twice',
      async () => {
        const { rows } = await watcher.query(
          `select a.xact_start::text as started from pg_stat_activity a join pg_locks l on l.pid = a.pid
           where not l.granted and a.pid <> pg_backend_pid() and a.datname = current_database()`,
        );
        for (const r of rows) starts.add(r.started);
        return starts.size >= 2;
      },
      { everyMs: 10 },
    );
    await holder.query('COMMIT');
    const applied = await migrating;
    assert.ok(applied.includes('029-service-search'), applied.join(' '));
  } finally {
    await holder.end();
    await watcher.end();
    await done();
  }
});

test('a lock conflict is one the store may answer again: 503 for a request, another attempt for a job', () => {
  for (const code of ['40P01', '40001', '55P03']) {
    const err = Object.assign(new Error('conflict'), { code });
    assert.ok(isLockConflict(err), code);
    assert.ok(isStoreUnavailable(err), code);
  }
  for (const err of [
    new Error('x'),
    Object.assign(new Error('x'), { code: '23505' }),
    null,
    'text',
    { code: 7 },
  ]) {
    assert.equal(isLockConflict(err), false, String(err));
  }
});
