/**
 * A conditional write and the writes that belong to it, all or none: the guard is an update by
 * key (a compare-and-set: a job's row while its worker owns it, a service's projection while its
 * job sequence is the one read); the other parts are written only if the guard changed a row.
 *
 * On PostgreSQL the whole is one statement, the guard in `WITH` and every part conditional on
 * its rows: one round trip, atomic without a transaction of its own, where a transaction took one round
 * trip for each write and two more (BEGIN, COMMIT). Its text depends only on the shape of the
 * writes (tables, columns, number of events), so it is built once per shape and sent as a named
 * statement (pg-named.ts). Elsewhere (SQLite, which has no writes in `WITH`) the guard runs
 * first and the parts after it, in the caller's transaction or in one of its own. PostgreSQL's
 * guarded writes made in one turn of the event loop, on one transaction or outside any, share a
 * statement (statement-batch.ts): written with arrays when the guard and every part are rows of
 * tables (arrayTextOf), one text whatever their number; else as copies (textOf).
 *
 * A guard can also come with a read instead (`readGated`): what a job's end reads of its service
 * once it knows it still owns the job. On PostgreSQL that read runs in the guard's statement and
 * sees the rows as they were before it: it reads other rows than the guard's.
 */
import { CompiledQuery, type Insertable, type Kysely, type Selectable, type Updateable } from 'kysely';
import { columnType } from './column-types.ts';
import { dialectOf, perStore } from './dialect-of.ts';
import { insertRow } from './insert-row.ts';
import { nameStatement } from './pg-named.ts';
import type { Database } from './schema.ts';
import {
  arraySource,
  arrayValues,
  type Gathered,
  gather,
  named,
  onRowOf,
  type RowSet,
  readsAsText,
  renumbered,
} from './statement-batch.ts';
import { keyedColumns, updateWhere } from './update-row.ts';

/** An update by key: `set` on the rows of `table` whose columns equal `where`. */
export interface KeyedUpdate<T extends keyof Database & string> {
  readonly table: T;
  readonly set: Updateable<Database[T]>;
  readonly where: Partial<Selectable<Database[T]>>;
}

/** A write that belongs to a guarded change (writeGated). */
export interface GatedPart {
  /** What its text depends on besides its values (tables, columns, counts). */
  readonly shape: string;
  /** Its values, in the order its text numbers them. */
  readonly values: readonly unknown[];
  /**
   * PostgreSQL: the part as common table expressions named from `name` (`name as (...)`, or
   * several, comma-separated), writing only if `gate` has a row, its values numbered from
   * `$first`.
   */
  cte(gate: string, name: string, first: number): string;
  /** Elsewhere: the part, run after the guard in the guard's transaction. */
  run(tx: Kysely<Database>): Promise<void>;
  /**
   * The rows it updates, as `table#id`; undefined when it updates rows it cannot name so (it is
   * then never written in one statement with other guarded writes: writeBatched).
   */
  readonly updates: readonly string[] | undefined;
  /**
   * PostgreSQL: the part as rows of one table, for the statement of several guarded writes
   * written with arrays (arrayTextOf); undefined, such writes are written as copies (textOf).
   */
  readonly rows?: PartRows;
}

/** A part of a guarded write as rows of one table (GatedPart.rows). */
export interface PartRows {
  readonly table: string;
  /** The columns a row's values go to or are compared with, in order: the arrays' types are theirs. */
  readonly columns: readonly string[];
  /** This write's rows (often one). */
  readonly rows: readonly (readonly unknown[])[];
  /**
   * The part as common table expressions named from `name`, reading `source`: the relation `v`
   * of the rows of every write of the statement (`v.c0`, `v.c1`... in the order of `columns`, and
   * `v.w`, the number of the row's write; its arrays numbered from `$first`), each written only if
   * its write's number is one of `gate`'s (column `w`).
   */
  cte(name: string, gate: string, source: string, first: number): string;
}

const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`;

/** The columns set and matched of `u`, with their values (updateWhere's rules). */
function columnsOf<T extends keyof Database & string>(u: KeyedUpdate<T>) {
  const { setting, matching } = keyedColumns(u.table, u.set, u.where);
  return { set: setting, where: matching };
}

/** `update t set a = $n, ... where k = $m and ...`, numbered from `first`. */
function updateText(table: string, set: [string, unknown][], where: [string, unknown][], first: number) {
  let n = first;
  const sets = set.map(([c]) => `${quote(c)} = $${n++}`).join(', ');
  const conditions = where.map(([c]) => `${quote(c)} = $${n++}`).join(' and ');
  return `update ${quote(table)} set ${sets} where ${conditions}`;
}

/**
 * `update t set a = v.c0, ... from <source> where t.k = v.cN and ...`: the update of the rows of
 * `source` (arrayTextOf, its arrays numbered from `$first`), their values the columns set and then
 * those matched.
 *
 * When it matches on `id`, the rows its ids name are first locked in the order of their ids: a
 * sub-select with `order by`, made once before the update's first row. The update's own plan
 * takes its rows in whatever order its join gives (a hash join on a small table: the table's
 * physical order), and two statements that take the same rows in two orders wait for each other
 * crosswise. Locked in one order, the rows of a table are never waited for crosswise by two
 * statements that each take several of them (docs/design/architecture.md). The lock is the
 * update's own (`for no key update`: a foreign key's check may still read the row), in byte order
 * (`collate "C"`: the order of the guards' rows in a text of copies too, whatever the database's
 * collation).
 *
 * Not a leased row's update (one that matches on `locked_by`: a job's, by the worker that owns
 * it): only its owner writes it, and what else takes it never waits for it (a claim, a lease
 * renewal: `skip locked`), so its order cannot make a cycle, and the lock would be a second
 * write of the row for nothing.
 */
function arrayUpdateText(
  table: string,
  set: [string, unknown][],
  where: [string, unknown][],
  source: string,
  first: number,
) {
  const sets = set.map(([c], i) => `${quote(c)} = v.c${i}`).join(', ');
  const conditions = where.map(([c], i) => `t.${quote(c)} = v.c${set.length + i}`).join(' and ');
  const id = where.findIndex(([c]) => c === 'id');
  const inOrder =
    id < 0 || where.some(([c]) => c === 'locked_by')
      ? ''
      : ` and t."id" = any(array(select l."id" from ${quote(table)} as l ` +
        `where l."id" = any($${first + set.length + id}) order by l."id" collate "C" for no key update))`;
  return `update ${quote(table)} as t set ${sets} from ${source} where ${conditions}${inOrder}`;
}

/** An update by key that belongs to the guarded change. */
export function gatedUpdate<T extends keyof Database & string>(u: KeyedUpdate<T>): GatedPart {
  const { set, where } = columnsOf(u);
  const row = rowOf(u);
  const values = [...set, ...where].map(([, v]) => v);
  return {
    shape: `update ${u.table}:${set.map(([c]) => c).join()}:${where.map(([c]) => c).join()}`,
    values,
    cte: (gate, name, first) =>
      `${name} as (${updateText(u.table, set, where, first)} and exists (select from ${gate}))`,
    run: async (tx) => {
      await updateWhere(tx, u.table, u.set, u.where);
    },
    updates: row === undefined ? undefined : [row],
    rows: {
      table: u.table,
      columns: [...set, ...where].map(([c]) => c),
      rows: [values],
      cte: (name, gate, source, first) =>
        `${name} as (${arrayUpdateText(u.table, set, where, source, first)} and v.w in (select w from ${gate}))`,
    },
  };
}

/** The row an update by key changes, as `table#id`, if it matches on its id; else undefined. */
function rowOf<T extends keyof Database & string>(u: KeyedUpdate<T>): string | undefined {
  const id: unknown = Reflect.get(u.where, 'id');
  return typeof id === 'string' ? `${u.table}#${id}` : undefined;
}

/** A row inserted with the guarded change. */
export function gatedInsert<T extends keyof Database & string>(
  table: T,
  row: Insertable<Database[T]>,
): GatedPart {
  const entries = Object.entries(row);
  return {
    shape: `insert ${table}(${entries.map(([c]) => c).join()})`,
    values: entries.map(([, v]) => v),
    // INSERT ... SELECT: the row if the guard changed a row, none if not. The parameters take
    // the types of the columns they go into, as in VALUES.
    cte: (gate, name, first) =>
      `${name} as (insert into ${quote(table)} (${entries.map(([c]) => quote(c)).join(', ')}) ` +
      `select ${entries.map((_, i) => `$${first + i}`).join(', ')} where exists (select from ${gate}))`,
    run: (tx) => insertRow(tx, table, row),
    updates: [],
    rows: {
      table,
      columns: entries.map(([c]) => c),
      rows: [entries.map(([, v]) => v)],
      cte: (name, gate, source) =>
        `${name} as (insert into ${quote(table)} (${entries.map(([c]) => quote(c)).join(', ')}) ` +
        `select ${entries.map((_, i) => `v.c${i}`).join(', ')} from ${source} where v.w in (select w from ${gate}))`,
    },
  };
}

/**
 * Whether a guarded write made outside a transaction, after a plain read, is as good as the two
 * in one transaction: the write is one atomic statement, and the read saw every commit the
 * guard could have to compare with. PostgreSQL: yes. SQLite: no; a plain read made while this
 * process has a commit group open answers from the committed file without that group's writes
 * (sqlite-group-commit.ts), so a compare-and-set after it would fail until the group committed.
 */
export function gatedWriteStandsAlone(db: Kysely<Database>): boolean {
  return dialectOf(db) === 'postgres';
}

/**
 * A guard's text (numbered from $1, without RETURNING), its values and its shape: an update by
 * key, or an update statement of its own (compiled, its values as parameters: a conditional update
 * whose values are expressions, such as a host's reservation).
 */
function guardOf<T extends keyof Database & string>(guard: KeyedUpdate<T> | CompiledQuery) {
  if ('sql' in guard) return { text: guard.sql, values: guard.parameters, shape: `guard ${guard.sql}` };
  const { set, where } = columnsOf(guard);
  return {
    text: updateText(guard.table, set, where, 1),
    values: [...set, ...where].map(([, v]) => v),
    shape: `guard ${guard.table}:${set.map(([c]) => c).join()}:${where.map(([c]) => c).join()}`,
  };
}

/** Runs the guard on its own (SQLite's way); whether it changed a row. */
async function guardChanged<T extends keyof Database & string>(
  db: Kysely<Database>,
  guard: KeyedUpdate<T> | CompiledQuery,
): Promise<boolean> {
  if ('sql' in guard) return ((await db.executeQuery(guard)).numAffectedRows ?? 0n) > 0n;
  return (await updateWhere(db, guard.table, guard.set, guard.where)).updated > 0;
}

/**
 * Runs `read` (a select, locking or not) only if `guard` changes a row, and returns whether it
 * did and the first row read. On PostgreSQL one statement: the guard in `WITH`, the read in a
 * second one that reads nothing unless the guard changed its row (so the guard's row is locked
 * first, then the rows read); those of one turn of one transaction, one statement
 * (statement-batch.ts): written with arrays when the guard is an update by key of known column
 * types and the read takes only strings (readArrayTextOf: every guard's row is then locked before
 * the rows read, as a job's start locks its jobs before their services), else as copies
 * (readTextOf). Elsewhere the guard and then the read, in the caller's transaction. Called inside
 * a transaction, as what it reads is usually written after it.
 */
export async function readGated<T extends keyof Database & string, R>(
  db: Kysely<Database>,
  guard: KeyedUpdate<T>,
  read: CompiledQuery<R>,
): Promise<{ readonly changed: boolean; readonly row: R | undefined }> {
  if (dialectOf(db) === 'postgres') {
    const g = guardOf(guard);
    const shape = `read ${g.shape};${read.sql}`;
    const values = [...g.values, ...read.parameters];
    const text = (count: number) => readTextOf(g, read, shape, count);
    const one = async () =>
      answerOf((await db.executeQuery<R & GateColumns>(CompiledQuery.raw(text(1), values))).rows, 0);
    const guardRow = rowOf(guard);
    if (guardRow === undefined) return one();
    const arrays = readArrayTextOf(db, guard, read, shape);
    if (arrays !== undefined) {
      return new Promise((resolve, reject) => {
        const gathered: Gathered<R & GateColumns> = {
          shape: `read arrays ${shape}`,
          guardRow,
          rows: [guardRow],
          values: [],
          rowSets: [
            { width: g.values.length, rows: [g.values] },
            { width: read.parameters.length, rows: [read.parameters] },
          ],
          text: () => arrays,
          settle: (rows, index) => resolve(answerOf(rows, index)),
          alone: () =>
            db
              .executeQuery<R & GateColumns>(CompiledQuery.raw(arrays, arrayValues([gathered])))
              .then((r) => resolve(answerOf(r.rows, 0)), reject),
          reject,
        };
        gather(db, gathered);
      });
    }
    return new Promise((resolve, reject) =>
      gather(db, {
        shape,
        guardRow,
        rows: [guardRow],
        values,
        text,
        settle: (rows: readonly (R & GateColumns)[], index) => resolve(answerOf(rows, index)),
        alone: () => one().then(resolve, reject),
        reject,
      }),
    );
  }
  if (!(await guardChanged(db, guard))) return { changed: false, row: undefined };
  return { changed: true, row: (await db.executeQuery(read)).rows[0] };
}

/**
 * The statement of `count` guarded reads of one shape (built once per shape and count, and
 * named): the i-th's guard is `g{i}` and its read `r{i}`, its values numbered after those of the
 * reads before it. Each answers with at least one row: `gate_i` (which read), `gate_changed`
 * (whether its guard changed a row), `gate_found` (null when the read found nothing) and the
 * read's columns.
 */
function readTextOf(
  g: ReturnType<typeof guardOf>,
  read: CompiledQuery,
  shape: string,
  count: number,
): string {
  return named(`${count} ${shape}`, () => {
    const ctes: string[] = [];
    const answers: string[] = [];
    const per = g.values.length + read.parameters.length;
    for (let i = 0; i < count; i++) {
      const first = 1 + i * per;
      ctes.push(
        `g${i} as (${renumbered(g.text, first)} returning 1)`,
        `r${i} as (select 1 as gate_found, r.* from (${renumbered(read.sql, first + g.values.length)}) as r ` +
          `where exists (select from g${i}))`,
      );
      answers.push(
        `select ${i} as gate_i, (select count(*) from g${i})::int as gate_changed, r${i}.* ` +
          `from (select) as one left join r${i} on true`,
      );
    }
    return `with ${ctes.join(', ')} ${answers.join(' union all ')}`;
  });
}

/**
 * The statement of any number of guarded reads of one shape, written with arrays: the guard `g`
 * an update of the rows of its arrays (as arrayTextOf's), the read `r` made, in a lateral join,
 * for the rows of its values whose write's guard changed a row, and only for those (so a read that
 * locks locks nothing for a guard that changed nothing); it answers as readTextOf's does, a row
 * per guard that changed a row (`gate_found`: the read's row number, null when it found none).
 * Undefined when the read takes a value that is not a string (readsAsText) or the guard's column
 * types are unknown: then copies. Built once per store and shape, and named.
 */
function readArrayTextOf<T extends keyof Database & string>(
  db: Kysely<Database>,
  guard: KeyedUpdate<T>,
  read: CompiledQuery,
  shape: string,
): string | undefined {
  if (!readsAsText(read.parameters)) return undefined;
  return arrayTextFor(db, `read ${shape}`, () => {
    const { set, where } = columnsOf(guard);
    const types = arrayTypesOf(
      db,
      guard.table,
      [...set, ...where].map(([c]) => c),
    );
    if (!types) return undefined;
    const reads = arraySource(
      read.parameters.map(() => 'text'),
      types.length + 2,
    );
    // The reads made in the order of their values (a read by key: of its key), so a read that
    // locks locks its rows in the order every statement of the store locks a table's rows in
    // (arrayUpdateText), not in its guards' order.
    const keys = read.parameters.map((_, i) => `v.c${i} collate "C"`).join(', ');
    return (
      `with g as (${arrayUpdateText(guard.table, set, where, arraySource(types, 1), 1)} returning v.w), ` +
      `r as (select k.w as gate_found, q.* from (select v.* from ${reads} ` +
      `where v.w in (select w from g) order by ${keys} offset 0) as k ` +
      `cross join lateral (${onRowOf(read.sql, 'k')}) as q) ` +
      `select g.w - 1 as gate_i, 1 as gate_changed, r.* from g left join r on r.gate_found = g.w`
    );
  });
}

/** The columns a guarded read's statement adds to the read's (readTextOf). */
interface GateColumns {
  gate_i?: number;
  gate_changed?: number;
  gate_found?: number | null;
}

/** What guarded read `index` of a statement answered (readTextOf): its guard's change, and its first row. */
function answerOf<R>(
  rows: readonly (R & GateColumns)[],
  index: number,
): { readonly changed: boolean; readonly row: R | undefined } {
  const first = rows.find((r) => Number(r.gate_i) === index);
  if (!first?.gate_changed) return { changed: false, row: undefined };
  const found = first.gate_found !== null;
  delete first.gate_i;
  delete first.gate_changed;
  delete first.gate_found;
  return { changed: true, row: found ? first : undefined };
}

/**
 * Writes `parts` (each once) only if `guard` changes a row, all or none; returns whether it did.
 * The guard is an update by key, or an update compiled as it is (guardOf).
 * Called with a transaction, everything is part of it (and of its rollback); otherwise the whole
 * commits at once. On PostgreSQL those of one turn on one transaction, or outside any, go in one
 * statement (statement-batch.ts) when every row they update is named by id (`GatedPart.updates`).
 */
export async function writeGated<T extends keyof Database & string>(
  db: Kysely<Database>,
  guard: KeyedUpdate<T> | CompiledQuery,
  parts: readonly GatedPart[],
): Promise<boolean> {
  if (dialectOf(db) === 'postgres') {
    const write: GuardedWrite = { guard: guardOf(guard), parts };
    const shape = shapeOf(write);
    const rows = rowsWritten(guard, parts);
    // Written with arrays: the copies' flat values below are not needed.
    const arrays = rows && !('sql' in guard) ? arrayTextOf(db, guard, parts, shape) : undefined;
    if (rows && arrays !== undefined) {
      const rowSets: RowSet[] = [{ width: write.guard.values.length, rows: [write.guard.values] }];
      for (const p of parts) if (p.rows) rowSets.push({ width: p.rows.columns.length, rows: p.rows.rows });
      return gatherArrays(db, { shape: `arrays ${shape}`, text: arrays, rowSets }, rows);
    }
    const values = valuesOf(write);
    const one = async () => {
      const r = await db.executeQuery<{ c0: number }>(CompiledQuery.raw(textOf(write, shape, 1), values));
      return (r.rows[0]?.c0 ?? 0) > 0;
    };
    if (!rows) return one();
    return new Promise((resolve, reject) =>
      gather(db, {
        shape,
        guardRow: rows.guardRow,
        rows: rows.all,
        values,
        text: (count) => textOf(write, shape, count),
        settle: (answers: readonly Record<string, number>[], index) =>
          resolve(Number(answers[0]?.[`c${index}`] ?? 0) > 0),
        alone: () => one().then(resolve, reject),
        reject,
      }),
    );
  }
  const write = async (tx: Kysely<Database>) => {
    if (!(await guardChanged(tx, guard))) return false;
    for (const p of parts) await p.run(tx);
    return true;
  };
  return db.isTransaction ? write(db) : db.transaction().execute(write);
}

/** A guarded write's statement written with arrays (arrayTextOf): its text and its row sets. */
interface ArrayWrite {
  readonly shape: string;
  readonly text: string;
  readonly rowSets: readonly RowSet[];
}

/**
 * `write` made at the end of this turn, in one statement with the writes of its text made on
 * `db` by then (statement-batch.ts); whether its guard changed a row.
 */
function gatherArrays(
  db: Kysely<Database>,
  write: ArrayWrite,
  rows: NonNullable<ReturnType<typeof rowsWritten>>,
): Promise<boolean> {
  const changed = (answers: readonly { changed?: number[] }[], index: number) =>
    answers[0]?.changed?.includes(index + 1) ?? false;
  return new Promise((resolve, reject) => {
    const g: Gathered<{ changed?: number[] }> = {
      shape: write.shape,
      guardRow: rows.guardRow,
      rows: rows.all,
      values: [],
      rowSets: write.rowSets,
      text: () => write.text,
      settle: (answers, index) => resolve(changed(answers, index)),
      alone: () =>
        db
          .executeQuery<{ changed?: number[] }>(CompiledQuery.raw(write.text, arrayValues([g])))
          .then((r) => resolve(changed(r.rows, 0)), reject),
      reject,
    };
    gather(db, g);
  });
}

/** The texts of guarded writes and reads written with arrays, per store and key (null: made as copies). */
const arrayTexts = perStore(() => new Map<string, string | null>());

/**
 * The text with arrays of `key` on the store of `db`, built by `build` (undefined: it cannot be
 * written so, and goes as copies) and named the first time; kept per store, since its arrays'
 * types are the store's columns'.
 */
function arrayTextFor(
  db: Kysely<Database>,
  key: string,
  build: () => string | undefined,
): string | undefined {
  const byKey = arrayTexts(db);
  let text = byKey.get(key);
  if (text === undefined) {
    text = build() ?? null;
    if (text !== null) nameStatement(text);
    byKey.set(key, text);
  }
  return text ?? undefined;
}

/**
 * The statement of any number of guarded writes of one shape, each part's rows (and the guards')
 * given as one array per column (statement-batch.ts, `arrayValues`): the guard `g` an update of
 * the rows of its arrays that answers their writes' numbers (`w`), each part written for those
 * numbers only; it answers the numbers of the writes whose guard changed a row (`changed`). One
 * text whatever the number of writes, so PostgreSQL plans it as it plans a single write's, where
 * copies make a text per number (textOf). Undefined when a part has no rows (GatedPart.rows) or
 * the store's column types are unknown (column-types.ts): then copies. Built once per store and
 * shape.
 */
function arrayTextOf<T extends keyof Database & string>(
  db: Kysely<Database>,
  guard: KeyedUpdate<T>,
  parts: readonly GatedPart[],
  shape: string,
): string | undefined {
  return arrayTextFor(db, `write ${shape}`, () => buildArrayText(db, guard, parts));
}

/**
 * The types of `columns` of `table` in the store of `db` (column-types.ts), for their arrays;
 * undefined when one is unknown, or is itself an array's (it would take an array of arrays).
 */
function arrayTypesOf(db: Kysely<Database>, table: string, columns: readonly string[]): string[] | undefined {
  const types = columns.map((c) => columnType(db, table, c));
  return types.some((t) => t === undefined || t.endsWith(']')) ? undefined : (types as string[]);
}

/** arrayTextOf's text; undefined if the write cannot be written so. */
function buildArrayText<T extends keyof Database & string>(
  db: Kysely<Database>,
  guard: KeyedUpdate<T>,
  parts: readonly GatedPart[],
): string | undefined {
  const { set, where } = columnsOf(guard);
  const guardRows: Omit<PartRows, 'rows'> = {
    table: guard.table,
    columns: [...set, ...where].map(([c]) => c),
    cte: (name, _gate, source, first) =>
      `${name} as (${arrayUpdateText(guard.table, set, where, source, first)} returning v.w)`,
  };
  const typed: { part: Omit<PartRows, 'rows'>; types: string[] }[] = [];
  for (const part of [guardRows, ...parts.map((p) => p.rows)]) {
    const types = part && arrayTypesOf(db, part.table, part.columns);
    if (!part || !types) return undefined;
    typed.push({ part, types });
  }
  let n = 1;
  const ctes = typed.map((t, i) => {
    const first = n;
    n += t.types.length + 1;
    return t.part.cte(i === 0 ? 'g' : `p${i - 1}`, 'g', arraySource(t.types, first), first);
  });
  return `with ${ctes.join(', ')} select coalesce(array_agg(w), '{}') as changed from g`;
}

/** A guarded write as PostgreSQL's text is built from it. */
interface GuardedWrite {
  readonly guard: ReturnType<typeof guardOf>;
  readonly parts: readonly GatedPart[];
}

const shapeOf = (w: GuardedWrite) => [w.guard.shape].concat(w.parts.map((p) => p.shape)).join(';');

/** The values of `w`, in the order its text numbers them: the guard's, then each part's. */
function valuesOf(w: GuardedWrite): unknown[] {
  const values = [...w.guard.values];
  for (const p of w.parts) values.push(...p.values);
  return values;
}

/**
 * The statement of `count` guarded writes of `w`'s shape (built once per shape and count, and
 * named): the i-th's guard is `g{i}` and its parts `p{i}_{j}`, its values numbered after those of
 * the writes before it; it answers for each whether its guard changed a row (`c{i}`).
 */
function textOf(w: GuardedWrite, shape: string, count: number): string {
  return named(`${count} ${shape}`, () => {
    const ctes: string[] = [];
    const answers: string[] = [];
    let first = 1;
    for (let i = 0; i < count; i++) {
      ctes.push(`g${i} as (${renumbered(w.guard.text, first)} returning 1)`);
      first += w.guard.values.length;
      w.parts.forEach((p, j) => {
        ctes.push(p.cte(`g${i}`, `p${i}_${j}`, first));
        first += p.values.length;
      });
      answers.push(`(select count(*) from g${i})::int as c${i}`);
    }
    return `with ${ctes.join(', ')} select ${answers.join(', ')}`;
  });
}

/**
 * The rows a guarded write updates, as `table#id`, when each is named so: its guard an update by
 * key that matches on an id, and each part's as its `updates` says. Else undefined: the write
 * goes alone.
 */
function rowsWritten<T extends keyof Database & string>(
  guard: KeyedUpdate<T> | CompiledQuery,
  parts: readonly GatedPart[],
): { readonly guardRow: string; readonly all: readonly string[] } | undefined {
  const guardRow = 'sql' in guard ? undefined : rowOf(guard);
  if (guardRow === undefined) return undefined;
  const all = [guardRow];
  for (const p of parts) {
    if (!p.updates) return undefined;
    all.push(...p.updates);
  }
  return { guardRow, all };
}
