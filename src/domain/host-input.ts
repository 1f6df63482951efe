import { ApiError } from './errors.ts';

/** Which hypervisor driver a host belongs to; one per deployment (VRP_DRIVER). */
export type HostDriverName = 'simulated' | 'libvirt';

/** A host's name: 1 to 63 letters, digits, dots, dashes and underscores. */
export const HOST_NAME_PATTERN = '^[A-Za-z0-9._-]{1,63}$';
const HOST_NAME = new RegExp(HOST_NAME_PATTERN);

/** The largest capacity amount a host may be given (vCPUs or GB). */
export const MAX_HOST_AMOUNT = 1_000_000_000;

/**
 * A libvirt connection URI as virsh takes it: a QEMU transport, an optional user@host[:port],
 * the `/system` or `/session` path and an optional query (`?socket=...`, `?keyfile=...`).
 */
const LIBVIRT_URI =
  /^qemu(\+(ssh|tls|tcp|unix|libssh|libssh2))?:\/\/([A-Za-z0-9._~%-]+@)?([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])?(:[0-9]{1,5})?\/(system|session)(\?[\x21-\x7e]*)?$/;

/** Whether `uri` is a libvirt QEMU connection URI (qemu, qemu+ssh, +tls, +tcp, +unix). */
export function isLibvirtUri(uri: string): boolean {
  return LIBVIRT_URI.test(uri);
}

/** What the operator gives for a new host, in the domain's words. */
export interface NewHost {
  readonly name: string;
  readonly driver: string;
  readonly uri?: string | undefined;
  readonly cpu: number;
  readonly ramGb: number;
  readonly diskGb: number;
  readonly backupGb?: number | undefined;
}

/** A change to a host: only the fields given change. */
export interface HostChange {
  readonly name?: string | undefined;
  readonly uri?: string | undefined;
  readonly cpu?: number | undefined;
  readonly ramGb?: number | undefined;
  readonly diskGb?: number | undefined;
  readonly backupGb?: number | undefined;
  /** The host's own rescue image (a path on the host); null: the global one (VRP_RESCUE_IMAGE). */
  readonly rescueImage?: string | null | undefined;
}

/** The longest rescue image path a host takes. */
export const MAX_RESCUE_IMAGE_LENGTH = 4096;

/** 400 `validation_failed` unless `path` is an absolute path on the host, without control characters. */
export function checkRescueImage(path: string | null | undefined): void {
  if (path === null || path === undefined) return;
  if (!path.startsWith('/') || path.length > MAX_RESCUE_IMAGE_LENGTH || /\p{Cc}/u.test(path))
    throw new ApiError(
      'validation_failed',
      `rescue_image must be an absolute path on the host (at most ${MAX_RESCUE_IMAGE_LENGTH} characters, no control characters), got ${JSON.stringify(path.slice(0, 200))}`,
    );
}

/** 400 `invalid_host_name` unless `name` is a host name. */
export function checkHostName(name: string): void {
  if (!HOST_NAME.test(name))
    throw new ApiError(
      'invalid_host_name',
      `The host name ${JSON.stringify(name.slice(0, 100))} is not 1 to 63 letters, digits, dots, dashes or underscores`,
    );
}

function checkAmount(label: string, value: number | undefined, minimum: number): void {
  if (value === undefined) return;
  if (!Number.isSafeInteger(value) || value < minimum || value > MAX_HOST_AMOUNT)
    throw new ApiError(
      'validation_failed',
      `${label} must be a whole number from ${minimum} to ${MAX_HOST_AMOUNT}, got ${String(value)}`,
    );
}

/** The URI rules of `driver`'s hosts: libvirt hosts need a libvirt URI, simulated ones take none. */
export function checkHostUri(driver: HostDriverName, uri: string | undefined, creating: boolean): void {
  if (driver === 'simulated') {
    if (uri !== undefined)
      throw new ApiError('invalid_host_uri', 'A simulated host has no uri: leave it out');
    return;
  }
  if (uri === undefined) {
    if (creating)
      throw new ApiError(
        'invalid_host_uri',
        'A libvirt host needs its connection uri (e.g. qemu+ssh://root@kvm1.example.com/system)',
      );
    return;
  }
  if (!isLibvirtUri(uri))
    throw new ApiError(
      'invalid_host_uri',
      `${JSON.stringify(uri.slice(0, 200))} is not a libvirt URI: qemu, qemu+ssh, qemu+tls, qemu+tcp or qemu+unix, with the path /system or /session (e.g. qemu+ssh://root@kvm1.example.com/system)`,
    );
}

/**
 * The checks of a change to one of `driver`'s hosts, in one place for the operator API, the
 * console (through it) and the CLI: a valid name, a uri as the driver needs, whole positive
 * amounts (backup storage only on simulated hosts, which keep backups on the host).
 */
export function checkHostChange(driver: HostDriverName, change: HostChange, creating = false): void {
  if (change.name !== undefined) checkHostName(change.name);
  checkHostUri(driver, change.uri, creating);
  checkAmount('cpu', change.cpu, 1);
  checkAmount('ram_gb', change.ramGb, 1);
  checkAmount('disk_gb', change.diskGb, 1);
  if (change.backupGb !== undefined && driver !== 'simulated')
    throw new ApiError(
      'validation_failed',
      'backup_gb is for simulated hosts only (libvirt keeps backups in its storage directory)',
    );
  checkAmount('backup_gb', change.backupGb, 0);
  checkRescueImage(change.rescueImage);
}

/**
 * The checks of a new host for a deployment running `processDriver`: the driver must be that
 * one (400 `host_driver_mismatch`), then those of checkHostChange.
 */
export function checkNewHost(processDriver: HostDriverName, host: NewHost): void {
  checkHostName(host.name);
  if (host.driver !== processDriver)
    throw new ApiError(
      'host_driver_mismatch',
      `This deployment runs the ${processDriver} driver (VRP_DRIVER): it can only have ${processDriver} hosts, not ${JSON.stringify(host.driver.slice(0, 50))}`,
    );
  checkHostChange(processDriver, host, true);
}
