/**
 * `--sql-timings DIR` (bench/run.ts): loaded into each SQLite server process with `--import`,
 * it times every statement node:sqlite runs (`run`, `all`, `get`, `exec`; the SQL text is the key) and
 * writes `DIR/sql-timings-PID.json` when the process exits: calls, milliseconds and the
 * thread's CPU milliseconds per statement. The two differ where the thread waits inside a
 * statement (the disk, a lock) or is descheduled during it (a loaded machine); the CPU figure
 * has the cost of reading the thread's clock (about a microsecond, measured at start) taken out.
 * `node bench/sql-timings.ts FILE [N]` prints the N costliest. For the findings only: it wraps
 * node:sqlite from outside; the server's code is the same with or without it.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync, StatementSync } from 'node:sqlite';

type Timings = Record<string, { calls: number; ms: number; cpuMs?: number }>;

const dir = process.env['VRP_BENCH_SQL_TIMINGS'];
if (import.meta.main) {
  const [file, n] = process.argv.slice(2);
  if (!file) throw new Error('usage: node bench/sql-timings.ts FILE [N]');
  const t = JSON.parse(readFileSync(file, 'utf8')) as Timings;
  const rows = Object.entries(t).sort((a, b) => b[1].ms - a[1].ms);
  const calls = rows.reduce((s, [, x]) => s + x.calls, 0);
  const ms = rows.reduce((s, [, x]) => s + x.ms, 0);
  const cpuMs = rows.reduce((s, [, x]) => s + (x.cpuMs ?? 0), 0);
  console.log(`${calls} statements, ${ms.toFixed(0)} ms, ${cpuMs.toFixed(0)} ms of the thread's CPU`);
  console.log('  calls   total ms   µs each   CPU µs each  statement');
  for (const [sql, x] of rows.slice(0, Number(n ?? 30)))
    console.log(
      `${String(x.calls).padStart(7)} ${x.ms.toFixed(0).padStart(10)} ${((1000 * x.ms) / x.calls).toFixed(1).padStart(9)} ${x.cpuMs === undefined ? '-'.padStart(13) : ((1000 * x.cpuMs) / x.calls).toFixed(1).padStart(13)}  ${sql.replace(/\s+/g, ' ').slice(0, 120)}`,
    );
} else if (dir) {
  const timings: Timings = {};
  // What reading the thread's CPU clock twice costs by itself (µs; the median of many).
  const empty: number[] = [];
  for (let i = 0; i < 2001; i++) {
    const c = process.threadCpuUsage();
    const d = process.threadCpuUsage(c);
    empty.push(d.user + d.system);
  }
  const clockUs = empty.sort((a, b) => a - b)[1000] ?? 0;
  // The wall time is taken inside the CPU clock's reads, so it does not count them.
  const record = (sql: string, t0: number, c0: NodeJS.CpuUsage) => {
    const wall = performance.now() - t0;
    const c = process.threadCpuUsage(c0);
    const entry = timings[sql] ?? { calls: 0, ms: 0, cpuMs: 0 };
    entry.calls++;
    entry.ms += wall;
    entry.cpuMs = (entry.cpuMs ?? 0) + Math.max(0, c.user + c.system - clockUs) / 1000;
    timings[sql] = entry;
  };
  const proto = StatementSync.prototype as unknown as Record<
    'run' | 'all' | 'get',
    (...a: unknown[]) => unknown
  >;
  for (const method of ['run', 'all', 'get'] as const) {
    const original = proto[method];
    proto[method] = function (this: StatementSync, ...params: unknown[]) {
      const c0 = process.threadCpuUsage();
      const t0 = performance.now();
      try {
        return original.apply(this, params);
      } finally {
        record(this.sourceSQL, t0, c0);
      }
    };
  }
  // Statements run without preparing (BEGIN, COMMIT, SAVEPOINT...).
  const exec = DatabaseSync.prototype.exec;
  DatabaseSync.prototype.exec = function (this: DatabaseSync, sql: string) {
    const c0 = process.threadCpuUsage();
    const t0 = performance.now();
    try {
      return exec.call(this, sql);
    } finally {
      record(sql, t0, c0);
    }
  };
  process.on('exit', () => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `sql-timings-${process.pid}.json`), JSON.stringify(timings));
  });
}
