import type { Kysely } from 'kysely';
import { insertClient, newClientId, rotateClientSecret, type Variant } from '../store/repos/clients.ts';
import { ensureResellerRow, findResellerByName } from '../store/repos/resellers.ts';
import type { Database } from '../store/schema.ts';
import { SCOPES, type Scope } from './scopes.ts';
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
 * Registers an application (OAuth client) for an existing reseller. Its secret is hashed at
 * `secretCost`, SECRET_COST unless given: only tests give a lower one, to save the CPU time.
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
): Promise<RegisteredApplication> {
  const reseller = await findResellerByName(db, options.reseller);
  if (!reseller) throw new ApplicationError(`No reseller named "${options.reseller}"`);
  const secret = generateSecret();
  const scopes = options.scopes && options.scopes.length > 0 ? options.scopes : SCOPES;
  const client = await insertClient(
    db,
    {
      id: newClientId(),
      resellerId: reseller.id,
      name: options.name ?? `${reseller.name} application`,
      secretHash: await hashSecret(secret, options.secretCost),
      scopes,
      variant: options.variant ?? 'B',
    },
    now,
  );
  return {
    client_id: client.id,
    client_secret: secret,
    scopes: client.scopes.join(' '),
    variant: client.variant,
    reseller: reseller.name,
  };
}

/** A reseller by name, created if missing (concurrent callers get the same one). */
export async function ensureReseller(db: Kysely<Database>, name: string, now: number) {
  return ensureResellerRow(db, name, now);
}

/** A new secret for an application; tokens issued before stop working. `secretCost` as above. */
export async function rotateApplicationSecret(
  db: Kysely<Database>,
  clientId: string,
  now: number,
  options: { secretCost?: SecretCost } = {},
): Promise<string> {
  const secret = generateSecret();
  if (!(await rotateClientSecret(db, clientId, await hashSecret(secret, options.secretCost), now))) {
    throw new ApplicationError(`No application with client_id "${clientId}"`);
  }
  return secret;
}
