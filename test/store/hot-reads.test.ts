import assert from 'node:assert/strict';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { openStore, type Store } from '../../src/store/database.ts';
import { pgHotReads, sqliteHotReadSql } from '../../src/store/hot-reads.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { createPgDatabase, testStores } from '../helpers/stores.ts';

/** The query plans of the per-request reads: index searches only, never a scan of a table. */
describe('hot reads on SQLite: plans', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({}, { demo: false });
  });
  after(() => t.close());

  const plan = (sql: string) => {
    const db = new DatabaseSync(join(t.dataDir, 'vrp.sqlite'), { readOnly: true });
    try {
      return (
        db.prepare(`explain query plan ${sql}`).all(...Array.from(sql.matchAll(/\?/g), () => 'x')) as {
          detail: string;
        }[]
      )
        .map((r) => r.detail)
        .join('; ');
    } finally {
      db.close();
    }
  };

  const sql = sqliteHotReadSql();

  test('status reads the covering index alone', () => {
    assert.match(plan(sql.ownedServiceStatus), /^SEARCH services USING COVERING INDEX services_status/);
  });

  test('a service, its current job and its details (prefix, traffic) are index searches', () => {
    for (const text of [sql.ownedService, sql.currentJob, sql.serviceDetails]) {
      const detail = plan(text);
      assert.match(detail, /^SEARCH \w+ USING (COVERING )?INDEX/, detail);
      assert.doesNotMatch(detail, /SCAN/, detail);
    }
  });
});

/**
 * The SQLite reads of one turn of the event loop share a snapshot: a write this process commits
 * ends it at once, and another process's write is seen from the next turn, or a millisecond on.
 */
describe('hot reads on SQLite: what a read sees', () => {
  let t: TestApp;
  const id = '0193a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a31';
  const status = async () => (await t.ctx.store.reads.ownedServiceStatus('r1', id))?.status;
  /** The status written by a connection of its own, as another process would. */
  const writeFromAnotherConnection = (s: string) => {
    const other = new DatabaseSync(join(t.dataDir, 'vrp.sqlite'));
    try {
      other.prepare('update services set status = ? where id = ?').run(s, id);
    } finally {
      other.close();
    }
  };
  const setStatus = (s: string) =>
    sql`update services set status = ${s} where id = ${id}`.execute(t.ctx.store.db);
  before(async () => {
    t = await createTestApp({}, { demo: false });
    await sql`insert into resellers (id, name, created_at) values ('r1', 'r1', 0)`.execute(t.ctx.store.db);
    await sql`insert into services (id, reseller_id, client_id, product_id, template_id, domain_name, username, password_enc, cpu, ram, hdd, ip_count, backup, status, projected_status, pending_jobs, job_seq, ips, created_at, updated_at, ssh_keys)
      values (${id}, 'r1', 'c1', 'p', 't', 'a.example.com', 'root', 'sealed', 1, 1, 20, 1, 0, 'running', 'running', 0, 0, '[]', 0, 0, '[]')`.execute(
      t.ctx.store.db,
    );
  });
  after(() => t.close());

  test("this process's writes are seen by the next read, in the same turn as an earlier read", async () => {
    assert.equal(await status(), 'running');
    await setStatus('stopped');
    assert.equal(await status(), 'stopped', 'a plain write');
    await t.ctx.store.db
      .transaction()
      .execute((tx) => sql`update services set status = 'suspended' where id = ${id}`.execute(tx));
    assert.equal(await status(), 'suspended', 'a transaction');
    await setStatus('running');
  });

  test("another process's write is seen from the next turn of the event loop", async () => {
    assert.equal(await status(), 'running');
    writeFromAnotherConnection('stopped');
    await new Promise((r) => setImmediate(r));
    assert.equal(await status(), 'stopped');
    await setStatus('running');
  });

  test("another process's write is seen within the same turn a millisecond after it", async () => {
    assert.equal(await status(), 'running');
    writeFromAnotherConnection('stopped');
    // Still this turn (no timer, no I/O): the snapshot of the first read, until it is 1 ms old.
    const end = performance.now() + 2;
    while (performance.now() < end);
    assert.equal(await status(), 'stopped');
    await setStatus('running');
  });
});

describe('hot reads on PostgreSQL: prepared statements', {
  skip: !testStores().includes('postgres') && 'needs PostgreSQL (npm test starts one)',
}, () => {
  /**
   * A fresh database with its store, and a pool of `max` connections, for `run`. A connection
   * whose backend goes away emits 'error' on the pool: recorded, and none may come while `run`
   * reads. At the end one may: pg-pool's end() resolves before its connections' sockets have
   * closed, and the forced drop of the database can terminate one still open (CI saw it once;
   * without a listener it failed the test after its checks had passed).
   */
  const withPool = async (max: number, run: (store: Store, pool: pg.Pool) => Promise<void>) => {
    const database = await createPgDatabase();
    const store = await openStore({ databaseUrl: database.url, dataDir: '' });
    const pool = new pg.Pool({ connectionString: database.url, max });
    const errors: unknown[] = [];
    pool.on('error', (err) => errors.push(err));
    try {
      await run(store, pool);
      assert.deepEqual(errors, []);
    } finally {
      await pool.end();
      await store.close();
      await database.drop();
    }
  };

  test('a read prepared before a migration added a column still answers after it', async () => {
    await withPool(1, async (store, pool) => {
      // One connection, so the second read runs on the connection that prepared the first.
      const reads = pgHotReads(pool);
      await sql`insert into resellers (id, name, created_at) values ('r1', 'r1', 0)`.execute(store.db);
      assert.equal(await reads.ownedService('r1', '0193a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b'), undefined);
      await sql`alter table services add column added_later integer`.execute(store.db);
      assert.equal(await reads.ownedService('r1', '0193a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b'), undefined);
      assert.equal(await reads.currentJob('0193a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b'), undefined);
    });
  });

  test('details read together are one statement; each gets its own service, with its traffic, or nothing', async () => {
    await withPool(2, async (store, pool) => {
      const sent: string[] = [];
      const spy = {
        query: ((config: { text: string; values: unknown[] }) => {
          sent.push(config.text);
          return pool.query(config);
        }) as unknown as pg.Pool['query'],
      };
      const reads = pgHotReads(spy);
      const id = (n: number) => `0193a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2${n}`;
      await sql`insert into resellers (id, name, created_at) values ('r1', 'r1', 0), ('r2', 'r2', 0)`.execute(
        store.db,
      );
      await sql`insert into services (id, reseller_id, client_id, product_id, template_id, domain_name, username, password_enc, cpu, ram, hdd, ip_count, backup, status, projected_status, pending_jobs, job_seq, ips, created_at, updated_at, ssh_keys)
        values (${id(1)}, 'r1', 'c1', 'p', 't', 'a.example.com', 'root', 'sealed', 1, 1, 20, 1, 0, 'running', 'running', 0, 0, '[]', 0, 0, '[]')`.execute(
        store.db,
      );
      // Two days of one month, and a day of the month before (not counted).
      await sql`insert into traffic_days (service_id, day, bytes_in, bytes_out) values
        (${id(1)}, 86400000, 5, 7), (${id(1)}, 172800000, 10, 20), (${id(1)}, -86400000, 1000, 1000)`.execute(
        store.db,
      );
      const month = { from: 0, to: 31 * 86400000 };
      const got = await Promise.all([
        reads.serviceDetails('r1', id(1), month.from, month.to),
        reads.serviceDetails('r2', id(1), month.from, month.to),
        reads.serviceDetails('r1', id(2), month.from, month.to),
      ]);
      assert.equal(sent.length, 1, 'one statement for the three');
      assert.equal(got[0]?.id, id(1));
      assert.deepEqual([Number(got[0]?.traffic_in), Number(got[0]?.traffic_out)], [15, 27]);
      assert.equal(got[0]?.v6_prefix, null);
      assert.deepEqual(got.slice(1), [undefined, undefined], "another reseller's service, and none");
      // Alone, the single-row read: the same answer.
      const alone = await reads.serviceDetails('r1', id(1), month.from, month.to);
      assert.deepEqual([alone?.id, Number(alone?.traffic_in)], [id(1), 15]);
      assert.equal(sent.length, 2);
    });
  });

  test('a connection keeps one plan for each batched read, however many keys each run has', async () => {
    await withPool(1, async (store, pool) => {
      // One connection: the statements it prepared are the ones pg_prepared_statements shows it.
      const reads = pgHotReads(pool);
      const id = (n: number) => `0193a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2${n}`;
      await sql`insert into resellers (id, name, created_at) values ('r1', 'r1', 0)`.execute(store.db);
      await sql`insert into reseller_quotas (reseller_id, services, updated_at) values ('r1', 5, 0)`.execute(
        store.db,
      );
      await sql`insert into services (id, reseller_id, client_id, product_id, template_id, domain_name, username, password_enc, cpu, ram, hdd, ip_count, backup, status, projected_status, pending_jobs, job_seq, ips, created_at, updated_at, ssh_keys)
        values (${id(1)}, 'r1', 'c1', 'p', 't', 'a.example.com', 'root', 'sealed', 1, 1, 20, 1, 0, 'running', 'running', 0, 0, '[]', 0, 0, '[]')`.execute(
        store.db,
      );
      // Twelve runs of each batch, of two to four keys (one key alone is the single-row read).
      for (let run = 0; run < 12; run++) {
        const keys = Array.from({ length: 2 + (run % 3) }, (_, k) => id(k + 1));
        const got = await Promise.all([
          ...keys.map((k) => reads.ownedService('r1', k)),
          ...keys.map((k) => reads.ownedServiceStatus('r1', k)),
          ...keys.map((k) => reads.serviceDetails('r1', k, 0, 86400000)),
          ...keys.map((_, i) => reads.resellerQuota(`r${i + 1}`)),
        ]);
        const n = keys.length;
        // Each read still gets its own row, or nothing (a quota's row is named by its reseller).
        assert.deepEqual(
          got.map(
            (row) =>
              (row as { id?: string } | undefined)?.id ??
              (row as { reseller_id?: string } | undefined)?.reseller_id,
          ),
          [
            ...[id(1), ...Array(n - 1).fill(undefined)],
            ...[id(1), ...Array(n - 1).fill(undefined)],
            ...[id(1), ...Array(n - 1).fill(undefined)],
            ...['r1', ...Array(n - 1).fill(undefined)],
          ],
        );
      }
      const { rows } = await pool.query<{ statement: string; generic_plans: string; custom_plans: string }>(
        "select statement, generic_plans, custom_plans from pg_prepared_statements where statement like '%unnest%'",
      );
      assert.equal(rows.length, 4, 'the four batched reads');
      for (const r of rows) {
        // Planned with the values on its first five runs, then the kept plan.
        assert.ok(
          Number(r.custom_plans) <= 5,
          `${r.custom_plans} plans made for one run each: ${r.statement}`,
        );
        assert.ok(Number(r.generic_plans) >= 7, `${r.generic_plans} runs on the kept plan: ${r.statement}`);
      }
    });
  });

  test('a batch of status reads probes the covering index by reseller and id, as the single read does', async () => {
    await withPool(2, async (_store, pool) => {
      const sent: { text: string; values: unknown[] }[] = [];
      const spy = {
        query: ((config: { text: string; values: unknown[] }) => {
          sent.push(config);
          return pool.query(config);
        }) as unknown as pg.Pool['query'],
      };
      const reads = pgHotReads(spy);
      const id = (n: number) => `0193a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2${n}`;
      // Two reads in one turn: one statement.
      const got = await Promise.all([
        reads.ownedServiceStatus('r1', id(1)),
        reads.ownedServiceStatus('r2', id(2)),
      ]);
      assert.deepEqual(got, [undefined, undefined]);
      assert.equal(sent.length, 1);
      const client = await pool.connect();
      try {
        // On empty tables a sequential scan is cheapest; forbidding it shows whether an index can serve.
        await client.query('set enable_seqscan = off');
        const res = await client.query(`explain ${sent[0]!.text}`, sent[0]!.values);
        const plan = res.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
        assert.match(plan, /Index Only Scan using services_status/, plan);
        assert.doesNotMatch(plan, /Seq Scan on services|services_pkey/, plan);
      } finally {
        client.release();
      }
    });
  });
});
