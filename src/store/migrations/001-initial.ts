import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

export async function up(db: Kysely<unknown>): Promise<void> {
  const ms = 'bigint';
  await db.schema
    .createTable('meta')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('resellers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', ms, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('clients')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('reseller_id', 'text', (c) => c.notNull().references('resellers.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('variant', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('token_version', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_at', ms, (c) => c.notNull())
    .addColumn('updated_at', ms, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('clients_reseller').on('clients').column('reseller_id').execute();

  await db.schema
    .createTable('products')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('template', 'text', (c) => c.notNull())
    .addColumn('config', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', ms, (c) => c.notNull())
    .addColumn('updated_at', ms, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('plans')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('product_id', 'text', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('cpu', 'integer', (c) => c.notNull())
    .addColumn('ram', 'integer', (c) => c.notNull())
    .addColumn('hdd', 'integer', (c) => c.notNull())
    .addColumn('price', 'double precision', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('plans_product').on('plans').column('product_id').execute();

  await db.schema
    .createTable('os_templates')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('image', 'text')
    .addColumn('created_at', ms, (c) => c.notNull())
    .addColumn('updated_at', ms, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('product_templates')
    .addColumn('product_id', 'text', (c) => c.notNull().references('products.id').onDelete('cascade'))
    .addColumn('template_id', 'text', (c) => c.notNull().references('os_templates.id'))
    .addColumn('position', 'integer', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('product_templates_pk', ['product_id', 'template_id'])
    .execute();

  await db.schema
    .createTable('services')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('reseller_id', 'text', (c) => c.notNull().references('resellers.id'))
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('product_id', 'text', (c) => c.notNull())
    .addColumn('template_id', 'text', (c) => c.notNull())
    .addColumn('domain_name', 'text', (c) => c.notNull())
    .addColumn('username', 'text', (c) => c.notNull())
    .addColumn('password_enc', 'text', (c) => c.notNull())
    .addColumn('cpu', 'integer', (c) => c.notNull())
    .addColumn('ram', 'integer', (c) => c.notNull())
    .addColumn('hdd', 'integer', (c) => c.notNull())
    .addColumn('ip_count', 'integer', (c) => c.notNull())
    .addColumn('backup', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('resume_status', 'text')
    .addColumn('suspend_reason', 'text')
    .addColumn('projected_status', 'text', (c) => c.notNull())
    .addColumn('projected_resume', 'text')
    .addColumn('pending_jobs', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('job_seq', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('active_job_id', 'text')
    .addColumn('host_id', 'text')
    .addColumn('ips', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('disk_revision', 'integer')
    .addColumn('created_at', ms, (c) => c.notNull())
    .addColumn('updated_at', ms, (c) => c.notNull())
    .addColumn('terminated_at', ms)
    .execute();
  await db.schema
    .createIndex('services_reseller')
    .on('services')
    .columns(['reseller_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('service_id', 'text', (c) => c.notNull().references('services.id'))
    .addColumn('reseller_id', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('params', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('seq', 'integer', (c) => c.notNull())
    .addColumn('run_at', ms, (c) => c.notNull())
    .addColumn('created_at', ms, (c) => c.notNull())
    .addColumn('started_at', ms)
    .addColumn('finished_at', ms)
    .addColumn('locked_by', 'text')
    .addColumn('locked_until', ms)
    .execute();
  await db.schema
    .createIndex('jobs_service_seq')
    .on('jobs')
    .columns(['service_id', 'seq'])
    .unique()
    .execute();
  await db.schema.createIndex('jobs_status_run_at').on('jobs').columns(['status', 'run_at']).execute();

  await db.schema
    .createTable('idempotency_keys')
    .addColumn('reseller_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('response', 'text', (c) => c.notNull())
    .addColumn('created_at', ms, (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['reseller_id', 'key'])
    .execute();
  await db.schema
    .createIndex('idempotency_keys_created')
    .on('idempotency_keys')
    .column('created_at')
    .execute();

  await db.schema
    .createTable('backups')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('service_id', 'text', (c) => c.notNull().references('services.id'))
    .addColumn('reseller_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('size_gb', 'double precision', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', ms, (c) => c.notNull())
    .addColumn('updated_at', ms, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('backups_service')
    .on('backups')
    .columns(['service_id', 'created_at'])
    .execute();

  await db.schema
    .createTable('backup_schedules')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('service_id', 'text', (c) => c.notNull().references('services.id'))
    .addColumn('reseller_id', 'text', (c) => c.notNull())
    .addColumn('bs_time', 'text', (c) => c.notNull())
    .addColumn('bs_days', 'text', (c) => c.notNull())
    .addColumn('next_run_at', ms, (c) => c.notNull())
    .addColumn('created_at', ms, (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('backup_schedules_service')
    .on('backup_schedules')
    .column('service_id')
    .execute();
  await db.schema.createIndex('backup_schedules_due').on('backup_schedules').column('next_run_at').execute();

  await db.schema
    .createTable('schedule_slots')
    .addColumn('schedule_id', 'text', (c) => c.notNull())
    .addColumn('slot_at', ms, (c) => c.notNull())
    .addColumn('service_id', 'text', (c) => c.notNull())
    .addColumn('job_id', 'text')
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('created_at', ms, (c) => c.notNull())
    .addPrimaryKeyConstraint('schedule_slots_pk', ['schedule_id', 'slot_at'])
    .execute();

  await db.schema
    .createTable('ip_addresses')
    .addColumn('address_num', 'bigint', (c) => c.primaryKey())
    .addColumn('address', 'text', (c) => c.notNull().unique())
    .addColumn('vm_id', 'text')
    .addColumn('allocated_at', ms)
    .addColumn('released_at', ms)
    .execute();
  await db.schema
    .createIndex('ip_addresses_vm')
    .on('ip_addresses')
    .columns(['vm_id', 'released_at', 'address_num'])
    .execute();

  await db.schema
    .createTable('hypervisor_hosts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('cpu', 'integer', (c) => c.notNull())
    .addColumn('ram_gb', 'integer', (c) => c.notNull())
    .addColumn('disk_gb', 'integer', (c) => c.notNull())
    .addColumn('backup_gb', 'integer', (c) => c.notNull())
    .addColumn('used_cpu', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('used_ram_gb', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('used_disk_gb', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('used_backup_gb', 'double precision', (c) => c.notNull().defaultTo(0))
    .execute();

  await db.schema
    .createTable('sim_vms')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('host_id', 'text', (c) => c.notNull())
    .addColumn('power', 'text', (c) => c.notNull())
    .addColumn('cpu', 'integer', (c) => c.notNull())
    .addColumn('ram_gb', 'integer', (c) => c.notNull())
    .addColumn('disk_gb', 'integer', (c) => c.notNull())
    .addColumn('used_disk_gb', 'double precision', (c) => c.notNull())
    .addColumn('ips', 'text', (c) => c.notNull())
    .addColumn('hostname', 'text', (c) => c.notNull())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('content_generation', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('boot_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', ms, (c) => c.notNull())
    .addColumn('updated_at', ms, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('libvirt_vms')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('host_id', 'text', (c) => c.notNull())
    .addColumn('hostname', 'text', (c) => c.notNull())
    .addColumn('cpu', 'integer', (c) => c.notNull())
    .addColumn('ram_gb', 'integer', (c) => c.notNull())
    .addColumn('disk_gb', 'integer', (c) => c.notNull())
    .addColumn('created_at', ms, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('sim_backups')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('vm_id', 'text', (c) => c.notNull())
    .addColumn('host_id', 'text', (c) => c.notNull())
    .addColumn('size_gb', 'double precision', (c) => c.notNull())
    .addColumn('content_generation', 'integer', (c) => c.notNull())
    .addColumn('created_at', ms, (c) => c.notNull())
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('The initial migration cannot be undone; restore a backup of the store instead.');
}
