import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * Operator roles (domain/roles.ts): `operators.role`, one of `admin`, `support`, `billing`.
 * Every operator that exists already was a full administrator, and stays one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('operators')
    .addColumn('role', 'text', (c) => c.notNull().defaultTo('admin'))
    .execute();
}
