import { type Kysely, sql } from 'kysely';
import type { MigrationResultSet } from 'kysely/migration';
import { isLockConflict } from './errors.ts';

/**
 * PostgreSQL only (SQLite runs its migrations in one BEGIN IMMEDIATE transaction of its own,
 * node-sqlite.ts): the pending migrations run in one transaction, beside the processes still
 * serving during a rolling upgrade. A lock they take in another order than a request's
 * transaction could end in a deadlock, which PostgreSQL breaks by failing one side, and the
 * failed side could be a request or a job of the serving processes. So the migrations never wait
 * long for a lock (`lock_timeout`, far below PostgreSQL's one-second deadlock check): they give
 * way, and their transaction, rolled back whole, runs again a moment later. `run` runs them on
 * the one connection it is given, where that setting holds.
 */
export async function runGivingWay(
  db: Kysely<unknown>,
  run: (conn: Kysely<unknown>) => Promise<MigrationResultSet>,
): Promise<MigrationResultSet> {
  return db.connection().execute(async (conn) => {
    await sql`SET lock_timeout = ${sql.lit(`${MIGRATION_LOCK_WAIT_MS}ms`)}`.execute(conn);
    try {
      let result = await run(conn);
      for (let attempt = 1; result.error !== undefined && isLockConflict(result.error); attempt++) {
        if (attempt >= MIGRATION_ATTEMPTS) break;
        await new Promise((r) => setTimeout(r, Math.min(2000, 25 * 2 ** attempt)));
        result = await run(conn);
      }
      return result;
    } finally {
      await sql`RESET lock_timeout`.execute(conn);
    }
  });
}

/** How long a migration waits for a lock before it gives way. */
const MIGRATION_LOCK_WAIT_MS = 200;
/** How many times the migrations give way before the start fails, naming the conflict (about a minute). */
const MIGRATION_ATTEMPTS = 40;
