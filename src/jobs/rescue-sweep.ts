import type { FastifyBaseLogger } from 'fastify';
import type { Kysely, Transaction } from 'kysely';
import type { Clock } from '../domain/clock.ts';
import { ApiError } from '../domain/errors.ts';
import { systemPart } from '../store/repos/audit.ts';
import type { Database } from '../store/schema.ts';
import { createPeriodic } from './periodic.ts';
import { enqueueInTransaction, inSeqTransaction } from './queue.ts';

export interface RescueSweepOptions {
  readonly db: Kysely<Database>;
  /** The server's clock: a rescue's age is measured on it. */
  readonly clock: Clock;
  readonly log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  /** A rescue ends by itself this long after it began (VRP_RESCUE_MAX). */
  readonly maxMs: number;
  readonly intervalMs: number;
  /** Called when an unrescue was queued, so this process's worker picks it up at once. */
  readonly onQueued?: () => void;
}

/**
 * What a pass did with one service whose rescue is over: `queued` (this process queued its
 * unrescue) or `taken` (an unrescue, suspend or terminate was queued meanwhile, by another
 * process or a request).
 */
export interface SweepOutcome {
  readonly serviceId: string;
  readonly outcome: 'queued' | 'taken';
  readonly jobId: string | null;
}

export interface RescueSweep {
  /** Queues the unrescue of every rescue that is over; what happened to each (for tests). */
  pass(): Promise<SweepOutcome[]>;
  start(): void;
  stop(): Promise<void>;
}

/** Actions that take a service out of rescue: one of them pending, the rescue's end is on its way. */
const LEAVING = ['unrescue', 'suspend', 'terminate'] as const;

/** The services in rescue since before `cutoff` with nothing queued to leave it. */
function overdue(db: Kysely<Database> | Transaction<Database>, cutoff: number, serviceId?: string) {
  let q = db
    .selectFrom('services')
    .select(['id', 'reseller_id'])
    .where('status', '=', 'rescue')
    .where('rescue_since', '<=', cutoff)
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('jobs')
            .select('jobs.id')
            .whereRef('jobs.service_id', '=', 'services.id')
            .where('jobs.status', 'in', ['queued', 'running'])
            .where('jobs.action', 'in', LEAVING),
        ),
      ),
    );
  if (serviceId !== undefined) q = q.where('id', '=', serviceId);
  return q.orderBy('rescue_since').limit(500).execute();
}

/**
 * Ends rescues that reached VRP_RESCUE_MAX: queues `unrescue` with `{expired: true}` for each.
 * Safe with any number of processes: each unrescue is queued by the queue's own rule (the
 * status machine against the projected status, and the compare-and-set on the service's job
 * sequence), in a transaction that checks again that no unrescue, suspend or terminate is
 * pending, so a second process (or a request that came first) finds it queued and does nothing.
 */
export function createRescueSweep(o: RescueSweepOptions): RescueSweep {
  async function pass(): Promise<SweepOutcome[]> {
    const now = o.clock.now();
    const cutoff = now - o.maxMs;
    const outcomes: SweepOutcome[] = [];
    for (const s of await overdue(o.db, cutoff)) {
      try {
        const r = await inSeqTransaction(o.db, (tx) =>
          enqueueInTransaction(
            tx,
            {
              resellerId: s.reseller_id,
              serviceId: s.id,
              action: 'unrescue',
              params: { expired: true },
              startedBy: systemPart('rescue-expiry'),
              check: async (_service, t) => {
                if ((await overdue(t, cutoff, s.id)).length === 0)
                  throw new ApiError('invalid_state', 'The rescue is ending already');
              },
            },
            now,
          ),
        );
        const jobId = r.kind === 'queued' ? r.job.id : null;
        outcomes.push({ serviceId: s.id, outcome: jobId ? 'queued' : 'taken', jobId });
        if (jobId) o.log.info({ serviceId: s.id, jobId }, 'rescue over: unrescue queued');
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 'invalid_state')) throw err;
        outcomes.push({ serviceId: s.id, outcome: 'taken', jobId: null });
      }
    }
    if (outcomes.some((x) => x.outcome === 'queued')) o.onQueued?.();
    return outcomes;
  }

  const periodic = createPeriodic({ pass, intervalMs: o.intervalMs, name: 'rescue sweep', log: o.log });
  return { pass, start: () => periodic.start(), stop: () => periodic.stop() };
}
