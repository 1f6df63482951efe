import { byCodeUnits } from '../domain/code-unit-text.ts';

/**
 * Attempts one process has in flight to one endpoint (scheme, host and port), by default: the two
 * connections per server HTTP/1.1 clients were long told to keep to. A receiver that answers
 * takes a few of them a second; one that hangs holds two senders, however many webhooks of
 * however many resellers point at it.
 */
export const ENDPOINT_CAP = 2;

/** An attempt that may be started: whose it is and where it goes. */
export interface Contender {
  readonly webhookId: string;
  readonly resellerId: string;
  /** The receiver's origin (scheme, host, port): webhooks of any reseller at one origin share it. */
  readonly endpoint: string;
}

/** What this process is sending now. */
export interface Load {
  readonly inFlight: number;
  readonly byReseller: ReadonlyMap<string, number>;
  readonly byEndpoint: ReadonlyMap<string, number>;
}

/** The endpoint a receiver URL is at: its origin (an unparsable one is its own). */
export function endpointOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}

/**
 * Whether a reseller that has `held` attempts in flight may start one more when `free` senders
 * are free: only while more than `held` are. Attempts cannot be taken back from a receiver that
 * hangs, so one reseller's failing receivers must never take the last senders: one reseller
 * alone gets at most half of them, two about a third each, and a reseller with nothing in
 * flight may start one whenever any sender is free.
 */
export function mayStart(held: number, free: number): boolean {
  return held < free;
}

/**
 * Which of `contenders` to start now, given what is in flight and `concurrency` senders: in
 * turns between resellers (each turn, one attempt per reseller that may start one, those with
 * the fewest attempts in flight first, then the one served longest ago), never more than
 * `endpointCap` in flight to one endpoint, and never past a reseller's share (mayStart). Within a
 * reseller, contenders are taken in the order given (longest-waiting first).
 */
export function pickFair<C extends Contender>(
  contenders: readonly C[],
  load: Load,
  o: {
    readonly concurrency: number;
    readonly endpointCap: number;
    /** When each reseller was last served (larger: more recently); missing: never. */
    readonly lastServed: ReadonlyMap<string, number>;
  },
): C[] {
  const queues = new Map<string, C[]>();
  for (const c of contenders) {
    const q = queues.get(c.resellerId);
    if (q) q.push(c);
    else queues.set(c.resellerId, [c]);
  }
  const byReseller = new Map(load.byReseller);
  const byEndpoint = new Map(load.byEndpoint);
  let inFlight = load.inFlight;
  const picked: C[] = [];
  const order = [...queues.keys()].sort(
    (a, b) =>
      (byReseller.get(a) ?? 0) - (byReseller.get(b) ?? 0) ||
      (o.lastServed.get(a) ?? -1) - (o.lastServed.get(b) ?? -1) ||
      byCodeUnits(a, b),
  );
  for (let took = true; took && inFlight < o.concurrency; ) {
    took = false;
    for (const reseller of order) {
      const free = o.concurrency - inFlight;
      if (free <= 0) break;
      const held = byReseller.get(reseller) ?? 0;
      if (!mayStart(held, free)) continue;
      const queue = queues.get(reseller) ?? [];
      const i = queue.findIndex((c) => (byEndpoint.get(c.endpoint) ?? 0) < o.endpointCap);
      const [c] = i < 0 ? [] : queue.splice(i, 1);
      if (c === undefined) continue;
      picked.push(c);
      byReseller.set(reseller, held + 1);
      byEndpoint.set(c.endpoint, (byEndpoint.get(c.endpoint) ?? 0) + 1);
      inFlight++;
      took = true;
    }
  }
  return picked;
}
