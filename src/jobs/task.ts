import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { SecretBox } from '../auth/secret-box.ts';
import type { Clock } from '../domain/clock.ts';
import type { JobAction, ServiceState } from '../domain/status-machine.ts';
import type { HypervisorDriver, StepMarker, VmInfo } from '../drivers/driver.ts';
import type { Job } from '../store/repos/jobs.ts';
import type { Service, ServicePatch } from '../store/repos/services.ts';
import type { Database } from '../store/schema.ts';

/** What a task gets: the job, the service as it was when the job started, and the means to act. */
export interface TaskContext {
  readonly job: Job;
  readonly service: Service;
  /** The state the service was in before this job began. */
  readonly from: ServiceState;
  /** This job's step marker, for a step that must not be repeated when the job re-runs. */
  readonly stepMarker: StepMarker;
  readonly driver: HypervisorDriver;
  readonly db: Kysely<Database>;
  readonly secretBox: SecretBox;
  readonly clock: Clock;
  readonly stopTimeoutMs: number;
  /** The attempts a job gets; the one numbered `maxAttempts` is its last (nothing retries it). */
  readonly maxAttempts: number;
  readonly log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
}

/** A task does the driver work of one action and says what changed on the service. */
export type Task = (tc: TaskContext) => Promise<ServicePatch>;

export type TaskTable = Readonly<Record<JobAction, Task>>;

/** The service fields the hypervisor reports. */
export function vmPatch(vm: VmInfo): ServicePatch {
  return { host_id: vm.hostId, ips: JSON.stringify(vm.ips), disk_revision: vm.diskRevision ?? null };
}
