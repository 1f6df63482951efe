import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../schema.ts';

export interface Reseller {
  readonly id: string;
  readonly name: string;
  readonly enabled: boolean;
  readonly createdAt: number;
}

type Row = Database['resellers'];
const toReseller = (r: Row): Reseller => ({
  id: r.id,
  name: r.name,
  enabled: r.enabled === 1,
  createdAt: r.created_at,
});

export async function createReseller(db: Kysely<Database>, name: string, now: number): Promise<Reseller> {
  const row: Row = { id: randomUUID(), name, enabled: 1, created_at: now };
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

export async function setResellerEnabled(
  db: Kysely<Database>,
  id: string,
  enabled: boolean,
): Promise<boolean> {
  const r = await db
    .updateTable('resellers')
    .set({ enabled: enabled ? 1 : 0 })
    .where('id', '=', id)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
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
