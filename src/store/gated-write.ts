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
 * first and the parts after it, in the caller's transaction or in one of its own.
 *
 * A guard can also come with a read instead (`readGated`): what a job's end reads of its service
 * once it knows it still owns the job. On PostgreSQL that read runs in the guard's statement and
 * sees the rows as they were before it: it reads other rows than the guard's.
 */
import { CompiledQuery, type Insertable, type Kysely, type Selectable, type Updateable } from 'kysely';
import { dialectOf } from './dialect-of.ts';
import { insertRow } from './insert-row.ts';
import { nameStatement } from './pg-named.ts';
import type { Database } from './schema.ts';
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

/** An update by key that belongs to the guarded change. */
export function gatedUpdate<T extends keyof Database & string>(u: KeyedUpdate<T>): GatedPart {
  const { set, where } = columnsOf(u);
  return {
    shape: `update ${u.table}:${set.map(([c]) => c).join()}:${where.map(([c]) => c).join()}`,
    values: [...set, ...where].map(([, v]) => v),
    cte: (gate, name, first) =>
      `${name} as (${updateText(u.table, set, where, first)} and exists (select from ${gate}))`,
    run: async (tx) => {
      await updateWhere(tx, u.table, u.set, u.where);
    },
  };
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

const texts = new Map<string, string>();

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

/** A statement's placeholders `$n` numbered from `first` instead of 1 (PostgreSQL's). */
const renumbered = (text: string, first: number) =>
  text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + first - 1}`);

/**
 * Runs `read` (a select, locking or not) only if `guard` changes a row, and returns whether it
 * did and the first row read. On PostgreSQL one statement: the guard in `WITH`, the read in a
 * second one that reads nothing unless the guard changed its row (so the guard's row is locked
 * first, then the rows read). Elsewhere the guard and then the read, in the caller's transaction.
 * Called inside a transaction, as what it reads is usually written after it.
 */
export async function readGated<T extends keyof Database & string, R>(
  db: Kysely<Database>,
  guard: KeyedUpdate<T>,
  read: CompiledQuery<R>,
): Promise<{ readonly changed: boolean; readonly row: R | undefined }> {
  if (dialectOf(db) === 'postgres') {
    const g = guardOf(guard);
    const values = g.values;
    const shape = `read ${g.shape};${read.sql}`;
    let text = texts.get(shape);
    if (text === undefined) {
      text =
        `with g as (${g.text} returning 1), ` +
        `r as (select 1 as gate_found, r.* from (${renumbered(read.sql, values.length + 1)}) as r ` +
        'where exists (select from g)) ' +
        'select (select count(*) from g)::int as gate_changed, r.* from (select) as one left join r on true';
      texts.set(shape, text);
      nameStatement(text);
    }
    const r = await db.executeQuery<R & { gate_changed: number; gate_found: number | null }>(
      CompiledQuery.raw(text, [...values, ...read.parameters]),
    );
    const first: (R & { gate_changed?: number; gate_found?: number | null }) | undefined = r.rows[0];
    if (!first?.gate_changed) return { changed: false, row: undefined };
    const found = first.gate_found !== null;
    delete first.gate_changed;
    delete first.gate_found;
    return { changed: true, row: found ? first : undefined };
  }
  if (!(await guardChanged(db, guard))) return { changed: false, row: undefined };
  return { changed: true, row: (await db.executeQuery(read)).rows[0] };
}

/**
 * Writes `parts` (each once) only if `guard` changes a row, all or none; returns whether it did.
 * The guard is an update by key, or an update compiled as it is (guardOf).
 * Called with a transaction, everything is part of it (and of its rollback); otherwise the whole
 * commits at once.
 */
export async function writeGated<T extends keyof Database & string>(
  db: Kysely<Database>,
  guard: KeyedUpdate<T> | CompiledQuery,
  parts: readonly GatedPart[],
): Promise<boolean> {
  if (dialectOf(db) === 'postgres') {
    const g = guardOf(guard);
    const values: unknown[] = [...g.values];
    for (const p of parts) values.push(...p.values);
    const shape = [g.shape].concat(parts.map((p) => p.shape)).join(';');
    let text = texts.get(shape);
    if (text === undefined) {
      const ctes = [`g as (${g.text} returning 1)`];
      let first = g.values.length + 1;
      parts.forEach((p, i) => {
        ctes.push(p.cte('g', `p${i}`, first));
        first += p.values.length;
      });
      text = `with ${ctes.join(', ')} select count(*)::int as changed from g`;
      texts.set(shape, text);
      nameStatement(text);
    }
    const r = await db.executeQuery<{ changed: number }>(CompiledQuery.raw(text, values));
    return (r.rows[0]?.changed ?? 0) > 0;
  }
  const write = async (tx: Kysely<Database>) => {
    if (!(await guardChanged(tx, guard))) return false;
    for (const p of parts) await p.run(tx);
    return true;
  };
  return db.isTransaction ? write(db) : db.transaction().execute(write);
}
