import { type Kysely, sql } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * Backups kept in a backup store, off the host, as chains (drivers/backup-store/archive.ts).
 *
 * `backups` gains:
 * - `format`: `archive` (a manifest and a data object in the backup store) or `legacy` (taken
 *   by the driver on its host before the backup store: restored and deleted by the driver as
 *   before). Existing rows are `legacy`.
 * - `parent_id`: the backup an incremental one is relative to; null for a full one (and every
 *   legacy one).
 * - `stored_bytes`: what the backup occupies in the backup store (its data and manifest
 *   objects); `disk_bytes`: the guest disk's size when it was taken. 0 for legacy ones.
 * - `host_id`: the host it was taken on (informational: a backup restores onto any host).
 *   Existing rows: the simulated backup's host, else the service's host.
 * - `keep_until`: set when the service was terminated with VRP_BACKUP_KEEP_AFTER_TERMINATE;
 *   the pruner removes the backup after it. Null otherwise.
 *
 * `sim_checkpoints`: the simulated hypervisor's checkpoints (one per backup whose export was
 * committed), the base of the VM's next incremental export.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const backups = () => db.schema.alterTable('backups');
  await backups()
    .addColumn('format', 'text', (c) => c.notNull().defaultTo(sql.lit('legacy')))
    .execute();
  await backups().addColumn('parent_id', 'text').execute();
  await backups()
    .addColumn('stored_bytes', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await backups()
    .addColumn('disk_bytes', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  await backups().addColumn('host_id', 'text').execute();
  await backups().addColumn('keep_until', 'bigint').execute();
  await sql`update backups set host_id = (select b.host_id from sim_backups b where b.id = backups.id)`.execute(
    db,
  );
  await sql`update backups set host_id = (select s.host_id from services s where s.id = backups.service_id)
    where host_id is null`.execute(db);
  // The pruner's search for backups kept past their service's end.
  await db.schema.createIndex('backups_keep_until').on('backups').column('keep_until').execute();

  await db.schema
    .createTable('sim_checkpoints')
    .addColumn('vm_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('content_generation', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('sim_checkpoints_pk', ['vm_id', 'name'])
    .execute();
}
