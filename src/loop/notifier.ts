/**
 * Tells this process's listeners that something changed, synchronously and without holding on
 * to anything: how a request here wakes a background loop here (an evacuation asked for wakes
 * the evacuator at once, not at its next pass). Other processes find the change on their pass.
 */
export interface Notifier {
  notify(): void;
  /** Calls `listener` on each notify() until the returned function is called. */
  listen(listener: () => void): () => void;
}

export function createNotifier(): Notifier {
  const listeners = new Set<() => void>();
  return {
    notify() {
      for (const l of listeners) l();
    },
    listen(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
