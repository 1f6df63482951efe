import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * A job's step marker: what a task records just before a step that must not happen twice (a
 * reboot records the VM's boot identity), so a re-run after its worker died can tell whether the
 * step was done. Null until a task records one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('step_marker', 'text').execute();
}
