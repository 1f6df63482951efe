import { createHmac, createSecretKey, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import { isStorableText } from '../domain/storable-text.ts';
import type { Database } from '../store/schema.ts';
import { type SlowCheck, unguarded } from './attempt-guard.ts';
import { type ClientCredential, findClientCredential } from './client-lookup.ts';
import { LruMap } from './lru-map.ts';
import { generateSecret, hashSecret, SECRET_COST, type SecretCost, verifySecret } from './secret-hash.ts';

// Longer ids and secrets are never issued (ids are 28 characters, secrets 43).
const MAX_CLIENT_ID_LENGTH = 200;
const MAX_SECRET_LENGTH = 500;
const REMEMBERED_SECRETS = 10_000;

/** Checks a secret against a stored hash (secret-hash.ts's verifySecret). */
export type SecretVerifier = (secret: string, stored: string) => Promise<boolean>;

export interface ClientAuthenticator {
  /**
   * The client (application or operator) whose id and secret these are; undefined for any
   * failure. The one scrypt run, if the secret needs one, runs through `slowCheck` (which may
   * wait for its turn, or refuse by throwing).
   */
  authenticate(
    clientId: string,
    secret: string,
    slowCheck?: SlowCheck,
  ): Promise<ClientCredential | undefined>;
}

// Dummy hashes are made once per process and cost, when the first authenticator needs one: the
// secret is random and never kept, so every authenticator of the process may share it, and a
// process that builds many apps (a test run) pays for its scrypt run once.
const dummyHashes = new Map<string, Promise<string>>();

function dummyHash(cost: SecretCost): Promise<string> {
  const key = `${cost.N}$${cost.r}$${cost.p}`;
  let hash = dummyHashes.get(key);
  if (!hash) {
    hash = hashSecret(generateSecret(), cost);
    dummyHashes.set(key, hash);
  }
  return hash;
}

/**
 * Client credentials checked so that every failure costs the same, one scrypt run: against the
 * application's hash, or, for an id that names no application, against a dummy hash made at
 * start by hashSecret with `secretCost`, the cost of the real ones (SECRET_COST). Only a
 * correct secret that was verified before takes the fast path (an HMAC compared with the
 * remembered one): how long a failure takes tells nothing about which client ids exist.
 */
export function createClientAuthenticator(
  db: Kysely<Database>,
  verify: SecretVerifier = verifySecret,
  secretCost: SecretCost = SECRET_COST,
): ClientAuthenticator {
  const dummy = dummyHash(secretCost);
  // Remembered per process only, so the HMAC key never leaves it.
  const macKey = createSecretKey(randomBytes(32));
  const macOf = (secret: string) => createHmac('sha256', macKey).update(secret).digest();
  const remembered = new LruMap<string, { secretHash: string; mac: Buffer }>(REMEMBERED_SECRETS);

  return {
    async authenticate(clientId, secret, slowCheck = unguarded) {
      // An id no client can have is not looked up (PostgreSQL refuses U+0000 in a query).
      const canExist = clientId.length <= MAX_CLIENT_ID_LENGTH && isStorableText(clientId);
      const client = canExist ? await findClientCredential(db, clientId) : undefined;
      if (!client || secret.length > MAX_SECRET_LENGTH) {
        const hash = await dummy;
        await slowCheck(() => verify(secret.slice(0, MAX_SECRET_LENGTH), hash));
        return undefined;
      }
      const mac = macOf(secret);
      const isRemembered = () => {
        const known = remembered.get(client.id);
        return (
          known !== undefined && known.secretHash === client.secretHash && timingSafeEqual(known.mac, mac)
        );
      };
      if (isRemembered()) return client;
      const ok = await slowCheck(async () => {
        // Asked again once it is this check's turn: a burst of first requests with the right
        // secret hashes it once, the others find it remembered meanwhile.
        if (isRemembered()) return true;
        if (!(await verify(secret, client.secretHash))) return false;
        remembered.set(client.id, { secretHash: client.secretHash, mac });
        return true;
      });
      return ok ? client : undefined;
    },
  };
}
