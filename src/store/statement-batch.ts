/**
 * PostgreSQL: statements of one shape made in one turn of the event loop, on one connection or
 * transaction, sent as one. Under load many requests, job starts and job ends reach the same
 * compare-and-set in the same turn (gated-write.ts); each was a round trip, and outside a
 * transaction a commit, of its own. A statement made here waits for the end of the turn
 * (setImmediate: after this turn's I/O callbacks), and those of its shape gathered by then go
 * together: one text of n copies (8, 4 or 2: few texts per shape to name and plan), each copy
 * answering for its own caller; or, for a shape written with arrays (`rowSets`: gated-write.ts),
 * up to 32 in one text, the same whatever their number, their rows given as arrays.
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
import { byCodeUnits } from '../domain/code-unit-text.ts';
import { dialectOf } from './dialect-of.ts';
import { hiddenArrays } from './hidden-arrays.ts';
import { perTurn } from './per-turn.ts';
import { nameStatement } from './pg-named.ts';
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
  /**
   * Set when its shape's text is written with arrays (gated-write.ts): its rows of each of the
   * text's row sets. A text then takes, for each set, one array per column (its statements' rows
   * one after another) and one more giving each row's statement (1 for the text's first); it is
   * one text whatever the number of statements (`text` ignores its count), and `values` is unused.
   */
  readonly rowSets?: readonly RowSet[];
  /** The text of `count` statements of its shape, their values numbered one copy after another. */
  text(count: number): string;
  /** Answers its caller from the rows of the text it was copy `index` of. */
  settle(rows: readonly Row[], index: number): void;
  /** Made alone: its own statement, its caller answered. */
  alone(): Promise<void>;
  /** Its caller gets `err`. */
  reject(err: unknown): void;
}

/** A statement's rows of one of its text's row sets (Gathered.rowSets). */
export interface RowSet {
  /** Values per row. */
  readonly width: number;
  readonly rows: readonly (readonly unknown[])[];
}

/** The parameters of a text written with arrays for `batch`, statements of one shape (Gathered.rowSets). */
export function arrayValues(batch: readonly Gathered[]): unknown[] {
  const values: unknown[] = [];
  for (const [s, { width }] of (batch[0]?.rowSets ?? []).entries()) {
    const rows = batch.map((g) => g.rowSets?.[s]?.rows ?? []);
    for (let c = 0; c < width; c++) values.push(rows.flatMap((rs) => rs.map((r) => r[c])));
    values.push(rows.flatMap((rs, i) => rs.map(() => i + 1)));
  }
  return values;
}

/**
 * The relation `v` of a text written with arrays: one array parameter per type in `types`, then
 * one of the rows' statement numbers, numbered from `$first`; a row of `v` has the columns `c0`,
 * `c1`... and `w`; the arrays out of the planner's sight (hidden-arrays.ts), so that it keeps one
 * plan for the text.
 */
export function arraySource(types: readonly string[], first: number): string {
  return hiddenArrays([...types, 'int4'], first, `v(${types.map((_, i) => `c${i}, `).join('')}w)`);
}

/**
 * Whether a read can be made with arrays (readTogether, readGated): every value it takes is a
 * string, so each goes in a `text` array; what the store's reads by key compare them with are its
 * ids and names, all `text`. A read that takes anything else is made as copies.
 */
export const readsAsText = (values: readonly unknown[]) => values.every((v) => typeof v === 'string');

/** `text`, a read, with its placeholders `$n` read from the row `alias` of a relation made by arraySource (`alias.c{n-1}`). */
export const onRowOf = (text: string, alias: string) =>
  text.replace(/\$(\d+)/g, (_, n: string) => `${alias}.c${Number(n) - 1}`);

/** Most statements in one text of copies. */
const MAX_BATCH = 8;
/** Most statements in one text written with arrays (whose text does not grow with them). */
const MAX_ARRAY_BATCH = 32;

const most = (g: Gathered) => (g.rowSets ? MAX_ARRAY_BATCH : MAX_BATCH);

type Connection = Kysely<Database>;

/** Makes `g` at the end of this turn, with the statements of its shape made on `db` by then. */
export const gather: <Row>(db: Connection, g: Gathered<Row>) => void = perTurn(flush);

/** The turn's statements, gathered by shape into texts whose statements share no row. */
function flush(db: Connection, all: readonly Gathered[]): void {
  const groups: { shape: string; rows: Set<string>; members: Gathered[] }[] = [];
  for (const g of all) {
    const group = groups.find(
      (x) => x.shape === g.shape && x.members.length < most(g) && !g.rows.some((r) => x.rows.has(r)),
    );
    if (!group) {
      groups.push({ shape: g.shape, rows: new Set(g.rows), members: [g] });
      continue;
    }
    group.members.push(g);
    for (const r of g.rows) group.rows.add(r);
  }
  for (const { members } of groups) {
    members.sort((a, b) => byCodeUnits(a.guardRow, b.guardRow));
    // Copies: texts of 8, 4, 2 and 1 statements, few to name and plan. Arrays: one text for all.
    for (let at = 0; at < members.length; ) {
      const size = members[0]?.rowSets ? members.length : 2 ** Math.floor(Math.log2(members.length - at));
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
    const values = head.rowSets ? arrayValues(batch) : batch.flatMap((g) => g.values);
    rows = (await db.executeQuery(CompiledQuery.raw(text, values))).rows;
  } catch (err) {
    if (db.isTransaction) for (const g of batch) g.reject(err);
    else await Promise.all(batch.map((g) => g.alone()));
    return;
  }
  for (const [i, g] of batch.entries()) g.settle(rows, i);
}

const texts = new Map<string, string>();

/** The text of `key`, built by `build` the first time and named (pg-named.ts). */
export function named(key: string, build: () => string): string {
  let text = texts.get(key);
  if (text === undefined) {
    text = build();
    texts.set(key, text);
    nameStatement(text);
  }
  return text;
}

/** A statement's placeholders `$n` numbered from `first` instead of 1 (PostgreSQL's). */
export const renumbered = (text: string, first: number) =>
  text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + first - 1}`);

/**
 * The rows of `query`, a read (of one row by key, usually), made on PostgreSQL with the reads of
 * its text made on `db` in this turn: one statement, each row marked with its read's place
 * (`gate_i`, taken off again). Elsewhere made at once. `key`: what it reads (the order of the
 * reads in a text). A read whose values are all strings (readsAsText) is written with arrays:
 * the read in a lateral join on the rows of its values, one text whatever the number of reads (up
 * to 32), whose plan PostgreSQL keeps; any other as copies, `union all` of theirs, a text per
 * number (8, 4, 2), which it went on planning at each run (bench/FINDINGS.md).
 */
export function readTogether<R>(db: Connection, query: CompiledQuery<R>, key: string): Promise<R[]> {
  if (dialectOf(db) !== 'postgres') return db.executeQuery(query).then((r) => [...r.rows]);
  const n = query.parameters.length;
  const arrays = readsAsText(query.parameters);
  const text = (count: number) =>
    named(`read ${count} ${query.sql}`, () =>
      Array.from(
        { length: count },
        (_, i) => `select ${i} as gate_i, q${i}.* from (${renumbered(query.sql, 1 + i * n)}) as q${i}`,
      ).join(' union all '),
    );
  const own = (rows: readonly (R & { gate_i?: number })[], index: number) =>
    rows
      .filter((r) => Number(r.gate_i) === index)
      .map((r) => {
        delete r.gate_i;
        return r;
      });
  const arrayText = () =>
    named(
      `read arrays ${query.sql}`,
      () =>
        `select v.w - 1 as gate_i, q.* from ${arraySource(Array(n).fill('text'), 1)} ` +
        `cross join lateral (${onRowOf(query.sql, 'v')}) as q`,
    );
  return new Promise((resolve, reject) =>
    gather(db, {
      shape: `${arrays ? 'read arrays' : 'read'} ${query.sql}`,
      guardRow: key,
      rows: [],
      values: query.parameters,
      ...(arrays && { rowSets: [{ width: n, rows: [query.parameters] }] }),
      text: arrays ? arrayText : text,
      settle: (rows: readonly (R & { gate_i?: number })[], index) => resolve(own(rows, index)),
      alone: () =>
        db
          .executeQuery<R & { gate_i?: number }>(CompiledQuery.raw(text(1), [...query.parameters]))
          .then((r) => resolve(own(r.rows, 0)), reject),
      reject,
    }),
  );
}

/**
 * `query`, an update without RETURNING of the one row `row` (`table#id`), made on PostgreSQL with
 * the updates of its text made on `db` in this turn: one statement, each update in `WITH`.
 * Elsewhere made at once. Resolves to the number of rows it changed.
 */
export function updateTogether(db: Connection, query: CompiledQuery, row: string): Promise<number> {
  if (dialectOf(db) !== 'postgres')
    return db.executeQuery(query).then((r) => Number(r.numAffectedRows ?? 0n));
  const n = query.parameters.length;
  const text = (count: number) =>
    named(`update ${count} ${query.sql}`, () => {
      const ctes = Array.from(
        { length: count },
        (_, i) => `u${i} as (${renumbered(query.sql, 1 + i * n)} returning 1)`,
      );
      const answers = Array.from({ length: count }, (_, i) => `(select count(*) from u${i})::int as c${i}`);
      return `with ${ctes.join(', ')} select ${answers.join(', ')}`;
    });
  const changed = (rows: readonly Record<string, number>[], index: number) =>
    Number(rows[0]?.[`c${index}`] ?? 0);
  return new Promise((resolve, reject) =>
    gather(db, {
      shape: `update ${query.sql}`,
      guardRow: row,
      rows: [row],
      values: query.parameters,
      text,
      settle: (rows: readonly Record<string, number>[], index) => resolve(changed(rows, index)),
      alone: () =>
        db
          .executeQuery<Record<string, number>>(CompiledQuery.raw(text(1), [...query.parameters]))
          .then((r) => resolve(changed(r.rows, 0)), reject),
      reject,
    }),
  );
}
