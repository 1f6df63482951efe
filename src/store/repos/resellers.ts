import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../schema.ts';
import { type AuditContext, recordAudit } from './audit.ts';
import { revokeTokensOf } from './clients.ts';

export interface Reseller {
  readonly id: string;
  readonly name: string;
  readonly enabled: boolean;
  readonly createdAt: number;
  /** The key the provider's billing system knows it by (domain/billing-id.ts); null: none. */
  readonly externalBillingId: string | null;
}

type Row = Database['resellers'];
const toReseller = (r: Row): Reseller => ({
  id: r.id,
  name: r.name,
  enabled: r.enabled === 1,
  createdAt: r.created_at,
  externalBillingId: r.external_billing_id,
});

export async function createReseller(db: Kysely<Database>, name: string, now: number): Promise<Reseller> {
  const row: Row = { id: randomUUID(), name, enabled: 1, created_at: now, external_billing_id: null };
  await db.insertInto('resellers').values(row).execute();
  return toReseller(row);
}

export async function findResellerByName(db: Kysely<Database>, name: string): Promise<Reseller | undefined> {
  const row = await db.selectFrom('resellers').selectAll().where('name', '=', name).executeTakeFirst();
  return row && toReseller(row);
}

export async function listResellers(db: Kysely<Database>): Promise<Reseller[]> {
  const rows = await db.selectFrom('resellers').selectAll().orderBy('created_at').orderBy('name').execute();
  return rows.map(toReseller);
}

/**
 * Enables or disables a reseller. Disabling also revokes every token its applications hold
 * (revokeTokensOf), so enabling it again does not bring those tokens back.
 */
export async function setResellerEnabled(
  db: Kysely<Database>,
  id: string,
  enabled: boolean,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('resellers')
    .set({ enabled: enabled ? 1 : 0 })
    .where('id', '=', id)
    .executeTakeFirst();
  if (r.numUpdatedRows === 0n) return false;
  if (!enabled) await revokeTokensOf(db, { resellerId: id }, now);
  return true;
}

/** The reseller named `name`, created if missing; safe when several callers race. */
export async function ensureResellerRow(db: Kysely<Database>, name: string, now: number): Promise<Reseller> {
  await db
    .insertInto('resellers')
    .values({ id: randomUUID(), name, enabled: 1, created_at: now })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db.selectFrom('resellers').selectAll().where('name', '=', name).executeTakeFirstOrThrow();
  return toReseller(row);
}

export async function findReseller(db: Kysely<Database>, id: string): Promise<Reseller | undefined> {
  const row = await db.selectFrom('resellers').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toReseller(row);
}

/** Resellers in name order after `afterName` (names are unique: a stable key to page by). */
export async function listResellersPage(
  db: Kysely<Database>,
  page: { readonly afterName?: string; readonly limit: number },
): Promise<Reseller[]> {
  let q = db.selectFrom('resellers').selectAll();
  if (page.afterName !== undefined) q = q.where('name', '>', page.afterName);
  const rows = await q.orderBy('name').limit(page.limit).execute();
  return rows.map(toReseller);
}

const subjectOf = (r: { id: string }) => ({ target: { type: 'reseller', id: r.id }, resellerId: r.id });

/**
 * Creates a reseller and records who did, in one transaction: the CLI and the operator API call
 * it. A name taken already (also by a concurrent create) is a unique violation (store/errors.ts).
 */
export async function createResellerRecorded(
  db: Kysely<Database>,
  name: string,
  now: number,
  audit: AuditContext,
): Promise<Reseller> {
  return db.transaction().execute(async (tx) => {
    const created = await createReseller(tx, name, now);
    await recordAudit(tx, audit, subjectOf(created), now);
    return created;
  });
}

/**
 * Enables or disables the reseller with id `id` and records it, in one transaction; undefined
 * if there is none. A disabled reseller's tokens are refused (auth/client-lookup.ts), and those
 * issued before the disable stay refused after an enable (setResellerEnabled).
 */
export async function setResellerEnabledRecorded(
  db: Kysely<Database>,
  id: string,
  enabled: boolean,
  now: number,
  audit: AuditContext,
): Promise<Reseller | undefined> {
  return db.transaction().execute(async (tx) => {
    if (!(await setResellerEnabled(tx, id, enabled, now))) return undefined;
    await recordAudit(tx, audit, subjectOf({ id }), now);
    return findReseller(tx, id);
  });
}

/**
 * Sets (or, with null, clears) the external billing id of the reseller with id `id` and records
 * it, in one transaction; undefined if there is none. The value is checked by the caller
 * (domain/billing-id.ts).
 */
export async function setResellerBillingIdRecorded(
  db: Kysely<Database>,
  id: string,
  externalBillingId: string | null,
  now: number,
  audit: AuditContext,
): Promise<Reseller | undefined> {
  return db.transaction().execute(async (tx) => {
    const r = await tx
      .updateTable('resellers')
      .set({ external_billing_id: externalBillingId })
      .where('id', '=', id)
      .executeTakeFirst();
    if (r.numUpdatedRows === 0n) return undefined;
    await recordAudit(tx, audit, subjectOf({ id }), now);
    return findReseller(tx, id);
  });
}
