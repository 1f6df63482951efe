/**
 * node:sqlite's rows taken as arrays and made into plain objects (src/store/sqlite-rows.ts): the
 * keys, their order and the values node:sqlite's own rows have, whatever the columns; Object's
 * prototype, as pg's rows; and after another connection gives a table a column (a newer
 * version's migration during a rolling upgrade), a statement SQLite prepares again keeps every
 * value under its own column's name, through Kysely and through the hot reads.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { rowReader } from '../../src/store/sqlite-rows.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { plainServiceRow } from '../helpers/service-rows.ts';

describe('rows of node:sqlite as arrays', () => {
  const db = new DatabaseSync(':memory:');
  db.exec('create table a (id integer primary key, name text, score real, data blob, note text)');
  db.exec('create table b (id integer primary key, a_id integer, name text)');
  db.exec(`insert into a values (1, 'one', 1.5, x'0102', null), (2, 'two', -3, null, 'n')`);
  db.exec(`insert into b values (10, 1, 'b-one'), (11, 2, 'b-two')`);
  after(() => db.close());

  /** The rows of `text` as node:sqlite makes them, and as arrays made into objects. */
  const both = (text: string) => ({
    plain: db.prepare(text).all(),
    built: rowReader(db.prepare(text)).all([]),
  });

  test("each row has node:sqlite's keys, in their order, and its values", () => {
    for (const text of [
      'select * from a order by id',
      'select a.*, b.name as b_name from a join b on b.a_id = a.id order by a.id',
      // Two columns of one name: one key, as node:sqlite has it.
      'select a.name, b.name, a.id from a join b on b.a_id = a.id order by a.id',
      `select count(*) as n, 1, 'x' as "two words", null as no_value from a`,
      'select id as "__proto__", name as "constructor", note as "toString" from a order by id',
    ]) {
      const { plain, built } = both(text);
      assert.equal(built.length, plain.length, text);
      assert.ok(plain.length > 0, text);
      assert.deepEqual(
        built.map((row) => Object.entries(row)),
        plain.map((row) => Object.entries(row)),
        text,
      );
    }
  });

  test("a row is a plain object, as PostgreSQL's rows are; a column named __proto__ is a property of its own", () => {
    const [row] = both('select * from a order by id').built;
    assert.equal(Object.getPrototypeOf(row), Object.prototype);
    const [odd] = both('select id as "__proto__", name from a order by id').built;
    assert.ok(odd);
    assert.equal(Object.getPrototypeOf(odd), Object.prototype);
    assert.ok(Object.hasOwn(odd, '__proto__'));
    assert.deepEqual(Object.entries(odd), [
      ['__proto__', 1],
      ['name', 'one'],
    ]);
  });

  test('a write runs as before and has no rows; one row is read by get, none is undefined', () => {
    const insert = rowReader(db.prepare('insert into b (id, a_id, name) values (?, ?, ?)'));
    assert.deepEqual(insert.all([12, 1, 'b-three']), []);
    const name = rowReader(db.prepare('select name from b where id = ?'));
    assert.deepEqual(name.get([12]), { name: 'b-three' });
    assert.equal(name.get([99]), undefined);
    assert.deepEqual([...name.iterate([12])], [{ name: 'b-three' }]);
  });
});

describe('rows of the SQLite store after another connection gives a table a column', () => {
  let t: TestApp;
  const id = '0193a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a77';
  /** A migration of a newer version, made by a connection of its own as another process would. */
  const addColumn = (table: string) => {
    const other = new DatabaseSync(join(t.dataDir, 'vrp.sqlite'));
    try {
      other.exec(`alter table ${table} add column added_later text`);
      other.exec(`update ${table} set added_later = 'the new column'`);
    } finally {
      other.close();
    }
  };
  before(async () => {
    t = await createTestApp({}, { demo: false });
    const db = t.ctx.store.db;
    await sql`insert into resellers (id, name, created_at) values ('r1', 'r1', 0)`.execute(db);
    await db
      .insertInto('services')
      .values(plainServiceRow({ id, resellerId: 'r1', domainName: 'a.example.com', now: 0 }))
      .execute();
  });
  after(() => t.close());

  test('a statement of Kysely prepared before keeps each value under its own name; streamed rows are the same', async () => {
    const read = async () =>
      (
        await sql<Record<string, unknown>>`select r.*, 'after r' as tail from resellers r`.execute(
          t.ctx.store.db,
        )
      ).rows[0];
    const first = await read();
    assert.equal(first?.tail, 'after r');
    assert.equal(Object.getPrototypeOf(first), Object.prototype);
    addColumn('resellers');
    const second = await read();
    assert.equal(second?.tail, 'after r');
    assert.equal(second?.added_later, 'the new column');
    assert.equal(second?.name, 'r1');
    assert.deepEqual(Object.keys(second ?? {}).slice(-2), ['added_later', 'tail']);
    // Kysely's stream reads the rows one by one (node:sqlite's iterate): the same rows.
    const streamed = [];
    for await (const row of t.ctx.store.db.selectFrom('resellers').select(['id', 'name']).stream())
      streamed.push(row);
    assert.deepEqual(streamed, [{ id: 'r1', name: 'r1' }]);
  });

  test("the details' read (the service's columns, then its IPv6 prefix and traffic) likewise", async () => {
    const details = () => t.ctx.store.reads.serviceDetails('r1', id, 0, 1);
    const first = await details();
    assert.equal(first?.v6_prefix, null);
    assert.equal(Number(first?.traffic_in), 0);
    addColumn('services');
    // The hot reads' snapshot ends with the turn: the next one sees the new schema.
    await new Promise((r) => setImmediate(r));
    const second = await details();
    assert.equal(second?.domain_name, 'a.example.com');
    assert.equal(second?.v6_prefix, null);
    assert.equal(second?.v6_address, null);
    assert.equal(Number(second?.traffic_in), 0);
    assert.equal(Number(second?.traffic_out), 0);
    assert.equal(
      (second as unknown as Record<string, unknown> | undefined)?.['added_later'],
      'the new column',
    );
  });
});
