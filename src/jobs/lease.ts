import { type Fence, FenceDown, type JobRun } from '../drivers/fence.ts';

/**
 * The lease a worker holds on a job it runs, as far as the worker knows it: until when the
 * store says it is the job's owner (`locked_until`, the value of its claim or of its last renewal
 * that reached the row). It is the attempt's fence (drivers/fence.ts): down once that time has
 * passed with no renewal (another worker's recovery may take the job from then on), or when the
 * same job is claimed again. A healthy worker renews every third of a lease, so only a worker
 * cut off from the store (or stalled) for a whole lease sees its fence go down.
 *
 * The time is checked at each step (`check`), so a process whose event loop was stalled past the
 * lease takes no further step, whatever ran first after the stall; and at each look of the worker
 * at its queue, at least every poll (`expired`), which ends the command under way (commands.ts)
 * and stops the task waiting on it. No timer per job: the job pipeline runs thousands a second
 * (a timer each cost order -> running ~6 %, bench/FINDINGS.md).
 */
export class JobLease implements Fence {
  readonly run: JobRun;
  readonly #fence = new AbortController();
  readonly #stop = new AbortController();
  readonly #worker: AbortSignal;
  readonly #marginMs: number;
  /** When the fence goes down: the lease's end less the margin. */
  #downAt = 0;
  #down = false;
  readonly #workerStops = () => this.#stop.abort(this.#worker.reason);

  /**
   * @param run the job run the lease is on (the job, and the attempt its claim began)
   * @param until the lease's end as stored (real time, Date.now())
   * @param worker the worker's signal: aborted when it stops and the run is past its grace period
   * @param marginMs how long before the lease's end the fence goes down: the run has stopped, its
   *   command under way ended, before another worker's recovery can take the job (a tenth of a
   *   lease in the worker, 3 s by default; between machines, their clocks' difference must stay
   *   well below it; the job's next run begins a retry's backoff after the recovery besides)
   */
  constructor(run: JobRun, until: number, worker: AbortSignal, marginMs = 0) {
    this.run = run;
    this.#worker = worker;
    this.#marginMs = marginMs;
    if (worker.aborted) this.#workerStops();
    else worker.addEventListener('abort', this.#workerStops, { once: true });
    this.renewed(until);
  }

  /** Taken down: renewals no longer move it on. */
  get isDown(): boolean {
    return this.#down;
  }

  /** Aborted, with a FenceDown, once the fence is down. */
  get signal(): AbortSignal {
    return this.#fence.signal;
  }

  /** Aborted when the run must stop: its fence went down, or its worker stops (the task's signal). */
  get stop(): AbortSignal {
    return this.#stop.signal;
  }

  /** The store holds the lease until `until` (real time, Date.now()): the fence stays up until then. */
  renewed(until: number): void {
    // Two renewals whose answers cross (the stop's and the loop's) leave the later end.
    if (!this.#down) this.#downAt = Math.max(this.#downAt, until - this.#marginMs);
  }

  check(): void {
    if (!this.expired()) return;
    this.#fence.signal.throwIfAborted();
  }

  /** True, and the fence down, once the lease's time is over (or it was taken down). */
  expired(): boolean {
    if (!this.#down && Date.now() >= this.#downAt) this.takeDown();
    return this.#down;
  }

  /** The attempt may no longer act: the job is (or may be) another run's. */
  takeDown(): void {
    if (this.#down) return;
    this.#down = true;
    this.end();
    const why = new FenceDown();
    this.#fence.abort(why);
    this.#stop.abort(why);
  }

  /** The run is over: no listener left behind. */
  end(): void {
    this.#worker.removeEventListener('abort', this.#workerStops);
  }
}
