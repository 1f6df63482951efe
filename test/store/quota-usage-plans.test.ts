/**
 * The reads of quotas and usage are index ranges on both stores, so that a reseller's quota
 * check and the usage report of one reseller for a month cost the same with a million services
 * stored as with a thousand: the plans of the statements the code really sends.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { test } from 'node:test';
import { type CompiledQuery, Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { endRead } from '../../src/jobs/run-job.ts';
import { openStore } from '../../src/store/database.ts';
import { sqliteHotReadSql } from '../../src/store/hot-reads.ts';
import { createNodeSqliteDialect } from '../../src/store/node-sqlite.ts';
import { quotaUse } from '../../src/store/repos/quotas.ts';
import { sumUsage } from '../../src/store/repos/usage-intervals.ts';
import type { Database } from '../../src/store/schema.ts';
import { createPgDatabase, type StoreKind, testStores } from '../helpers/stores.ts';

/** Runs the reads and returns every statement they sent. */
async function statements(
  db: Kysely<Database>,
  sent: CompiledQuery[],
): Promise<Record<string, CompiledQuery[]>> {
  const of = async (run: () => Promise<unknown>) => {
    sent.length = 0;
    await run();
    return [...sent];
  };
  const month = { from: Date.UTC(2026, 0, 1), until: Date.UTC(2026, 1, 1) };
  return {
    'quota use': await of(() => quotaUse(db, 'r1')),
    'report of one reseller': await of(() => sumUsage(db, { ...month, resellerId: 'r1' })),
    'report of all resellers': await of(() => sumUsage(db, month)),
    // The job end's read of its service, with the open usage interval its change closes.
    'interval change': await of(() => endRead.first(db, { id: 's1' })),
  };
}

const TABLES = /\b(usage_intervals|jobs|services|resellers|products|reseller_quotas)\b/;

async function plans(kind: StoreKind): Promise<{ plans: Record<string, string[]>; done(): Promise<void> }> {
  const sent: CompiledQuery[] = [];
  const log = (e: { query: CompiledQuery }) => void sent.push(e.query);
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'vrp-plans-'));
    await (await openStore({ databaseUrl: undefined, dataDir: dir })).close();
    const file = join(dir, 'vrp.sqlite');
    const db = new Kysely<Database>({ dialect: createNodeSqliteDialect(file), log });
    const byRead = await statements(db, sent);
    await db.destroy();
    const raw = new DatabaseSync(file, { readOnly: true });
    const plans = Object.fromEntries(
      Object.entries(byRead).map(([read, queries]) => [
        read,
        queries
          .filter((q) => /^\s*(select|update|insert|delete)/i.test(q.sql))
          .map((q) =>
            (
              raw.prepare(`explain query plan ${q.sql}`).all(...(q.parameters as never[])) as {
                detail: string;
              }[]
            )
              .map((r) => r.detail)
              .join('; '),
          ),
      ]),
    );
    raw.close();
    return { plans, done: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const pgDb = await createPgDatabase();
  await (await openStore({ databaseUrl: pgDb.url, dataDir: '' })).close();
  const pool = new pg.Pool({ connectionString: pgDb.url, max: 1 });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log });
  const byRead = await statements(db, sent);
  await db.destroy();
  const client = new pg.Client(pgDb.url);
  await client.connect();
  // On empty tables a sequential scan is cheapest; forbidding it shows whether an index can serve.
  await client.query('set enable_seqscan = off');
  const plans: Record<string, string[]> = {};
  for (const [read, queries] of Object.entries(byRead)) {
    plans[read] = [];
    for (const q of queries.filter((q) => /^\s*(select|update|insert|delete)/i.test(q.sql))) {
      const res = await client.query(`explain ${q.sql}`, q.parameters as unknown[]);
      plans[read].push(res.rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('; '));
    }
  }
  await client.end();
  return { plans, done: () => pgDb.drop() };
}

for (const kind of testStores()) {
  test(`quota and usage reads are index ranges, never a scan of a table (${kind})`, async () => {
    const { plans: p, done } = await plans(kind);
    try {
      const scan = kind === 'sqlite' ? /\bSCAN (\w+)/g : /Seq Scan on (\w+)/g;
      for (const [read, list] of Object.entries(p)) {
        assert.ok(list.length > 0, `${read} sent statements`);
        for (const plan of list) {
          const scanned = [...plan.matchAll(scan)].map((m) => m[1]!).filter((t) => TABLES.test(t));
          assert.deepEqual(scanned, [], `${read}: ${plan}`);
        }
      }
      const all = (read: string) => p[read]!.join(' | ');
      assert.match(all('quota use'), /jobs_waiting_upgrades/);
      assert.match(all('quota use'), /services_status/);
      assert.match(all('report of one reseller'), /usage_intervals_reseller_end/);
      assert.doesNotMatch(all('report of one reseller'), /usage_intervals_end\b/);
      assert.match(all('report of all resellers'), /usage_intervals_end\b/);
      assert.match(all('interval change'), /usage_intervals_open/);
    } finally {
      await done();
    }
  });
}

test("every order's quota read is one primary-key search (sqlite)", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-plans-'));
  try {
    await (await openStore({ databaseUrl: undefined, dataDir: dir })).close();
    const raw = new DatabaseSync(join(dir, 'vrp.sqlite'), { readOnly: true });
    const plan = raw.prepare(`explain query plan ${sqliteHotReadSql().resellerQuota}`).all('r1') as {
      detail: string;
    }[];
    raw.close();
    assert.deepEqual(
      plan.map((r) => r.detail),
      ['SEARCH reseller_quotas USING INDEX sqlite_autoindex_reseller_quotas_1 (reseller_id=?)'],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
