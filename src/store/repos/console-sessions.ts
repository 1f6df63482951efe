import type { Kysely } from 'kysely';
import type { Role } from '../../domain/roles.ts';
import type { ConsoleSessionStage, Database } from '../schema.ts';

/** A live console session with what a request needs of its operator and the operator's client. */
export interface ConsoleSession {
  /** SHA-256 (hex) of the cookie's secret. */
  readonly id: string;
  readonly operatorId: string;
  readonly operatorName: string;
  /** The operator's role now: read on every page, so the console shows what the API allows. */
  readonly role: Role;
  readonly clientId: string;
  readonly tokenVersion: number;
  readonly createdAt: number;
  readonly lastSeenAt: number;
  readonly expiresAt: number;
  /** `ok`: logged in; `code`: the second factor is awaited; `enrol`: the operator must enrol first. */
  readonly stage: ConsoleSessionStage;
}

export async function insertConsoleSession(
  db: Kysely<Database>,
  s: { id: string; operatorId: string; now: number; expiresAt: number; stage: ConsoleSessionStage },
): Promise<void> {
  await db
    .insertInto('console_sessions')
    .values({
      id: s.id,
      operator_id: s.operatorId,
      created_at: s.now,
      last_seen_at: s.now,
      expires_at: s.expiresAt,
      stage: s.stage,
    })
    .execute();
}

/**
 * The session `id` if it has not expired at `now`, was used within `idleMs`, and its operator is
 * enabled; undefined otherwise (one query: sessions are read on every console page).
 */
export async function findConsoleSession(
  db: Kysely<Database>,
  id: string,
  now: number,
  idleMs: number,
): Promise<ConsoleSession | undefined> {
  const row = await db
    .selectFrom('console_sessions as s')
    .innerJoin('operators as o', 'o.id', 's.operator_id')
    .innerJoin('operator_clients as c', 'c.operator_id', 'o.id')
    .select([
      's.id',
      's.operator_id',
      'o.name',
      'o.role',
      'c.id as client_id',
      'c.token_version',
      's.created_at',
      's.last_seen_at',
      's.expires_at',
      's.stage',
    ])
    .where('s.id', '=', id)
    .where('s.expires_at', '>', now)
    .where('s.last_seen_at', '>', now - idleMs)
    .where('o.enabled', '=', 1)
    .executeTakeFirst();
  if (!row) return undefined;
  return {
    id: row.id,
    operatorId: row.operator_id,
    operatorName: row.name,
    role: row.role,
    clientId: row.client_id,
    tokenVersion: Number(row.token_version),
    createdAt: Number(row.created_at),
    lastSeenAt: Number(row.last_seen_at),
    expiresAt: Number(row.expires_at),
    stage: row.stage,
  };
}

/** Records a use of the session (the idle timeout counts from it). */
export async function touchConsoleSession(db: Kysely<Database>, id: string, now: number): Promise<void> {
  await db.updateTable('console_sessions').set({ last_seen_at: now }).where('id', '=', id).execute();
}

/** Ends a session (logout). */
export async function deleteConsoleSession(db: Kysely<Database>, id: string): Promise<void> {
  await db.deleteFrom('console_sessions').where('id', '=', id).execute();
}

/** Ends every console session of the operator (a new password, a disabled operator). */
export async function deleteOperatorConsoleSessions(db: Kysely<Database>, operatorId: string): Promise<void> {
  await db.deleteFrom('console_sessions').where('operator_id', '=', operatorId).execute();
}
