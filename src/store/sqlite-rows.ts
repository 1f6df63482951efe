/**
 * node:sqlite's rows as plain objects of one shape per column list.
 *
 * node:sqlite builds each row as an object with no prototype in V8's dictionary mode (its
 * properties in a hash table), naming every column afresh for each row: about 6.7 µs for a row
 * of 41 columns, and every later read of one of its properties a look-up in that table. Asked
 * for arrays instead (`setReturnArrays`), it hands the values over, and an object literal of the
 * statement's columns, compiled once per column list, builds the row with its properties in the
 * object itself: about 2.9 µs for the same row, its reads included (bench/FINDINGS.md, "Rows as
 * arrays").
 *
 * What a caller sees is the same row: the same keys in the same order, the later of two columns
 * of one name winning, as node:sqlite has it. Its prototype is `Object.prototype`, as the rows
 * of pg (the PostgreSQL store) have.
 *
 * SQLite prepares a statement again when the schema changed under it (another process's
 * migration during a rolling upgrade gives a table a column): `select *` then has one column
 * more, and in `select s.*, x.a` the columns after `s.*` move. A row whose number of values is
 * not its statement's names' makes the statement's names be read again, so every value keeps
 * its own column's name. A change that kept the number (a column renamed, or one dropped and
 * another added) would not be seen: the migrations only add columns and tables
 * (docs/operations.md, "The SQLite store").
 */
import type { SQLInputValue, StatementSync } from 'node:sqlite';

/** Builds a row from the values of a statement's columns, in their order. */
type RowBuilder = (values: readonly unknown[]) => Record<string, unknown>;

/** Builders by column list; a list is a statement's, so there are as many as the SQL's shapes. */
const builders = new Map<string, RowBuilder>();
const MAX_BUILDERS = 2000;

/** The builder of rows of these columns, compiled once per list. */
function rowBuilder(names: readonly string[]): RowBuilder {
  // A literal would make `__proto__` the prototype; `fromEntries` makes it a property, as SQLite's is.
  if (names.includes('__proto__')) return (values) => Object.fromEntries(names.map((n, i) => [n, values[i]]));
  const key = JSON.stringify(names);
  let build = builders.get(key);
  if (build === undefined) {
    // The names are string literals (JSON's quoting is JavaScript's): nothing of them is code.
    const members = names.map((name, i) => `${JSON.stringify(name)}: v[${i}]`);
    build = new Function('v', `return { ${members.join(', ')} };`) as RowBuilder;
    if (builders.size >= MAX_BUILDERS) builders.clear();
    builders.set(key, build);
  }
  return build;
}

const namesOf = (stmt: StatementSync) => stmt.columns().map((c) => c.name);

/** A statement's rows, read as arrays and made into objects. */
export interface RowReader {
  /** Whether the statement returns columns (a select, or a write with RETURNING), as prepared. */
  readonly returnsRows: boolean;
  all(params: readonly SQLInputValue[]): Record<string, unknown>[];
  get(params: readonly SQLInputValue[]): Record<string, unknown> | undefined;
  iterate(params: readonly SQLInputValue[]): IterableIterator<Record<string, unknown>>;
}

/**
 * Makes `stmt` hand over its rows as arrays, and reads them as objects. A statement that
 * returns no columns (a write) has no rows to read.
 */
export function rowReader(stmt: StatementSync): RowReader {
  let names = namesOf(stmt);
  let build = rowBuilder(names);
  stmt.setReturnArrays(true);
  const row = (values: unknown): Record<string, unknown> => {
    // node:sqlite's types do not follow the setting: what it returns is checked instead.
    if (!Array.isArray(values)) throw new TypeError('node:sqlite returned a row that is not an array');
    if (values.length !== names.length) {
      names = namesOf(stmt);
      build = rowBuilder(names);
    }
    return build(values);
  };
  return {
    returnsRows: names.length > 0,
    all: (params) => stmt.all(...params).map(row),
    get: (params) => {
      const values = stmt.get(...params);
      return values === undefined ? undefined : row(values);
    },
    *iterate(params) {
      for (const values of stmt.iterate(...params)) yield row(values);
    },
  };
}
