import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { ApplicationState } from '../../domain/client-state.ts';
import type { Scope } from '../../domain/scopes.ts';
import type { Database } from '../schema.ts';

export type Variant = 'A' | 'B';

export interface Client {
  readonly id: string;
  readonly resellerId: string;
  readonly name: string;
  readonly scopes: readonly Scope[];
  readonly variant: Variant;
  readonly enabled: boolean;
  readonly tokenVersion: number;
  readonly createdAt: number;
}

/** An application with the hash of its secret, for authentication only. */
export interface ClientWithSecret extends Client {
  readonly secretHash: string;
  readonly resellerEnabled: boolean;
}

type Row = Database['clients'];
const toClient = (r: Row): Client => ({
  id: r.id,
  resellerId: r.reseller_id,
  name: r.name,
  scopes: r.scopes.split(' ').filter(Boolean) as Scope[],
  variant: r.variant === 'A' ? 'A' : 'B',
  enabled: r.enabled === 1,
  tokenVersion: r.token_version,
  createdAt: r.created_at,
});

export function newClientId(): string {
  return `vrp_${randomBytes(12).toString('hex')}`;
}

export async function insertClient(
  db: Kysely<Database>,
  c: {
    id: string;
    resellerId: string;
    name: string;
    secretHash: string;
    scopes: readonly Scope[];
    variant: Variant;
  },
  now: number,
): Promise<Client> {
  const row: Row = {
    id: c.id,
    reseller_id: c.resellerId,
    name: c.name,
    secret_hash: c.secretHash,
    scopes: c.scopes.join(' '),
    variant: c.variant,
    enabled: 1,
    token_version: 1,
    created_at: now,
    updated_at: now,
  };
  await db.insertInto('clients').values(row).execute();
  return toClient(row);
}

export async function findClientForAuth(
  db: Kysely<Database>,
  id: string,
): Promise<ClientWithSecret | undefined> {
  const row = await db
    .selectFrom('clients')
    .innerJoin('resellers', 'resellers.id', 'clients.reseller_id')
    .selectAll('clients')
    .select('resellers.enabled as reseller_enabled')
    .where('clients.id', '=', id)
    .executeTakeFirst();
  if (!row) return undefined;
  return { ...toClient(row), secretHash: row.secret_hash, resellerEnabled: row.reseller_enabled === 1 };
}

/** What token verification needs: one indexed read, cached for a short time by auth/client-state.ts. */
export async function loadClientState(
  db: Kysely<Database>,
  id: string,
): Promise<ApplicationState | undefined> {
  const row = await db
    .selectFrom('clients')
    .innerJoin('resellers', 'resellers.id', 'clients.reseller_id')
    .select([
      'clients.id',
      'clients.reseller_id',
      'clients.enabled',
      'clients.token_version',
      'clients.variant',
      'clients.name',
      'resellers.name as reseller_name',
      'resellers.enabled as reseller_enabled',
    ])
    .where('clients.id', '=', id)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    kind: 'application',
    clientId: row.id,
    resellerId: row.reseller_id,
    name: `${row.reseller_name} / ${row.name}`,
    enabled: row.enabled === 1 && row.reseller_enabled === 1,
    tokenVersion: row.token_version,
    variant: row.variant === 'A' ? 'A' : 'B',
  };
}

export async function listClients(
  db: Kysely<Database>,
  resellerId?: string,
): Promise<(Client & { resellerName: string })[]> {
  let q = db
    .selectFrom('clients')
    .innerJoin('resellers', 'resellers.id', 'clients.reseller_id')
    .selectAll('clients')
    .select('resellers.name as reseller_name');
  if (resellerId) q = q.where('clients.reseller_id', '=', resellerId);
  const rows = await q.orderBy('clients.created_at').execute();
  return rows.map((r) => ({ ...toClient(r), resellerName: r.reseller_name }));
}

/** New secret hash; existing tokens stop working because the token version moves on. */
export async function rotateClientSecret(
  db: Kysely<Database>,
  id: string,
  secretHash: string,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('clients')
    .set((eb) => ({ secret_hash: secretHash, token_version: eb('token_version', '+', 1), updated_at: now }))
    .where('id', '=', id)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Revokes every token issued so far without changing the secret. */
export async function revokeClientTokens(db: Kysely<Database>, id: string, now: number): Promise<boolean> {
  return (await revokeTokensOf(db, { clientId: id }, now)) > 0;
}

/**
 * Revokes every token issued so far to one application, or to each application of a reseller:
 * the token version moves on, and a token is accepted only with its application's version now
 * (http/plugins/authenticate.ts, which reads a version newer than its cache's again).
 *
 * The one rule for what disabling does to tokens: disabling an application (setClientEnabled)
 * or a reseller (store/repos/resellers.ts) revokes this way, as `revoke-tokens` does, so
 * enabling again lets them get new tokens while those from before the disable stay refused.
 */
export async function revokeTokensOf(
  db: Kysely<Database>,
  which: { readonly clientId: string } | { readonly resellerId: string },
  now: number,
): Promise<number> {
  const update = db
    .updateTable('clients')
    .set((eb) => ({ token_version: eb('token_version', '+', 1), updated_at: now }));
  const r = await ('clientId' in which
    ? update.where('id', '=', which.clientId)
    : update.where('reseller_id', '=', which.resellerId)
  ).executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** Enables or disables an application; disabling revokes its tokens for good (revokeTokensOf). */
export async function setClientEnabled(
  db: Kysely<Database>,
  id: string,
  enabled: boolean,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('clients')
    .set({ enabled: enabled ? 1 : 0, updated_at: now })
    .where('id', '=', id)
    .executeTakeFirst();
  if (r.numUpdatedRows === 0n) return false;
  if (!enabled) await revokeTokensOf(db, { clientId: id }, now);
  return true;
}
