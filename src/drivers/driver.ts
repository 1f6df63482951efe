/**
 * The seam between the job system and a hypervisor. Jobs call drivers; routes never do.
 *
 * Every operation is idempotent: a job retried after a crash calls it again with the same
 * arguments, and it must find and finish (or accept) the work already done. `vmId` is the
 * service id, so a driver can always find its VM again.
 */

export type PowerState = 'running' | 'stopped';

import type { Duplex } from 'node:stream';
import type { PasswordApplies } from '../domain/passwords.ts';

export type { PasswordApplies };

export interface VmSpec {
  /** The service id; names the VM on the hypervisor. */
  readonly vmId: string;
  readonly hostname: string;
  readonly username: string;
  /** The plain login password, only in memory while the job runs. */
  readonly password: string;
  readonly templateId: string;
  readonly cpu: number;
  readonly ramGb: number;
  readonly diskGb: number;
  readonly ipCount: number;
  /** OpenSSH public keys (checked: domain/ssh-keys.ts) that cloud-init installs for root; none when absent. */
  readonly sshKeys?: readonly string[];
}

/** What a reinstall puts on the VM's disk: a template's system, a new login, root's keys. */
export interface ReinstallSpec {
  readonly templateId: string;
  readonly hostname: string;
  readonly username: string;
  /** The plain login password, only in memory while the job runs. */
  readonly password: string;
  readonly sshKeys: readonly string[];
}

/** The rescue system's login. */
export interface RescueLogin {
  readonly username: string;
  readonly password: string;
}

/** The consoles a VM can show: its serial console (text) and its graphical one (VNC/RFB). */
export type ConsoleKind = 'serial' | 'vnc';

/**
 * A live connection to a VM's console: bytes from the guest come out of `stream` (serial: the
 * terminal's output; vnc: the RFB protocol from the server's side), bytes written to it reach the
 * guest (keystrokes; the RFB client's side). Ending or destroying the stream closes the
 * connection on the host.
 */
export type ConsoleStream = Duplex;

export interface VmInfo {
  readonly vmId: string;
  readonly hostId: string;
  readonly power: PowerState;
  readonly cpu: number;
  readonly ramGb: number;
  readonly diskGb: number;
  /** Addresses of the VM, the first one primary. */
  readonly ips: readonly string[];
  /**
   * A counter of the disk's content where the driver can see it (the simulated one can): it moves
   * with writes and returns to a backup's value when that backup is restored. Undefined if unknown.
   */
  readonly diskRevision?: number;
  /** The interfaces' rate limit (Mbit/s each direction; null: none) where the driver shows it (the simulated one does). */
  readonly bandwidthMbit?: number | null;
}

export interface ResizeSpec {
  readonly cpu: number;
  readonly ramGb: number;
  /** Never below the current size: disks only grow. */
  readonly diskGb: number;
  readonly ipCount: number;
}

/**
 * A run of a disk's bytes: `data` is the content of the guest disk at `offset` (bytes), at most
 * DISK_RUN_MAX bytes long. Runs come in ascending offset order and never overlap.
 */
export interface DiskRun {
  readonly offset: number;
  readonly data: Buffer;
}

/** The longest run a driver yields (4 MiB): what a job holds in memory per run. */
export const DISK_RUN_MAX = 4 * 1024 * 1024;

/**
 * A backup of a VM's disk being read out of the hypervisor (HypervisorDriver.exportDisk). The
 * point in time is when exportDisk resolved; the guest goes on running meanwhile.
 */
export interface DiskExport {
  /** The guest disk's virtual size in bytes. */
  readonly diskBytes: number;
  /**
   * `full`: the runs are the disk's allocated content (a range no run covers reads as zeros);
   * `incremental`: the runs are every range written since the checkpoint `since` (zeros included).
   */
  readonly kind: 'full' | 'incremental';
  /** The checkpoint an incremental export is relative to; null for a full one. */
  readonly since: string | null;
  /** The disk's content, streamed (read once). */
  readonly runs: AsyncIterable<DiskRun>;
  /**
   * Called once the runs are safely stored: keeps the export's checkpoint (named by the backup
   * id) as the base of the next incremental export. Without it the checkpoint is dropped.
   */
  commit(): Promise<void>;
  /** Frees what the export holds on the host (a backup job, temporary volumes); always called. */
  close(): Promise<void>;
}

/**
 * A value a job records durably before a step that must not happen twice, and finds again when
 * it re-runs after its worker died: how a reboot tells whether an earlier attempt already did it.
 */
export interface StepMarker {
  /** What an earlier attempt of the same job recorded, or null. */
  readonly recorded: string | null;
  /** Records `value` in the job; resolves once it is stored. */
  record(value: string): Promise<void>;
}

/** The step marker a restore (importDisk, restoreLegacyBackup) records once the VM's disk is the backup's. */
export const DISK_RESTORED = 'disk-restored';

/**
 * What a job's recorded step marker means to the reseller reading the job's failure, where it
 * means something done that the failure does not undo (a restore whose disk was put back, then
 * its server could not be started): undefined for the others (a reboot's boot id).
 */
export function markerDone(marker: string | null): string | undefined {
  return marker === DISK_RESTORED
    ? "the server's disk had been restored from the backup; the server may be stopped"
    : undefined;
}

export interface StopOptions {
  /** How long to wait for a graceful (ACPI) shutdown before forcing the power off. */
  readonly timeoutMs: number;
}

/**
 * The power state of every VM of a driver on one host, by vmId (the service id), as the
 * hypervisor reports it now. A VM the map lacks does not exist on that host.
 */
export type HostPowerStates = ReadonlyMap<string, PowerState>;

/**
 * A running VM's network interface counters, summed over its interfaces: bytes into the server
 * (what its guest received) and out of it (what it sent) since the interfaces were created. They
 * start again from zero when the VM boots or moves to another host; `session` names their
 * current life where the driver can tell (libvirt: the interfaces' host-side device names,
 * which libvirt gives anew at each start; simulated: the boot and the host), so a reset is
 * seen even when the new counters have already passed the old ones.
 */
export interface InterfaceCounters {
  readonly inBytes: number;
  readonly outBytes: number;
  readonly session: string;
}

/** The interface counters of every running VM of a driver on one host, by vmId; stopped VMs are absent. */
export type HostInterfaceCounters = ReadonlyMap<string, InterfaceCounters>;

/** What one pass over a host's leftovers did (HypervisorDriver.clearLeftovers). */
export interface LeftoverPass {
  /** The VMs whose copy the host no longer holds. */
  readonly cleared: readonly string[];
  /** Those still there, with why (the next pass tries again). */
  readonly failed: readonly { readonly vmId: string; readonly error: string }[];
}

/** What one sweep of a host's template copies did (HypervisorDriver.clearUnusedTemplates). */
export interface TemplateSweep {
  /** The volumes removed. */
  readonly removed: readonly string[];
  /** Those that could not be, with why (the next sweep tries again). */
  readonly failed: readonly { readonly volume: string; readonly error: string }[];
}

/** A VM paused by a failed write to its disk: the disk, as the guest knows it (`vda`), and why. */
export interface DiskErrorPause {
  readonly disk: string;
  /** `no_space`: the host's storage had no room for the write; `io_error`: any other failure. */
  readonly error: 'no_space' | 'io_error';
}

/** What HypervisorDriver.pausedByDiskErrors reads of a host. */
export interface DiskErrorPauses {
  /** By VM id. */
  readonly paused: ReadonlyMap<string, DiskErrorPause>;
  /**
   * Whether the host's storage has room for the VMs paused for want of it to go on (libvirt: at
   * least RESUME_ROOM_BYTES free in the pool); false when none is paused so.
   */
  readonly storageHasRoom: boolean;
}

export interface HypervisorDriver {
  /** Which hosts are the driver's: those whose record names it (`hypervisor_hosts.driver`). */
  readonly name: 'simulated' | 'libvirt';
  /**
   * The power state of all of the driver's VMs on `hostId`, in ONE call to the host (libvirt:
   * one `virsh list --all`), whatever the number of VMs: what the power-state reconciler
   * (jobs/reconciler.ts) compares the store with. A paused VM counts as running (it holds its
   * resources and resumes where it was). Throws a DriverError when the host does not answer.
   */
  powerStates(hostId: string): Promise<HostPowerStates>;
  /**
   * Moves the VM to another of the driver's hosts: to `toHostId`, or with null to the one the
   * placement rule picks. A running VM moves live (its disk copied along when the hosts share no
   * storage) and keeps running; a stopped one moves cold. It keeps its id and addresses, and its
   * room moves with it (reserved on the destination first, given back on the source once it
   * has moved). A migration that fails leaves the VM whole on the source. Idempotent: a re-run
   * after a crash finds the reservation it made, looks at both hosts, and finishes or undoes.
   * A destination that cannot take the VM (the same host, draining, unreachable, full) fails
   * permanently, with the reason. A reservation found made is checked again by the same rule
   * (re-run: the destination may have been drained, put to evacuate or found unreachable since):
   * one that no longer passes is undone and the migration fails, the VM left as it was. One made
   * for another host than `toHostId` (left by an earlier job) is undone and the VM placed anew.
   */
  migrate(vmId: string, toHostId: string | null): Promise<VmInfo>;
  /**
   * Settles a migration of the VM that its job ended without (its attempts died, it was given
   * up): one that had not switched over is undone (the VM stays on its host, as it runs; the
   * destination's room given back; libvirt: its copy there removed, or recorded as a leftover
   * where the host does not answer); one that had is recorded as done (the source's room given
   * back). Nothing to do without a migration under way. Only while no migration of the VM runs
   * (the ended job still holds its service).
   */
  abandonMigration(vmId: string): Promise<void>;
  /**
   * Removes the copies of VMs that `hostId` holds though the VMs are elsewhere (a migration's
   * clean-up that failed there; libvirt only: the simulated hypervisor leaves none). The
   * reconciler calls it once per pass over each host it reconciles.
   */
  clearLeftovers?(hostId: string): Promise<LeftoverPass>;
  /**
   * Removes the copies of templates on `hostId` that no VM uses and no record names (an older
   * upload of an image the catalogue has changed since, an upload whose worker died), once they
   * have been so for a grace period (libvirt only). The reconciler calls it once per pass over
   * each host it reconciles.
   */
  clearUnusedTemplates?(hostId: string): Promise<TemplateSweep>;
  /**
   * The driver's VMs on `hostId` that the host's boot starts (libvirt: those with the autostart
   * mark, in one `virsh list --all --autostart`; simulated: `sim_vms.start_with_host`). The driver marks a VM it starts and
   * unmarks one it stops; the reconciler reads this once per pass over each host it reconciles,
   * and settles what was started or shut off outside the driver (setStartWithHost).
   */
  startingWithHost?(hostId: string): Promise<ReadonlySet<string>>;
  /** Makes the VM's host start it at its boot, or not (libvirt: `virsh autostart [--disable]`). */
  setStartWithHost?(vmId: string, on: boolean): Promise<void>;
  /**
   * The driver's VMs on `hostId` that their hypervisor paused because a write to their disk
   * failed (libvirt: paused with the reason `ioerror`, QEMU's `werror=enospc`), in ONE listing
   * of the host's paused VMs, with each one's failed disk and why; and whether the host's storage
   * has room again (simulated: outside.storageFull and its kin). The reconciler reads this once
   * per pass over each host it reconciles, tells the operators, and resumes what paused for want
   * of room once there is.
   */
  pausedByDiskErrors?(hostId: string): Promise<DiskErrorPauses>;
  /** Resumes a VM its hypervisor paused (libvirt: `virsh resume`; QEMU retries the write that failed). */
  resumePaused?(vmId: string): Promise<void>;
  /**
   * Asks the host whether it answers (libvirt: its connection): resolves if it does, throws a
   * transient DriverError if it does not. What host health (jobs/host-health.ts) probes.
   */
  probe(hostId: string): Promise<void>;
  /**
   * The interface counters of all of the driver's running VMs on `hostId`, in ONE call to the
   * host (libvirt: one `virsh domstats --list-active --interface`), whatever the number of VMs:
   * what the traffic sampler (jobs/traffic-sampler.ts) reads. Throws a DriverError when the
   * host does not answer.
   */
  interfaceCounters(hostId: string): Promise<HostInterfaceCounters>;
  /**
   * Limits the VM's network interfaces to `mbit` Mbit/s in each direction, or lifts the limit
   * (null): at once if it runs, and in its definition, so the limit outlives a reboot.
   * Idempotent.
   */
  setBandwidth(vmId: string, mbit: number | null): Promise<void>;
  /** Places, defines and starts a VM (allocating its addresses); returns it running. */
  create(spec: VmSpec): Promise<VmInfo>;
  start(vmId: string): Promise<VmInfo>;
  /** Graceful shutdown, forced off after `timeoutMs`. */
  stop(vmId: string, options: StopOptions): Promise<VmInfo>;
  /**
   * Reboots the VM (starts it if it is off). Not idempotent by nature: with `step`, the driver
   * records the VM's boot identity (something that changes on every boot) before rebooting, and
   * when the recorded identity is no longer the VM's, the reboot already happened and is skipped.
   */
  reboot(vmId: string, step?: StepMarker): Promise<VmInfo>;
  /** Immediate power-off, for suspension. */
  powerOff(vmId: string): Promise<VmInfo>;
  /** Changes vCPUs, memory, disk (grow only) and address count; leaves the power state as it found it. */
  resize(vmId: string, spec: ResizeSpec): Promise<VmInfo>;
  /**
   * Sets the password for the next boots (the seed), and in the running guest at once where its
   * guest agent answers: says which of the two it achieved.
   */
  setPassword(vmId: string, username: string, password: string): Promise<PasswordApplies>;
  /**
   * Removes the VM, its disks and its addresses. A VM that does not exist is already destroyed.
   * A host that does not answer fails it (transient), and the VM keeps everything, except with
   * `createGivingUp` (a create's last attempt giving back what its attempts took), where a host
   * this process never reached for the VM counts as holding nothing of it.
   */
  destroy(vmId: string, opts?: { readonly createGivingUp?: boolean }): Promise<void>;
  /** The VM as the hypervisor sees it, or undefined if there is none. */
  inspect(vmId: string): Promise<VmInfo | undefined>;
  /**
   * Starts a live backup of the VM's disk as of now, with a checkpoint named `backupId`: a running
   * VM keeps running (at most a filesystem freeze through its guest agent, for the instant the
   * point is taken; a thaw its agent does not confirm fails the export, not transient); a
   * stopped one stays stopped. Incremental against the checkpoint `since` when
   * the VM's host still has it and the disk has not been replaced since; full otherwise (the
   * export says which). Idempotent: a re-run after a crash drops what an earlier attempt left.
   */
  exportDisk(vmId: string, backupId: string, since: string | null): Promise<DiskExport>;
  /**
   * Replaces the VM's disk with `runs` (the whole disk: a range no run covers becomes zeros) of
   * `diskBytes` bytes, grown to the VM's disk size; leaves the power state as it found it. The
   * VM's checkpoints are dropped: the next export is full. Nothing is changed until every run
   * has been received and the image is on the VM's host (a failing source or upload leaves the
   * old disk). `dataBytes`: how many of the runs' bytes may be other than zeros, at most (the
   * room the image's copies take on the way; `diskBytes` unless given). `step`: the restore job's
   * marker, recorded (DISK_RESTORED) once the disk is the backup's, before the VM is started
   * again: a re-run of the job that finds it recorded does not restore again (the restored disk,
   * and what the server has written on it since, stay; the job powers the server as it was).
   */
  importDisk(
    vmId: string,
    diskBytes: number,
    runs: AsyncIterable<DiskRun>,
    dataBytes?: number,
    step?: StepMarker,
  ): Promise<void>;
  /** Forgets the VM's checkpoint `backupId` (its backup was deleted); a missing one is already gone. */
  dropCheckpoint(vmId: string, backupId: string): Promise<void>;
  /**
   * Clears what an export of backup `backupId` whose attempts died may have left, once its job is
   * given up: the host's backup job ended, the guest's file systems thawed (frozen for the backup's
   * point: the server would hang on every write), a stopped VM's domain started paused for it
   * powered off, its temporary volume removed and its checkpoint dropped. Only while no other
   * export of the VM runs (the given-up job still holds its service).
   */
  abandonExport(vmId: string, backupId: string): Promise<void>;
  /**
   * Brings the disk back to a legacy backup's content (format 'legacy': a full copy taken on the
   * host before the backup store, which the driver still holds); leaves the power state as it
   * found it. Backups in the backup store are restored with importDisk. `step`: as importDisk's.
   */
  restoreLegacyBackup(vmId: string, backupId: string, step?: StepMarker): Promise<void>;
  /**
   * Frees a legacy backup's storage on its host (format 'legacy': taken before the backup store).
   * A backup that does not exist is already deleted.
   */
  deleteLegacyBackup(vmId: string, backupId: string): Promise<void>;
  /**
   * Rebuilds the VM's disk from `spec.templateId`'s image at the VM's current disk size (its data
   * is gone), with a new seed (a new cloud-init instance id, so the guest applies the login and
   * keys again), keeping its addresses; ends in the power state it found. Its checkpoints are
   * dropped (the next backup is full). Idempotent: a re-run rebuilds again.
   */
  reinstall(vmId: string, spec: ReinstallSpec): Promise<VmInfo>;
  /**
   * Boots the rescue system (the host's rescue image, else the global one) with the VM's own disk
   * attached as its second disk, and `login` for the rescue system; returns it running. The VM's
   * own definition is kept for unrescue. Idempotent.
   */
  rescue(vmId: string, login: RescueLogin): Promise<VmInfo>;
  /**
   * Leaves the rescue system: the VM's own system again, in `power` (running: booted; stopped:
   * defined, off). A VM not in rescue is only brought to `power`. Idempotent.
   */
  unrescue(vmId: string, power: PowerState): Promise<VmInfo>;
  /** The consoles the VM has now (none when it is not running). */
  consoles(vmId: string): Promise<readonly ConsoleKind[]>;
  /**
   * Connects to the VM's `kind` console. Throws a DriverError when the VM has no such console now
   * (not running, no graphics, a host whose consoles are not reachable from this process).
   */
  openConsole(vmId: string, kind: ConsoleKind): Promise<ConsoleStream>;
  close(): Promise<void>;
}

/** What the operator needs to see of a failed command (never shown to the reseller). */
export interface CommandDetails {
  /** The command line, e.g. `virsh -c qemu:///system start vrp-<id>`. */
  readonly command: string;
  /** Its exit status; null when it was killed (timeout, shutdown) or could not be started. */
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly stderr: string;
}

/**
 * A driver failure. `transient` ones (a host busy, a lock held, a connection dropped) are
 * retried with backoff; permanent ones (no capacity, an unknown template) fail the job.
 * The message is readable and safe to show to the reseller; `details` (plain data, so a log
 * line can carry it) and the cause are for the logs.
 */
export class DriverError extends Error {
  override name = 'DriverError';
  readonly transient: boolean;
  readonly details: CommandDetails | undefined;
  constructor(message: string, options: { transient: boolean; cause?: unknown; details?: CommandDetails }) {
    super(message, { cause: options.cause });
    this.transient = options.transient;
    this.details = options.details;
  }
}

/**
 * Why a migration failed whose reservation, found made, no longer passes the destination's rule
 * (`reason`, as the rule says it: the host is draining, evacuating, does not answer, is full):
 * the reservation was undone, the VM left where it was, as it ran. Not transient: the rule's
 * answer does not change by trying again.
 */
export function migrationUndone(reason: DriverError): DriverError {
  return new DriverError(
    `${reason.message}; the migration under way was undone, the server stays on its host`,
    {
      transient: false,
      cause: reason,
    },
  );
}

/** What a migration that its caller undoes throws for `err`: migrationUndone of a failure for good, anything else as it is. */
export function undoneIfFinal(err: unknown): unknown {
  return err instanceof DriverError && !err.transient ? migrationUndone(err) : err;
}
