/**
 * One door for both kinds of OAuth client: reseller applications (`clients`, ids `vrp_...`) and
 * operator clients (`operator_clients`, ids `vrpop_...`). The token endpoint and the bearer
 * check go through here, so both kinds share one code path, one throttle and one revocation
 * mechanism; the id's prefix picks the table, so either look-up is one indexed read.
 */
import type { Kysely } from 'kysely';
import type { ClientState } from '../domain/client-state.ts';
import { OPERATOR_SCOPE, type TokenScope } from '../domain/scopes.ts';
import { findClientForAuth, loadClientState } from '../store/repos/clients.ts';
import {
  findOperatorClientForAuth,
  isOperatorClientId,
  loadOperatorClientState,
} from '../store/repos/operators.ts';
import type { Database } from '../store/schema.ts';

/** A client of either kind, as the token endpoint checks it. */
export interface ClientCredential {
  readonly id: string;
  readonly kind: ClientState['kind'];
  readonly secretHash: string;
  /** The client is enabled, and so is its reseller or operator. */
  readonly enabled: boolean;
  readonly tokenVersion: number;
  /** What it may ask for: an application's scopes, or exactly `operator`. */
  readonly scopes: readonly TokenScope[];
  /** The tenant its tokens act in; '' for an operator client, which acts in none. */
  readonly resellerId: string;
}

/** The client with this id, with its secret's hash; undefined if there is none. */
export async function findClientCredential(
  db: Kysely<Database>,
  id: string,
): Promise<ClientCredential | undefined> {
  if (isOperatorClientId(id)) {
    const c = await findOperatorClientForAuth(db, id);
    return (
      c && {
        id: c.id,
        kind: 'operator',
        secretHash: c.secretHash,
        enabled: c.enabled,
        tokenVersion: c.tokenVersion,
        scopes: [OPERATOR_SCOPE],
        resellerId: '',
      }
    );
  }
  const c = await findClientForAuth(db, id);
  return (
    c && {
      id: c.id,
      kind: 'application',
      secretHash: c.secretHash,
      enabled: c.enabled && c.resellerEnabled,
      tokenVersion: c.tokenVersion,
      scopes: c.scopes,
      resellerId: c.resellerId,
    }
  );
}

/** The current state of the client with this id, for the client-state cache. */
export function loadAnyClientState(db: Kysely<Database>, id: string): Promise<ClientState | undefined> {
  return isOperatorClientId(id) ? loadOperatorClientState(db, id) : loadClientState(db, id);
}
