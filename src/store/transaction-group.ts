/**
 * PostgreSQL: transactions begun in one turn of the event loop share one. Under load many jobs
 * end in the same turn, and each end was a transaction of four round trips (BEGIN, its guarded
 * read, its guarded write, COMMIT). Their bodies now run together in one transaction: their
 * guarded reads and writes of one shape go in one statement each (statement-batch.ts), and one
 * COMMIT makes them all durable at once.
 *
 * A body here must be a transaction's work and nothing else (it may run twice: see below), and
 * say everything through what it writes and returns. If any body of a group fails, the group's
 * transaction is rolled back, and each body runs again alone, in a transaction of its own: so one
 * that fails fails only its own caller, as it would have alone. If the transaction itself fails
 * (its BEGIN or its COMMIT: a lost connection), every caller gets that error, as each would have
 * from a transaction of its own. Every body of a group runs to its end before the group decides (a body's statements
 * after another's failure fail too, the transaction being aborted), so none runs on outside the
 * transaction. SQLite's transactions are gathered by its group commit instead
 * (sqlite-group-commit.ts): there a body runs in a plain transaction.
 */
import type { Kysely } from 'kysely';
import { dialectOf } from './dialect-of.ts';
import { perTurn } from './per-turn.ts';
import type { Database } from './schema.ts';

/** Most bodies in one transaction. */
const MAX_GROUP = 16;

interface Waiting<T = unknown> {
  body(tx: Kysely<Database>): Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

/** Bodies begun in this turn of the event loop, per store, sixteen to a transaction. */
const begin = perTurn((db: Kysely<Database>, all: Waiting[]) => {
  for (let at = 0; at < all.length; at += MAX_GROUP) void together(db, all.slice(at, at + MAX_GROUP));
});

/**
 * Runs `body` in a transaction, on PostgreSQL shared with the bodies begun in this turn; given a
 * transaction, in that one.
 */
export function inGroupTransaction<T>(
  db: Kysely<Database>,
  body: (tx: Kysely<Database>) => Promise<T>,
): Promise<T> {
  if (db.isTransaction) return body(db);
  if (dialectOf(db) !== 'postgres') return db.transaction().execute(body);
  return new Promise<T>((resolve, reject) => {
    const w: Waiting<T> = { body, resolve, reject };
    begin(db, w);
  });
}

/** Thrown inside a group's transaction to roll it back when a body failed. */
class BodyFailed extends Error {}

/** One transaction for `group`, or, if any of it fails, one for each body. */
async function together(db: Kysely<Database>, group: readonly Waiting[]): Promise<void> {
  const alone = (w: Waiting) => db.transaction().execute(w.body).then(w.resolve, w.reject);
  const [head] = group;
  if (head === undefined) return;
  if (group.length === 1) return alone(head);
  let values: unknown[];
  let bodyFailed = false;
  try {
    values = await db.transaction().execute(async (tx) => {
      const settled = await Promise.allSettled(group.map((w) => w.body(tx)));
      return settled.map((s) => {
        if (s.status === 'fulfilled') return s.value;
        bodyFailed = true;
        throw new BodyFailed();
      });
    });
  } catch (err) {
    // A body failed: each again alone. The transaction itself failed (its BEGIN or COMMIT, a
    // lost connection, whose commit may even have happened): each caller hears it, as a
    // transaction of its own would have told it.
    if (bodyFailed) await Promise.all(group.map(alone));
    else for (const w of group) w.reject(err);
    return;
  }
  for (const [i, w] of group.entries()) w.resolve(values[i]);
}
