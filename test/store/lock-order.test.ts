/**
 * PostgreSQL: a statement that takes several rows of a table takes them in the order of their
 * ids (src/store/gated-write.ts), whatever order its plan reads them in, so two such statements
 * never wait for each other crosswise. A request's enqueue (several services' guarded writes in
 * one statement) and a group of job ends (their services read, locked, in one statement) took
 * the same services in two orders, the first in the table's physical order (its plan's hash
 * join), the second in the order of the jobs: PostgreSQL found them deadlocked and failed one
 * side after a second (job-processes-deadlocks.test.ts, once in a CI run).
 *
 * Each case holds the larger id's row from another connection, lets the statement run until it
 * waits for that row, and then asks for the smaller id's row without waiting: the statement has
 * it already. Taken in another order, the statement would wait for the larger first, holding
 * nothing. Then the holder lets go and the statement ends as it would have.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import { ensureReseller } from '../../src/auth/applications.ts';
import { gatedUpdate, readGated, writeGated } from '../../src/store/gated-write.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { until } from '../helpers/job-worker.ts';
import { lockWaiters, rowFree } from '../helpers/pg-lock-waits.ts';
import { testStores } from '../helpers/stores.ts';

const NOW = 1_700_000_000_000;
const stores = testStores().filter((s) => s === 'postgres');

describe('a statement takes the rows of a table in the order of their ids (PostgreSQL)', {
  skip: stores.length === 0 && 'needs PostgreSQL (npm test starts one)',
}, () => {
  let t: TestApp;
  /** Four resellers' ids, smallest first. */
  let ids: string[];
  let holder: pg.Client;
  let prober: pg.Client;
  before(async () => {
    t = await createTestApp({}, { demo: false, store: 'postgres' });
    const db = t.ctx.store.db;
    const made: string[] = [];
    for (const name of ['r1', 'r2', 'r3', 'r4']) made.push((await ensureReseller(db, name, NOW)).id);
    ids = [...made].sort();
    // The smallest id's row written again: its new version lies after the others in the table,
    // so a plan that reads the table in its physical order meets it last.
    await db.updateTable('resellers').set({ name: 'moved' }).where('id', '=', ids[0]!).execute();
    holder = new pg.Client(t.ctx.config.databaseUrl);
    prober = new pg.Client(t.ctx.config.databaseUrl);
    await holder.connect();
    await prober.connect();
  });
  after(async () => {
    await holder.end();
    await prober.end();
    await t.close();
  });

  /**
   * Holds the row of `held` while `statement` runs; once it waits, whether the row of `asked`
   * can be locked without waiting (false: the statement holds it). Then lets go, and returns
   * what the statement answered with it.
   */
  async function whileHeld<T>(held: string, asked: string, statement: () => Promise<T>) {
    await holder.query('begin');
    await holder.query('select 1 from resellers where id = $1 for update', [held]);
    let answer: Promise<T> | undefined;
    let free: boolean;
    try {
      answer = statement();
      await until(async () => (await lockWaiters(prober)) >= 1, 'the statement to wait for the held row');
      free = await rowFree(prober, 'resellers', asked);
    } finally {
      await holder.query('commit');
    }
    return { free, answer: await answer };
  }

  test('guarded writes of one statement: their guards’ rows, smallest id first', async () => {
    const db = t.ctx.store.db;
    const rename = (id: string, name: string) =>
      writeGated(db, { table: 'resellers', set: { name }, where: { id, enabled: 1 } }, []);
    const { free, answer } = await whileHeld(ids[3]!, ids[0]!, () =>
      // One turn, one shape: one statement, the larger id's write made first.
      Promise.all([rename(ids[3]!, 'four, renamed'), rename(ids[0]!, 'one, renamed')]),
    );
    assert.equal(free, false, 'the statement had not taken the smallest id’s row before waiting');
    assert.deepEqual(answer, [true, true]);
    const names = await db
      .selectFrom('resellers')
      .select(['id', 'name'])
      .where('id', 'in', [ids[0]!, ids[3]!])
      .execute();
    assert.deepEqual(names.map((r) => r.name).sort(), ['four, renamed', 'one, renamed']);
  });

  test('a write of the statement whose row is gone: it answers that it changed nothing, the others are made', async () => {
    const db = t.ctx.store.db;
    const rename = (id: string, name: string) =>
      writeGated(db, { table: 'resellers', set: { name }, where: { id, enabled: 1 } }, []);
    // One statement: the ordered lock finds no row for the missing id, and locks the others.
    const answers = await Promise.all([
      rename(ids[2]!, 'three, renamed'),
      rename('no-such-reseller', 'nobody'),
      rename(ids[1]!, 'two, renamed'),
    ]);
    assert.deepEqual(answers, [true, false, true]);
    const names = await db
      .selectFrom('resellers')
      .select('name')
      .where('id', 'in', [ids[1]!, ids[2]!, 'no-such-reseller'])
      .execute();
    assert.deepEqual(names.map((r) => r.name).sort(), ['three, renamed', 'two, renamed']);
  });

  test('the rows a guarded write’s parts update: smallest id first, whatever their guards’ order', async () => {
    const db = t.ctx.store.db;
    // Guards on the two middle rows, in their order; their parts update the largest and the
    // smallest row, the other way round.
    const write = (guard: string, part: string, name: string) =>
      writeGated(db, { table: 'resellers', set: { created_at: NOW + 1 }, where: { id: guard } }, [
        gatedUpdate({ table: 'resellers', set: { name }, where: { id: part } }),
      ]);
    const { free, answer } = await whileHeld(ids[3]!, ids[0]!, () =>
      Promise.all([write(ids[1]!, ids[3]!, 'four, by two'), write(ids[2]!, ids[0]!, 'one, by three')]),
    );
    assert.equal(free, false, 'the statement had not taken the smallest id’s row before waiting');
    assert.deepEqual(answer, [true, true]);
    const names = await db
      .selectFrom('resellers')
      .select('name')
      .where('id', 'in', [ids[0]!, ids[3]!])
      .execute();
    assert.deepEqual(names.map((r) => r.name).sort(), ['four, by two', 'one, by three']);
  });

  test('guarded reads of one statement that lock: the rows read, smallest id first, whatever their guards’ order', async () => {
    const db = t.ctx.store.db;
    const read = (id: string) =>
      CompiledQuery.raw('select "id" from "resellers" where "id" = $1 for update', [id]) as CompiledQuery<{
        id: string;
      }>;
    const { free, answer } = await whileHeld(ids[3]!, ids[0]!, () =>
      db.transaction().execute((tx) =>
        // Guards on the two middle rows, in their order; the first reads the largest row, the
        // second the smallest.
        Promise.all([
          readGated(
            tx,
            { table: 'resellers', set: { created_at: NOW + 2 }, where: { id: ids[1]! } },
            read(ids[3]!),
          ),
          readGated(
            tx,
            { table: 'resellers', set: { created_at: NOW + 2 }, where: { id: ids[2]! } },
            read(ids[0]!),
          ),
        ]),
      ),
    );
    assert.equal(free, false, 'the statement had not taken the smallest id’s row before waiting');
    assert.deepEqual(
      answer.map((a) => [a.changed, a.row?.id]),
      [
        [true, ids[3]],
        [true, ids[0]],
      ],
    );
  });
});
