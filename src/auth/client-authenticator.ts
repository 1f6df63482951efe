import { createHmac, createSecretKey, randomBytes, timingSafeEqual } from 'node:crypto';
import { isStorableText } from '../domain/storable-text.ts';
import { type SlowCheck, unguarded } from './attempt-guard.ts';
import type { ClientCredential } from './client-lookup.ts';
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
 * Where the authenticator finds a client: `fresh` false may answer from a short-lived cache
 * (auth/client-state.ts), true reads the store.
 */
export type ClientFinder = (clientId: string, fresh: boolean) => Promise<ClientCredential | undefined>;

/**
 * Client credentials checked so that every failure costs the same, one scrypt run: against the
 * application's hash, or, for an id that names no application, against a dummy hash made at
 * start by hashSecret with `secretCost`, the cost of the real ones (SECRET_COST). Only a
 * correct secret that was verified before takes the fast path (an HMAC compared with the
 * remembered one): how long a failure takes tells nothing about which client ids exist.
 *
 * The client is read through `findClient`'s cache, which may be as old as the cache's lifetime:
 * a client it says is disabled, or whose cached hash the secret does not match, is read again
 * from the store, so a client enabled, or a secret rotated, by another process works at once.
 * What the cache can still let through for that lifetime, a rotated-out secret or a client
 * disabled elsewhere, gets a token of the client's old token version, which the bearer check
 * refuses within the same lifetime (docs/api.md, "Tokens").
 */
export function createClientAuthenticator(
  findClient: ClientFinder,
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
      let client = canExist ? await findClient(clientId, false) : undefined;
      if (client && !client.enabled) client = await findClient(clientId, true);
      if (!client || secret.length > MAX_SECRET_LENGTH) {
        const hash = await dummy;
        await slowCheck(() => verify(secret.slice(0, MAX_SECRET_LENGTH), hash));
        return undefined;
      }
      const mac = macOf(secret);
      const isRemembered = (c: ClientCredential) => {
        const known = remembered.get(c.id);
        return known !== undefined && known.secretHash === c.secretHash && timingSafeEqual(known.mac, mac);
      };
      if (isRemembered(client)) return client;
      let checked = client;
      const ok = await slowCheck(async () => {
        // Asked again once it is this check's turn: a burst of first requests with the right
        // secret hashes it once, the others find it remembered meanwhile.
        if (isRemembered(checked)) return true;
        if (!(await verify(secret, checked.secretHash))) {
          // The cached hash may be older than a rotation: then the store's, once.
          const fresh = await findClient(clientId, true);
          if (!fresh || fresh.secretHash === checked.secretHash) return false;
          checked = fresh;
          if (!(await verify(secret, checked.secretHash))) return false;
        }
        remembered.set(checked.id, { secretHash: checked.secretHash, mac });
        return true;
      });
      return ok ? checked : undefined;
    },
  };
}
