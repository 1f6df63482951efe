import { type Kysely, sql } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * The state a job's service was in when the job first started gets its own column. It used to be
 * stored inside the job's parameters as `_from`, mixed with what the request asked for; rows
 * written that way are moved here: the value to the column, the key out of the parameters.
 * Plain JSON text in and out, so the same code serves SQLite and PostgreSQL.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('from_state', 'text').execute();
  const old = await sql<{ id: string; params: string }>`
    select id, params from jobs where params like ${'%"_from"%'}`.execute(db);
  for (const row of old.rows) {
    const { _from, ...params } = JSON.parse(row.params) as Record<string, unknown>;
    if (_from === undefined) continue;
    await sql`update jobs set from_state = ${JSON.stringify(_from)}, params = ${JSON.stringify(params)}
      where id = ${row.id}`.execute(db);
  }
}
