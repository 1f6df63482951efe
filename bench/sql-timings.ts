/**
 * `--sql-timings DIR` (bench/run.ts): loaded into each SQLite server process with `--import`,
 * it times every statement node:sqlite runs (`run`, `all`, `get`, `exec`; the SQL text is the key) and
 * writes `DIR/sql-timings-PID.json` when the process exits: calls and milliseconds per
 * statement. `node bench/sql-timings.ts FILE [N]` prints the N costliest. For the findings only:
 * it wraps node:sqlite from outside; the server's code is the same with or without it.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, StatementSync } from 'node:sqlite';

type Timings = Record<string, { calls: number; ms: number }>;

const dir = process.env['VRP_BENCH_SQL_TIMINGS'];
if (import.meta.main) {
  const [file, n] = process.argv.slice(2);
  if (!file) throw new Error('usage: node bench/sql-timings.ts FILE [N]');
  const t = JSON.parse(readFileSync(file, 'utf8')) as Timings;
  const rows = Object.entries(t).sort((a, b) => b[1].ms - a[1].ms);
  const calls = rows.reduce((s, [, x]) => s + x.calls, 0);
  const ms = rows.reduce((s, [, x]) => s + x.ms, 0);
  console.log(`${calls} statements, ${ms.toFixed(0)} ms`);
  for (const [sql, x] of rows.slice(0, Number(n ?? 30)))
    console.log(
      `${String(x.calls).padStart(7)} ${x.ms.toFixed(0).padStart(6)} ms ${((1000 * x.ms) / x.calls).toFixed(1).padStart(8)} µs  ${sql.replace(/\s+/g, ' ').slice(0, 140)}`,
    );
} else if (dir) {
  const timings: Timings = {};
  const proto = StatementSync.prototype as unknown as Record<
    'run' | 'all' | 'get',
    (...a: unknown[]) => unknown
  >;
  for (const method of ['run', 'all', 'get'] as const) {
    const original = proto[method];
    proto[method] = function (this: StatementSync, ...params: unknown[]) {
      const t0 = performance.now();
      try {
        return original.apply(this, params);
      } finally {
        const entry = timings[this.sourceSQL] ?? { calls: 0, ms: 0 };
        entry.calls++;
        entry.ms += performance.now() - t0;
        timings[this.sourceSQL] = entry;
      }
    };
  }
  // Statements run without preparing (BEGIN, COMMIT, SAVEPOINT...).
  const exec = DatabaseSync.prototype.exec;
  DatabaseSync.prototype.exec = function (this: DatabaseSync, sql: string) {
    const t0 = performance.now();
    try {
      return exec.call(this, sql);
    } finally {
      const entry = timings[sql] ?? { calls: 0, ms: 0 };
      entry.calls++;
      entry.ms += performance.now() - t0;
      timings[sql] = entry;
    }
  };
  process.on('exit', () => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `sql-timings-${process.pid}.json`), JSON.stringify(timings));
  });
}
