/**
 * The part of Kysely's builder that insert-row.ts and update-row.ts use, for a table named at run
 * time: Kysely types its builder by table, so a table that is a type parameter there cannot be
 * tied to its columns. Those two check what they write themselves (the columns given are the
 * row's, every value goes in as a parameter, in order), and keep what they compiled by shape.
 */
import type { CompiledQuery, Kysely } from 'kysely';
import { perStore } from './dialect-of.ts';

export interface LooseBuilder {
  insertInto(table: string): { values(rows: readonly object[]): { compile(): CompiledQuery } };
  with(name: string, cte: (qc: LooseBuilder) => unknown): LooseBuilder;
  updateTable(table: string): { set(values: object): LooseMatching };
}

export interface LooseMatching {
  where(column: string, op: '=', value: unknown): LooseMatching;
  returning(columns: readonly string[]): { compile(): CompiledQuery };
  compile(): CompiledQuery;
}

/** `db`'s builder, its tables named at run time. */
export function looseBuilder<DB>(db: Kysely<DB>): LooseBuilder {
  return db as unknown as LooseBuilder;
}

/**
 * The statements compiled for `db`'s dialect, by shape: the SQL text and where each value goes,
 * run again with new values (`{ ...compiled, parameters }`). Its node stays with it, so the
 * driver still sees the statement's kind (the SQLite store groups plain writes by kind).
 */
export const compiledShapes = perStore(() => new Map<string, CompiledQuery>());
