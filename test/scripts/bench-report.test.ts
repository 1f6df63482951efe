/**
 * bench/RESULTS.md's table (bench/report.ts): a request scenario's row carries the rest of the
 * machine beside the server's figures (the load generator's and PostgreSQL's CPU per request,
 * the idle cores, each with the floor runs' in brackets), and the line run.ts prints says the
 * same; a figure that is not a request scenario's shows none.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { machineLine, type Row, writeResults } from '../../bench/report.ts';

const settings = {
  connections: [10],
  duration: 3,
  warmup: 1,
  repeats: 2,
  bigStore: 100_000,
  smallStore: 1_000,
};
const floorShare = { loadUs: 19.2, databaseUs: Number.NaN, idleCores: 0.234 };
const rows: Row[] = [
  {
    key: 'status',
    store: 'postgres',
    connections: 10,
    name: 'PostgreSQL, 10 conns: GET status',
    unit: 'req/s',
    server: 15_812,
    floor: 51_853,
    ratio: 0.305,
    cpuUs: { server: [40, 12], floor: [9, 4] },
    machine: { server: { loadUs: 26.4, databaseUs: 17.1, idleCores: 0.486 }, floor: floorShare },
    p50: 0,
    p99: 1.5,
    rssMb: 145,
    target: 'ratio >= 0.7',
    ok: false,
  },
  {
    key: 'status',
    store: 'sqlite',
    connections: 10,
    name: 'SQLite, 10 conns: GET status',
    unit: 'req/s',
    server: 40_715,
    floor: 51_288,
    ratio: 0.794,
    cpuUs: { server: [18, 5], floor: [10, 4] },
    machine: { server: { loadUs: 21, databaseUs: Number.NaN, idleCores: 0.19 }, floor: floorShare },
    p50: 0,
    p99: 0.5,
    rssMb: 147,
    target: 'ratio >= 0.6',
    ok: true,
  },
  { key: 'rss', name: 'SQLite: server peak RSS', unit: 'MB', server: 173, target: '<= 180', ok: true },
];

test("each request scenario's row shows the load generator's and PostgreSQL's CPU and the idle cores, server runs and floor runs", () => {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-bench-report-'));
  try {
    const file = join(dir, 'RESULTS.md');
    writeResults(file, rows, { quick: true, settings, elapsedSeconds: 10, findings: join(dir, 'none.md') });
    const lines = readFileSync(file, 'utf8').split('\n');
    const header = lines.find((l) => l.startsWith('| scenario |'))!.split(' | ');
    const cells = (name: string) => lines.find((l) => l.startsWith(`| ${name} |`))!.split(' | ');
    const at = (title: string) => header.findIndex((h) => h.startsWith(title));
    const load = at('load generator / PostgreSQL CPU µs per request');
    const idle = at('cores idle');
    assert.ok(load > 0 && idle > 0, header.join(' | '));
    assert.equal(cells('PostgreSQL, 10 conns: GET status')[load], '26 / 17 (19)');
    assert.equal(cells('PostgreSQL, 10 conns: GET status')[idle], '0.49 (0.23)');
    // No database server of its own: SQLite's row has no PostgreSQL figure.
    assert.equal(cells('SQLite, 10 conns: GET status')[load], '21 / — (19)');
    assert.equal(cells('SQLite, 10 conns: GET status')[idle], '0.19 (0.23)');
    assert.equal(cells('SQLite: server peak RSS')[load], '—');
    assert.equal(cells('SQLite: server peak RSS')[idle], '—');
    // Every row has as many cells as the header.
    for (const name of [
      'PostgreSQL, 10 conns: GET status',
      'SQLite, 10 conns: GET status',
      'SQLite: server peak RSS',
    ])
      assert.equal(cells(name).length, header.length, name);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the printed line names the same figures, and PostgreSQL only where there is one', () => {
  assert.equal(
    machineLine(rows[0]!.machine!),
    "µs/request 26 (floor runs 19), PostgreSQL's 17; cores idle 0.49 (floor runs 0.23)",
  );
  assert.equal(
    machineLine(rows[1]!.machine!),
    'µs/request 21 (floor runs 19); cores idle 0.19 (floor runs 0.23)',
  );
});
