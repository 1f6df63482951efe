/**
 * The store's own backup (`vrp db backup`) writes a file of its own beside the destination and
 * renames it into place. Two backups to one destination at once from one process id (two
 * containers' processes are both PID 1; here, one process) each write their own: both succeed,
 * and the destination is a whole backup.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, test } from 'node:test';
import { backupSqlite, readSqliteBackup } from '../../src/store/store-backup.ts';

const dir = mkdtempSync(join(tmpdir(), 'vrp-store-backup-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('two backups to one destination at once, from one process id: both succeed, the file is whole, no litter', async () => {
  const source = join(dir, 'vrp.sqlite');
  const db = new DatabaseSync(source);
  db.exec(
    'pragma journal_mode = wal; create table t (v text); create table meta (key text primary key, value text)',
  );
  const insert = db.prepare('insert into t values (?)');
  for (let i = 0; i < 2000; i++) insert.run('x'.repeat(500));
  db.close();
  const dest = join(dir, 'backups', 'vrp.backup');
  mkdirSync(join(dir, 'backups'));
  const runs = await Promise.allSettled([
    backupSqlite(source, dest),
    backupSqlite(source, dest),
    backupSqlite(source, dest),
  ]);
  assert.deepEqual(
    runs.map((r) => (r.status === 'fulfilled' ? 'ok' : String(r.reason))),
    ['ok', 'ok', 'ok'],
  );
  assert.deepEqual(readdirSync(join(dir, 'backups')), ['vrp.backup'], 'the backup alone, no part file left');
  readSqliteBackup(dest);
  const copy = new DatabaseSync(dest, { readOnly: true });
  try {
    assert.equal(copy.prepare('pragma integrity_check').get()!.integrity_check, 'ok');
    assert.equal(copy.prepare('select count(*) as n from t').get()!.n, 2000);
  } finally {
    copy.close();
  }
});
