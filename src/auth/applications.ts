import type { Kysely } from 'kysely';
import { SCOPES, type Scope } from '../domain/scopes.ts';
import { type AuditContext, recordAudit } from '../store/repos/audit.ts';
import {
  insertClient,
  newClientId,
  revokeClientTokens,
  rotateClientSecret,
  setClientEnabled,
  type Variant,
} from '../store/repos/clients.ts';
import { ensureResellerRow, findResellerByName } from '../store/repos/resellers.ts';
import type { Database } from '../store/schema.ts';
import { generateSecret, hashSecret, type SecretCost } from './secret-hash.ts';

/** What registering an application prints, once: the secret is not stored in the clear anywhere. */
export interface RegisteredApplication {
  readonly client_id: string;
  readonly client_secret: string;
  readonly scopes: string;
  readonly variant: Variant;
  readonly reseller: string;
}

export class ApplicationError extends Error {
  override name = 'ApplicationError';
}

/**
 * Registers an application (OAuth client) for an existing reseller. With an audit context, the
 * entry is written in the same transaction (the CLI's changes are audited as actor `cli`). Its
 * secret is hashed at `secretCost`, SECRET_COST unless given: only tests give a lower one.
 */
export async function registerApplication(
  db: Kysely<Database>,
  options: {
    reseller: string;
    scopes?: readonly Scope[];
    variant?: Variant;
    name?: string;
    secretCost?: SecretCost;
  },
  now: number,
  audit?: AuditContext,
): Promise<RegisteredApplication> {
  const secret = generateSecret();
  // The slow hash before the transaction: SQLite holds its write lock for the whole of one.
  const secretHash = await hashSecret(secret, options.secretCost);
  const scopes = options.scopes && options.scopes.length > 0 ? options.scopes : SCOPES;
  return db.transaction().execute(async (tx) => {
    const reseller = await findResellerByName(tx, options.reseller);
    if (!reseller) throw new ApplicationError(`No reseller named "${options.reseller}"`);
    const client = await insertClient(
      tx,
      {
        id: newClientId(),
        resellerId: reseller.id,
        name: options.name ?? `${reseller.name} application`,
        secretHash,
        scopes,
        variant: options.variant ?? 'B',
      },
      now,
    );
    if (audit) await recordAudit(tx, audit, clientSubject(client.id, reseller.id), now);
    return {
      client_id: client.id,
      client_secret: secret,
      scopes: client.scopes.join(' '),
      variant: client.variant,
      reseller: reseller.name,
    };
  });
}

/** A reseller by name, created if missing (concurrent callers get the same one). */
export async function ensureReseller(db: Kysely<Database>, name: string, now: number) {
  return ensureResellerRow(db, name, now);
}

function clientSubject(clientId: string, resellerId: string | undefined) {
  return { target: { type: 'client', id: clientId }, ...(resellerId && { resellerId }) };
}

/** The reseller of an application, in the transaction that changes it. */
async function resellerOfClient(db: Kysely<Database>, clientId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('clients')
    .select('reseller_id')
    .where('id', '=', clientId)
    .executeTakeFirst();
  return row?.reseller_id;
}

/**
 * Runs `change` on an application and records it, in one transaction; false (and no entry) if
 * there is no application with that id.
 */
async function changeApplication(
  db: Kysely<Database>,
  clientId: string,
  now: number,
  audit: AuditContext | undefined,
  change: (tx: Kysely<Database>) => Promise<boolean>,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    if (!(await change(tx))) return false;
    if (audit)
      await recordAudit(tx, audit, clientSubject(clientId, await resellerOfClient(tx, clientId)), now);
    return true;
  });
}

/** A new secret for an application; tokens issued before stop working. `secretCost` as above. */
export async function rotateApplicationSecret(
  db: Kysely<Database>,
  clientId: string,
  now: number,
  audit?: AuditContext,
  options: { secretCost?: SecretCost } = {},
): Promise<string> {
  const secret = generateSecret();
  const secretHash = await hashSecret(secret, options.secretCost);
  const done = await changeApplication(db, clientId, now, audit, (tx) =>
    rotateClientSecret(tx, clientId, secretHash, now),
  );
  if (!done) throw new ApplicationError(`No application with client_id "${clientId}"`);
  return secret;
}

/** Enables or disables an application; false if there is none with that id. */
export function setApplicationEnabled(
  db: Kysely<Database>,
  clientId: string,
  enabled: boolean,
  now: number,
  audit?: AuditContext,
): Promise<boolean> {
  return changeApplication(db, clientId, now, audit, (tx) => setClientEnabled(tx, clientId, enabled, now));
}

/** Revokes every token of an application issued so far; false if there is none with that id. */
export function revokeApplicationTokens(
  db: Kysely<Database>,
  clientId: string,
  now: number,
  audit?: AuditContext,
): Promise<boolean> {
  return changeApplication(db, clientId, now, audit, (tx) => revokeClientTokens(tx, clientId, now));
}
