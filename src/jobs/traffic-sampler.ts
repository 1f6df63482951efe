import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Clock } from '../domain/clock.ts';
import { ApiError } from '../domain/errors.ts';
import { trafficExceeded } from '../domain/events.ts';
import { gbOf, monthName, parseTrafficOver, pastQuota, utcMonth } from '../domain/traffic.ts';
import type { HypervisorDriver } from '../drivers/driver.ts';
import { isStoreUnavailable } from '../store/errors.ts';
import { systemAudit, systemPart } from '../store/repos/audit.ts';
import { recordEvents } from '../store/repos/events.ts';
import { reachableHostIds } from '../store/repos/hosts.ts';
import {
  type CountedTraffic,
  markLifted,
  monthTraffic,
  recordExceeded,
  recordSamples,
  throttlesOnHost,
  throttlesToLift,
} from '../store/repos/traffic.ts';
import type { Database } from '../store/schema.ts';
import { createPeriodic } from './periodic.ts';
import { enqueueInTransaction, inSeqTransaction } from './queue.ts';

/**
 * How long after a month's turn a lifted throttle is lifted again at each pass: longer than any
 * one host's turn of a pass that began in the month before (in another process) can last.
 */
const RELIFT_MS = 60 * 60_000;

export interface TrafficSamplerOptions {
  readonly db: Kysely<Database>;
  readonly driver: Pick<HypervisorDriver, 'name' | 'interfaceCounters' | 'setBandwidth'>;
  /** The server's clock: days and months are counted on it. */
  readonly clock: Clock;
  readonly log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  /** Time between passes (VRP_TRAFFIC_SAMPLE_INTERVAL). */
  readonly intervalMs: number;
  /** Called when a suspension was queued, so this process's worker picks it up at once. */
  readonly onQueued?: () => void;
}

/** What one pass did on one host (for tests). */
export interface TrafficHostPass {
  readonly hostId: string;
  readonly outcome: 'sampled' | 'unreachable';
  /** Bytes counted per service by this process. */
  readonly counted: readonly CountedTraffic[];
  /** Services found past their quota by this process (each once per month, whatever the processes). */
  readonly exceeded: readonly { readonly serviceId: string; readonly action: 'throttle' | 'suspend' }[];
}

export interface TrafficSampler {
  /** Samples every host of the driver once, then lifts the throttles of months gone by. */
  pass(): Promise<TrafficHostPass[]>;
  start(): void;
  stop(): Promise<void>;
}

/**
 * The traffic sampler: every interval, reads the interface counters of all running VMs of each
 * host that answers, one call per host, and adds the bytes since the last reading to each
 * service's day (store/repos/traffic.ts: a counter that started again from zero counts whole;
 * several processes never count one difference twice). A service whose month (UTC) then passes
 * its product's quota is throttled or suspended, and the reseller told
 * (`service.traffic_exceeded`), once per month: the record of it, the event and the suspension
 * are one transaction. Throttles are set again on every pass while their month lasts (so a VM
 * redefined meanwhile, by a rescue or a migration, keeps its limit), and lifted once it is over.
 */
export function createTrafficSampler(o: TrafficSamplerOptions): TrafficSampler {
  async function quotas(productIds: readonly string[]) {
    if (productIds.length === 0) return new Map<string, { gb: number; over: string }>();
    const rows = await o.db
      .selectFrom('products')
      .select(['id', 'traffic_gb', 'traffic_over'])
      .where('id', 'in', [...new Set(productIds)])
      .where('traffic_gb', 'is not', null)
      .execute();
    return new Map(rows.map((r) => [r.id, { gb: Number(r.traffic_gb), over: r.traffic_over ?? '' }]));
  }

  /** Records the service past its quota and does what its product says, once per month. */
  async function exceed(
    c: CountedTraffic,
    quota: { gb: number; over: string },
    month: { inBytes: number; outBytes: number },
    now: number,
  ): Promise<'throttle' | 'suspend' | undefined> {
    const over = parseTrafficOver(quota.over);
    if (!over) {
      o.log.error(
        { productId: c.productId, traffic_over: quota.over },
        'traffic: the product’s traffic_over is not valid',
      );
      return undefined;
    }
    const monthStart = utcMonth(now);
    try {
      const done = await inSeqTransaction(o.db, async (tx) => {
        const first = await recordExceeded(tx, {
          service_id: c.serviceId,
          month: monthStart,
          action: over.kind,
          throttle_mbit: over.kind === 'throttle' ? over.mbit : null,
          exceeded_at: now,
        });
        if (!first) return false;
        if (over.kind === 'suspend') {
          await enqueueInTransaction(
            tx,
            {
              resellerId: c.resellerId,
              serviceId: c.serviceId,
              action: 'suspend',
              params: { reason: 'traffic_exceeded' },
              audit: systemAudit('service.suspend'),
              startedBy: systemPart('traffic'),
            },
            now,
          );
        }
        await recordEvents(
          tx,
          c.resellerId,
          [
            trafficExceeded({
              service_id: c.serviceId,
              month: monthName(monthStart),
              traffic_gb: quota.gb,
              traffic_in_gb: gbOf(month.inBytes),
              traffic_out_gb: gbOf(month.outBytes),
              action: over.kind,
              ...(over.kind === 'throttle' ? { throttle_mbit: over.mbit } : {}),
            }),
          ],
          now,
        );
        return true;
      });
      if (!done) return undefined;
    } catch (err) {
      // A service that cannot be suspended now (its status forbids it): the next pass tries again.
      if (err instanceof ApiError && err.code === 'invalid_state') {
        o.log.info(
          { serviceId: c.serviceId, error: err.message },
          'traffic: past its quota, not suspendable yet',
        );
        return undefined;
      }
      throw err;
    }
    o.log.info({ serviceId: c.serviceId, action: over.kind }, 'traffic: service past its monthly quota');
    return over.kind;
  }

  async function sampleHost(hostId: string, now: number): Promise<TrafficHostPass> {
    let counters: Awaited<ReturnType<typeof o.driver.interfaceCounters>>;
    try {
      counters = await o.driver.interfaceCounters(hostId);
    } catch (err) {
      if (isStoreUnavailable(err)) throw err;
      o.log.warn(
        { hostId, error: String(err) },
        'traffic: the host did not give its counters; next pass tries again',
      );
      return { hostId, outcome: 'unreachable', counted: [], exceeded: [] };
    }
    const counted = await recordSamples(o.db, hostId, counters, now);
    const exceeded: { serviceId: string; action: 'throttle' | 'suspend' }[] = [];
    const limits = await quotas(counted.map((c) => c.productId));
    const limited = counted.filter((c) => limits.has(c.productId));
    const months = await monthTraffic(
      o.db,
      limited.map((c) => c.serviceId),
      now,
    );
    let queued = false;
    for (const c of limited) {
      const quota = limits.get(c.productId);
      const month = months.get(c.serviceId);
      if (!quota || !month || !pastQuota(month.inBytes, month.outBytes, quota.gb)) continue;
      const action = await exceed(c, quota, month, now);
      if (action) exceeded.push({ serviceId: c.serviceId, action });
      if (action === 'suspend') queued = true;
    }
    if (queued) o.onQueued?.();
    // Every throttle of the month, set again: idempotent, and it survives a redefined VM. The
    // month as of now, not of the pass's start: a pass that began before a month's turn must not
    // set last month's throttles again after another process lifted them (liftThrottles lifts a
    // throttle again for a while after, for one set in the moment between).
    for (const t of await throttlesOnHost(o.db, hostId, o.clock.now())) {
      try {
        await o.driver.setBandwidth(t.serviceId, t.mbit);
      } catch (err) {
        if (isStoreUnavailable(err)) throw err;
        o.log.warn(
          { serviceId: t.serviceId, error: String(err) },
          'traffic: could not throttle; next pass tries again',
        );
      }
    }
    return { hostId, outcome: 'sampled', counted, exceeded };
  }

  /**
   * Throttles of months gone by: lifted on the hypervisor, then marked lifted (a service gone, or
   * throttled again, keeps its state). Those lifted in the last RELIFT_MS are lifted again: another
   * process's pass that began before the month's turn may have set one again in between.
   */
  async function liftThrottles(now: number): Promise<void> {
    for (const t of await throttlesToLift(o.db, now, now - RELIFT_MS)) {
      try {
        if (!t.keep) await o.driver.setBandwidth(t.serviceId, null);
        if (!t.lifted && (await markLifted(o.db, t.serviceId, t.month, now)))
          o.log.info({ serviceId: t.serviceId }, 'traffic: a new month lifted the throttle');
      } catch (err) {
        if (isStoreUnavailable(err)) throw err;
        o.log.warn(
          { serviceId: t.serviceId, error: String(err) },
          'traffic: could not lift a throttle; next pass tries again',
        );
      }
    }
  }

  async function pass(): Promise<TrafficHostPass[]> {
    const now = o.clock.now();
    await liftThrottles(now);
    const results: TrafficHostPass[] = [];
    // Hosts that do not answer are host health's (jobs/host-health.ts); their counters wait.
    for (const hostId of await reachableHostIds(o.db, o.driver.name))
      results.push(await sampleHost(hostId, now));
    return results;
  }

  const periodic = createPeriodic({
    pass,
    intervalMs: o.intervalMs,
    firstDelayMs: o.intervalMs,
    name: 'traffic sampler',
    log: o.log,
  });
  return { pass, start: () => periodic.start(), stop: () => periodic.stop() };
}
