import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

const database = pathToFileURL(resolve('src/store/database.ts')).href;

/** A process that opens (and so migrates) the store in `dir` and prints the tables it sees. */
function openInProcess(dir: string): Promise<{ code: number | null; out: string; err: string }> {
  const script = `
    const { openStore } = await import(${JSON.stringify(database)});
    const store = await openStore({ databaseUrl: undefined, dataDir: ${JSON.stringify(dir)} });
    const rows = await store.db.selectFrom('schema_migrations').select('name').orderBy('name').execute();
    console.log(JSON.stringify(rows.map((r) => r.name)));
    await store.close();
  `;
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.on('close', (code) => done({ code, out, err }));
  });
}

test('processes that start at once on a fresh SQLite file all migrate it, once', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-migrate-'));
  try {
    const results = await Promise.all([1, 2, 3, 4].map(() => openInProcess(dir)));
    for (const r of results) assert.equal(r.code, 0, r.err);
    const seen = results.map((r) => r.out.trim());
    assert.equal(new Set(seen).size, 1, `all see the same migrations: ${seen.join(' | ')}`);
    assert.ok(JSON.parse(seen[0]!).includes('001-initial'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
