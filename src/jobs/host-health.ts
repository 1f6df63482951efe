import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Clock } from '../domain/clock.ts';
import { messageOf } from '../domain/errors.ts';
import type { HypervisorDriver } from '../drivers/driver.ts';
import { hostsToProbe, recordProbeAnswered, recordProbeFailed } from '../store/repos/host-health.ts';
import type { Database } from '../store/schema.ts';
import { createPeriodic } from './periodic.ts';

export interface HostHealthOptions {
  readonly db: Kysely<Database>;
  readonly driver: Pick<HypervisorDriver, 'name' | 'probe'>;
  readonly clock: Clock;
  readonly log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  /** Time between probes (VRP_HOST_CHECK_INTERVAL). */
  readonly intervalMs: number;
  /** How long probes fail before the host is unreachable (VRP_HOST_DOWN_AFTER). */
  readonly downAfterMs: number;
  /** Called when a host answers again: the jobs that waited for it are due. */
  readonly onReachable?: () => void;
}

export interface HostHealth {
  start(): void;
  stop(): Promise<void>;
  /** One probe of each host (tests). */
  pass(): Promise<void>;
}

/**
 * Probes each of the driver's hosts every `intervalMs` and records it: a host whose probes have
 * failed for `downAfterMs` becomes `unreachable` (placement skips it, its services' jobs wait),
 * and `up` again once it answers. Each change is a conditional update, so with several
 * processes probing, exactly one records it (and its audit entry, `host.unreachable` or
 * `host.reachable`).
 */
export function createHostHealth(o: HostHealthOptions): HostHealth {
  async function probeOne(host: { readonly id: string; readonly name: string }): Promise<void> {
    let answered = true;
    let error = '';
    try {
      await o.driver.probe(host.id);
    } catch (err) {
      answered = false;
      error = messageOf(err);
    }
    const now = o.clock.now();
    if (answered) {
      if (await recordProbeAnswered(o.db, host.id, now)) {
        o.log.info({ hostId: host.id, host: host.name }, 'host answers again');
        o.onReachable?.();
      }
    } else if (await recordProbeFailed(o.db, host.id, now, o.downAfterMs)) {
      o.log.warn({ hostId: host.id, host: host.name, error }, 'host unreachable');
    }
  }
  // All hosts at once: a host that hangs (its probe waits out its timeout) delays no other.
  async function pass(): Promise<void> {
    await Promise.all((await hostsToProbe(o.db, o.driver.name)).map(probeOne));
  }
  const periodic = createPeriodic({ name: 'host health', intervalMs: o.intervalMs, log: o.log, pass });
  return { start: periodic.start, stop: periodic.stop, pass };
}
