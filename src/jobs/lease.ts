import { type Fence, FenceDown } from '../drivers/fence.ts';

/**
 * The lease a worker holds on a job it runs, as far as the worker knows it: until when the
 * store says it is the job's owner (`locked_until`, the value of its claim or of its last renewal
 * that reached the row). It is the attempt's fence (drivers/fence.ts): down once that time has
 * passed with no renewal (another worker's recovery may take the job from then on), or when the
 * same job is claimed again. A healthy worker renews every third of a lease, so only a worker
 * cut off from the store (or stalled) for a whole lease sees its fence go down.
 *
 * The time is checked at each step as well as by a timer: a process whose event loop was
 * stalled past the lease does not take one more step before the timer's turn comes.
 */
export class JobLease implements Fence {
  readonly #abort = new AbortController();
  #until = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(until: number) {
    this.renewed(until);
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  /** The store holds the lease until `until` (real time, Date.now()): the fence stays up until then. */
  renewed(until: number): void {
    if (this.#abort.signal.aborted) return;
    this.#until = until;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.down(), Math.max(0, until - Date.now()));
    this.#timer.unref();
  }

  check(): void {
    if (!this.#abort.signal.aborted && Date.now() >= this.#until) this.down();
    this.#abort.signal.throwIfAborted();
  }

  /** The attempt may no longer act: the job is (or may be) another run's. */
  down(): void {
    this.end();
    if (!this.#abort.signal.aborted) this.#abort.abort(new FenceDown());
  }

  /** The run is over: no timer left behind. */
  end(): void {
    clearTimeout(this.#timer);
  }
}
