import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { sql } from 'kysely';
import { freePort } from '../../scripts/postgres.ts';
import { openStore } from '../../src/store/database.ts';
import { type Exited, runToExit } from '../helpers/run-to-exit.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'vrp-open-failure-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));

/** Every process that opens the store: the server, the worker, and CLI commands. */
const STARTS: readonly string[][] = [
  ['src/main.ts'],
  ['bin/vrp.js', 'serve', '--worker-only'],
  ['bin/vrp.js', 'migrate'],
  ['bin/vrp.js', 'reseller', 'list'],
];

/** One line naming the place and the cause, exit 1, no stack, no password. */
function assertOneLine(r: Exited, place: string, cause: RegExp, label: string): void {
  assert.equal(r.code, 1, `${label}: ${r.stderr}`);
  const lines = r.stderr.trim().split('\n');
  assert.equal(lines.length, 1, `${label} prints one line:\n${r.stderr}`);
  assert.ok(lines[0]!.startsWith('vrp: cannot open the store'), `${label}: ${lines[0]}`);
  assert.ok(lines[0]!.includes(place), `${label} names ${place}: ${lines[0]}`);
  assert.match(lines[0]!, cause, label);
  assert.ok(!r.stderr.includes('hunter2'), `${label} never prints the password`);
}

describe('a store that cannot be opened', () => {
  test('a closed port: server, worker and CLI say "connection refused" and where, in one line', async () => {
    const port = await freePort();
    const env = { VRP_DATA_DIR: dataDir, VRP_DATABASE_URL: `postgres://vrp:hunter2@127.0.0.1:${port}/vrpdb` };
    const exits = await Promise.all(STARTS.map((args) => runToExit(args, env)));
    for (const [i, args] of STARTS.entries()) {
      assertOneLine(exits[i]!, `PostgreSQL 127.0.0.1:${port}/vrpdb`, /connection refused/, args.join(' '));
    }
  });

  test('an unexpected failure keeps its stack', async () => {
    const dir = mkdtempSync(join(dataDir, 'future-'));
    const store = await openStore({ databaseUrl: undefined, dataDir: dir });
    // A store that records a migration this version does not know and that is older than its
    // newest (no newer version made it): Kysely refuses it; that is no connection problem.
    await sql`insert into schema_migrations (name, timestamp) values ('000-unknown', 'now')`.execute(
      store.db,
    );
    await store.close();
    const r = await runToExit(['bin/vrp.js', 'migrate'], { VRP_DATA_DIR: dir });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /000-unknown/);
    assert.match(r.stderr, /\n\s+at /, 'a stack');
  });
});

describe('a PostgreSQL store that cannot be opened', {
  skip: !process.env['VRP_TEST_PG_URL'] && 'needs npm test (PostgreSQL)',
}, () => {
  const server = () => new URL(process.env['VRP_TEST_PG_URL']!);

  test('an unknown database is named, in one line', async () => {
    const url = server();
    url.pathname = '/vrp_absent_db';
    url.password = 'hunter2';
    const place = `PostgreSQL 127.0.0.1:${url.port}/vrp_absent_db`;
    const env = { VRP_DATA_DIR: dataDir, VRP_DATABASE_URL: url.toString() };
    const exits = await Promise.all(STARTS.map((args) => runToExit(args, env)));
    for (const [i, args] of STARTS.entries()) {
      assertOneLine(exits[i]!, place, /database "vrp_absent_db" does not exist/, args.join(' '));
    }
  });

  test('an unknown role (authentication) is named, in one line', async () => {
    const url = server();
    url.username = 'vrp_absent_role';
    url.password = 'hunter2';
    const r = await runToExit(['bin/vrp.js', 'migrate'], {
      VRP_DATA_DIR: dataDir,
      VRP_DATABASE_URL: url.toString(),
    });
    assertOneLine(r, `127.0.0.1:${url.port}/`, /role "vrp_absent_role" does not exist/, 'migrate');
  });
});
