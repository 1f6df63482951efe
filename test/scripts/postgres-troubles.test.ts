/**
 * The tests' PostgreSQL server reports what it went through (scripts/postgres.ts `troubles`),
 * which a failed `npm test` prints: here a deadlock between two transactions, which PostgreSQL
 * breaks by failing one of them, shows in it with the server's detail and the statement it
 * failed; a statement that merely fails does not.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { startPostgres } from '../../scripts/postgres.ts';

test('a deadlock shows in the troubles of the tests’ PostgreSQL server; a failed statement does not', {
  skip: !process.env['VRP_TEST_PG_URL'] && 'needs npm test (PostgreSQL)',
}, async () => {
  const server = await startPostgres();
  const a = new pg.Client({ connectionString: server.url });
  const b = new pg.Client({ connectionString: server.url });
  try {
    await a.connect();
    await b.connect();
    await a.query('create table t (id int primary key)');
    await a.query('insert into t values (1), (2)');
    await a.query('select no_such_column from t').catch(() => undefined);
    assert.deepEqual(server.troubles(), [], 'a failing statement is not trouble');

    await a.query('begin');
    await b.query('begin');
    await a.query('update t set id = id where id = 1');
    await b.query('update t set id = id where id = 2');
    const results = await Promise.allSettled([
      a.query('update t set id = id where id = 2'),
      b.query('update t set id = id where id = 1'),
    ]);
    assert.equal(results.filter((r) => r.status === 'rejected').length, 1, 'PostgreSQL failed one side');
    await a.query('rollback');
    await b.query('rollback');
    const troubles = server.troubles();
    assert.ok(
      troubles.some((l) => /deadlock detected/.test(l)),
      `the deadlock in the troubles: ${JSON.stringify(troubles)}`,
    );
    // With what PostgreSQL said of it: who waited for what, and the statement it failed.
    assert.ok(
      troubles.some((l) => /DETAIL: +Process \d+ waits for ShareLock on transaction/.test(l)),
      `the deadlock's detail in the troubles: ${JSON.stringify(troubles)}`,
    );
    assert.ok(
      troubles.some((l) => /STATEMENT: +update t set id = id where id = [12]/.test(l)),
      `the failed statement in the troubles: ${JSON.stringify(troubles)}`,
    );
  } finally {
    await a.end();
    await b.end();
    server.stop();
  }
  assert.deepEqual(server.troubles(), [], 'nothing once stopped (its log is gone)');
});
