import { nextUtcMonth, utcMonth } from '../../domain/traffic.ts';
import type { HotReads } from '../hot-reads.ts';
import { currentJob, type Job } from './jobs.ts';
import { type Service, toService } from './services.ts';

/** What the reseller's details of a service show. */
export interface ServiceDetails {
  readonly service: Service;
  /** Its running job, or else its first queued one; none unless it has pending jobs. */
  readonly job: Job | undefined;
  readonly ipv6: { readonly prefix: string; readonly address: string; readonly gateway: string } | null;
  /** Its bytes in and out this UTC month (of `now`). */
  readonly traffic: { readonly inBytes: number; readonly outBytes: number };
}

/**
 * The reseller's service with what its details show, undefined if it is not the reseller's: the
 * service, its prefix and its traffic in one statement (one snapshot; it was three), and its
 * current job if it has pending jobs (most have none: no second read).
 */
export async function findOwnedServiceDetails(
  reads: HotReads,
  resellerId: string,
  id: string,
  now: number,
): Promise<ServiceDetails | undefined> {
  const r = await reads.serviceDetails(resellerId, id, utcMonth(now), nextUtcMonth(now));
  if (!r) return undefined;
  return {
    service: toService(r),
    job: r.pending_jobs > 0 ? await currentJob(reads, r.id) : undefined,
    ipv6: r.v6_prefix === null ? null : { prefix: r.v6_prefix, address: r.v6_address, gateway: r.v6_gateway },
    traffic: { inBytes: Number(r.traffic_in), outBytes: Number(r.traffic_out) },
  };
}
