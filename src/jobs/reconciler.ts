import { randomUUID } from 'node:crypto';
import { type CorrectionKind, correctionKind, powerCorrection } from '../domain/power-drift.ts';
import type { StableStatus } from '../domain/status-machine.ts';
import type { DiskErrorPauses } from '../drivers/driver.ts';
import { isStoreUnavailable } from '../store/errors.ts';
import { reachableHostIds } from '../store/repos/hosts.ts';
import { claimHostLease, releaseHostLease, renewHostLease } from '../store/repos/reconciler-leases.ts';
import { servicesPaused } from './notify-conditions.ts';
import { createPeriodic } from './periodic.ts';
import { correctIdleService, type IdleService, type PowerCheckDeps, stillIdle } from './power-check.ts';

export interface ReconcilerOptions extends PowerCheckDeps {
  /** Time between passes (VRP_RECONCILE_INTERVAL); also how long a host stays unclaimed after a pass. */
  readonly intervalMs: number;
  /** How long a host is held during a pass without a renewal, so a dead process's hold runs out (default 60 s). */
  readonly leaseMs?: number;
  /** Real time, for the leases (default Date.now); tests move it to expire one. */
  readonly realNow?: () => number;
}

/**
 * What one pass did on one host: `reconciled` (with the corrections made), `taken` (another
 * process holds or has just reconciled the host), `unreachable` (the host did not answer the
 * listing), `lost` (this process's hold ran out mid-pass and another took the host; it stopped).
 */
export interface HostPass {
  readonly hostId: string;
  readonly outcome: 'reconciled' | 'taken' | 'unreachable' | 'lost';
  readonly corrections: readonly { readonly serviceId: string; readonly kind: CorrectionKind }[];
  /** The VMs whose old copy the host no longer holds after the pass (HypervisorDriver.clearLeftovers). */
  readonly leftoversCleared: readonly string[];
  /** The template volumes no VM used that the pass removed from the host (HypervisorDriver.clearUnusedTemplates). */
  readonly templatesRemoved: readonly string[];
  /** The VMs whose start with the host was set or cleared (HypervisorDriver.setStartWithHost). */
  readonly autostartChanged: readonly string[];
  /** The VMs found paused on a failed write to their disk (HypervisorDriver.pausedByDiskErrors). */
  readonly pausedOnDiskErrors: readonly string[];
  /** Those of them the pass resumed, the host's storage having room again (HypervisorDriver.resumePaused). */
  readonly resumed: readonly string[];
}

export interface Reconciler {
  /** Names this process's hold on a host (`reconciler_leases.locked_by`). */
  readonly id: string;
  /** Reconciles every host of the driver once; what happened on each (for tests). */
  pass(): Promise<HostPass[]>;
  start(): void;
  stop(): Promise<void>;
}

const DEFAULT_LEASE_MS = 60_000;
/**
 * How many VMs' start with their host one pass over a host changes at most (one `virsh` each):
 * the first pass after an upgrade marks every running VM of the host, over as many passes.
 */
const AUTOSTART_CHANGES_PER_PASS = 50;
const POWER_STATUSES: readonly StableStatus[] = ['running', 'stopped', 'suspended'];

/**
 * The power-state reconciler: the hypervisor is the truth for power state. Each pass takes the
 * driver's hosts one at a time; for each it claims the host's lease (so that of several worker
 * processes one reconciles a host at a time, and only once per interval), reads the services on
 * the host with no job queued or running, then asks the hypervisor for the power state of all
 * of its VMs in one call, and corrects each service that disagrees (domain/power-drift.ts)
 * with a conditional update that leaves alone any service a job or request touched meanwhile.
 */
export function createReconciler(o: ReconcilerOptions): Reconciler {
  const id = `reconciler-${randomUUID()}`;
  const realNow = o.realNow ?? Date.now;
  const leaseMs = o.leaseMs ?? DEFAULT_LEASE_MS;

  async function reconcileHost(hostId: string): Promise<HostPass> {
    const started = realNow();
    if (!(await claimHostLease(o.db, hostId, id, started, started + leaseMs))) {
      return {
        hostId,
        outcome: 'taken',
        corrections: [],
        leftoversCleared: [],
        templatesRemoved: [],
        autostartChanged: [],
        pausedOnDiskErrors: [],
        resumed: [],
      };
    }
    const corrections: { serviceId: string; kind: CorrectionKind }[] = [];
    let outcome: HostPass['outcome'] = 'reconciled';
    try {
      // Read before the hypervisor is asked: a job accepted after this read moves job_seq, and
      // the correction's condition then leaves the service to the job.
      const services: IdleService[] = (
        await o.db
          .selectFrom('services')
          .select(['id', 'reseller_id', 'status', 'job_seq'])
          .where('host_id', '=', hostId)
          .where('status', 'in', POWER_STATUSES)
          .where('pending_jobs', '=', 0)
          .where('active_job_id', 'is', null)
          .$narrowType<{ status: StableStatus }>()
          .execute()
      ).map((r) => ({
        id: r.id,
        resellerId: r.reseller_id,
        status: r.status,
        jobSeq: r.job_seq,
      }));
      let states: ReadonlyMap<string, 'running' | 'stopped'> = new Map();
      try {
        if (services.length > 0) states = await o.driver.powerStates(hostId);
      } catch (err) {
        if (isStoreUnavailable(err)) throw err;
        o.log.warn(
          { hostId, error: String(err) },
          'reconciler: the host did not list its VMs; next pass tries again',
        );
        outcome = 'unreachable';
        return {
          hostId,
          outcome,
          corrections,
          leftoversCleared: [],
          templatesRemoved: [],
          autostartChanged: [],
          pausedOnDiskErrors: [],
          resumed: [],
        };
      }
      // The services as they stand after the corrections (a status corrected moves the sequence).
      const settled: IdleService[] = [];
      for (const s of services) {
        const correction = powerCorrection(s.status, states.get(s.id) ?? 'missing');
        settled.push(s);
        if (!correction) continue;
        if (!(await stillHeld(hostId))) {
          outcome = 'lost';
          break;
        }
        try {
          if (await correctIdleService(o, s, correction)) {
            corrections.push({ serviceId: s.id, kind: correctionKind(correction) });
            if (correction.kind === 'status')
              settled[settled.length - 1] = { ...s, status: correction.to, jobSeq: s.jobSeq + 1 };
          }
        } catch (err) {
          if (isStoreUnavailable(err)) throw err;
          // One service that cannot be corrected (a power-off refused) must not hold up the rest.
          o.log.error(
            { err, hostId, serviceId: s.id },
            'reconciler: correction failed; next pass tries again',
          );
        }
      }
      let leftoversCleared: readonly string[] = [];
      let templatesRemoved: readonly string[] = [];
      let autostartChanged: readonly string[] = [];
      if (outcome === 'reconciled') {
        const marks = await startWithHost(hostId, settled, states);
        autostartChanged = marks.changed;
        if (marks.lost) outcome = 'lost';
      }
      let pausedOnDiskErrors: readonly string[] = [];
      let resumed: readonly string[] = [];
      if (outcome === 'reconciled') {
        const pauses = await diskErrorPauses(hostId, settled);
        ({ paused: pausedOnDiskErrors, resumed } = pauses);
        if (pauses.lost) outcome = 'lost';
      }
      if (outcome === 'reconciled') {
        leftoversCleared = await clearLeftovers(hostId);
        // Held anew first: the corrections and the leftovers may have taken much of the hold.
        if (await stillHeld(hostId)) templatesRemoved = await clearUnusedTemplates(hostId);
        else outcome = 'lost';
      }
      return {
        hostId,
        outcome,
        corrections,
        leftoversCleared,
        templatesRemoved,
        autostartChanged,
        pausedOnDiskErrors,
        resumed,
      };
    } finally {
      // The next pass over this host, by any process, is due one interval after this one began.
      if (outcome !== 'lost') await releaseHostLease(o.db, hostId, id, started + o.intervalMs);
    }
  }

  /**
   * Renews this process's hold on the host before more work on it: false (logged) when the hold
   * ran out and another process took the host, and the pass stops there.
   */
  async function stillHeld(hostId: string): Promise<boolean> {
    if (await renewHostLease(o.db, hostId, id, realNow() + leaseMs)) return true;
    o.log.warn({ hostId }, 'reconciler: lost the host to another process mid-pass; stopping here');
    return false;
  }

  /**
   * One of the driver's upkeeps of a host (`work`; undefined from a driver without it): whatever it
   * could not do is logged by `report`, and a failure altogether with `failed`; the next pass
   * tries again. The store out of reach ends the pass, as everywhere else in it.
   */
  async function upkeep<R>(
    hostId: string,
    work: () => Promise<R> | undefined,
    report: (r: R) => readonly string[],
    failed: string,
  ): Promise<readonly string[]> {
    try {
      const done = await work();
      return done === undefined ? [] : report(done);
    } catch (err) {
      if (isStoreUnavailable(err)) throw err;
      o.log.warn({ hostId, error: String(err) }, failed);
      return [];
    }
  }

  /**
   * Removes what the host holds of VMs that are elsewhere (a migration's clean-up that failed
   * there); what is still there is logged, and the next pass tries again.
   */
  const clearLeftovers = (hostId: string) =>
    upkeep(
      hostId,
      () => o.driver.clearLeftovers?.(hostId),
      (done) => {
        for (const f of done.failed)
          o.log.warn(
            { hostId, vmId: f.vmId, error: f.error },
            "reconciler: a VM's old copy on the host could not be removed; next pass tries again",
          );
        return done.cleared;
      },
      "reconciler: the host's old copies of VMs could not be listed; next pass tries again",
    );

  /**
   * Makes the host's boot start the servers the API has running there and no other
   * (HypervisorDriver.startingWithHost, setStartWithHost): each idle service found running and
   * `running` in the store (one started outside it is, once corrected) is marked, each found shut
   * off unmarked (shut down outside it, or suspended), at most AUTOSTART_CHANGES_PER_PASS, each
   * only while the service is still as it stands (a job accepted since settles its own mark) and
   * the host still held. Changes are logged at info, failures at warn (the next pass tries again).
   */
  async function startWithHost(
    hostId: string,
    settled: readonly IdleService[],
    states: ReadonlyMap<string, 'running' | 'stopped'>,
  ): Promise<{ changed: string[]; lost: boolean }> {
    const changed: string[] = [];
    const { startingWithHost, setStartWithHost } = o.driver;
    if (!startingWithHost || !setStartWithHost || settled.length === 0) return { changed, lost: false };
    let marked: ReadonlySet<string>;
    try {
      marked = await startingWithHost.call(o.driver, hostId);
    } catch (err) {
      if (isStoreUnavailable(err)) throw err;
      o.log.warn(
        { hostId, error: String(err) },
        "reconciler: the host's VMs could not be listed for their start with it; next pass tries again",
      );
      return { changed, lost: false };
    }
    for (const s of settled) {
      const observed = states.get(s.id);
      const want =
        observed === 'running' && s.status === 'running' ? true : observed === 'stopped' ? false : undefined;
      if (want === undefined || marked.has(s.id) === want) continue;
      if (changed.length >= AUTOSTART_CHANGES_PER_PASS) break;
      if (!(await stillHeld(hostId))) return { changed, lost: true };
      if (!(await stillIdle(o.db, s))) continue;
      try {
        await setStartWithHost.call(o.driver, s.id, want);
        changed.push(s.id);
        o.log.info(
          { hostId, serviceId: s.id, startsWithHost: want },
          want
            ? 'reconciler: a running VM marked to start with its host'
            : 'reconciler: a stopped VM no longer marked to start with its host',
        );
      } catch (err) {
        if (isStoreUnavailable(err)) throw err;
        o.log.warn(
          { hostId, serviceId: s.id, error: String(err) },
          "reconciler: a VM's start with its host could not be set; next pass tries again",
        );
      }
    }
    return { changed, lost: false };
  }

  /**
   * The servers the host holds paused on a failed write to their disk
   * (HypervisorDriver.pausedByDiskErrors): the operators are told when one is found so and when
   * it no longer is (notify-conditions.ts, servicesPaused). Those paused for want of room are
   * resumed once the host's storage has room again (QEMU retries the write; one that fails again
   * pauses it again): idle services only, each while still idle and the host still held (a job
   * settles its own VM: a stop resumes it to shut it down). Resumes are logged at info, failures
   * at warn (the next pass tries again).
   */
  async function diskErrorPauses(
    hostId: string,
    settled: readonly IdleService[],
  ): Promise<{ paused: string[]; resumed: string[]; lost: boolean }> {
    const resumed: string[] = [];
    const { pausedByDiskErrors, resumePaused } = o.driver;
    if (!pausedByDiskErrors) return { paused: [], resumed, lost: false };
    let found: DiskErrorPauses;
    try {
      found = await pausedByDiskErrors.call(o.driver, hostId);
    } catch (err) {
      if (isStoreUnavailable(err)) throw err;
      o.log.warn(
        { hostId, error: String(err) },
        "reconciler: the host's paused VMs could not be listed; next pass tries again",
      );
      return { paused: [], resumed, lost: false };
    }
    const paused = [...found.paused.keys()];
    // Held anew before the conditions are settled: the listing may have taken much of the hold,
    // and another process's pass over the host must not settle them from a listing of its own.
    if (!(await stillHeld(hostId))) return { paused, resumed, lost: true };
    const newly = await servicesPaused(o.db, hostId, found.paused, o.clock.now());
    // At warn when one is newly paused; at info while the same stay paused (a full pool may
    // last hours: the operators were told once, by the notification and this line).
    if (paused.length > 0)
      o.log[newly.length > 0 ? 'warn' : 'info'](
        { hostId, vms: paused, newly, storageHasRoom: found.storageHasRoom },
        'reconciler: VMs paused on a failed write to their disk',
      );
    if (!found.storageHasRoom || !resumePaused) return { paused, resumed, lost: false };
    for (const s of settled) {
      // A suspended service's VM stays off (its power-off is the correction's, not a resume).
      if (s.status !== 'running' || found.paused.get(s.id)?.error !== 'no_space') continue;
      if (!(await stillHeld(hostId))) return { paused, resumed, lost: true };
      if (!(await stillIdle(o.db, s))) continue;
      try {
        await resumePaused.call(o.driver, s.id);
        resumed.push(s.id);
        o.log.info(
          { hostId, serviceId: s.id },
          "reconciler: a VM paused for want of room on the host's storage resumed, the room back",
        );
      } catch (err) {
        if (isStoreUnavailable(err)) throw err;
        o.log.warn(
          { hostId, serviceId: s.id, error: String(err) },
          'reconciler: a paused VM could not be resumed; next pass tries again',
        );
      }
    }
    return { paused, resumed, lost: false };
  }

  /** Removes the host's template copies that no VM uses any more (logged at info), what could not be at warn. */
  const clearUnusedTemplates = (hostId: string) =>
    upkeep(
      hostId,
      () => o.driver.clearUnusedTemplates?.(hostId),
      (done) => {
        if (done.removed.length > 0)
          o.log.info({ hostId, volumes: done.removed }, 'reconciler: removed template copies no VM uses');
        for (const f of done.failed)
          o.log.warn(
            { hostId, volume: f.volume, error: f.error },
            'reconciler: a template copy no VM uses could not be removed; next pass tries again',
          );
        return done.removed;
      },
      "reconciler: the host's template copies could not be checked; next pass tries again",
    );

  async function pass(): Promise<HostPass[]> {
    const results: HostPass[] = [];
    // Hosts that do not answer are host health's (jobs/host-health.ts): nothing to compare with.
    for (const hostId of await reachableHostIds(o.db, o.driver.name))
      results.push(await reconcileHost(hostId));
    return results;
  }

  const periodic = createPeriodic({
    pass,
    intervalMs: o.intervalMs,
    // The first pass one interval after start, as the following ones.
    firstDelayMs: o.intervalMs,
    name: 'reconciler',
    log: o.log,
  });

  return {
    id,
    pass,
    start: () => periodic.start(),
    stop: () => periodic.stop(),
  };
}
