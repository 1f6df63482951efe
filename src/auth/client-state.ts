import type { ClientState } from '../domain/client-state.ts';
import type { ClientCredential } from './client-lookup.ts';

/** How long a process trusts what it read about a client; revocations reach every process within it. */
export const CLIENT_STATE_TTL_MS = 2000;

export type ClientStateLoader = (clientId: string) => Promise<ClientState | undefined>;
export type ClientCredentialLoader = (clientId: string) => Promise<ClientCredential | undefined>;

/**
 * A short-lived cache of what the store (which all processes share) says about each client:
 * its state (enabled flag and token version), which every bearer check reads, and its
 * credential (secret hash, scopes), which every token request reads. A disabled application,
 * reseller or operator, or a rotated secret, makes tokens fail, and stops new ones from being
 * issued, on every process within CLIENT_STATE_TTL_MS (well inside 5 s); in the process that
 * made the change at once (`invalidate`).
 */
export interface ClientStateCache {
  get(clientId: string, nowMs: number): Promise<ClientState | undefined>;
  /**
   * The client's credential. A client id that names none is not remembered: one created a
   * moment later on another process is known at its first token request. `fresh`: read from
   * the store now (and remembered), whatever is cached or being read.
   */
  credential(clientId: string, nowMs: number, fresh?: boolean): Promise<ClientCredential | undefined>;
  /** Forget what this process knows (after a local change). */
  invalidate(clientId: string): void;
}

export function createClientStateCache(
  load: { readonly state: ClientStateLoader; readonly credential: ClientCredentialLoader },
  ttlMs = CLIENT_STATE_TTL_MS,
): ClientStateCache {
  const states = shortLived(load.state, ttlMs, true);
  const credentials = shortLived(load.credential, ttlMs, false);
  return {
    get: states.get,
    credential: credentials.get,
    invalidate(clientId) {
      states.forget(clientId);
      credentials.forget(clientId);
    },
  };
}

/**
 * Values read by key and kept `ttlMs`; reads of a key that arrive while one is under way share
 * it (a `fresh` read starts its own). `keepMissing`: an undefined answer is kept too.
 */
function shortLived<V>(load: (key: string) => Promise<V | undefined>, ttlMs: number, keepMissing: boolean) {
  // Each read of the store is numbered as it starts: what a read finds is kept only if no read
  // started after it has been kept already (a fresh read is not undone by a slower older one).
  let reads = 0;
  const entries = new Map<string, { value: V | undefined; until: number; read: number }>();
  const inflight = new Map<string, { read: number; value: Promise<V | undefined> }>();
  return {
    async get(key: string, nowMs: number, fresh = false): Promise<V | undefined> {
      const hit = entries.get(key);
      if (hit && hit.until > nowMs && !fresh) return hit.value;
      let pending = fresh ? undefined : inflight.get(key);
      if (!pending) {
        const started = {
          read: ++reads,
          value: load(key).finally(() => {
            if (inflight.get(key) === started) inflight.delete(key);
          }),
        };
        pending = started;
        inflight.set(key, started);
      }
      const value = await pending.value;
      if (value === undefined && !keepMissing) return value;
      const kept = entries.get(key);
      if (kept && kept.read > pending.read) return value;
      if (entries.size > 10_000) entries.clear();
      entries.set(key, { value, until: nowMs + ttlMs, read: pending.read });
      return value;
    },
    forget(key: string): void {
      entries.delete(key);
    },
  };
}
