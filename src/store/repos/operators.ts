import { randomBytes, randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { OperatorState } from '../../domain/client-state.ts';
import type { Role } from '../../domain/roles.ts';
import type { Database } from '../schema.ts';

/** An operator, without its secrets. */
export interface Operator {
  readonly id: string;
  readonly name: string;
  readonly enabled: boolean;
  /** What the operator may do (domain/roles.ts). */
  readonly role: Role;
  /** Whether a console password is set. */
  readonly hasPassword: boolean;
  readonly createdAt: number;
}

/** An operator with its API client's id, for listing. */
export interface OperatorWithClient extends Operator {
  readonly clientId: string;
  /** Whether the operator has enrolled a second factor for the console. */
  readonly twoFactor: boolean;
}

/** An operator client with the hash of its secret, for authentication only. */
export interface OperatorClientWithSecret {
  readonly id: string;
  readonly operatorId: string;
  readonly secretHash: string;
  readonly tokenVersion: number;
  /** The operator is enabled. */
  readonly enabled: boolean;
}

/** Operator client ids: apart from applications' `vrp_` ids by their prefix (auth/client-lookup.ts). */
const OPERATOR_CLIENT_PREFIX = 'vrpop_';

export function newOperatorClientId(): string {
  return `${OPERATOR_CLIENT_PREFIX}${randomBytes(12).toString('hex')}`;
}

export function isOperatorClientId(id: string): boolean {
  return id.startsWith(OPERATOR_CLIENT_PREFIX);
}

type Row = Database['operators'];
const toOperator = (r: Row): Operator => ({
  id: r.id,
  name: r.name,
  enabled: r.enabled === 1,
  role: r.role,
  hasPassword: r.password_hash !== null,
  createdAt: r.created_at,
});

/** Inserts an operator and its client; the caller's transaction makes them one change. */
export async function insertOperator(
  db: Kysely<Database>,
  o: { name: string; role: Role; passwordHash: string | null; clientId: string; secretHash: string },
  now: number,
): Promise<Operator> {
  const row: Row = {
    id: randomUUID(),
    name: o.name,
    password_hash: o.passwordHash,
    enabled: 1,
    role: o.role,
    created_at: now,
    updated_at: now,
  };
  await db.insertInto('operators').values(row).execute();
  await db
    .insertInto('operator_clients')
    .values({
      id: o.clientId,
      operator_id: row.id,
      secret_hash: o.secretHash,
      token_version: 1,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return toOperator(row);
}

export async function findOperatorByName(db: Kysely<Database>, name: string): Promise<Operator | undefined> {
  const found = await findOperatorLogin(db, name);
  if (!found) return undefined;
  const { passwordHash: _, ...operator } = found;
  return operator;
}

/** The operator named `name` with its password hash, for the console's login only. */
export async function findOperatorLogin(
  db: Kysely<Database>,
  name: string,
): Promise<(Operator & { readonly passwordHash: string | null }) | undefined> {
  const row = await db.selectFrom('operators').selectAll().where('name', '=', name).executeTakeFirst();
  return row && { ...toOperator(row), passwordHash: row.password_hash };
}

export async function listOperators(db: Kysely<Database>): Promise<OperatorWithClient[]> {
  const rows = await db
    .selectFrom('operators')
    .innerJoin('operator_clients', 'operator_clients.operator_id', 'operators.id')
    .leftJoin('operator_two_factor', 'operator_two_factor.operator_id', 'operators.id')
    .selectAll('operators')
    .select(['operator_clients.id as client_id', 'operator_two_factor.enrolled_at'])
    .orderBy('operators.created_at')
    .orderBy('operators.name')
    .execute();
  return rows.map((r) => ({
    ...toOperator(r),
    clientId: r.client_id,
    twoFactor: r.enrolled_at !== null && r.enrolled_at !== undefined,
  }));
}

/** The operator's client id, if the operator exists. */
export async function findOperatorClientId(
  db: Kysely<Database>,
  operatorId: string,
): Promise<string | undefined> {
  const row = await db
    .selectFrom('operator_clients')
    .select('id')
    .where('operator_id', '=', operatorId)
    .executeTakeFirst();
  return row?.id;
}

export async function findOperatorClientForAuth(
  db: Kysely<Database>,
  id: string,
): Promise<OperatorClientWithSecret | undefined> {
  const row = await db
    .selectFrom('operator_clients')
    .innerJoin('operators', 'operators.id', 'operator_clients.operator_id')
    .select([
      'operator_clients.id',
      'operator_clients.operator_id',
      'operator_clients.secret_hash',
      'operator_clients.token_version',
      'operators.enabled',
    ])
    .where('operator_clients.id', '=', id)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    id: row.id,
    operatorId: row.operator_id,
    secretHash: row.secret_hash,
    tokenVersion: row.token_version,
    enabled: row.enabled === 1,
  };
}

/** What token verification needs of an operator client: one indexed read, cached briefly by auth/client-state.ts. */
export async function loadOperatorClientState(
  db: Kysely<Database>,
  id: string,
): Promise<OperatorState | undefined> {
  const row = await db
    .selectFrom('operator_clients')
    .innerJoin('operators', 'operators.id', 'operator_clients.operator_id')
    .select([
      'operator_clients.id',
      'operator_clients.token_version',
      'operators.id as operator_id',
      'operators.name',
      'operators.enabled',
      'operators.role',
    ])
    .where('operator_clients.id', '=', id)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    kind: 'operator',
    role: row.role,
    clientId: row.id,
    operatorId: row.operator_id,
    operatorName: row.name,
    enabled: row.enabled === 1,
    tokenVersion: row.token_version,
    variant: 'B',
  };
}

/** New secret hash for the operator's client; tokens issued before stop working. */
export async function rotateOperatorClientSecret(
  db: Kysely<Database>,
  operatorId: string,
  secretHash: string,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('operator_clients')
    .set((eb) => ({ secret_hash: secretHash, token_version: eb('token_version', '+', 1), updated_at: now }))
    .where('operator_id', '=', operatorId)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/**
 * Enables or disables an operator. Disabling also revokes every token issued so far (the token
 * version moves on), so enabling the operator again does not bring old tokens back.
 */
export async function setOperatorEnabled(
  db: Kysely<Database>,
  operatorId: string,
  enabled: boolean,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('operators')
    .set({ enabled: enabled ? 1 : 0, updated_at: now })
    .where('id', '=', operatorId)
    .executeTakeFirst();
  if (r.numUpdatedRows === 0n) return false;
  if (!enabled) {
    await db
      .updateTable('operator_clients')
      .set((eb) => ({ token_version: eb('token_version', '+', 1), updated_at: now }))
      .where('operator_id', '=', operatorId)
      .execute();
  }
  return true;
}

export async function setOperatorPasswordHash(
  db: Kysely<Database>,
  operatorId: string,
  passwordHash: string,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('operators')
    .set({ password_hash: passwordHash, updated_at: now })
    .where('id', '=', operatorId)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Sets the operator's role; its tokens carry no role, so the next request is checked against the new one. */
export async function setOperatorRole(
  db: Kysely<Database>,
  operatorId: string,
  role: Role,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('operators')
    .set({ role, updated_at: now })
    .where('id', '=', operatorId)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}
