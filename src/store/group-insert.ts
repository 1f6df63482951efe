/**
 * Group commit for inserts that need no transaction of their own (a new order without an
 * Idempotency-Key): rows arriving while the database is busy are written together by one
 * multi-row insert, so a burst of orders pays for one statement and one commit instead of one each. Each caller's
 * promise settles after the commit that holds its row. The first row waits one turn of the
 * event loop (setImmediate) for company; rows arriving during a write form the next group. If the group's transaction fails,
 * every row is tried again alone, so one bad row fails only its own caller.
 */
import type { Insertable, Kysely } from 'kysely';
import { insertRow, insertRows } from './insert-row.ts';

/** Rows per statement at most: bounds the write lock's time and the statement's parameters (64 x 27 columns). */
const MAX_GROUP = 64;

export interface GroupInserter<Row> {
  insert(row: Row): Promise<void>;
}

export function createGroupInserter<DB, T extends keyof DB & string>(
  db: Kysely<DB>,
  table: T,
): GroupInserter<Insertable<DB[T]>> {
  type Row = Insertable<DB[T]>;
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
        // One statement: all the rows or none, in one commit.
        await insertRows(
          db,
          table,
          group.map((w) => w.row),
        );
        for (const w of group) w.resolve();
        return;
      } catch {
        // Find the row at fault: each alone, below.
      }
    }
    for (const w of group) {
      try {
        await insertRow(db, table, w.row);
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
