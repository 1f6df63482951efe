import assert from 'node:assert/strict';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import { sqliteHotReadSql } from '../../src/store/hot-reads.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';

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

  test('a service and its current job are index searches', () => {
    for (const text of [sql.ownedService, sql.currentJob]) {
      const detail = plan(text);
      assert.match(detail, /^SEARCH \w+ USING (COVERING )?INDEX/, detail);
      assert.doesNotMatch(detail, /SCAN/, detail);
    }
  });
});
