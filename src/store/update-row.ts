/**
 * Updates by key with SQL built once per shape. The text of `update t set a = ?, b = ? where
 * k = ? and l = ? [returning ...]` depends only on the table, the columns set, the columns
 * matched, the columns returned and the dialect, so Kysely builds and compiles it the first
 * time and later updates of the same shape reuse it with new values (as insert-row.ts does for
 * inserts, and prepared.ts for statements of one fixed shape). The job pipeline's writes whose
 * columns vary with the outcome (a job's end, the service's state after it) are such updates:
 * building each one cost more than SQLite took to run it (bench/FINDINGS.md). On PostgreSQL the
 * text is also a named statement (pg-named.ts), parsed once per connection.
 *
 * The values set are plain values (a column set to an expression goes through the builder, as
 * before); the columns matched are compared for equality with non-null values.
 */
import type { CompiledQuery, Kysely, Selectable, Updateable } from 'kysely';
import { dialectOf } from './dialect-of.ts';
import { compiledShapes, looseBuilder } from './loose-builder.ts';
import { nameStatement } from './pg-named.ts';
import type { Database } from './schema.ts';

/** What an update changed: how many rows, and the returned columns of each. */
export interface UpdateOutcome<R> {
  readonly updated: number;
  readonly rows: R[];
}

/**
 * Sets `set` on the rows of `table` whose columns equal `where`, returning `returning` of each.
 * Throws on an empty `set` or `where`, and on a null in `where` (`= null` matches nothing).
 */
export async function updateWhere<
  T extends keyof Database & string,
  K extends keyof Selectable<Database[T]> & string = never,
>(
  db: Kysely<Database>,
  table: T,
  set: Updateable<Database[T]>,
  where: Partial<Selectable<Database[T]>>,
  returning: readonly K[] = [],
): Promise<UpdateOutcome<Pick<Selectable<Database[T]>, K>>> {
  const { setting, matching } = keyedColumns(table, set, where);
  const values = [...setting, ...matching].map(([, v]) => v);
  const shape = `update ${table}:${setting.map(([c]) => c).join()}:${matching.map(([c]) => c).join()}:${returning.join()}`;
  const byShape = compiledShapes(db);
  const known = byShape.get(shape);
  let compiled: CompiledQuery;
  if (known) compiled = { ...known, parameters: values };
  else {
    let q = looseBuilder(db).updateTable(table).set(Object.fromEntries(setting));
    for (const [c, v] of matching) q = q.where(c, '=', v);
    compiled = returning.length > 0 ? q.returning(returning).compile() : q.compile();
    // Reusable only if every value went in as a parameter, in order (Kysely's way with plain values).
    if (
      compiled.parameters.length === values.length &&
      compiled.parameters.every((p, i) => p === values[i])
    ) {
      if (dialectOf(db) === 'postgres') nameStatement(compiled.sql);
      byShape.set(shape, compiled);
    }
  }
  const r = await db.executeQuery<Pick<Selectable<Database[T]>, K>>(compiled);
  // With RETURNING, SQLite's driver counts no rows changed: each row changed is returned.
  return { updated: returning.length > 0 ? r.rows.length : Number(r.numAffectedRows ?? 0n), rows: r.rows };
}

/**
 * The columns set and matched of an update by key, in order, with their values: a column set to
 * undefined is left out (as Kysely's builder does). Throws on nothing to set or to match, and on
 * a null in `where` (`= null` matches nothing).
 */
export function keyedColumns(
  table: string,
  set: object,
  where: object,
): { setting: [string, unknown][]; matching: [string, unknown][] } {
  const setting = Object.entries(set).filter(([, v]) => v !== undefined);
  const matching = Object.entries(where);
  if (setting.length === 0 || matching.length === 0)
    throw new Error(`an update of ${table} needs columns to set and columns to match`);
  for (const [c, v] of matching)
    if (v === null || v === undefined) throw new Error(`an update of ${table} matches ${c} with no value`);
  return { setting, matching };
}
