/**
 * PostgreSQL: a pooled connection that is lost while it is checked out (a transaction between
 * two statements when the database restarts or an administrator ends the backend) fails that
 * transaction, not the process. pg's client emits 'error' then, and the pool listens to idle
 * clients only: without a listener of the store's own the process died of an unhandled 'error'
 * event (seen once in CI, in test/e2e/postgres-restart.test.ts).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { createStore } from '../../src/store/database.ts';
import { createPgDatabase, testStores } from '../helpers/stores.ts';

if (testStores().includes('postgres')) {
  test('a connection lost inside a transaction fails the transaction; the store goes on (postgres)', async () => {
    const database = await createPgDatabase();
    const dir = mkdtempSync(join(tmpdir(), 'vrp-pg-loss-'));
    const store = createStore({ databaseUrl: database.url, dataDir: dir });
    const admin = new pg.Client(database.url);
    await admin.connect();
    const crashes: unknown[] = [];
    const onUncaught = (err: unknown) => crashes.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      const failed = await store.db
        .transaction()
        .execute(async (trx) => {
          const pid = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)).rows[0]!.pid;
          // Ended from elsewhere while this transaction holds its connection with no statement running.
          await admin.query('select pg_terminate_backend($1)', [pid]);
          await new Promise((r) => setTimeout(r, 300));
          await sql`select 1`.execute(trx);
        })
        .then(
          () => undefined,
          (err: Error) => err,
        );
      assert.ok(failed instanceof Error, 'the transaction failed');
      assert.deepEqual(crashes, [], 'no uncaught error');
      // The pool drops the broken connection: the next statements get a new one.
      assert.equal((await sql<{ one: number }>`select 1 as one`.execute(store.db)).rows[0]?.one, 1);
    } finally {
      process.off('uncaughtException', onUncaught);
      await admin.end();
      await store.close();
      await database.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
