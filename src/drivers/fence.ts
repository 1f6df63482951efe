/**
 * A job attempt's fence around its driver work. The job system runs each driver call of an
 * attempt inside the attempt's fence (`fenced`); every step a driver takes on a host (a command:
 * virsh, qemu-img...; a step of the simulated hypervisor) checks it first (`checkFence`). Once
 * the attempt's lease has run out without its worker renewing it, another worker may run the
 * job, and the fence is down: the old attempt takes no further step, even in the middle of one
 * driver call (a restore between its upload and the removal of the disk it replaces), so two
 * attempts of a job never act on one server at once. Stopping between two steps is what the
 * death of the process would do: every operation's re-run finds and finishes the work done.
 *
 * Work that the calls of several jobs share (a host's storage pool made ready once, its
 * virtualization type asked once) runs `unfenced`: one attempt's fence going down must not fail
 * the others that wait on it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { DriverError } from './driver.ts';

export interface Fence {
  /** Throws (FenceDown) once the fence is down. */
  check(): void;
  /** Aborted, with a FenceDown, once the fence is down. */
  readonly signal: AbortSignal;
  /** The job run this is (its job and attempt number): what a hold the attempt takes in the store is made for (room-claims.ts). */
  readonly run?: JobRun;
  /** Aborted once the attempt must stop: its fence went down, or its worker stops past its grace period. */
  readonly stop?: AbortSignal;
}

/**
 * One run of a job: the job's id and the attempt's number (`jobs.attempts` as its claim set it; a
 * run given back, its host out of reach, leaves the number to the next).
 */
export interface JobRun {
  readonly jobId: string;
  readonly attempt: number;
}

/** What a step of an attempt whose fence is down throws: transient, the job's next run does the work. */
export class FenceDown extends DriverError {
  constructor() {
    super(
      'This attempt lost the lease on its job (its worker could not renew it in time): it stopped, and the job runs again',
      { transient: true },
    );
  }
}

const current = new AsyncLocalStorage<Fence | undefined>();

/** Runs `work` inside `fence`: every driver step it takes checks the fence first. */
export function fenced<R>(fence: Fence, work: () => Promise<R>): Promise<R> {
  return current.run(fence, work);
}

/** Runs `work` outside any fence: shared work that several attempts may wait on. */
export function unfenced<R>(work: () => Promise<R>): Promise<R> {
  return current.run(undefined, work);
}

/** The calling attempt's fence's signal, for a step that waits: none outside a fence. */
export function fenceSignal(): AbortSignal | undefined {
  return current.getStore()?.signal;
}

/** The calling attempt's job run: none outside a fence. */
export function fenceRun(): JobRun | undefined {
  return current.getStore()?.run;
}

/** The calling attempt's signal to stop (its fence's, or its worker's stop): none outside a fence. */
export function fenceStop(): AbortSignal | undefined {
  const fence = current.getStore();
  return fence?.stop ?? fence?.signal;
}

/** Throws FenceDown if the calling attempt's fence is down; nothing outside a fence. */
export function checkFence(): void {
  current.getStore()?.check();
}
