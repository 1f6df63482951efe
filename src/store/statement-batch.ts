/**
 * PostgreSQL: statements of one shape made in one turn of the event loop, on one connection or
 * transaction, sent as one. Under load many requests, job starts and job ends reach the same
 * compare-and-set in the same turn (gated-write.ts); each was a round trip, and outside a
 * transaction a commit, of its own. A statement made here waits for the end of the turn
 * (setImmediate: after this turn's I/O callbacks), and those of its shape gathered by then go
 * together: one text of n copies (16, 8, 4 or 2: few texts per shape to name and plan), each copy
 * answering for its own caller.
 *
 * The statements of one text update no row in common: two updates of one row in one statement
 * leave only one of them written (PostgreSQL's rule), so a statement that shares a row with those
 * gathered goes in another text. A text's copies take their rows' locks in the order of their
 * guards' rows, as every text of the shape does. If the text fails outside a transaction, each
 * statement is made again alone, so one that cannot be made fails only its own caller; inside a
 * transaction (aborted by the failure) each caller gets the error, and the transaction's owner
 * decides (transaction-group.ts makes each body again alone).
 */
import { CompiledQuery, type Kysely } from 'kysely';
import { perTurn } from './per-turn.ts';
import type { Database } from './schema.ts';

/** A statement waiting for its turn's end; `Row`, the rows of its text. */
export interface Gathered<Row = unknown> {
  /** What its text depends on besides its values: only statements of one shape go together. */
  readonly shape: string;
  /** The row of its guard (`table#id`): the order of the copies in a text. */
  readonly guardRow: string;
  /** Every row it updates (`table#id`), its guard's included. */
  readonly rows: readonly string[];
  /** Its values, in the order its copy's text numbers them (the copies' one after another). */
  readonly values: readonly unknown[];
  /** The text of `count` statements of its shape, their values numbered one copy after another. */
  text(count: number): string;
  /** Answers its caller from the rows of the text it was copy `index` of. */
  settle(rows: readonly Row[], index: number): void;
  /** Made alone: its own statement, its caller answered. */
  alone(): Promise<void>;
  /** Its caller gets `err`. */
  reject(err: unknown): void;
}

/** Most statements in one text. */
const MAX_BATCH = 16;

type Connection = Kysely<Database>;

/** Makes `g` at the end of this turn, with the statements of its shape made on `db` by then. */
export const gather: <Row>(db: Connection, g: Gathered<Row>) => void = perTurn(flush);

/** The turn's statements, gathered by shape into texts whose statements share no row. */
function flush(db: Connection, all: readonly Gathered[]): void {
  const groups: { shape: string; rows: Set<string>; members: Gathered[] }[] = [];
  for (const g of all) {
    const group = groups.find(
      (x) => x.shape === g.shape && x.members.length < MAX_BATCH && !g.rows.some((r) => x.rows.has(r)),
    );
    if (!group) {
      groups.push({ shape: g.shape, rows: new Set(g.rows), members: [g] });
      continue;
    }
    group.members.push(g);
    for (const r of g.rows) group.rows.add(r);
  }
  for (const { members } of groups) {
    members.sort((a, b) => (a.guardRow < b.guardRow ? -1 : a.guardRow > b.guardRow ? 1 : 0));
    for (let at = 0; at < members.length; ) {
      const size = 2 ** Math.floor(Math.log2(members.length - at));
      void together(db, members.slice(at, at + size));
      at += size;
    }
  }
}

/** One text for `batch` (one shape); each caller answered, or given its own error. */
async function together(db: Connection, batch: readonly Gathered[]): Promise<void> {
  const [head] = batch;
  if (head === undefined) return;
  if (batch.length === 1) return head.alone();
  let rows: readonly unknown[];
  try {
    const text = head.text(batch.length);
    const values = batch.flatMap((g) => g.values);
    rows = (await db.executeQuery(CompiledQuery.raw(text, values))).rows;
  } catch (err) {
    if (db.isTransaction) for (const g of batch) g.reject(err);
    else await Promise.all(batch.map((g) => g.alone()));
    return;
  }
  for (const [i, g] of batch.entries()) g.settle(rows, i);
}
