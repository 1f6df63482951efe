import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Clock } from '../domain/clock.ts';
import type { SecretBox } from '../domain/secret-box.ts';
import type { JobAction, ServiceState } from '../domain/status-machine.ts';
import type { HypervisorDriver, StepMarker, VmInfo } from '../drivers/driver.ts';
import type { ReverseDns } from '../drivers/reverse-dns/ptr-backend.ts';
import type { JobOf, JobResult } from '../store/repos/jobs.ts';
import type { Service, ServiceChange } from '../store/repos/services.ts';
import type { Database } from '../store/schema.ts';
import type { BackupDeps } from './backup-chain.ts';

/** What a task gets: the job, the service as it was when the job started, and the means to act. */
export interface TaskContext<A extends JobAction = JobAction> {
  readonly job: JobOf<A>;
  readonly service: Service;
  /** The state the service was in before this job began. */
  readonly from: ServiceState;
  /** This job's step marker, for a step that must not be repeated when the job re-runs. */
  readonly stepMarker: StepMarker;
  readonly driver: HypervisorDriver;
  /** The backup store's archive, for the backup tasks (and terminate). */
  readonly backups: BackupDeps;
  readonly db: Kysely<Database>;
  /** Reverse DNS (create writes default PTRs, terminate removes the service's); undefined when not configured. */
  readonly reverseDns: ReverseDns | undefined;
  readonly secretBox: SecretBox;
  readonly clock: Clock;
  readonly stopTimeoutMs: number;
  /** The attempts a job gets; the one numbered `maxAttempts` is its last (nothing retries it). */
  readonly maxAttempts: number;
  readonly log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  /**
   * Aborted when the worker stops and the job ran past the shutdown grace period: the task should
   * stop where it is (the job goes back to the queue and its re-run finishes the work). `driver`
   * already refuses new calls and gives up waiting on the current one once it fires.
   */
  readonly signal: AbortSignal;
}

/** A task does the driver work of one action and says what changed on the service. */
export type Task<A extends JobAction = JobAction> = (tc: TaskContext<A>) => Promise<ServiceChange>;

/** One task per action, each given its action's parameters. */
export type TaskTable = { readonly [A in JobAction]: Task<A> };

/** What a finished job reports beyond its status (jobs.result), from what its task changed. */
export function jobResultOf(change: ServiceChange): JobResult | null {
  return change.passwordApplies === undefined ? null : { password_applies: change.passwordApplies };
}

/** The service fields the hypervisor reports. */
export function vmChange(vm: VmInfo): ServiceChange {
  return { hostId: vm.hostId, ips: vm.ips, diskRevision: vm.diskRevision ?? null };
}

/**
 * The VM started again if the service was running when the job first began and the VM is not
 * running now. The drivers' operations that power a VM off for their work (an upgrade's resize,
 * a restore) bring it back to the power state they found; an earlier attempt that powered it off
 * and then failed or died leaves it off, and the re-run finds it so.
 */
export async function runningAsBefore(
  tc: Pick<TaskContext, 'from' | 'driver' | 'service'>,
  vm: VmInfo,
): Promise<VmInfo> {
  if (tc.from.status !== 'running' || vm.power === 'running') return vm;
  return tc.driver.start(tc.service.id);
}
