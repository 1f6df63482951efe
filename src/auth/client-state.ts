import type { ClientState } from '../domain/client-state.ts';

/** How long a process trusts what it read about a client; revocations reach every process within it. */
export const CLIENT_STATE_TTL_MS = 2000;

export type ClientStateLoader = (clientId: string) => Promise<ClientState | undefined>;

/**
 * A short-lived cache of each client's enabled flag and token version, read from the store
 * (which all processes share). A disabled application, reseller or operator, or a rotated
 * secret, makes tokens fail on every process within CLIENT_STATE_TTL_MS (well inside 5 s).
 */
export interface ClientStateCache {
  get(clientId: string, nowMs: number): Promise<ClientState | undefined>;
  /** Forget what this process knows (after a local change). */
  invalidate(clientId: string): void;
}

export function createClientStateCache(
  load: ClientStateLoader,
  ttlMs = CLIENT_STATE_TTL_MS,
): ClientStateCache {
  const entries = new Map<string, { state: ClientState | undefined; until: number }>();
  const inflight = new Map<string, Promise<ClientState | undefined>>();
  return {
    async get(clientId, nowMs) {
      const hit = entries.get(clientId);
      if (hit && hit.until > nowMs) return hit.state;
      let pending = inflight.get(clientId);
      if (!pending) {
        pending = load(clientId).finally(() => inflight.delete(clientId));
        inflight.set(clientId, pending);
      }
      const state = await pending;
      if (entries.size > 10_000) entries.clear();
      entries.set(clientId, { state, until: nowMs + ttlMs });
      return state;
    },
    invalidate(clientId) {
      entries.delete(clientId);
    },
  };
}
