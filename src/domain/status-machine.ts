/**
 * The service status machine (docs/design/contract.md#service-statuses), in one pure module that
 * the routes (to accept or refuse a request) and the jobs (to re-check when they run) both use.
 */

export const STABLE_STATUSES = [
  'pending',
  'running',
  'stopped',
  'suspended',
  'failed',
  'terminated',
  'rescue',
] as const;
const TRANSITIONAL_STATUSES = [
  'provisioning',
  'starting',
  'stopping',
  'restarting',
  'upgrading',
  'restoring',
  'terminating',
  'reinstalling',
  'rescuing',
] as const;
export const STATUSES = [...STABLE_STATUSES, ...TRANSITIONAL_STATUSES] as const;

export type StableStatus = (typeof STABLE_STATUSES)[number];
export type TransitionalStatus = (typeof TRANSITIONAL_STATUSES)[number];
export type Status = StableStatus | TransitionalStatus;
export type PowerStatus = 'running' | 'stopped';

/** Operations that run as jobs on the hypervisor. */
export const JOB_ACTIONS = [
  'create',
  'start',
  'stop',
  'restart',
  'suspend',
  'unsuspend',
  'upgrade',
  'reset_password',
  'terminate',
  'backup_create',
  'backup_restore',
  'backup_delete',
  'migrate',
  'reinstall',
  'rescue',
  'unrescue',
] as const;
export type JobAction = (typeof JOB_ACTIONS)[number];

/** Every operation a request can ask for: the job actions and the schedule changes, which take effect at once. */
export const OPERATIONS = [...JOB_ACTIONS, 'schedule_create', 'schedule_delete'] as const;
export type Operation = (typeof OPERATIONS)[number];

/** A service's state as far as the machine cares: its stable status, and the power state a suspension returns to. */
export interface ServiceState {
  readonly status: StableStatus;
  readonly resume: PowerStatus | null;
}

const ACCEPTS: Readonly<Record<StableStatus, readonly Operation[]>> = {
  pending: ['create', 'terminate'],
  running: [
    'stop',
    'restart',
    'suspend',
    'upgrade',
    'reset_password',
    'backup_create',
    'backup_restore',
    'backup_delete',
    'schedule_create',
    'schedule_delete',
    'terminate',
    'migrate',
    'reinstall',
    'rescue',
  ],
  stopped: [
    'start',
    'suspend',
    'upgrade',
    'reset_password',
    'backup_create',
    'backup_restore',
    'backup_delete',
    'schedule_create',
    'schedule_delete',
    'terminate',
    'migrate',
    'reinstall',
    'rescue',
  ],
  // A suspended service's VM is stopped: it moves cold (an evacuation moves it too).
  suspended: ['unsuspend', 'terminate', 'backup_delete', 'schedule_delete', 'migrate'],
  failed: ['create', 'terminate'],
  terminated: [],
  // The rescue system runs with the server's disk attached: it leaves rescue to go anywhere else.
  rescue: ['unrescue', 'suspend', 'terminate'],
};

/** Repeats whose target is already reached: 200, no job (billing systems retry). */
const ALREADY: Partial<Record<Operation, { status: StableStatus; message: string }>> = {
  start: { status: 'running', message: 'The service is already running' },
  stop: { status: 'stopped', message: 'The service is already stopped' },
  suspend: { status: 'suspended', message: 'The service is already suspended' },
  terminate: { status: 'terminated', message: 'The service is already terminated' },
};

/** The status shown while an action's job runs; actions without one keep the status they found. */
const TRANSITIONAL: Partial<Record<JobAction, TransitionalStatus>> = {
  create: 'provisioning',
  start: 'starting',
  stop: 'stopping',
  restart: 'restarting',
  upgrade: 'upgrading',
  backup_restore: 'restoring',
  terminate: 'terminating',
  reinstall: 'reinstalling',
  rescue: 'rescuing',
  unrescue: 'starting',
};

export type Decision =
  | { readonly kind: 'accept'; readonly next: ServiceState }
  | { readonly kind: 'noop'; readonly message: string }
  | { readonly kind: 'invalid'; readonly message: string };

const words = (op: Operation) => op.replaceAll('_', ' ');

/** What `op` does to a service in `state`. */
export function decide(state: ServiceState, op: Operation): Decision {
  const already = ALREADY[op];
  if (already && already.status === state.status) return { kind: 'noop', message: already.message };
  if (!ACCEPTS[state.status].includes(op)) {
    return { kind: 'invalid', message: `Cannot ${words(op)} a service that is ${state.status}` };
  }
  return { kind: 'accept', next: outcome(state, op) };
}

function outcome(state: ServiceState, op: Operation): ServiceState {
  switch (op) {
    case 'create':
    case 'start':
    case 'restart':
    case 'unrescue':
      return { status: 'running', resume: null };
    case 'rescue':
      return { status: 'rescue', resume: null };
    case 'stop':
      return { status: 'stopped', resume: null };
    case 'suspend':
      // Suspended in rescue, the server comes back in its own system, running.
      return { status: 'suspended', resume: state.status === 'stopped' ? 'stopped' : 'running' };
    case 'unsuspend':
      return { status: state.resume ?? 'running', resume: null };
    case 'terminate':
      return { status: 'terminated', resume: null };
    default:
      return state;
  }
}

/** The status a service shows while `action`'s job runs, starting from `from`. */
export function transitionalStatus(action: JobAction, from: StableStatus): Status {
  return TRANSITIONAL[action] ?? from;
}

/** The status after a job of `action` failed, starting from `from`: a failed provisioning is `failed`. */
export function statusAfterFailure(action: JobAction, from: StableStatus): StableStatus {
  return action === 'create' ? 'failed' : from;
}

/** Operations only the provider's operators ask for: a reseller is never offered them. */
const OPERATOR_ONLY: ReadonlySet<Operation> = new Set(['migrate']);

/**
 * The operations a reseller's request would get done now (repeats that are no-ops are not
 * listed, nor the operator's own operations).
 */
export function allowedActions(state: ServiceState): Operation[] {
  return ACCEPTS[state.status].filter((op) => !OPERATOR_ONLY.has(op));
}

/**
 * The state once every queued action has run, skipping those that would be refused then:
 * how the projection is rebuilt after a job failed.
 */
export function project(state: ServiceState, actions: readonly JobAction[]): ServiceState {
  let s = state;
  for (const a of actions) {
    const d = decide(s, a);
    if (d.kind === 'accept') s = d.next;
  }
  return s;
}

export function isStable(status: string): status is StableStatus {
  return STABLE_STATUSES.some((s) => s === status);
}
