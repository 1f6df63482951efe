import { type Kysely, sql } from 'kysely';
import type { JobAction } from '../../src/domain/status-machine.ts';
import { type NewJob, newJobRow } from '../../src/store/repos/jobs.ts';
import { type NewService, newServiceRow } from '../../src/store/repos/services.ts';
import type { Database } from '../../src/store/schema.ts';

/**
 * A services row as the code wrote it before migration 012 (no `password_applies`, nor the
 * later `error_code` and `error_message`), for the tests of migrations that run on a store
 * migrated only up to an older one.
 */
export function serviceRowBefore012(s: NewService) {
  const { password_applies: _, ...row } = serviceRowBefore017(s);
  return row;
}

/** A services row as the code wrote it before migration 017 (no `error_code`, `error_message`). */
export function serviceRowBefore017(s: NewService) {
  const { error_code: _, error_message: __, ...row } = serviceRowBefore020(s);
  return row;
}

/** A services row as the code wrote it before migration 020 (no `ssh_keys`, `rescue_since`). */
export function serviceRowBefore020(s: NewService) {
  const { ssh_keys: _, rescue_since: __, ...row } = newServiceRow(s);
  return row;
}

/**
 * Inserts an old services row (one of the above, with any changes) into a store migrated only up
 * to an older migration: the current table type would ask for the columns added since.
 */
export async function insertOldService(db: Kysely<Database>, row: Record<string, unknown>): Promise<void> {
  const columns = Object.keys(row);
  await sql`insert into services (${sql.join(columns.map((c) => sql.ref(c)))})
    values (${sql.join(columns.map((c) => row[c]))})`.execute(db);
}

/** A jobs row as the code wrote it before migration 029 (no `started_by_type`, `_id`, `_name`). */
export function jobRowBefore029(j: NewJob<JobAction>) {
  const { started_by_type: _, started_by_id: __, started_by_name: ___, ...row } = newJobRow(j);
  return row;
}

/** Inserts an old jobs row (jobRowBefore029, with any changes), as insertOldService does a service's. */
export async function insertOldJob(db: Kysely<Database>, row: Record<string, unknown>): Promise<void> {
  const columns = Object.keys(row);
  await sql`insert into jobs (${sql.join(columns.map((c) => sql.ref(c)))})
    values (${sql.join(columns.map((c) => row[c]))})`.execute(db);
}
