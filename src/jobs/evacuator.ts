import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Clock } from '../domain/clock.ts';
import { ApiError } from '../domain/errors.ts';
import type { DialectFeatures } from '../store/database.ts';
import {
  endEvacuation,
  evacuatingHostIds,
  evacuationState,
  lockEvacuatingHost,
  recordMove,
} from '../store/repos/evacuations.ts';
import type { Database, HostDriver } from '../store/schema.ts';
import { queueMigrationIn } from './migration-queue.ts';
import { createPeriodic } from './periodic.ts';
import { inSeqTransaction } from './queue.ts';

export interface EvacuatorOptions {
  readonly db: Kysely<Database>;
  readonly features: Pick<DialectFeatures, 'rowLocks'>;
  readonly driver: HostDriver;
  readonly clock: Clock;
  readonly log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  /** Moves in flight per host (VRP_EVACUATE_CONCURRENCY). */
  readonly concurrency: number;
  readonly intervalMs: number;
  /** Called when it queued jobs (the worker's wake-up). */
  readonly onQueued?: () => void;
}

export interface Evacuator {
  start(): void;
  stop(): Promise<void>;
  /** A pass now (a migration ended: the next move can start). */
  wake(): void;
  /** One pass over the hosts being evacuated (tests). */
  pass(): Promise<void>;
}

/**
 * Moves the services off each of the driver's hosts in state `evacuating`: keeps up to
 * `concurrency` migrate jobs in flight per host, each to the host the placement rule picks, one per
 * service (a move that failed is counted and not tried again); once none is left to queue, none
 * is in flight and no VM is still arriving on the host (a create placed there, or a migration to
 * it, begun before the evacuation), the host becomes `draining` and the audit log records
 * `host.evacuated`.
 *
 * Each host's count and queueing are one transaction with the host's row locked (PostgreSQL;
 * SQLite's transactions are serial), so processes running side by side never queue more than
 * the concurrency between them.
 */
export function createEvacuator(o: EvacuatorOptions): Evacuator {
  async function evacuateHost(hostId: string): Promise<void> {
    const queued = await inSeqTransaction(o.db, async (tx) => {
      const host = await lockEvacuatingHost(tx, hostId, o.features.rowLocks);
      if (!host) return 0;
      const now = o.clock.now();
      const state = await evacuationState(tx, hostId, host.startedAt);
      let inFlight = state.inFlight;
      let queued = 0;
      for (const serviceId of state.unmoved) {
        if (inFlight >= o.concurrency) break;
        try {
          const job = await queueMigrationIn(tx, serviceId, now);
          await recordMove(tx, { hostId, serviceId, jobId: job.id, now });
          inFlight++;
          queued++;
        } catch (err) {
          // Not movable now (a terminate queued, too many jobs waiting): looked at again next pass.
          // The refusal comes before the queue writes anything, so the transaction goes on.
          if (!(err instanceof ApiError)) throw err;
          o.log.warn({ hostId, serviceId, error: err.message }, 'evacuation: service not movable now');
        }
      }
      if (queued > 0) o.log.info({ hostId, queued, inFlight }, 'evacuation: migrations queued');
      // Not over while a VM is still arriving (a create or migration toward the host that began
      // before the evacuation): once it lands, it is among the unmoved and moves like the others.
      if (inFlight === 0 && state.unmoved.length === 0 && state.arriving.length === 0) {
        await endEvacuation(tx, hostId, state, now);
        o.log.info({ hostId, moved: state.moved, failed: state.failed }, 'evacuation ended');
      }
      return queued;
    });
    if (queued > 0) o.onQueued?.();
  }

  async function pass(): Promise<void> {
    for (const hostId of await evacuatingHostIds(o.db, o.driver)) await evacuateHost(hostId);
  }

  const periodic = createPeriodic({ name: 'evacuator', intervalMs: o.intervalMs, log: o.log, pass });
  return { start: periodic.start, stop: periodic.stop, wake: periodic.wake, pass };
}
