/**
 * Statements built and compiled once. Kysely builds a tree of nodes for every call of its
 * builder and compiles it to SQL text every time; for a statement of fixed shape that runs once
 * or more per job, that is work done again for the same text (bench/FINDINGS.md, "SQL compiled
 * once"). Here the statement is written with the builder as usual, its varying values as
 * `Slot`s, compiled the first time it runs on a dialect, and later runs only put the values in
 * the slots' places.
 *
 * The shape must not depend on the values: anything decided per call (a `set` of varying
 * columns, an `in` list) stays with the builder. A slot stands for one value (no lists).
 */
import {
  type Compilable,
  type CompiledQuery,
  type Expression,
  type Kysely,
  type OperationNode,
  type QueryResult,
  ValueNode,
} from 'kysely';
import { dialectOf, perStore } from './dialect-of.ts';
import { nameStatement } from './pg-named.ts';
import type { Database } from './schema.ts';

/** A value given at each run of a prepared statement, where the builder takes an expression. */
export class Slot<T> implements Expression<T> {
  get expressionType(): T | undefined {
    return undefined;
  }
  toOperationNode(): OperationNode {
    // The slot itself as the value: the compiled parameters hold it where its value goes.
    return ValueNode.create(this);
  }
}

/** A slot for a value of type T. */
export const slot = <T>(): Slot<T> => new Slot<T>();

/** The values of a statement's slots, by the slots' names. */
export type SlotValues<S> = { readonly [K in keyof S]: S[K] extends Slot<infer T> ? T : never };

export interface Prepared<S, R> {
  /** Runs the statement with these values (in `db`, a database or a transaction). */
  execute(db: Kysely<Database>, values: SlotValues<S>): Promise<QueryResult<R>>;
  /** The first row, if any. */
  first(db: Kysely<Database>, values: SlotValues<S>): Promise<R | undefined>;
  /** The statement with these values, to run as part of another (readGated). */
  compile(db: Kysely<Database>, values: SlotValues<S>): CompiledQuery<R>;
}

/** Where each compiled parameter comes from: a slot's name, or a constant of the statement. */
type Source<K> = { readonly slot: K } | { readonly value: unknown };

interface Compiled<K, R> {
  readonly query: CompiledQuery<R>;
  readonly sources: readonly Source<K>[];
}

/**
 * A statement of fixed shape: `build` gets the slots (`slots`, by name) and returns the
 * statement, which is compiled once per dialect (Kysely's adapter, which a database and its
 * transactions share).
 */
export function prepare<S extends Record<string, Slot<unknown>>, R>(
  slots: S,
  build: (db: Kysely<Database>, slots: S) => Compilable<R>,
): Prepared<S, R> {
  type Name = Extract<keyof S, string>;
  const names = new Map<unknown, Name>();
  for (const name in slots) names.set(slots[name], name);
  const compiled = perStore((db: Kysely<Database>): Compiled<Name, R> => {
    const query = build(db, slots).compile();
    const sources = query.parameters.map((p): Source<Name> => {
      const name = names.get(p);
      return name === undefined ? { value: p } : { slot: name };
    });
    const used = new Set(sources.flatMap((s) => ('slot' in s ? [s.slot] : [])));
    const unused = [...names.values()].filter((n) => !used.has(n));
    if (unused.length > 0) throw new Error(`prepared statement: slot(s) ${unused.join(', ')} not in its SQL`);
    if (dialectOf(db) === 'postgres') nameStatement(query.sql);
    return { query, sources };
  });

  function compile(db: Kysely<Database>, values: SlotValues<S>): CompiledQuery<R> {
    const c = compiled(db);
    const parameters = c.sources.map((s) => ('slot' in s ? values[s.slot] : s.value));
    return { ...c.query, parameters };
  }

  async function execute(db: Kysely<Database>, values: SlotValues<S>): Promise<QueryResult<R>> {
    return db.executeQuery(compile(db, values));
  }

  return {
    execute,
    compile,
    async first(db, values) {
      return (await execute(db, values)).rows[0];
    },
  };
}
