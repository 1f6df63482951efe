import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * A catalogue managed through the operator API: products, plans and OS templates can be
 * retired (`retired` 1): no longer offered to resellers (not listed, not orderable), while the
 * services made from them keep their details, status and upgrades. Everything existing stays
 * offered (0).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of ['products', 'plans', 'os_templates']) {
    await db.schema
      .alterTable(table)
      .addColumn('retired', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
  }
}
