/**
 * Group commit for inserts that need no transaction of their own (a new order without an
 * Idempotency-Key): rows arriving while the database is busy are written together by one
 * multi-row insert per table, so a burst of orders pays for one statement per table and one commit instead of one each. Each caller's
 * promise settles after the commit that holds its rows. The first set waits one turn of the
 * event loop (setImmediate) for company; sets arriving during a write form the next group. If the group's write fails,
 * every set is tried again alone, so one bad row fails only its own caller.
 *
 * A caller may give rows of several tables that belong together (an order's service and its
 * audit entry): they are written all or none: in one statement where the database can insert
 * into several tables at once (PostgreSQL), else in one transaction (a single table needs
 * neither, its one statement is atomic).
 */
import type { Insertable, Kysely } from 'kysely';
import type { DialectFeatures } from './database.ts';
import { insertRows, insertTablesInOneStatement, type TableRows } from './insert-row.ts';

/** Rows per statement at most: bounds the write lock's time and the statement's parameters (64 x 27 columns). */
const MAX_GROUP = 64;

export interface GroupInserter<Row> {
  insert(row: Row): Promise<void>;
}

/** Rows that belong together, at most one per table: written all or none. */
export type RowSet<DB> = { readonly [T in keyof DB & string]?: Insertable<DB[T]> };

/** Group commit of one table's rows. */
export function createGroupInserter<DB, T extends keyof DB & string>(
  db: Kysely<DB>,
  features: Pick<DialectFeatures, 'writableCtes'>,
  table: T,
): GroupInserter<Insertable<DB[T]>> {
  const writer = createGroupWriter(db, features);
  return { insert: (row) => writer.insert({ [table]: row } as RowSet<DB>) };
}

/**
 * Writes sets of rows: each table's rows in one statement; several tables all or none, in one
 * statement where the database allows it, else in a transaction.
 */
async function writeSets<DB>(
  db: Kysely<DB>,
  features: Pick<DialectFeatures, 'writableCtes'>,
  sets: readonly RowSet<DB>[],
): Promise<void> {
  const tables = [...new Set(sets.flatMap((s) => Object.keys(s)))] as (keyof DB & string)[];
  const writes = tables.map(
    (table) =>
      ({
        table,
        rows: sets.map((s) => s[table]).filter((r) => r !== undefined),
      }) as TableRows<DB>,
  );
  if (writes.length > 1 && features.writableCtes) return insertTablesInOneStatement(db, writes);
  const write = async (conn: Kysely<DB>) => {
    for (const w of writes) await insertRows(conn, w.table, w.rows as Insertable<DB[typeof w.table]>[]);
  };
  if (writes.length <= 1) await write(db);
  else await db.transaction().execute(write);
}

/** Group commit of sets of rows (see the top of this file). */
export function createGroupWriter<DB>(
  db: Kysely<DB>,
  features: Pick<DialectFeatures, 'writableCtes'>,
): GroupInserter<RowSet<DB>> {
  type Row = RowSet<DB>;
  interface Waiting {
    row: Row;
    resolve(): void;
    reject(err: unknown): void;
  }
  let queue: Waiting[] = [];
  /** A drain is scheduled or running. */
  let writing = false;

  async function writeGroup(group: Waiting[]): Promise<void> {
    if (group.length > 1) {
      try {
        // One statement per table: all the rows or none, in one commit.
        await writeSets(
          db,
          features,
          group.map((w) => w.row),
        );
        for (const w of group) w.resolve();
        return;
      } catch {
        // Find the set at fault: each alone, below.
      }
    }
    for (const w of group) {
      try {
        await writeSets(db, features, [w.row]);
        w.resolve();
      } catch (err) {
        w.reject(err);
      }
    }
  }

  /** One writer at a time; whatever queued meanwhile is the next group. */
  async function drain(): Promise<void> {
    try {
      while (queue.length > 0) {
        const group = queue.slice(0, MAX_GROUP);
        queue = queue.slice(group.length);
        await writeGroup(group);
      }
    } finally {
      writing = false;
    }
  }

  return {
    insert(row) {
      return new Promise<void>((resolve, reject) => {
        queue.push({ row, resolve, reject });
        if (writing) return;
        // SQLite writes block the event loop: start after this turn's I/O, so the requests
        // already received join the group instead of each committing alone.
        writing = true;
        setImmediate(() => void drain());
      });
    },
  };
}
