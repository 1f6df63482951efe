/**
 * Power-state truth: the hypervisor is the truth for a VM's power state. What a service's
 * stored status becomes when the hypervisor says otherwise (the reconciler, jobs/reconciler.ts,
 * and the check at the start of each job apply it), and the reasons the events carry.
 */
import type { PowerStatus, StableStatus } from './status-machine.ts';

/** What the hypervisor says of a service's VM: its power state, or `missing` (no such VM). */
export type ObservedPower = PowerStatus | 'missing';

/**
 * Why a service's status changed without a job, as `reason` in `service.status_changed` events
 * (docs/api.md): `stopped_outside_api` (running -> stopped), `started_outside_api` (stopped ->
 * running), `vm_missing` (running or stopped -> failed: the VM no longer exists on its host).
 */
export const DRIFT_REASONS = ['stopped_outside_api', 'started_outside_api', 'vm_missing'] as const;
export type DriftReason = (typeof DRIFT_REASONS)[number];

/** What the reconciler counts (metrics): a status corrected, or a suspended VM powered off again. */
export type CorrectionKind = DriftReason | 'suspended_powered_off';

export type Correction =
  /** The stored status becomes `to`; told with `reason` and `message`. */
  | {
      readonly kind: 'status';
      readonly to: StableStatus;
      readonly reason: DriftReason;
      readonly message: string;
    }
  /** A suspended service's VM was found running: it is powered off again; the status stays. */
  | { readonly kind: 'power_off'; readonly message: string };

const MESSAGES: Readonly<Record<DriftReason, string>> = {
  stopped_outside_api: 'Stopped outside the API: the hypervisor reports the server shut off',
  started_outside_api: 'Started outside the API: the hypervisor reports the server running',
  vm_missing: 'The server no longer exists on its host: it was removed outside the API',
};

const status = (to: StableStatus, reason: DriftReason): Correction => ({
  kind: 'status',
  to,
  reason,
  message: MESSAGES[reason],
});

/**
 * The correction a service of stable status `stored` needs when the hypervisor reports
 * `observed`, or undefined when they agree or the status is none of power (pending, failed,
 * terminated: no VM to compare, or one the API already gave up on). A suspended service's
 * status never changes here: its VM must be off, and is powered off if found running; one whose
 * VM vanished is left for its unsuspend or terminate to find out.
 */
export function powerCorrection(stored: StableStatus, observed: ObservedPower): Correction | undefined {
  switch (stored) {
    case 'running':
      if (observed === 'stopped') return status('stopped', 'stopped_outside_api');
      if (observed === 'missing') return status('failed', 'vm_missing');
      return undefined;
    case 'stopped':
      if (observed === 'running') return status('running', 'started_outside_api');
      if (observed === 'missing') return status('failed', 'vm_missing');
      return undefined;
    case 'suspended':
      if (observed === 'running')
        return { kind: 'power_off', message: 'Suspended server found running: powered off again' };
      return undefined;
    default:
      return undefined;
  }
}

/** The kind a correction is counted under. */
export function correctionKind(c: Correction): CorrectionKind {
  return c.kind === 'status' ? c.reason : 'suspended_powered_off';
}
