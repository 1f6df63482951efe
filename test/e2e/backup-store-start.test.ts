/**
 * The backup store at start: a store that does not answer gets one line naming the setting and
 * the server serves on; a malformed one stops the start with one line naming it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { freePort } from '../../scripts/postgres.ts';
import { waitUntil } from '../helpers/budget.ts';
import { startServer } from '../helpers/server-process.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'vrp-store-start-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

test('a backup store that does not answer at start: one line naming VRP_BACKUP_STORE, the API serves', async () => {
  const closed = await freePort();
  const server = await startServer({
    VRP_DATA_DIR: dataDir,
    VRP_BACKUP_STORE: 's3://backups/vrp',
    VRP_BACKUP_S3_ENDPOINT: `http://127.0.0.1:${closed}`,
    VRP_BACKUP_S3_ACCESS_KEY_ID: 'AKIAEXAMPLE',
    VRP_BACKUP_S3_SECRET_ACCESS_KEY: 'not-a-real-secret-4242',
  });
  try {
    const line = await waitUntil('the backup store warning', () =>
      server
        .output()
        .split('\n')
        .find((l) => l.includes('VRP_BACKUP_STORE=')),
    );
    assert.match(
      line,
      /the backup store \(VRP_BACKUP_STORE=s3:\/\/backups\/vrp at http:\/\/127\.0\.0\.1:\d+\) does not answer: .*connection refused/,
    );
    assert.ok(!server.output().includes('not-a-real-secret-4242'), 'no secret in the output');
    assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
  } finally {
    await server.stop();
  }
});

test('a malformed backup store stops the start with one line naming the setting', () => {
  const r = spawnSync(process.execPath, ['src/main.ts'], {
    env: { ...process.env, VRP_DATA_DIR: dataDir, VRP_BACKUP_STORE: 'ftp://box/backups' },
    encoding: 'utf8',
  });
  assert.notEqual(r.status, 0);
  const lines = r.stderr.trim().split('\n');
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0] ?? '', /VRP_BACKUP_STORE/);
});
