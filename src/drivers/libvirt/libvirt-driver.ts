import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { open, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { basename, join } from 'node:path';
import { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import { messageOf } from '../../domain/errors.ts';
import { networkOf } from '../../store/repos/service-network.ts';
import type { Database, LibvirtVmTable } from '../../store/schema.ts';
import {
  type ConsoleKind,
  type ConsoleStream,
  DISK_RESTORED,
  DISK_RUN_MAX,
  type DiskErrorPause,
  type DiskExport,
  type DiskRun,
  DriverError,
  type HypervisorDriver,
  type InterfaceCounters,
  migrationUndone,
  type PowerState,
  type ReinstallSpec,
  type RescueLogin,
  type StepMarker,
  undoneIfFinal,
  type VmInfo,
  type VmSpec,
} from '../driver.ts';
import { checkFence, FenceDown, unfenced } from '../fence.ts';
import { free, placeVm, reserveDestination, resizeVm, retakeDestination } from '../hosts.ts';
import type { IpPool } from '../ip-pool.ts';
import {
  type CommandTiming,
  type CopyPace,
  copyTimeMs,
  createCommands,
  DEFAULT_COPY_PACE,
  isNoDomain,
  isNotRunning,
  spellMs,
  stderrOf,
  watchProgress,
} from './commands.ts';
import { backupXml, checkName, checkpointXml, parseMap, planRuns, readRuns } from './disk-export.ts';
import { domainXml, withGuestSuspendOff } from './domain-xml.ts';
import { createGuestFreeze } from './guest-freeze.ts';
import { createHostImages, type HostTemplate, uploadOf, uploadsNamedIn } from './host-images.ts';
import { createLeftovers } from './leftovers.ts';
import { isLocalSystem } from './local-system.ts';
import { definitionMac, macOf, withDefinitionMac } from './macs.ts';
import { holdRoom, oneFilesystem, type RoomWant } from './room-claims.ts';
import { readSeedUserData, seedNetwork, userDataSshKeys, writeSeed } from './seed.ts';
import {
  createPoolStorage,
  isNoPool,
  isNoVolume,
  LOCAL_ROOM,
  localPlace,
  localRoom,
  makePrivateDir,
  POOL,
  parseVolumeXml,
  privateDirFailure,
  type Room,
  removePrivateDir,
  withPrivateDir,
} from './storage.ts';
import { createTemplateSweep, TEMPLATE_GRACE_MS, uploadsNamedOnHost } from './template-sweep.ts';
import { resolveImage, resolveTemplate } from './templates.ts';
import { detectVirtType, isKvmRefused, kvmRefusedChoice, type VirtChoice } from './virt-type.ts';

export interface LibvirtDriverOptions {
  readonly db: Kysely<Database>;
  readonly ipPool: IpPool;
  /** The path of each host's storage pool `vrp` (VRP_LIBVIRT_STORAGE): the same on every host. */
  readonly storage: string;
  /** `kvm`, `qemu`, or `auto`: each host's libvirt is asked (`detectVirtType`) when the driver starts. */
  readonly virtType: 'auto' | 'kvm' | 'qemu';
  /** Told of each host's virtualisation once it is known (logged at info). */
  readonly onVirtChoice?: (hostId: string, choice: VirtChoice) => void;
  /** Told of each migration that succeeded, with its figures (logged at info; the bench reads it). */
  readonly onMigration?: (m: MigrationReport) => void;
  /** Told of every virsh/qemu-img command with its duration (logged at debug; the bench reads it). */
  readonly onCommand?: (t: CommandTiming) => void;
  /**
   * Told of a guest whose file systems may still be frozen after a backup that failed by
   * itself (its own error is the export's; logged at error).
   */
  readonly onGuestThawFailed?: (domain: string, err: unknown) => void;
  /** Told of a guest found frozen by a backup whose attempts died, and thawed (logged at warn). */
  readonly onGuestThawed?: (domain: string, backupId: string) => void;
  /**
   * Told of a VM's copy a migration could not remove from a host (logged at warn): recorded in
   * `libvirt_leftovers`, for the reconciler's next pass over that host (`clearLeftovers`).
   */
  readonly onLeftover?: (l: { vmId: string; hostId: string; error: string }) => void;
  readonly bridge: string | undefined;
  /** How long a graceful shutdown may take inside reboot and resize before the power is forced off. */
  readonly stopTimeoutMs: number;
  /** The rescue system's image (VRP_RESCUE_IMAGE), for hosts without one of their own (`rescue_image`). */
  readonly rescueImage?: string | undefined;
  /**
   * How long a template copy no VM uses and no record names stays on its host before the
   * reconciler's pass removes it (VRP_TEMPLATE_SWEEP_GRACE; template-sweep.ts).
   */
  readonly templateGraceMs?: number;
  /**
   * How long copies (volumes, backups, live migrations) may take (VRP_COPY_STALL,
   * VRP_COPY_MIN_RATE; commands.ts, CopyLimit); default DEFAULT_COPY_PACE.
   */
  readonly copyPace?: CopyPace;
  readonly now?: () => number;
}

/** One migration's figures. */
export interface MigrationReport {
  readonly vmId: string;
  readonly fromHostId: string;
  readonly toHostId: string;
  readonly live: boolean;
  /** The whole move: from the reservation's check to the source's volumes deleted. */
  readonly total_ms: number;
  /** `virsh migrate` alone (live only). */
  readonly migrate_ms?: number;
  /** The guest's pause at the switch-over, libvirt's `Total downtime` on the destination (live only). */
  readonly downtime_ms?: number;
}

/**
 * The bytes a domain's job (a backup, a migration) has moved so far, from `virsh domjobinfo
 * --rawstats`: `data_processed`, else its disk's and memory's together; undefined when it says
 * neither (no job, or one that counts nothing yet).
 */
export function jobBytesProcessed(stdout: string): number | undefined {
  const field = (name: string) => {
    const m = new RegExp(`^${name}:\\s*(\\d+)\\s*$`, 'm').exec(stdout);
    return m ? Number(m[1]) : undefined;
  };
  const data = field('data_processed');
  if (data !== undefined) return data;
  const disk = field('disk_processed');
  const memory = field('memory_processed');
  return disk === undefined && memory === undefined ? undefined : (disk ?? 0) + (memory ?? 0);
}

/** Whether `virsh domjobinfo --rawstats` says the domain has no job (`Job type: 0`). */
const noJob = (stdout: string) => /^Job type:\s*0\s*$/m.test(stdout);

/**
 * Whether `virsh domjobinfo --rawstats` says the domain runs a backup job: a job (noJob) whose
 * operation is 9, a backup (libvirt's virDomainJobOperation).
 */
const backupJob = (stdout: string) => !noJob(stdout) && /^operation:\s*(\d+)/m.exec(stdout)?.[1] === '9';

/** The figures of `virsh domjobinfo --completed` a migration report takes (absent ones left out). */
export function parseJobInfo(stdout: string): { downtime_ms?: number; elapsed_ms?: number } {
  const num = (label: string) => {
    const m = new RegExp(`^${label}:\\s+(\\d+)\\s*ms`, 'm').exec(stdout);
    return m ? Number(m[1]) : undefined;
  };
  const downtime = num('Total downtime');
  const elapsed = num('Time elapsed');
  return {
    ...(downtime !== undefined ? { downtime_ms: downtime } : {}),
    ...(elapsed !== undefined ? { elapsed_ms: elapsed } : {}),
  };
}

const GB = 1024 ** 3;
/** Where the system libvirtd has QEMU write each domain's log. */
const QEMU_LOG_DIR = '/var/log/libvirt/qemu';
const DOMAIN_PREFIX = 'vrp-';
/** How long the guest agent may take to answer a password change, seconds. */
const AGENT_TIMEOUT_S = 10;
/** How long `virsh console` gets to say it is connected. */
const SERIAL_CONNECT_MS = 30_000;
/** How long a host's connection gets to answer a probe (host health) before it counts as not answering. */
const PROBE_TIMEOUT_MS = 10_000;
/** How long a guest woken from its own suspend gets to be running again, in libvirt's eyes. */
const WAKE_TIMEOUT_MS = 10_000;
/** Live metadata of a domain this driver started paused for a stopped VM's backup (gone with the domain). */
const HELD_URI = 'https://vrp.invalid/held-paused';
/**
 * The room a host's pool must have again (free to QEMU's user) for the VMs paused for want of it
 * to be resumed: enough that their next writes do not fill it again at once.
 */
const RESUME_ROOM_BYTES = 2 ** 30;
const domainName = (vmId: string) => `${DOMAIN_PREFIX}${vmId}`;

/**
 * The power states of the driver's domains (`vrp-<service id>`) in `virsh list --all`'s table
 * (` Id   Name   State`, then a rule, then one line per domain; the state may be two words, "shut
 * off", "in shutdown"). Running, paused, idle, in shutdown and pmsuspended domains hold their
 * resources and are `running`; shut off, crashed and dying ones are `stopped`. Other domains
 * on the host are not ours and are left out.
 */
export function parseDomainList(stdout: string): Map<string, PowerState> {
  const states = new Map<string, PowerState>();
  for (const line of stdout.split('\n')) {
    const m = /^\s*(\d+|-)\s+(\S+)\s+(\S.*?)\s*$/.exec(line);
    const [, , name = '', state = ''] = m ?? [];
    if (!name.startsWith(DOMAIN_PREFIX)) continue;
    const off = state === 'shut off' || state === 'crashed' || state === 'dying';
    states.set(name.slice(DOMAIN_PREFIX.length), off ? 'stopped' : 'running');
  }
  return states;
}

/**
 * The ids of the driver's domains in `virsh domstats --state` output that are paused because a
 * write to a disk failed: `state.state=3` (VIR_DOMAIN_PAUSED) with `state.reason=5`
 * (VIR_DOMAIN_PAUSED_IOERROR). Other domains on the host, and those paused otherwise (by hand,
 * for a move, started paused for a backup), are left out.
 */
export function parseDiskErrorPaused(stdout: string): string[] {
  const ids: string[] = [];
  for (const block of stdout.split(/^(?=Domain:)/m)) {
    const name = /^Domain:\s*'(.*)'\s*$/m.exec(block)?.[1] ?? '';
    if (!name.startsWith(DOMAIN_PREFIX)) continue;
    if (/^\s*state\.state=3\s*$/m.test(block) && /^\s*state\.reason=5\s*$/m.test(block))
      ids.push(name.slice(DOMAIN_PREFIX.length));
  }
  return ids;
}

/**
 * The first disk error in `virsh domblkerror` output (`vda: no space`, `vda: unspecified
 * error`); undefined where it says "No errors found".
 */
export function parseBlockError(stdout: string): DiskErrorPause | undefined {
  const m = /^\s*(\S+):\s*(.+?)\s*$/m.exec(stdout);
  if (!m) return undefined;
  return { disk: m[1] ?? '', error: m[2] === 'no space' ? 'no_space' : 'io_error' };
}

/**
 * The interface counters of the driver's domains in `virsh domstats --interface` output
 * (`Domain: 'vrp-<id>'`, then `  net.N.name=vnet3`, `  net.N.rx.bytes=...`, `  net.N.tx.bytes=...`
 * lines per interface). libvirt reports them as the guest sees them: `rx` is what the server
 * received (traffic in), `tx` what it sent (out). Each domain's counters are summed over its
 * interfaces; its session is the interfaces' host-side names, which libvirt gives anew when the
 * domain starts. Other domains on the host are left out.
 */
export function parseInterfaceStats(stdout: string): Map<string, InterfaceCounters> {
  const out = new Map<string, InterfaceCounters>();
  let vmId: string | undefined;
  let inBytes = 0;
  let outBytes = 0;
  let names: string[] = [];
  const flush = () => {
    if (vmId !== undefined) out.set(vmId, { inBytes, outBytes, session: names.join(',') });
    vmId = undefined;
  };
  for (const line of stdout.split('\n')) {
    const domain = /^Domain:\s*'(.*)'\s*$/.exec(line);
    if (domain) {
      flush();
      const name = domain[1] ?? '';
      if (name.startsWith(DOMAIN_PREFIX)) {
        vmId = name.slice(DOMAIN_PREFIX.length);
        inBytes = 0;
        outBytes = 0;
        names = [];
      }
      continue;
    }
    if (vmId === undefined) continue;
    const m = /^\s*net\.(\d+)\.(name|rx\.bytes|tx\.bytes)=(.*?)\s*$/.exec(line);
    if (!m) continue;
    const [, index = '', key, value = ''] = m;
    if (key === 'name') names[Number(index)] = value;
    else if (/^\d+$/.test(value)) {
      if (key === 'rx.bytes') inBytes += Number(value);
      else outBytes += Number(value);
    }
  }
  flush();
  return out;
}

/** The MAC addresses of a domain's interfaces in `virsh domiflist` output (running or not). */
export function parseInterfaceMacs(stdout: string): string[] {
  return [...stdout.matchAll(/\b([0-9a-f]{2}(?::[0-9a-f]{2}){5})\b/gi)].map((m) =>
    (m[1] ?? '').toLowerCase(),
  );
}

/** libvirt's rate unit for `domiftune` is kilobytes (1000 bytes) per second: `mbit` Mbit/s in it. */
export const kilobytesPerSecond = (mbit: number) => Math.max(1, Math.round(mbit * 125));

/** The volumes of a VM in its host's pool. */
export const vmVolumes = (vmId: string) => ({
  disk: `${vmId}.qcow2`,
  /**
   * What a restored disk's images on their way in are named after (`<prefix><attempt>.qcow2`):
   * each attempt uploads its own, so an attempt that goes on after its job was given to another
   * worker never copies an image the other is still writing.
   */
  restorePrefix: `${vmId}.restore-`,
  seed: `${vmId}.seed.iso`,
  console: `${vmId}.console.log`,
});
export const backupVolume = (backupId: string) => `backup-${backupId}.qcow2`;
/** The rescue system's volumes of a VM: a throwaway overlay over the rescue image, and its seed. */
export const rescueVolumes = (vmId: string) => ({
  disk: `${vmId}.rescue.qcow2`,
  seed: `${vmId}.rescue-seed.iso`,
});
/** Where a seed's replacement is uploaded before it replaces the seed (`x.seed.iso` -> `x.seed.next.iso`). */
export const stagedSeed = (seed: string) => seed.replace(/\.iso$/, '.next.iso');
/** The rescue image's uploads on a host are recorded in `host_images` under this key. */
const RESCUE_IMAGE_KEY = 'rescue';
/** The namespace of the driver's marks in a domain's `<metadata>`. */
const VRP_NS = 'https://vrp.invalid/libvirt';

/**
 * Whether a libvirt URI is a daemon on this machine whose domains' files this process can see:
 * the system connection, or a UNIX socket connection without a remote host.
 */
export function isLocalUri(uri: string): boolean {
  return isLocalSystem(uri) || /^qemu\+unix:\/\/\/(system|session)\b/i.test(uri);
}

/** A VM's domain on a host as the driver reads it (`virsh domstate`); missing: not defined there. */
type DomainState = 'running' | 'stopped' | 'paused' | 'missing';

/**
 * The room a restore's copies take (importDisk), its image's data `data` bytes: here, the runs'
 * raw file and its qcow2 beside it (the qcow2 alone once the raw file goes, until it is
 * uploaded); on the host, the qcow2 staged beside the disk, then the disk's copy of it once the
 * old disk (`oldDisk` bytes of its own) has gone. A pool on the disk of this machine's temporary
 * directory (one place) never holds more than twice the data at once: the two files here, then
 * the qcow2 and its upload, then the upload and the disk's copy less the old disk.
 */
export function restoreWants(o: {
  readonly here: string;
  readonly onPool: string;
  readonly hostId: string;
  readonly data: number;
  readonly oldDisk: number;
  readonly poolRoom: () => Promise<Room>;
}): RoomWant[] {
  const poolWhere = `Host ${o.hostId}'s storage pool (a restore stages the backup's disk there beside the server's)`;
  if (o.onPool === o.here)
    return [
      { place: o.here, where: oneFilesystem(poolWhere, LOCAL_ROOM), need: 2 * o.data, room: localRoom },
    ];
  return [
    { place: o.here, where: LOCAL_ROOM, need: 2 * o.data, room: localRoom },
    { place: o.onPool, where: poolWhere, need: o.data + Math.max(0, o.data - o.oldDisk), room: o.poolRoom },
  ];
}

/** The UNIX socket of a running domain's VNC console in its live XML, if it has one. */
export function vncSocketOf(xml: string): string | undefined {
  const graphics = /<graphics\b[^>]*\btype=(['"])vnc\1[^>]*?(\/>|>[\s\S]*?<\/graphics>)/.exec(xml)?.[0];
  if (!graphics) return undefined;
  const path = /\bsocket=(['"])([^'"]+)\1/.exec(graphics)?.[2];
  return path?.replace(/&(amp|lt|gt|quot|apos);/g, (_, e: string) =>
    e === 'amp' ? '&' : e === 'lt' ? '<' : e === 'gt' ? '>' : e === 'quot' ? '"' : "'",
  );
}

/** A text as one word of a POSIX shell command line. */
const shellWord = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The address a live migration's data goes to: the destination URI's host name, or the
 * loopback address for a local connection (`qemu:///system`, `qemu+unix://...`: a second
 * libvirtd on the same machine, as the tests run).
 */
export function migrationAddress(uri: string): string {
  if (/^qemu\+unix:/i.test(uri)) return '127.0.0.1';
  let host = '';
  try {
    host = new URL(uri).hostname;
  } catch {
    host = '';
  }
  return host === '' ? '127.0.0.1' : host;
}

/**
 * `virsh migrate`'s address arguments: where the source sends the migration data
 * (`--migrateuri tcp://ADDR`) and, for a loopback address, where the destination's QEMU and its
 * NBD server listen (`--listen-address`): libvirt refuses a loopback `migration_address` in
 * qemu.conf, and without it the destination would listen on every address of the machine.
 */
export function migrationAddressArgs(uri: string): string[] {
  const address = migrationAddress(uri);
  const bare = address.replace(/^\[(.*)\]$/, '$1');
  const loopback = /^127\./.test(bare) || bare === '::1' || bare === 'localhost';
  return [...(loopback ? ['--listen-address', bare] : []), '--migrateuri', `tcp://${address}`];
}

/**
 * Real virtual machines through libvirt/QEMU. Each VM is a domain `vrp-<service id>` whose
 * files are volumes of its host's storage pool `vrp`: a qcow2 disk over the host's volume of
 * its template's base image, a cloud-init NoCloud seed and a console log; backups are
 * standalone qcow2 volumes on the VM's host. Everything goes through each host's libvirt
 * connection: the driver's own machine holds no file of a host. Every operation is idempotent:
 * it looks at what libvirt says and finishes the work.
 */
export function createLibvirtDriver(o: LibvirtDriverOptions): HypervisorDriver {
  const { db, ipPool } = o;
  const now = o.now ?? Date.now;
  const pace = o.copyPace ?? DEFAULT_COPY_PACE;
  const commands = createCommands(o.onCommand, pace);
  const { virsh } = commands;
  /** Each host's connection, from its record (the operator may change it: read each time). */
  const uriOf = async (hostId: string): Promise<string> => {
    const host = await db
      .selectFrom('hypervisor_hosts')
      .select(['uri', 'driver'])
      .where('id', '=', hostId)
      .executeTakeFirst();
    if (host?.driver !== 'libvirt' || !host.uri)
      throw new DriverError(`Host ${hostId} is not a libvirt host`, { transient: false });
    return host.uri;
  };
  // Each host is asked once; a host that does not answer delays only the first domain defined on it.
  const virtTypes = new Map<string, Promise<'kvm' | 'qemu'>>();
  const virtTypeOf = (hostId: string): Promise<'kvm' | 'qemu'> => {
    let known = virtTypes.get(hostId);
    if (!known) {
      // Shared by the jobs that wait on it: no one attempt's fence stops it (fence.ts).
      known = unfenced(() =>
        uriOf(hostId).then((uri) =>
          detectVirtType(o.virtType, uri, commands).then((choice) => {
            o.onVirtChoice?.(hostId, choice);
            return choice.type;
          }),
        ),
      );
      known.catch(() => virtTypes.delete(hostId));
      virtTypes.set(hostId, known);
    }
    return known;
  };
  // The hosts the store has now are asked at once, in the background (one that does not answer
  // delays nothing); hosts added later are asked when their first domain is defined.
  void db
    .selectFrom('hypervisor_hosts')
    .select('id')
    .where('driver', '=', 'libvirt')
    .execute()
    .then((hosts) => {
      for (const h of hosts) virtTypeOf(h.id).catch(() => {});
    })
    .catch(() => {});
  const pool = createPoolStorage(commands, o.storage, pace);
  const images = createHostImages(db, pool, now);
  const leftovers = createLeftovers({
    db,
    now,
    row: (vmId) => row(vmId),
    state: (vm) => state(vm),
    removeFrom,
    onLeftover: o.onLeftover,
  });
  const sweepTemplates = createTemplateSweep({
    db,
    now: () => performance.now(),
    graceMs: o.templateGraceMs ?? TEMPLATE_GRACE_MS,
    // A host whose pool is not made yet has nothing to sweep.
    list: (uri) =>
      pool.list(uri).catch((err: unknown) => {
        if (isNoPool(err)) return new Set<string>();
        throw err;
      }),
    named: (uri) =>
      uploadsNamedOnHost({ virsh, list: (u) => pool.list(u), refresh: (u, w) => pool.refresh(u, w) }, uri),
    remove: (uri, volume) => pool.remove(uri, volume),
  });
  const volPath = (name: string) => join(o.storage, name);
  const need = (vm: LibvirtVmTable) => ({ cpu: vm.cpu, ramGb: vm.ram_gb, diskGb: vm.disk_gb });

  const row = (vmId: string) =>
    db.selectFrom('libvirt_vms').selectAll().where('id', '=', vmId).executeTakeFirst();
  async function get(vmId: string): Promise<LibvirtVmTable> {
    const r = await row(vmId);
    if (!r) throw new DriverError(`VM ${vmId} does not exist`, { transient: false });
    return r;
  }

  /** The domain's state in virsh's words (`virsh domstate`: "running", "shut off", "pmsuspended"), or `missing`. */
  async function domstate(vm: Pick<LibvirtVmTable, 'id' | 'host_id'>, hostId = vm.host_id): Promise<string> {
    try {
      const { stdout } = await virsh(
        await uriOf(hostId),
        ['domstate', domainName(vm.id)],
        'Could not read the VM state',
      );
      return stdout.trim();
    } catch (err) {
      if (isNoDomain(err)) return 'missing';
      throw err;
    }
  }

  /**
   * The domain's state as the driver acts on it. A guest that suspended itself (`pmsuspended`:
   * a domain defined before its suspend was turned off, domain-xml.ts) holds its resources and
   * is `running`, as in parseDomainList; the power commands wake it first (startDomain, stopDomain).
   */
  async function state(
    vm: Pick<LibvirtVmTable, 'id' | 'host_id'>,
    hostId = vm.host_id,
  ): Promise<DomainState> {
    return stateOf(await domstate(vm, hostId));
  }

  function stateOf(s: string): DomainState {
    if (s === 'running' || s === 'in shutdown' || s === 'pmsuspended') return 'running';
    if (s === 'paused') return 'paused';
    if (s === 'missing') return 'missing';
    return 'stopped';
  }

  /**
   * Wakes a guest that suspended itself (`virsh dompmwakeup`: the guest's own resume, no agent
   * needed), and waits until libvirt no longer has it asleep: QEMU reports the wake-up from its
   * main loop after the command has returned, and a shutdown asked before that is refused
   * ("domain is not running"). One found running after a failed wake (it woke by itself) is
   * woken.
   */
  async function wake(vm: LibvirtVmTable) {
    await virsh(await uriOf(vm.host_id), ['dompmwakeup', domainName(vm.id)], 'Could not wake the VM').catch(
      async (err: unknown) => {
        if ((await domstate(vm)) !== 'running') throw err;
      },
    );
    const until = Date.now() + WAKE_TIMEOUT_MS;
    while ((await domstate(vm)) === 'pmsuspended') {
      if (Date.now() >= until)
        throw new DriverError(`VM ${vm.id} did not wake up from its own suspend`, { transient: true });
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * Why the domain is in its state, in virsh's words (`virsh domstate --reason`: `paused
   * (migrating)` says `migrating`, `shut off (failed)` `failed`); '' where it says none.
   */
  async function stateReason(
    vm: Pick<LibvirtVmTable, 'id' | 'host_id'>,
    hostId = vm.host_id,
  ): Promise<string> {
    const { stdout } = await virsh(
      await uriOf(hostId),
      ['domstate', '--reason', domainName(vm.id)],
      'Could not read the VM state',
    );
    return /\(([^)]*)\)/.exec(stdout)?.[1] ?? '';
  }

  /** Whether the domain is defined on the host (`virsh dominfo`: `Persistent: yes`), not only running there. */
  async function definedOn(
    vm: Pick<LibvirtVmTable, 'id' | 'host_id'>,
    hostId = vm.host_id,
  ): Promise<boolean> {
    const { stdout } = await virsh(
      await uriOf(hostId),
      ['dominfo', domainName(vm.id)],
      'Could not read the VM',
    );
    return /^Persistent:\s+yes/m.test(stdout);
  }

  async function info(vm: LibvirtVmTable): Promise<VmInfo> {
    const s = await state(vm);
    return {
      vmId: vm.id,
      hostId: vm.host_id,
      power: s === 'running' || s === 'paused' ? 'running' : 'stopped',
      cpu: vm.cpu,
      ramGb: vm.ram_gb,
      diskGb: vm.disk_gb,
      ips: await ipPool.addressesOf(vm.id),
    };
  }

  /**
   * The running guest's agent (the virtio-serial channel every domain has) sets the password at
   * once: true if it said it did. No agent in the guest, an agent that does not answer within
   * AGENT_TIMEOUT_S, or one that fails: false, and the seed applies it at the next boot. The
   * command reaches virsh on its standard input, so the password is in no process's arguments
   * and in no error's details.
   */
  async function agentSetsPassword(vm: LibvirtVmTable, username: string, password: string): Promise<boolean> {
    const command = JSON.stringify({
      execute: 'guest-set-user-password',
      arguments: { username, password: Buffer.from(password, 'utf8').toString('base64'), crypted: false },
    });
    // JSON of a base64 text and a checked user name holds no quote that would end virsh's argument.
    if (command.includes("'")) return false;
    const answer = await commands
      .virshShell(
        await uriOf(vm.host_id),
        `qemu-agent-command --timeout ${AGENT_TIMEOUT_S} ${domainName(vm.id)} '${command}'\n`,
        'Could not reach the guest agent',
        (AGENT_TIMEOUT_S + 20) * 1000,
      )
      .catch(() => undefined);
    return answer !== undefined && /"return"\s*:/.test(answer.stdout);
  }

  /**
   * The seed carries what cloud-init applies at boot: host name, password, root's SSH keys,
   * addresses. Built in a private directory of this machine (its sources hold the password:
   * removed right after, whatever fails), uploaded as the VM's seed volume (or `s.volume`), and
   * the local copy removed. Each seed has a new instance id, so cloud-init applies it again.
   * No password keeps the previous seed's user-data; no `sshKeys` keeps the previous seed's keys.
   *
   * The new seed is uploaded beside the old one first (its staging volume), and only then does
   * it replace the old one: an upload that fails leaves the old seed as it was, and an attempt
   * that failed between the two finds the new seed in the staging volume, with the user-data it
   * carried over (a running guest keeps the seed it booted with: QEMU holds the old file open).
   * A seed whose user-data is to be kept and that is nowhere is an error: the login is not
   * invented anew.
   */
  async function seed(
    vm: LibvirtVmTable,
    s: {
      hostname: string;
      username: string;
      password: string | undefined;
      sshKeys?: readonly string[] | undefined;
      volume?: string;
    },
    /** Whether the VM has a seed volume already (false only at create, when it has none). */
    replace = true,
  ) {
    const uri = await uriOf(vm.host_id);
    await pool.ready(uri);
    const name = s.volume ?? vmVolumes(vm.id).seed;
    const staging = stagedSeed(name);
    await withPrivateDir(async (dir) => {
      let previous: string | undefined;
      if ((s.password === undefined || s.sshKeys === undefined) && replace) {
        const from = (await pool.info(uri, name))
          ? name
          : (await pool.info(uri, staging))
            ? staging
            : undefined;
        if (from !== undefined) {
          await pool.download(uri, from, join(dir, 'old.iso'));
          previous = await readSeedUserData(commands, join(dir, 'old.iso'));
          await rm(join(dir, 'old.iso'), { force: true });
        } else if (s.password === undefined) {
          throw new DriverError(`The seed of VM ${vm.id} is missing: its login cannot be kept`, {
            transient: false,
          });
        }
      }
      const iso = join(dir, 'seed.iso');
      await writeSeed(
        commands,
        iso,
        dir,
        {
          instanceId: `vrp-${vm.id}-${randomUUID().slice(0, 8)}`,
          hostname: s.hostname,
          username: s.username,
          password: s.password,
          ...seedNetwork(await networkOf(db, vm.id)),
          sshKeys: s.sshKeys ?? (previous !== undefined ? userDataSshKeys(previous) : []),
        },
        previous,
      );
      for (const f of ['user-data', 'meta-data', 'network-config']) await rm(join(dir, f), { force: true });
      // A VM's first seed (at its create) has none to replace: uploaded where it goes.
      if (replace) {
        await pool.remove(uri, staging);
        await pool.uploadNew(uri, staging, iso);
        await pool.remove(uri, name);
      }
      await pool.uploadNew(uri, name, iso);
      if (replace) await pool.remove(uri, staging);
    });
  }

  /** Defines the VM's domain on its host, over its volumes there. */
  async function define(vm: LibvirtVmTable, template: HostTemplate, uuid?: string) {
    await defineXml(await uriOf(vm.host_id), await ownXml(vm, template, uuid));
  }

  /** The VM's own domain XML (its system on its disk), `uuid` that of the domain it replaces. */
  async function ownXml(vm: LibvirtVmTable, template: HostTemplate, uuid?: string): Promise<string> {
    const v = vmVolumes(vm.id);
    return domainXml({
      name: domainName(vm.id),
      ...(uuid ? { uuid } : {}),
      virtType: await virtTypeOf(vm.host_id),
      cpu: vm.cpu,
      ramGb: vm.ram_gb,
      disk: volPath(v.disk),
      seed: volPath(v.seed),
      consoleLog: volPath(v.console),
      ...(template.kernel
        ? {
            kernel: {
              kernel: volPath(template.kernel.kernel),
              initrd: volPath(template.kernel.initrd),
              cmdline: template.kernel.cmdline,
            },
          }
        : {}),
      ...(await nicOf(vm)),
    });
  }

  /**
   * The domain's interface, on the provider's bridge if there is one, with the VM's own MAC
   * (macs.ts). A VM with none in its row yet (a new one, or one stored before MACs were) gets
   * `current`, the one its domain's own definition has, if no other VM has it.
   */
  async function nicOf(vm: LibvirtVmTable, current?: string) {
    if (!o.bridge) return {};
    return { bridge: o.bridge, mac: vm.mac ?? (await macOf(db, vm.id, current)) };
  }

  /**
   * The VM with its MAC in its row (nicOf), and its own definition `xml` rewritten with that MAC
   * where it has another (a VM stored before MACs were, whose MAC another VM has, or whose
   * rewrite an earlier attempt did not reach); `xml` undefined: nothing to rewrite.
   */
  async function withOwnMac(vm: LibvirtVmTable, xml: string): Promise<{ vm: LibvirtVmTable; xml?: string }> {
    if (!o.bridge) return { vm };
    const current = definitionMac(xml);
    const { mac } = await nicOf(vm, current);
    if (mac === undefined) return { vm };
    const own = { ...vm, mac };
    if (current === undefined || current === mac) return { vm: own };
    return { vm: own, xml: withDefinitionMac(xml, mac) };
  }

  /**
   * The VM's own definition made to have the VM's MAC where it has another (withOwnMac) and the
   * guest's suspend off (withGuestSuspendOff): read, and written again if either changes it; the
   * VM with its MAC.
   */
  async function ownDefinition(vm: LibvirtVmTable, uri: string): Promise<LibvirtVmTable> {
    const { stdout } = await virsh(
      uri,
      ['dumpxml', '--inactive', domainName(vm.id)],
      'Could not read the VM',
    );
    const own = await withOwnMac(vm, stdout);
    const xml = withGuestSuspendOff(own.xml ?? stdout);
    if (xml !== stdout) await defineXml(uri, xml);
    return own.vm;
  }

  /** `virsh define` of an XML text (through a private file); one defined already is accepted. */
  async function defineXml(uri: string, xml: string) {
    await withPrivateDir(async (dir) => {
      await writeFile(join(dir, 'domain.xml'), xml);
      await virsh(uri, ['define', join(dir, 'domain.xml')], 'Could not define the VM').catch((err) => {
        // Defined by an earlier attempt of the same job: nothing left to do.
        if (!/already exists/.test(stderrOf(err))) throw err;
      });
    });
  }

  /**
   * Whether the domain starts with its host (`virsh autostart`): libvirt starts the domains so
   * marked when its host boots (after a power cut, a kernel update). On for a VM the driver leaves
   * running (startDomain), off for one it stops (stopDomain, powerOffDomain), so a host that
   * reboots brings back the servers that ran and no other.
   */
  async function startsWithHost(vm: Pick<LibvirtVmTable, 'id' | 'host_id'>, on: boolean) {
    await virsh(
      await uriOf(vm.host_id),
      ['autostart', ...(on ? [] : ['--disable']), domainName(vm.id)],
      on ? 'Could not make the VM start with its host' : 'Could not keep the VM from starting with its host',
    ).catch((err: unknown) => {
      // A domain defined nowhere (undefined by hand while it runs) has no mark: its host's boot
      // never starts it.
      if (!/transient domain/.test(stderrOf(err))) throw err;
    });
  }

  /**
   * startsWithHost for a VM the driver has just run or stopped: a failure leaves that done
   * (the reconciler's next pass over the host settles the mark, and says so).
   */
  const markAfter = (vm: Pick<LibvirtVmTable, 'id' | 'host_id'>, on: boolean) =>
    startsWithHost(vm, on).catch(() => undefined);

  /** Runs the VM (started, resumed or woken as it is now), and marks it to start with its host. */
  async function startDomain(vm: LibvirtVmTable) {
    await runDomain(vm);
    await markAfter(vm, true);
  }

  async function runDomain(vm: LibvirtVmTable) {
    const now = await domstate(vm);
    if (now === 'pmsuspended') return wake(vm);
    const s = stateOf(now);
    if (s === 'running') return;
    if (s === 'paused') {
      await virsh(await uriOf(vm.host_id), ['resume', domainName(vm.id)], 'Could not resume the VM');
      return;
    }
    const uri = await uriOf(vm.host_id);
    // It boots its own definition: with the VM's MAC, whatever wrote it last (macs.ts), and the
    // guest's suspend off (domain-xml.ts; one defined before that rule gets it at this start).
    await ownDefinition(vm, uri);
    try {
      await virsh(uri, ['start', domainName(vm.id)], 'Could not start the VM');
    } catch (err) {
      // `auto` chose KVM from libvirt's answer, and QEMU could not use it: the host runs TCG
      // from now on, and this domain is defined again for it and started.
      if (o.virtType !== 'auto' || !isKvmRefused(stderrOf(err))) throw err;
      if ((await virtTypeOf(vm.host_id)) === 'kvm') {
        const choice = kvmRefusedChoice(stderrOf(err));
        virtTypes.set(vm.host_id, Promise.resolve(choice.type));
        o.onVirtChoice?.(vm.host_id, choice);
      }
      const { stdout } = await virsh(
        uri,
        ['dumpxml', '--inactive', domainName(vm.id)],
        'Could not read the VM',
      );
      await withPrivateDir(async (dir) => {
        await writeFile(
          join(dir, 'domain.xml'),
          stdout.replace(/<domain type=(['"])kvm\1/, "<domain type='qemu'"),
        );
        await virsh(uri, ['define', join(dir, 'domain.xml')], 'Could not define the VM');
      });
      await virsh(uri, ['start', domainName(vm.id)], 'Could not start the VM');
    }
  }

  /** ACPI shutdown, then forced off once `timeoutMs` has passed. */
  /** Whether the domain is paused because this driver started it so for a stopped VM's backup (an attempt that died held it). */
  async function heldPaused(uri: string, name: string): Promise<boolean> {
    return virsh(uri, ['metadata', name, '--uri', HELD_URI, '--live'], 'Could not read the VM').then(
      (r) => r.stdout.includes('held'),
      () => false,
    );
  }

  async function stopDomain(vm: LibvirtVmTable, timeoutMs: number) {
    const now = await domstate(vm);
    // Not to start with its host from now on, whatever its state (one the guest shut down too).
    if (now !== 'missing') await markAfter(vm, false);
    if (now !== 'paused' && stateOf(now) !== 'running') return;
    const uri = await uriOf(vm.host_id);
    // A guest asleep answers no ACPI shutdown (libvirt: "domain is not running"): woken first.
    // One that cannot be woken is powered off when the time below runs out.
    if (now === 'pmsuspended') await wake(vm).catch(() => undefined);
    // A paused guest (its disk's write refused: the host's storage full; or paused by hand) runs
    // no shutdown either: resumed first, it shuts down cleanly where the write now goes through;
    // where it does not, QEMU pauses it again, and it is powered off when the time runs out.
    // One this driver started paused for a stopped VM's backup never ran its guest: off at once.
    if (now === 'paused' && (await heldPaused(uri, domainName(vm.id)))) return powerOffDomain(vm);
    if (now === 'paused')
      await virsh(uri, ['resume', domainName(vm.id)], 'Could not resume the VM').catch(() => undefined);
    await virsh(uri, ['shutdown', domainName(vm.id)], 'Could not shut the VM down').catch((err) => {
      if (!isNotRunning(err)) throw err;
    });
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if ((await state(vm)) === 'stopped') return;
      await new Promise((r) => setTimeout(r, 250));
    }
    await powerOffDomain(vm);
  }

  async function powerOffDomain(vm: LibvirtVmTable) {
    await virsh(await uriOf(vm.host_id), ['destroy', domainName(vm.id)], 'Could not power the VM off').catch(
      (err) => {
        if (!isNotRunning(err) && !isNoDomain(err)) throw err;
      },
    );
    // Off: not to start with its host either.
    await markAfter(vm, false);
  }

  async function createVm(spec: VmSpec): Promise<VmInfo> {
    let vm = await row(spec.vmId);
    if (!vm) {
      await db.transaction().execute(async (tx) => {
        await placeVm(tx, { cpu: spec.cpu, ramGb: spec.ramGb, diskGb: spec.diskGb }, 'libvirt', {
          table: 'libvirt_vms',
          row: {
            id: spec.vmId,
            hostname: spec.hostname,
            cpu: spec.cpu,
            ram_gb: spec.ramGb,
            disk_gb: spec.diskGb,
            created_at: now(),
          },
        });
      });
      vm = await get(spec.vmId);
    }
    // A copy of this VM an earlier migration left on the host goes first: the look below would
    // take its domain for one an earlier attempt defined. One that runs waits for the operator
    // (transient: a create that fails for good would remove it as its own).
    await leftovers.clearFor(vm.host_id, vm.id).catch((err: unknown) => {
      if (err instanceof DriverError && !err.transient)
        throw new DriverError(err.message, { transient: true, cause: err });
      throw err;
    });
    await ipPool.allocate(vm.id, vm.host_id, spec.ipCount);
    await ipPool.allocateIpv6(vm.id, vm.host_id);
    const template = await resolveTemplate(db, spec.templateId);
    // The domain first: defined by an earlier attempt, its volumes are there too.
    const s = await state(vm);
    // The host answered: from now on it may hold something of the VM, whichever process asks
    // (remove). Written before anything is put there.
    if (vm.reached_at === null)
      await db.updateTable('libvirt_vms').set({ reached_at: now() }).where('id', '=', vm.id).execute();
    if (s === 'missing') {
      const uri = await uriOf(vm.host_id);
      await pool.ready(uri);
      const onHost = await images.ensure(vm.host_id, uri, spec.templateId, template);
      const v = vmVolumes(vm.id);
      const have = await pool.list(uri);
      if (!have.has(v.disk))
        await pool.createAs(uri, v.disk, `${spec.diskGb}G`, 'qcow2', {
          volume: onHost.disk,
          format: 'qcow2',
        });
      // QEMU (virtlogd) appends the serial console to this file; a volume, so it is read through libvirt.
      if (!have.has(v.console)) await pool.createAs(uri, v.console, '0', 'raw');
      await seed(vm, { ...spec, sshKeys: spec.sshKeys ?? [] }, have.has(v.seed));
      await define(vm, onHost);
    }
    await startDomain(vm);
    return info(vm);
  }

  /**
   * Removes the VM's domain and volumes from one host (a reachable one). `between`, if given, is
   * awaited before each command: a pass over leftovers renews its hold there, and stops (throws)
   * once it has lost it.
   */
  async function removeFrom(hostId: string, vmId: string, between?: () => Promise<void>): Promise<void> {
    const uri = await uriOf(hostId);
    const v = vmVolumes(vmId);
    const step = async (work: () => Promise<unknown>) => {
      await between?.();
      await work();
    };
    // The seeds hold passwords in clear: gone first (a replacement left staged too).
    for (const seedVolume of [v.seed, rescueVolumes(vmId).seed]) {
      await step(() => removeVolume(uri, seedVolume));
      await step(() => removeVolume(uri, stagedSeed(seedVolume)));
    }
    await step(() =>
      virsh(uri, ['destroy', domainName(vmId)], 'Could not power the VM off').catch((err) => {
        if (!isNotRunning(err) && !isNoDomain(err)) throw err;
      }),
    );
    // A domain with checkpoints is undefined only with their metadata.
    await step(() =>
      virsh(uri, ['undefine', '--checkpoints-metadata', domainName(vmId)], 'Could not remove the VM').catch(
        (err) => {
          if (!isNoDomain(err)) throw err;
        },
      ),
    );
    await step(() => removeVolume(uri, v.disk));
    await step(() => removeVolume(uri, v.console));
    for (const staged of await volumesNamed(uri, v.restorePrefix))
      await step(() => removeVolume(uri, staged));
    // A VM in rescue: the rescue system's disk too.
    await step(() => removeVolume(uri, rescueVolumes(vmId).disk));
    await removeQemuLog(hostId, domainName(vmId));
  }

  /** The host's volumes whose names begin with `prefix` (none where the host has no pool yet). */
  async function volumesNamed(uri: string, prefix: string): Promise<string[]> {
    const all = await pool.list(uri).catch((err) => {
      if (isNoPool(err)) return new Set<string>();
      throw err;
    });
    return [...all].filter((name) => name.startsWith(prefix));
  }

  /**
   * What a copy of the VM's disk volume on `uri` writes, at most: `own`, the volume's own bytes
   * (an incremental export's at most: every write since its checkpoint is in them); `folded`, its
   * backing file's (the template's, read from the disk's volume) added, the disk's own alone if
   * it has none, the disk's size if that file is not a volume of the pool (a full export's, a
   * stopped VM's move's). Neither is more than the disk's size. Undefined: the disk has no volume.
   */
  /**
   * The VM's disk size as its host has it, in bytes: the larger of the record's and its volume's
   * capacity (a restore may have grown the disk past the record's). A copy's time is counted from it.
   */
  async function diskSizeOn(uri: string, vm: Pick<LibvirtVmTable, 'id' | 'disk_gb'>): Promise<number> {
    return Math.max(vm.disk_gb * 1024 ** 3, (await pool.info(uri, vmVolumes(vm.id).disk))?.capacity ?? 0);
  }

  async function diskCopyBytes(
    uri: string,
    vmId: string,
  ): Promise<{ own: number; folded: number } | undefined> {
    const xml = await virsh(
      uri,
      ['vol-dumpxml', '--pool', POOL, vmVolumes(vmId).disk],
      'Could not read the VM disk',
    ).then(
      (r) => r.stdout,
      (err: unknown) => {
        if (isNoVolume(err)) return undefined;
        throw err;
      },
    );
    if (xml === undefined) return undefined;
    const disk = parseVolumeXml(xml);
    const below =
      disk.backing === undefined ? { allocation: 0 } : await pool.info(uri, basename(disk.backing));
    return {
      own: Math.min(disk.capacity, disk.allocation),
      folded: Math.min(disk.capacity, disk.allocation + (below?.allocation ?? disk.capacity)),
    };
  }

  /** A VM whose disk has no volume on its host (diskCopyBytes undefined): for good, only a restore gives it one. */
  const noDisk = (vmId: string) =>
    new DriverError(`VM ${vmId} has no disk on its host`, { transient: false });

  /** vol-delete, where a host without the pool yet has no volume either. */
  async function removeVolume(uri: string, name: string): Promise<void> {
    await pool.remove(uri, name).catch((err) => {
      if (!isNoPool(err)) throw err;
    });
  }

  /**
   * Gives back everything the VM holds: the domain, its volumes, its addresses, its row and host
   * room. Nothing is given back while the host holds any of it: a host that does not answer fails
   * the removal (transient), and the VM keeps its addresses and room (they would go to another VM
   * while its domain may still run with them). Only a create giving up (`createGivingUp`: its own
   * failure for good, or its job's last attempt) of a VM whose host never answered any attempt
   * (`reached_at`, in the store: the attempt may have been another process's) takes a silent
   * host for one with nothing of the VM.
   */
  async function remove(vmId: string, createGivingUp = false): Promise<void> {
    const vm = await row(vmId);
    if (vm) {
      try {
        await removeFrom(vm.host_id, vmId);
      } catch (err) {
        // A run whose lease ran out (fence.ts) did not find the host silent: it stops, and keeps
        // the VM's records.
        const silent = err instanceof DriverError && err.transient && !(err instanceof FenceDown);
        if (!(createGivingUp && silent && vm.reached_at === null)) throw err;
      }
      // Half-way through a migration: the destination's copy and reservation go too.
      if (vm.migrating_to) await removeFrom(vm.migrating_to, vmId);
    }
    checkFence();
    await ipPool.release(vmId);
    if (vm) {
      await db.transaction().execute(async (tx) => {
        const r = await tx.deleteFrom('libvirt_vms').where('id', '=', vmId).executeTakeFirst();
        if (r.numDeletedRows > 0n) {
          await free(tx, vm.host_id, need(vm));
          if (vm.migrating_to) await free(tx, vm.migrating_to, need(vm));
        }
      });
    }
  }

  /**
   * libvirt keeps each domain's QEMU log (`<name>.log`, rotated as `<name>.log.N`) after the
   * domain is gone. It is removed where it can be seen: on this machine's system connection;
   * a remote host's logs are that host's to rotate.
   */
  async function removeQemuLog(hostId: string, name: string): Promise<void> {
    if (!isLocalSystem(await uriOf(hostId))) return;
    const logs = await readdir(QEMU_LOG_DIR).catch((): string[] => []);
    for (const f of logs) {
      if (f === `${name}.log` || f.startsWith(`${name}.log.`))
        await rm(join(QEMU_LOG_DIR, f), { force: true });
    }
  }

  /** The URIs of the driver's hosts, `first`'s first. */
  async function libvirtUris(first?: string): Promise<string[]> {
    const hosts = await db
      .selectFrom('hypervisor_hosts')
      .select(['id', 'uri'])
      .where('driver', '=', 'libvirt')
      .execute();
    hosts.sort((a, b) => Number(b.id === first) - Number(a.id === first));
    return hosts.flatMap((h) => (h.uri ? [h.uri] : []));
  }

  /** The URI of a host other than `except` whose pool holds volume `name`. */
  async function hostHolding(name: string, except: string): Promise<string | undefined> {
    const exceptUri = await uriOf(except);
    for (const uri of await libvirtUris()) {
      if (uri === exceptUri) continue;
      const found = await pool.info(uri, name).catch((err) => {
        if (isNoPool(err)) return undefined;
        throw err;
      });
      if (found) return uri;
    }
    return undefined;
  }

  const migration = createMigration();
  const disks = createDiskBackups();
  const selfService = createSelfService();

  /**
   * The customers' self-service: reinstall (a fresh disk over the template, a new seed), rescue
   * (the rescue system booted with the VM's disk as its second disk) and the consoles (serial
   * through the host's libvirt connection; VNC on a UNIX socket where this machine can reach it).
   */
  function createSelfService() {
    /** The serial console sessions running (`script` + `virsh console`), ended at close. */
    const sessions = new Set<ChildProcess>();

    /** The domain's UUID (a redefinition keeps it: libvirt refuses a name with another UUID). */
    async function uuidOf(uri: string, vmId: string): Promise<string> {
      const { stdout } = await virsh(uri, ['domuuid', domainName(vmId)], 'Could not read the VM');
      return stdout.trim();
    }

    /** Whether the domain runs the rescue system (its live XML carries the rescue mark). */
    async function inRescue(vm: LibvirtVmTable): Promise<boolean> {
      const s = await state(vm);
      if (s !== 'running' && s !== 'paused') return false;
      const { stdout } = await virsh(
        await uriOf(vm.host_id),
        ['dumpxml', domainName(vm.id)],
        'Could not read the VM',
      );
      return stdout.includes(`${VRP_NS}/rescue`);
    }

    async function reinstall(vmId: string, spec: ReinstallSpec): Promise<VmInfo> {
      const vm = await get(vmId);
      const uri = await uriOf(vm.host_id);
      await pool.ready(uri);
      const template = await resolveTemplate(db, spec.templateId);
      const onHost = await images.ensure(vm.host_id, uri, spec.templateId, template);
      const s = await state(vm);
      if (s === 'missing')
        throw new DriverError(`VM ${vmId} does not exist on its host`, { transient: false });
      // Started again at the end if it ran. A re-run after a crash past the power-off finds it
      // off and leaves it so: the reinstall job starts it, as it ran when the job began.
      const wasRunning = s === 'running' || s === 'paused';
      // Its data is being erased: off at once, no graceful shutdown.
      await powerOffDomain(vm);
      // The disk is replaced: the checkpoints' bitmaps go with it (the next backup is full).
      await disks.forgetCheckpoints(uri, domainName(vmId));
      const v = vmVolumes(vmId);
      const current = await pool.info(uri, v.disk);
      const size = Math.max(current?.capacity ?? 0, vm.disk_gb * GB);
      await pool.remove(uri, v.disk);
      await pool.createAs(uri, v.disk, String(size), 'qcow2', { volume: onHost.disk, format: 'qcow2' });
      await seed(vm, {
        hostname: spec.hostname,
        username: spec.username,
        password: spec.password,
        sshKeys: spec.sshKeys,
      });
      // Another template may boot otherwise (its own kernel, or its disk's boot loader).
      const { stdout: xml } = await virsh(
        uri,
        ['dumpxml', '--inactive', domainName(vmId)],
        'Could not read the VM',
      );
      const kernel = /<kernel>([^<]*)<\/kernel>/.exec(xml)?.[1];
      const initrd = /<initrd>([^<]*)<\/initrd>/.exec(xml)?.[1];
      const wanted = onHost.kernel;
      // Written whole again: with the VM's MAC (for a VM stored before MACs were, the one this
      // definition has). A definition kept as it is gets the VM's MAC, if it has another, at the
      // VM's next start (startDomain).
      if (
        kernel !== (wanted ? volPath(wanted.kernel) : undefined) ||
        initrd !== (wanted ? volPath(wanted.initrd) : undefined)
      ) {
        await define((await withOwnMac(vm, xml)).vm, onHost, await uuidOf(uri, vmId));
      }
      if (wasRunning) await startDomain(vm);
      return info(vm);
    }

    /** The rescue image of the VM's host, else the provider's. */
    async function rescueImageOf(hostId: string): Promise<string> {
      const host = await db
        .selectFrom('hypervisor_hosts')
        .select('rescue_image')
        .where('id', '=', hostId)
        .executeTakeFirst();
      const image = host?.rescue_image || o.rescueImage;
      if (!image)
        throw new DriverError('The provider has no rescue image; rescue is not available', {
          transient: false,
        });
      return image;
    }

    async function rescue(vmId: string, login: RescueLogin): Promise<VmInfo> {
      const vm = await get(vmId);
      const uri = await uriOf(vm.host_id);
      const image = await resolveImage(await rescueImageOf(vm.host_id), 'The rescue image');
      await pool.ready(uri);
      const onHost = await images.ensure(vm.host_id, uri, RESCUE_IMAGE_KEY, image);
      if (await inRescue(vm)) return info(vm);
      const s = await state(vm);
      if (s === 'missing')
        throw new DriverError(`VM ${vmId} does not exist on its host`, { transient: false });
      await stopDomain(vm, o.stopTimeoutMs);
      await powerOffDomain(vm);
      // The rescue system answers to the VM's own MAC, which its own definition has too.
      const own = await ownDefinition(vm, uri);
      // A fresh rescue system: a throwaway overlay over the image, a seed with the rescue login.
      const r = rescueVolumes(vmId);
      await pool.remove(uri, r.disk);
      const base = await pool.info(uri, onHost.disk);
      await pool.createAs(uri, r.disk, String(Math.max(base?.capacity ?? 0, GB)), 'qcow2', {
        volume: onHost.disk,
        format: 'qcow2',
      });
      await seed(
        vm,
        {
          hostname: `rescue-${vm.hostname}`,
          username: login.username,
          password: login.password,
          sshKeys: [],
          volume: r.seed,
        },
        true,
      );
      // The rescue system runs as the domain's live definition (`virsh create` with its name and
      // UUID): the VM's own definition stays as it is, and comes back when this one is off.
      const xml = domainXml({
        name: domainName(vmId),
        uuid: await uuidOf(uri, vmId),
        virtType: await virtTypeOf(vm.host_id),
        cpu: vm.cpu,
        ramGb: vm.ram_gb,
        disk: volPath(r.disk),
        secondDisk: volPath(vmVolumes(vmId).disk),
        seed: volPath(r.seed),
        consoleLog: volPath(vmVolumes(vmId).console),
        ...(onHost.kernel
          ? {
              kernel: {
                kernel: volPath(onHost.kernel.kernel),
                initrd: volPath(onHost.kernel.initrd),
                cmdline: onHost.kernel.cmdline,
              },
            }
          : {}),
        ...(await nicOf(own)),
        metadata: `<vrp:rescue xmlns:vrp='${VRP_NS}/rescue'/>`,
      });
      await withPrivateDir(async (dir) => {
        await writeFile(join(dir, 'rescue.xml'), xml);
        await virsh(uri, ['create', join(dir, 'rescue.xml')], 'Could not start the rescue system');
      });
      return info(vm);
    }

    async function unrescue(vmId: string, power: PowerState): Promise<VmInfo> {
      const vm = await get(vmId);
      const uri = await uriOf(vm.host_id);
      // Off, the domain is its own definition again (the rescue one was only the live one).
      if (await inRescue(vm)) await powerOffDomain(vm);
      const r = rescueVolumes(vmId);
      await removeVolume(uri, r.seed);
      await removeVolume(uri, stagedSeed(r.seed));
      await removeVolume(uri, r.disk);
      if (power === 'running') await startDomain(vm);
      else await stopDomain(vm, o.stopTimeoutMs);
      return info(vm);
    }

    /** The VNC socket of the running domain, where this process can reach it. */
    async function vncSocket(vm: LibvirtVmTable): Promise<string | undefined> {
      const uri = await uriOf(vm.host_id);
      if (!isLocalUri(uri)) return undefined;
      const { stdout } = await virsh(uri, ['dumpxml', domainName(vm.id)], 'Could not read the VM');
      const path = vncSocketOf(stdout);
      // A second daemon in a mount namespace of its own (a test host) has its sockets out of sight.
      if (
        !path ||
        !(await stat(path).then(
          (st) => st.isSocket(),
          () => false,
        ))
      )
        return undefined;
      return path;
    }

    async function consoles(vmId: string): Promise<readonly ConsoleKind[]> {
      const vm = await row(vmId);
      if (!vm || (await state(vm)) !== 'running') return [];
      return (await vncSocket(vm)) ? ['serial', 'vnc'] : ['serial'];
    }

    async function openConsole(vmId: string, kind: ConsoleKind): Promise<ConsoleStream> {
      const vm = await get(vmId);
      if ((await state(vm)) !== 'running')
        throw new DriverError('The VM is not running: it has no console now', { transient: false });
      if (kind === 'vnc') {
        const path = await vncSocket(vm);
        if (!path)
          throw new DriverError('The VM has no graphical console reachable from here', { transient: false });
        return new Promise((resolve, reject) => {
          const socket = createConnection(path);
          socket.once('connect', () => {
            socket.off('error', reject);
            resolve(socket);
          });
          socket.once('error', (err) =>
            reject(new DriverError('Could not open the graphical console', { transient: true, cause: err })),
          );
        });
      }
      return serialConsole(await uriOf(vm.host_id), domainName(vmId));
    }

    /**
     * `virsh console` needs a terminal: it runs under util-linux `script` (a pseudo-terminal),
     * in a process group of its own, whose input and output are the stream. `--force` takes the
     * console over from an earlier session. The stream is given once virsh says it is connected
     * (its banner is not part of the stream); ending or destroying it ends the group.
     */
    function serialConsole(uri: string, name: string): Promise<ConsoleStream> {
      const command = `virsh -c ${shellWord(uri)} console ${shellWord(name)} --force`;
      const child = spawn('script', ['-qfc', command, '/dev/null'], {
        detached: true,
        stdio: ['pipe', 'pipe', 'ignore'],
      });
      sessions.add(child);
      let ended = false;
      const end = () => {
        if (ended || child.exitCode !== null || child.signalCode !== null) return;
        ended = true;
        const group = (signal: NodeJS.Signals) => {
          try {
            if (child.pid) process.kill(-child.pid, signal);
          } catch {
            // Gone already.
          }
        };
        group('SIGTERM');
        setTimeout(() => group('SIGKILL'), 2000).unref();
      };
      const { stdin, stdout } = child;
      const stream = new Duplex({
        allowHalfOpen: false,
        read() {
          stdout.resume();
        },
        write(chunk: Buffer, _encoding, callback) {
          if (stdin.destroyed) return callback(new Error('The console is closed'));
          stdin.write(chunk, callback);
        },
        final(callback) {
          end();
          callback();
        },
        destroy(err, callback) {
          end();
          callback(err);
        },
      });
      stdin.on('error', () => {});
      return new Promise((resolve, reject) => {
        let banner = Buffer.alloc(0);
        let connected = false;
        const failed = (why: string, transient: boolean) => {
          clearTimeout(timer);
          end();
          reject(
            new DriverError(
              `Could not open the serial console${transient ? ' (the host did not answer)' : ''}`,
              {
                transient,
                details: { command, exitCode: child.exitCode, signal: child.signalCode, stderr: why },
              },
            ),
          );
        };
        const timer = setTimeout(
          () => failed(`no answer: ${banner.toString('utf8')}`, true),
          SERIAL_CONNECT_MS,
        );
        timer.unref();
        stdout.on('data', (chunk: Buffer) => {
          if (!connected) {
            banner = Buffer.concat([banner, chunk]);
            // "Connected to domain 'NAME'" and "Escape character is ^] (Ctrl + ])", then the guest.
            const at = banner.indexOf('Escape character is');
            const eol = at < 0 ? -1 : banner.indexOf('\n', at);
            if (eol < 0) return;
            connected = true;
            clearTimeout(timer);
            chunk = banner.subarray(eol + 1);
            resolve(stream);
            if (chunk.length === 0) return;
          }
          if (!stream.push(chunk)) stdout.pause();
        });
        stdout.on('end', () => stream.push(null));
        child.on('error', (err) => (connected ? stream.destroy(err) : failed(err.message, false)));
        child.on('close', () => {
          sessions.delete(child);
          if (!connected) failed(banner.toString('utf8').trim(), false);
          stream.push(null);
        });
      });
    }

    return {
      reinstall,
      rescue,
      unrescue,
      consoles,
      openConsole,
      close() {
        for (const child of sessions) {
          try {
            if (child.pid) process.kill(-child.pid, 'SIGKILL');
          } catch {
            // Gone already.
          }
        }
      },
    };
  }

  /**
   * Live backups with libvirt's backup API (push mode) and checkpoints (QEMU's persistent dirty
   * bitmaps in the qcow2 disk), and the import of a whole disk. The host's QEMU writes the
   * backup into a qcow2 volume of the host's pool; it is downloaded through the connection
   * (vol-download) into a private file of this machine, removed from the host at once, and
   * read here with `qemu-img map`.
   */
  function createDiskBackups() {
    const exportVolume = (backupId: string) => `export-${backupId}.qcow2`;
    const guest = createGuestFreeze({ virsh, onThawFailed: o.onGuestThawFailed });

    async function checkpoints(uri: string, name: string): Promise<Set<string>> {
      const { stdout } = await virsh(
        uri,
        ['checkpoint-list', '--name', name],
        'Could not list the checkpoints',
      );
      return new Set(
        stdout
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean),
      );
    }

    /** checkpoint-delete (the bitmap too: the domain must be active); a missing one is gone. */
    async function deleteCheckpoint(uri: string, name: string, checkpoint: string, metadataOnly = false) {
      await virsh(
        uri,
        ['checkpoint-delete', name, checkpoint, ...(metadataOnly ? ['--metadata'] : [])],
        'Could not delete a checkpoint',
      ).catch((err) => {
        if (!/checkpoint not found|no domain checkpoint with matching/i.test(stderrOf(err))) throw err;
      });
    }

    /**
     * Runs `use` with a stopped VM's domain active but paused (`start --paused`: its vCPUs never
     * run, the guest stays off), which the backup API and checkpoint deletion need; powered off
     * again after, whatever happens. Marked with live metadata, so a re-run after a crash knows
     * the pause was ours.
     */
    async function held<T>(vm: LibvirtVmTable, use: () => Promise<T>): Promise<T> {
      const uri = await uriOf(vm.host_id);
      const name = domainName(vm.id);
      await virsh(uri, ['start', '--paused', name], 'Could not prepare the stopped VM for the backup');
      try {
        await virsh(
          uri,
          ['metadata', name, '--uri', HELD_URI, '--key', 'vrp', '--set', '<held/>', '--live'],
          'Could not prepare the stopped VM for the backup',
        );
        return await use();
      } finally {
        await powerOffDomain(vm);
      }
    }

    /** A dead attempt's backup job on the domain is aborted (none: nothing to do). */
    async function abortBackupJob(uri: string, name: string) {
      const { stdout } = await virsh(uri, ['domjobinfo', '--rawstats', name], 'Could not read the VM jobs');
      if (!backupJob(stdout)) return;
      await virsh(uri, ['domjobabort', name], 'Could not abort an earlier backup').catch((err) => {
        if (!/no job is active/i.test(stderrOf(err))) throw err;
      });
      await waitBackupJob(uri, name, false);
    }

    /**
     * Waits for the domain's backup job to end; with `check`, fails unless it completed. It has
     * the time of `bytes` (the disk's size) at the copies' pace, and is given up (transient)
     * sooner if it moves no data for the pace's stall window (CopyLimit, commands.ts); a job
     * given up is aborted by the export's caller (abortBackupJob) or the next attempt.
     */
    async function waitBackupJob(uri: string, name: string, check: boolean, bytes = 0) {
      const until = performance.now() + copyTimeMs(bytes, pace);
      let processed: number | undefined;
      let stalled = false;
      const unwatch = watchProgress(
        async () => processed,
        pace.stallMs,
        () => {
          stalled = true;
        },
      );
      try {
        for (;;) {
          const { stdout } = await virsh(
            uri,
            ['domjobinfo', '--rawstats', name],
            'Could not read the backup job',
          );
          if (!backupJob(stdout)) break;
          processed = jobBytesProcessed(stdout) ?? processed;
          if (stalled)
            throw new DriverError(`The backup moved no data for ${spellMs(pace.stallMs)}`, {
              transient: true,
            });
          if (performance.now() > until)
            throw new DriverError('The backup did not end in time', { transient: true });
          await sleep(200);
        }
      } finally {
        unwatch();
      }
      if (!check) return;
      const { stdout } = await virsh(
        uri,
        ['domjobinfo', '--completed', name],
        'Could not read the backup job',
      );
      if (/^Job type:\s+(Failed|Cancelled)/m.test(stdout))
        throw new DriverError('The backup failed on the host', {
          transient: true,
          details: {
            command: `virsh domjobinfo --completed ${name}`,
            exitCode: 0,
            signal: null,
            stderr: stdout,
          },
        });
    }

    async function exportDisk(vmId: string, backupId: string, since: string | null): Promise<DiskExport> {
      checkName(backupId);
      if (since !== null) checkName(since);
      const vm = await get(vmId);
      const uri = await uriOf(vm.host_id);
      const poolPath = await pool.ready(uri);
      const name = domainName(vmId);
      const target = exportVolume(backupId);
      let s = await state(vm);
      if (s === 'missing')
        throw new DriverError(`VM ${vmId} does not exist on its host`, { transient: false });
      // A stopped VM's domain left paused by an attempt that died: off again first.
      if (s === 'paused' && (await heldPaused(uri, name))) {
        await powerOffDomain(vm);
        s = 'stopped';
      }
      // What a dead attempt left that takes room goes before the room is read: its backup job
      // (an active domain's) and its target volume. (Its checkpoint goes in take(): libvirt
      // deletes one only from an active domain.) A stopped VM's pool is read before its domain
      // is held paused: no wait for the pool while it is.
      if (s !== 'stopped') await abortBackupJob(uri, name);
      await pool.refresh(uri);
      await pool.remove(uri, target);
      // Incremental where the checkpoint it is relative to is there (libvirt lists an inactive
      // domain's checkpoints too).
      const kind: 'full' | 'incremental' =
        since !== null && (await checkpoints(uri, name)).has(since) ? 'incremental' : 'full';
      const hold = await holdExportRoom(vm, uri, kind);
      // The backup job's and the export map's time.
      const diskSize = await diskSizeOn(uri, vm);
      let dir: string;
      try {
        // A server whose power changed while the hold waited is exported by the next attempt,
        // as it is then.
        if (hold.waited && (await state(vm)) !== s)
          throw new DriverError("The server's power state changed while its backup waited for room", {
            transient: true,
          });
        dir = await makePrivateDir();
      } catch (err) {
        await hold.release();
        throw err;
      }
      const file = join(dir, 'export.qcow2');
      let checkpointed = false;
      const take = async () => {
        // A dead attempt's checkpoint of this backup goes first.
        await deleteCheckpoint(uri, name, backupId);
        await writeFile(
          join(dir, 'backup.xml'),
          backupXml(join(poolPath, target), kind === 'full' ? null : since),
        );
        await writeFile(join(dir, 'checkpoint.xml'), checkpointXml(backupId));
        let begun = false;
        const begin = async () => {
          try {
            await virsh(
              uri,
              ['backup-begin', name, join(dir, 'backup.xml'), join(dir, 'checkpoint.xml')],
              'Could not start the backup',
            );
            checkpointed = true;
          } catch (err) {
            // A qcow2 v2 disk (made before v3 was asked for) cannot hold a bitmap: a full backup
            // without a checkpoint, so the next one is full again.
            if (!/Cannot store dirty bitmaps in qcow2 v2/i.test(stderrOf(err))) throw err;
            await virsh(uri, ['backup-begin', name, join(dir, 'backup.xml')], 'Could not start the backup');
          }
          begun = true;
        };
        try {
          // A running guest frozen for the instant of the backup's point (guest-freeze.ts).
          if (s === 'running') await guest.frozenDuring(uri, name, begin);
          else await begin();
        } catch (err) {
          // A thaw the agent never confirmed after the backup began: the export fails, its job with it.
          if (begun) await abortBackupJob(uri, name).catch(() => {});
          throw err;
        }
        // One that stalled or outlasted its time is aborted here (else by the next attempt).
        await waitBackupJob(uri, name, true, diskSize).catch(async (err: unknown) => {
          await abortBackupJob(uri, name).catch(() => {});
          throw err;
        });
      };
      try {
        if (s === 'stopped') await held(vm, take);
        else await take();
        await pool.refresh(uri);
        // The export holds the disk's bytes at most: its size's time, without reading the volume again.
        await pool.download(uri, target, file, { bytes: diskSize });
        await pool.remove(uri, target);
        await hold.poolCopyGone();
        const image = JSON.stringify({
          driver: 'qcow2',
          backing: null,
          file: { driver: 'file', filename: file },
        });
        const { stdout } = await commands.run(
          'qemu-img',
          ['map', '--output=json', `json:${image}`],
          'Could not read the backup',
          // A large disk's map reads every one of its tables: its size's time (CopyLimit).
          { bytes: diskSize },
        );
        const extents = parseMap(stdout);
        const last = extents.at(-1);
        const diskBytes = last ? last.start + last.length : 0;
        const plan = planRuns(extents, kind);
        let committed = false;
        let closed = false;
        return {
          diskBytes,
          kind,
          since: kind === 'incremental' ? since : null,
          runs: readRuns(file, plan),
          async commit() {
            committed = true;
          },
          async close() {
            if (closed) return;
            closed = true;
            try {
              if (!committed && checkpointed) await dropCheckpoint(vmId, backupId);
            } finally {
              await removePrivateDir(dir);
              await pool.remove(uri, target).catch(() => {});
              await hold.release();
            }
          },
        };
      } catch (err) {
        const failure = await privateDirFailure(dir, err);
        await removePrivateDir(dir);
        await pool.remove(uri, target).catch(() => {});
        await hold.release();
        if (checkpointed) await dropCheckpoint(vmId, backupId).catch(() => {});
        throw failure;
      }
    }

    /**
     * Refuses an export, before anything is written, where its copies cannot fit, and holds their
     * room until they are gone (room-claims.ts): the export's volume in the host's pool until it
     * is read here (poolCopyGone), its file in this machine's temporary directory until the
     * export is closed (release). Each is at most the disk's own bytes for an incremental export,
     * the disk folded for a full one (diskCopyBytes), measured again at each look (a running
     * guest writes while the export waits).
     */
    async function holdExportRoom(vm: LibvirtVmTable, uri: string, kind: 'full' | 'incremental') {
      const onPool = await pool.place(vm.host_id, uri);
      const here = await localPlace();
      let waited = false;
      const release = await holdRoom(
        db,
        async () => {
          const bytes = await diskCopyBytes(uri, vm.id);
          if (!bytes) throw noDisk(vm.id);
          const need = kind === 'full' ? bytes.folded : bytes.own;
          return [
            {
              place: onPool,
              where: `Host ${vm.host_id}'s storage pool (a backup is written there first, then read out)`,
              need,
              room: () => pool.room(uri),
            },
            { place: here, where: LOCAL_ROOM, need, room: localRoom },
          ];
        },
        {
          onWait: () => {
            waited = true;
          },
        },
      );
      return {
        waited,
        release: () => release(),
        // A pool on this machine's temporary directory's disk is one claim with the file here.
        poolCopyGone: () => (onPool === here ? Promise.resolve() : release([onPool])),
      };
    }

    async function dropCheckpoint(vmId: string, backupId: string): Promise<void> {
      const vm = await row(vmId);
      if (!vm) return;
      const uri = await uriOf(vm.host_id);
      const name = domainName(vmId);
      const s = await state(vm);
      if (s === 'missing' || !(await checkpoints(uri, name)).has(backupId)) return;
      // libvirt removes a checkpoint's bitmap only from an active domain.
      if (s === 'stopped') await held(vm, () => deleteCheckpoint(uri, name, backupId));
      else await deleteCheckpoint(uri, name, backupId);
    }

    async function abandonExport(vmId: string, backupId: string): Promise<void> {
      checkName(backupId);
      const vm = await row(vmId);
      if (!vm) return;
      const uri = await uriOf(vm.host_id);
      const name = domainName(vmId);
      const s = await state(vm);
      if (s === 'missing') return;
      if (s === 'running' || s === 'paused') await abortBackupJob(uri, name);
      if (s === 'running' && (await guest.thawIfFrozen(uri, name))) o.onGuestThawed?.(name, backupId);
      if (s === 'paused' && (await heldPaused(uri, name))) await powerOffDomain(vm);
      // QEMU made the export's file: libvirt knows it as a volume once the pool is read again
      // (an attempt may have died before it did). Waits 5 minutes at most for another VM's copy
      // (the job gives up past that, with a warning).
      await pool.refresh(uri, 5 * 60_000);
      await removeVolume(uri, exportVolume(backupId));
      await dropCheckpoint(vmId, backupId);
    }

    /** Every checkpoint of the domain forgotten (its disk is replaced: their bitmaps go with it). */
    async function forgetCheckpoints(uri: string, name: string) {
      for (const c of await checkpoints(uri, name)) await deleteCheckpoint(uri, name, c, true);
    }

    async function importDisk(
      vmId: string,
      diskBytes: number,
      runs: AsyncIterable<DiskRun>,
      dataBytes = diskBytes,
      step?: StepMarker,
    ): Promise<void> {
      const vm = await get(vmId);
      const uri = await uriOf(vm.host_id);
      await pool.ready(uri);
      const disk = vmVolumes(vmId).disk;
      const current = await pool.info(uri, disk);
      const size = Math.max(diskBytes, current?.capacity ?? 0, vm.disk_gb * GB);
      const data = Math.min(dataBytes, size);
      // Images earlier attempts left on the host go first (theirs died, or was given up), before
      // the pool's room is read. An attempt still going after its lease was lost then finds its
      // image gone before it touches the disk (replaceDisk), or, past that, is followed by this
      // one's copy. Best effort: one libvirt still copies from (a copy whose virsh was ended) is
      // left for later.
      const prefix = vmVolumes(vmId).restorePrefix;
      for (const left of await volumesNamed(uri, prefix)) await pool.remove(uri, left).catch(() => {});
      // Refused before anything is written where the copies cannot fit, their room held until
      // they are gone (room-claims.ts; restoreWants).
      const release = await holdRoom(
        db,
        restoreWants({
          here: await localPlace(),
          onPool: await pool.place(vm.host_id, uri),
          hostId: vm.host_id,
          data,
          oldDisk: current?.allocation ?? 0,
          poolRoom: () => pool.room(uri),
        }),
      );
      try {
        const staged = await stageImage(vm, uri, size, runs);
        try {
          // uploadNew read the pool again: a qcow2 of the disk's size, not a raw volume.
          await replaceDisk(vm, uri, staged, undefined, step);
        } finally {
          // Whatever happened: the restore is done, or fails for its own reason. One left (the
          // host did not answer) goes with the next restore or the VM's removal.
          await pool.remove(uri, staged).catch(() => {});
        }
      } finally {
        await release();
      }
    }

    /**
     * importDisk's image: the runs made a qcow2 here (in a private directory, gone before the
     * disk is touched), uploaded beside the VM's disk; its volume's name.
     */
    async function stageImage(
      vm: LibvirtVmTable,
      uri: string,
      size: number,
      runs: AsyncIterable<DiskRun>,
    ): Promise<string> {
      return withPrivateDir(async (dir) => {
        // Every run lands in a local sparse file first: nothing on the host changes before the last.
        const raw = join(dir, 'disk.raw');
        const fh = await open(raw, 'w', 0o600);
        try {
          await fh.truncate(size);
          const zeros = Buffer.alloc(DISK_RUN_MAX);
          let end = 0;
          for await (const r of runs) {
            if (r.offset < end || r.offset + r.data.length > size || r.data.length > DISK_RUN_MAX)
              throw new DriverError('The disk image to restore is not valid', { transient: false });
            end = r.offset + r.data.length;
            if (r.data.equals(zeros.subarray(0, r.data.length))) continue;
            await fh.write(r.data, 0, r.data.length, r.offset);
          }
        } finally {
          await fh.close();
        }
        const qcow2 = join(dir, 'disk.qcow2');
        await commands.run(
          'qemu-img',
          ['convert', '-f', 'raw', '-O', 'qcow2', '-o', 'compat=1.1', raw, qcow2],
          'Could not prepare the disk',
          { bytes: size },
        );
        await rm(raw, { force: true });
        // The image reaches the host beside the disk, with the VM still as it was: an upload
        // that fails leaves its disk untouched (the staged copy is removed).
        const staged = `${vmVolumes(vm.id).restorePrefix}${randomUUID().slice(0, 8)}.qcow2`;
        await pool.uploadNew(uri, staged, qcow2);
        return staged;
      });
    }

    /**
     * The VM's disk replaced by a copy of `from`, a qcow2 volume on its host (then grown to
     * `sizeGb`, if given), `step` recorded (DISK_RESTORED), and the VM started again if it ran.
     * Only that copy, on the host itself, stands between the disk's removal and its replacement.
     * A failure before the disk's removal starts the VM again if it ran (its disk is its own
     * still). (A re-run after a failure past the removal finds the VM off: the restore job starts
     * it, as it ran when it began.)
     */
    async function replaceDisk(
      vm: LibvirtVmTable,
      uri: string,
      from: string,
      sizeGb?: number,
      step?: StepMarker,
    ) {
      // The image must be there before anything of the VM changes, and still be just before the
      // disk goes: another attempt of the restore that began since removed it (that attempt
      // copies its own afterwards).
      const stillThere = async () => {
        if (!(await pool.info(uri, from)))
          throw new DriverError('The image to restore left the host before it was copied', {
            transient: true,
          });
      };
      await stillThere();
      // Known as a qcow2 (storage.ts, cloneFlat) before the VM is touched: a refusal or a wait
      // for the pool then leaves the VM as it was, not without a disk.
      await pool.checkQcow2(uri, from);
      const s = await state(vm);
      const wasRunning = s === 'running' || s === 'paused';
      await powerOffDomain(vm);
      const disk = vmVolumes(vm.id).disk;
      try {
        // The disk is replaced: the checkpoints' bitmaps go with the old one (the next backup is full).
        await forgetCheckpoints(uri, domainName(vm.id));
        await stillThere();
        await pool.remove(uri, disk);
      } catch (err) {
        // The old disk is still the VM's: it runs on it, as it did, whatever the job does next.
        // (Its checkpoints may be forgotten by now: its next backup is full, and the bitmaps left
        // in the disk track nothing that is read.) A start that fails (the disk was removed after
        // all) leaves it off for the re-run.
        if (wasRunning) await startDomain(vm).catch(() => {});
        throw err;
      }
      try {
        await pool.cloneFlat(uri, from, disk);
        if (sizeGb !== undefined)
          await virsh(
            uri,
            ['vol-resize', '--pool', POOL, disk, `${sizeGb}G`],
            'Could not restore the backup',
          );
      } catch (err) {
        // The VM has no disk now: only another attempt repairs that, so it is always tried again.
        throw new DriverError(
          `The disk was removed and its replacement could not be copied (${messageOf(err)}): the server has no disk until a restore succeeds (this one is tried again while it has attempts left)`,
          { transient: true, cause: err, details: err instanceof DriverError ? err.details : undefined },
        );
      }
      // From here a re-run of the job does not restore again (what the server writes stays).
      await step?.record(DISK_RESTORED);
      if (wasRunning) await startDomain(vm);
    }

    return { exportDisk, importDisk, replaceDisk, dropCheckpoint, abandonExport, forgetCheckpoints };
  }

  /**
   * Migration between hosts that share no storage. The destination's room is reserved first
   * (with `migrating_to`, in one transaction); the template and the seed reach the destination
   * as volumes; a running VM moves live with its disk copied along (`--copy-storage-all`), a
   * stopped one is copied (its disk folded into a standalone qcow2) and defined there. The end
   * (the VM's host, the source's room) is one transaction, then the source's volumes go.
   */
  function createMigration() {
    /**
     * The domain's migration job on `uri` aborted (`domjobabort`, QEMU's migrate_cancel: the
     * guest runs on where it was), and waited for to end, a minute at most; nothing to abort,
     * or a host that does not answer, is left as it is.
     */
    async function abortMigrationJob(uri: string, name: string) {
      await virsh(uri, ['domjobabort', name], 'Could not abort the migration').catch(() => {});
      const until = performance.now() + 60_000;
      while (performance.now() < until) {
        const { stdout } = await virsh(
          uri,
          ['domjobinfo', '--rawstats', name],
          'Could not read the VM jobs',
        ).catch(() => ({ stdout: '' }));
        if (!stdout || noJob(stdout)) return;
        await sleep(200);
      }
    }

    /**
     * The template upload a domain uses on its host: the one its next-boot definition names (its
     * kernel), else its disk's backing file.
     */
    async function templateOf(vm: LibvirtVmTable, uri: string, xml: string) {
      let prefix = uploadsNamedIn(xml)[0];
      if (!prefix) {
        const { stdout } = await virsh(
          uri,
          ['vol-dumpxml', '--pool', POOL, vmVolumes(vm.id).disk],
          'Could not read the VM disk',
        );
        prefix = uploadsNamedIn(stdout)[0];
      }
      if (!prefix) return undefined;
      return db
        .selectFrom('host_images')
        .selectAll()
        .where('host_id', '=', vm.host_id)
        .where('volume', '=', `${prefix}.qcow2`)
        .executeTakeFirst();
    }

    /** The paths of the source's template volumes replaced by the destination's. */
    function retarget(xml: string, from: string | undefined, to: HostTemplate | undefined): string {
      if (!from || !to) return xml;
      const fromPrefix = uploadOf(from);
      const toPrefix = uploadOf(to.disk);
      return xml.split(volPath(fromPrefix)).join(volPath(toPrefix));
    }

    /**
     * Refuses a stopped VM's move, before its disk is copied, where the copies cannot fit: folded
     * into one file in the source's pool, passed through this machine's temporary directory,
     * written into the destination's pool (its template there already: counted in what is free).
     * Their size is at most the disk folded (`need`: diskCopyBytes, read by move). The room is held for the
     * move until its copies end (the release it resolves to; room-claims.ts): another copy to one
     * of those places counts it as taken, and waits for it where the rest is too little. A
     * refusal undoes the migration (its caller), for good.
     */
    async function checkColdRoom(
      vm: LibvirtVmTable,
      to: string,
      srcUri: string,
      dstUri: string,
      need: number,
    ): Promise<() => Promise<void>> {
      try {
        return await holdRoom(db, [
          {
            place: await pool.place(vm.host_id, srcUri),
            where: `Host ${vm.host_id}'s storage pool (a stopped VM's move folds its disk into one file there first; a running one moves without)`,
            need,
            room: () => pool.room(srcUri),
          },
          { place: await localPlace(), where: LOCAL_ROOM, need, room: localRoom },
          {
            place: await pool.place(to, dstUri),
            where: `Host ${to}'s storage pool`,
            need,
            room: () => pool.room(dstUri),
          },
        ]);
      } catch (err) {
        throw undoneIfFinal(err);
      }
    }

    /**
     * Moves the VM's domain and volumes from its host to `to`; a live move's figures: `virsh
     * migrate`'s time and the guest's pause, read from the destination's completed job.
     */
    async function move(
      vm: LibvirtVmTable,
      to: string,
      live: boolean,
    ): Promise<{ migrate_ms?: number; downtime_ms?: number }> {
      const srcUri = await uriOf(vm.host_id);
      const dstUri = await uriOf(to);
      const name = domainName(vm.id);
      const v = vmVolumes(vm.id);
      await pool.ready(srcUri);
      await pool.ready(dstUri);
      const inactive = (
        await virsh(srcUri, ['dumpxml', '--inactive', '--migratable', name], 'Could not read the VM')
      ).stdout;
      // A stopped VM's disk, read before its template is read from it or copied to the
      // destination: what its copies will take (checkColdRoom). None (deleted with `virsh
      // vol-delete`, or by a restore that could not copy its image): nothing to move, for good,
      // and the migration undone (the caller); a restore, not a move, gives it a disk again.
      let coldNeed = 0;
      if (!live) {
        const bytes = await diskCopyBytes(srcUri, vm.id);
        if (!bytes) throw migrationUndone(noDisk(vm.id));
        coldNeed = bytes.folded;
      }
      const used = await templateOf(vm, srcUri, inactive);
      let onDest: HostTemplate | undefined;
      if (used) {
        const template = await resolveTemplate(db, used.template_id);
        // A refusal (no room for the template there) undoes the migration (its caller), for good.
        onDest = await images.ensure(to, dstUri, used.template_id, template).catch((err: unknown) => {
          throw undoneIfFinal(err);
        });
      }
      // Leftovers of an earlier attempt on the destination go first, and its copy of the disk on
      // the source (a stopped VM's): the room they hold is counted free.
      for (const n of [v.disk, v.seed, stagedSeed(v.seed), v.console]) await pool.remove(dstUri, n);
      const flat = `${vm.id}.migrating.qcow2`;
      let release = async () => {};
      if (!live) {
        await pool.remove(srcUri, flat);
        release = await checkColdRoom(vm, to, srcUri, dstUri, coldNeed);
      }
      try {
        await pool.copyBetween(srcUri, v.seed, dstUri);
        await pool.copyBetween(srcUri, v.console, dstUri);
        if (live) {
          const active = (await virsh(srcUri, ['dumpxml', '--migratable', name], 'Could not read the VM'))
            .stdout;
          const diskBytes = await diskSizeOn(srcUri, vm);
          const started = performance.now();
          await withPrivateDir(async (dir) => {
            await writeFile(join(dir, 'live.xml'), retarget(active, used?.volume, onDest));
            await writeFile(join(dir, 'persistent.xml'), retarget(inactive, used?.volume, onDest));
            await virsh(
              srcUri,
              [
                'migrate',
                '--live',
                '--persistent',
                '--undefinesource',
                '--copy-storage-all',
                // A guest that writes its memory faster than the link carries it is slowed
                // (QEMU throttles its vCPUs, more each round) until the move can end, rather
                // than sent again and again for the move's whole time.
                '--auto-converge',
                ...migrationAddressArgs(dstUri),
                '--xml',
                join(dir, 'live.xml'),
                '--persistent-xml',
                join(dir, 'persistent.xml'),
                name,
                dstUri,
              ],
              'Could not migrate the VM',
              {
                // Its disk, and its memory about twice (pages the guest writes again are sent again).
                bytes: diskBytes + 2 * vm.ram_gb * 1024 ** 3,
                // QEMU moves the bytes, host to host: what the source's migration job has sent.
                progress: () =>
                  virsh(srcUri, ['domjobinfo', '--rawstats', name], 'Could not read the migration').then(
                    (r) => jobBytesProcessed(r.stdout),
                    () => undefined,
                  ),
              },
            ).catch(async (err: unknown) => {
              // Ended here (it stalled or ran out of time): the source's migration job may go on
              // after the command that drove it is gone, until the destination notices the closed
              // connection or the link gives up. Aborted, so that the undo and the next attempt
              // find the domain free (not "cannot acquire state change lock" for minutes). (A
              // driver that is closing runs no more commands: the next run's look settles it.)
              if (err instanceof DriverError && err.details?.signal) await abortMigrationJob(srcUri, name);
              throw err;
            });
          });
          const migrateMs = Math.round(performance.now() - started);
          // The figures are a report: a destination that cannot give them does not fail the move.
          const job = await virsh(dstUri, ['domjobinfo', '--completed', name], 'Could not read the migration')
            .then((r) => parseJobInfo(r.stdout))
            .catch(() => ({ downtime_ms: undefined }));
          return {
            migrate_ms: migrateMs,
            ...(job.downtime_ms !== undefined ? { downtime_ms: job.downtime_ms } : {}),
          };
        } else {
          // The disk folded into a standalone qcow2 on the source, copied, defined on the destination.
          await pool.cloneFlat(srcUri, v.disk, flat);
          try {
            await pool.copyBetween(srcUri, flat, dstUri, v.disk);
          } finally {
            await pool.remove(srcUri, flat);
          }
          // The template copy the definition names (a kernel and initrd) is looked at again: a
          // disk's copies take as long as its size needs, which may outlast the template sweep's
          // grace, and a copy whose template image was replaced meanwhile may be gone
          // (template-sweep.ts). This attempt then fails; the next copies the template again.
          for (const part of onDest?.kernel ? [onDest.kernel.kernel, onDest.kernel.initrd] : [])
            if (!(await pool.info(dstUri, part)))
              throw new DriverError(
                `The template's copy on host ${to} was removed while the disk was copied`,
                { transient: true },
              );
          const type = await virtTypeOf(to);
          await defineXml(
            dstUri,
            retarget(inactive, used?.volume, onDest).replace(
              /<domain type=(['"])\w+\1/,
              `<domain type='${type}'`,
            ),
          );
          await virsh(
            srcUri,
            ['undefine', '--checkpoints-metadata', name],
            'Could not remove the VM from its old host',
          ).catch((err) => {
            if (!isNoDomain(err)) throw err;
          });
          return {};
        }
      } finally {
        await release();
      }
    }

    /**
     * The VM is on the destination: the store says so, in one transaction; the source is cleaned.
     * False where another run ended the move first (undone or finished): nothing done.
     */
    async function finish(vm: LibvirtVmTable, to: string): Promise<boolean> {
      const switched = await db.transaction().execute(async (tx) => {
        const r = await tx
          .updateTable('libvirt_vms')
          .set({ host_id: to, migrating_to: null })
          .where('id', '=', vm.id)
          .where('migrating_to', '=', to)
          .executeTakeFirst();
        if (r.numUpdatedRows === 0n) return false;
        await free(tx, vm.host_id, need(vm));
        await leftovers.record(tx, vm.host_id, vm.id);
        return true;
      });
      // Ended by another run meanwhile (it undid the move, or finished it): nothing of this one's.
      if (!switched) return false;
      // The move is done whatever happens next: an old copy that cannot be removed now stays
      // recorded, and the reconciler's passes over its host remove it.
      await leftovers.remove(vm.host_id, vm.id);
      return true;
    }

    /**
     * The migration did not happen: the destination's leftovers go where it answers (with
     * `clear`; not when nothing of this migration reached it), its reservation is given back, and
     * the VM runs on the source again if it ran.
     */
    async function undo(vm: LibvirtVmTable, to: string, wasRunning: boolean, clear = true): Promise<void> {
      // Not by a run whose lease ran out (fence.ts): the job's next run may be moving the VM.
      checkFence();
      // The destination does not answer: what it holds of the VM is recorded, to go later.
      const left = clear ? await removeFrom(to, vm.id).then(() => undefined, messageOf) : undefined;
      checkFence();
      await db.transaction().execute(async (tx) => {
        const r = await tx
          .updateTable('libvirt_vms')
          .set({ migrating_to: null })
          .where('id', '=', vm.id)
          .where('migrating_to', '=', to)
          .executeTakeFirst();
        if (r.numUpdatedRows > 0n) {
          await free(tx, to, need(vm));
          if (left !== undefined) await leftovers.record(tx, to, vm.id);
        }
      });
      if (left !== undefined) o.onLeftover?.({ vmId: vm.id, hostId: to, error: left });
      const back = { ...vm, migrating_to: null };
      const s = await state(back);
      // Running here again (and marked to start with its host again: the move took the mark off).
      if (s === 'paused' || (wasRunning && s !== 'missing')) await startDomain(back);
    }

    /**
     * Where a migration under way to `to` stands, looked at on both hosts (a re-run after a crash
     * finds what the earlier attempt did): `moved` once it switched over (then recorded, finish),
     * else the VM's state on each. An old copy recorded on the destination goes first: the look
     * would take its domain for this migration's. One that cannot go (its host does not answer, a
     * pass is removing it, it runs) ends it with the reservation given back and nothing else
     * touched: no move reached that host since that copy was recorded.
     */
    async function look(vm: LibvirtVmTable, to: string) {
      try {
        await leftovers.clearFor(to, vm.id);
      } catch (err) {
        await undo(vm, to, false, false);
        throw err;
      }
      const src = await state(vm);
      const dst = await state(vm, to).catch((err: unknown) => {
        if (err instanceof DriverError && err.transient) return 'unreachable' as const;
        throw err;
      });
      // Running there, or defined there and gone from here: done but the source's clean-up.
      // Stopped there with its disk there, and here either
      // - stopped: a cold move defines the domain there after its disk was copied;
      // - or paused for the move (`paused (migrating)`): libvirt makes a live move's domain
      //   persistent on the destination only in the move's Finish step, once the disk's copy has
      //   ended and the source is paused for the switch-over (qemuMigrationDstFinish: persist,
      //   then resume), and leaves the source paused when its client is lost before the Confirm
      //   step. The guest then ran there and stopped (its newest writes are on that disk): moved,
      //   and started there (a boot: its memory is gone), as it ran. Unless Finish failed there
      //   before it resumed the guest (`shut off (failed)`): the guest never ran there, and the
      //   source, paused with its memory, is resumed instead (migrate and undo resume it). (A
      //   restart of that host's libvirtd forgets the reason, `shut off (unknown)`: the guest is
      //   then booted there, from a disk the same as the source's.)
      // Likewise paused there and defined there (paused since Finish resumed it): it ran there.
      // A domain stopped there without its disk (defined by anything else, or its disk deleted
      // since) is no copy of the VM: the source's disk is the VM's, not to be deleted by a
      // finish, and the stale domain goes before the move (migrate). The pool is made ready
      // first: a host never prepared (its domain defined there by hand) has none yet.
      const diskThere = async () => {
        const uri = await uriOf(to);
        await pool.ready(uri);
        return (await pool.info(uri, vmVolumes(vm.id).disk)) !== undefined;
      };
      const pausedForMove = src === 'paused' && (await stateReason(vm)) === 'migrating';
      // Paused there and defined there: libvirt defines an incoming domain (paused until then)
      // only in Finish, which then resumes the guest; one paused since (an I/O error, by hand)
      // ran it after the switch-over. Left as it is (resuming an I/O error pauses it again). An
      // incoming domain that never finished is not defined (`Persistent: no`).
      const pausedThere = pausedForMove && dst === 'paused' && (await definedOn(vm, to));
      const switchedThenStopped =
        pausedForMove && dst === 'stopped' && (await stateReason(vm, to)) !== 'failed' && (await diskThere());
      const stoppedThere =
        switchedThenStopped || (dst === 'stopped' && src === 'stopped' && (await diskThere()));
      if (
        dst === 'running' ||
        (src === 'missing' && (dst === 'stopped' || dst === 'paused')) ||
        stoppedThere ||
        pausedThere
      ) {
        const recorded = await finish(vm, to);
        if (recorded && switchedThenStopped) await startDomain({ ...vm, host_id: to, migrating_to: null });
        return { moved: true } as const;
      }
      // Gone from here and the destination silent: it may run there (moved, its end not yet
      // recorded); only the destination can say.
      if (src === 'missing' && dst === 'unreachable')
        throw new DriverError(
          `VM ${vm.id} is not on its host, and the host it was moving to does not answer: its move is settled once that host answers`,
          { transient: true },
        );
      if (src === 'missing') throw new DriverError(`VM ${vm.id} is on neither host`, { transient: false });
      return { moved: false, src, dst, pausedForMove } as const;
    }

    /**
     * Paused here with the destination silent: libvirt pauses the source for the switch-over and
     * may have resumed the guest there (an attempt that died before the source was told). Undoing
     * would resume it here too, two copies writing; so nothing is undone until the destination
     * answers (the reservation and the mark stay for the next run, or the job's give-up).
     */
    function mayHaveSwitched(where: { src: DomainState; dst: DomainState | 'unreachable' }): boolean {
      return where.src === 'paused' && where.dst === 'unreachable';
    }

    const switchedOutOfSight = (vm: LibvirtVmTable, cause?: unknown) =>
      new DriverError(
        `VM ${vm.id} is paused on its host and the host it was moving to does not answer: its move may have switched over there, so it is left as it is until that host answers`,
        { transient: true, cause },
      );

    /**
     * After a move that failed: what the hosts say decides, not the error (a `virsh migrate` whose
     * connection dropped after the switch-over fails, while the VM runs on the destination).
     * Returns if the move happened after all (then recorded: finish). Undoes it and throws `err`
     * where the VM is still here; throws without undoing where the switch-over may have happened
     * out of sight (mayHaveSwitched) or the hosts cannot be read now (the next run, or the job's
     * give-up, settles it).
     */
    async function afterFailedMove(
      vm: LibvirtVmTable,
      to: string,
      live: boolean,
      err: unknown,
    ): Promise<void> {
      const now = await look(vm, to).catch(() => undefined);
      if (now?.moved) return;
      // Not undone: a failure for good would say it was (migrationUndone); the next attempt, or
      // the job's give-up, looks again.
      if (now === undefined)
        throw err instanceof DriverError && !err.transient
          ? new DriverError(
              `${err.message} (the hosts could not be read after it: the move is settled by the next attempt)`,
              { transient: true, cause: err, details: err.details },
            )
          : err;
      if (mayHaveSwitched(now)) throw switchedOutOfSight(vm, err);
      await undo(vm, to, live);
      throw err;
    }

    /**
     * A reservation found made (a re-run, or one an earlier job left) is checked again by the rule
     * that made it (reserveDestination: given back and taken again, in one transaction that a
     * refusal rolls back): throws the rule's reason. False when another host is asked for than
     * the one reserved: that move is to be undone and made anew.
     */
    async function stillTakes(vm: LibvirtVmTable, to: string, toHostId: string | null): Promise<boolean> {
      if (toHostId !== null && toHostId !== to) return false;
      await db.transaction().execute((tx) => retakeDestination(tx, need(vm), 'libvirt', vm.host_id, to, to));
      return true;
    }

    /** A migration its job ended without (abandonMigration): recorded if it switched over, else undone. */
    async function abandon(vmId: string): Promise<void> {
      const vm = await row(vmId);
      const to = vm?.migrating_to;
      if (!vm || !to) return;
      const where = await look(vm, to);
      if (where.moved) return;
      if (mayHaveSwitched(where)) throw switchedOutOfSight(vm);
      await undo(vm, to, false);
    }

    async function migrate(vmId: string, toHostId: string | null): Promise<VmInfo> {
      const started = performance.now();
      let vm = await get(vmId);
      const held = vm.migrating_to !== null;
      if (!held) {
        const from = vm.host_id;
        await db.transaction().execute(async (tx) => {
          const to = await reserveDestination(tx, need(vm), 'libvirt', from, toHostId);
          const r = await tx
            .updateTable('libvirt_vms')
            .set({ migrating_to: to })
            .where('id', '=', vmId)
            .where('host_id', '=', from)
            .where('migrating_to', 'is', null)
            .executeTakeFirst();
          if (r.numUpdatedRows === 0n)
            throw new DriverError(`VM ${vmId} changed meanwhile`, { transient: true });
        });
        vm = await get(vmId);
      }
      const to = vm.migrating_to ?? '';
      const where = await look(vm, to);
      if (where.moved) {
        // An earlier job's move to another host than the one asked for: on from there.
        if (toHostId !== null && toHostId !== to) return migrate(vmId, toHostId);
        return info({ ...vm, host_id: to, migrating_to: null });
      }
      const { src, dst, pausedForMove } = where;
      // Only a move an earlier run began can have switched over (this run has just reserved).
      if (held && mayHaveSwitched(where)) throw switchedOutOfSight(vm);
      const live = src === 'running' || src === 'paused';
      if (held) {
        const again = await stillTakes(vm, to, toHostId).catch(async (err: unknown) => {
          await undo(vm, to, live);
          throw undoneIfFinal(err);
        });
        if (!again) {
          await undo(vm, to, live);
          return migrate(vmId, toHostId);
        }
      }
      let figures: { migrate_ms?: number; downtime_ms?: number } = {};
      try {
        if (dst === 'unreachable')
          throw new DriverError('The destination host does not answer', { transient: true });
        // What an earlier attempt defined there (paused by a switch-over that failed, or stopped),
        // the domain first: one left defined while its disk is deleted below would pass, on a
        // later look, for a finished cold copy (stopped on both hosts).
        if (dst !== 'missing') await removeFrom(to, vmId);
        // Paused here for a switch-over that did not happen there (the look found no copy of it
        // that ran the guest, and that host's copy is gone now): resumed, so that the guest runs
        // while it moves again, and arrives running.
        if (pausedForMove) await startDomain(vm);
        // A guest that suspended itself is woken first: the move is not trusted with a guest
        // asleep, and the guest arrives running.
        else if (src === 'running' && (await domstate(vm)) === 'pmsuspended') await wake(vm);
        // The source's mark off: a source host that loses its power after the switch-over keeps
        // the old copy defined (libvirt undefines it in the move's last step), and its boot must
        // not run that copy beside the VM. A move undone marks it again (undo).
        if (live) await startsWithHost(vm, false);
        figures = await move(vm, to, live);
      } catch (err) {
        if (dst === 'unreachable') {
          await undo(vm, to, live);
          throw err;
        }
        await afterFailedMove(vm, to, live, err);
      }
      await finish(vm, to);
      // A live move's domain is defined there by libvirt without its source's mark (the source's
      // was taken off before the move).
      if (live) await markAfter({ id: vmId, host_id: to }, true);
      o.onMigration?.({
        vmId,
        fromHostId: vm.host_id,
        toHostId: to,
        live,
        total_ms: Math.round(performance.now() - started),
        ...figures,
      });
      return info({ ...vm, host_id: to, migrating_to: null });
    }

    return { migrate, abandon };
  }

  return {
    name: 'libvirt',
    migrate: (vmId, toHostId) => migration.migrate(vmId, toHostId),
    abandonMigration: (vmId) => migration.abandon(vmId),
    clearLeftovers: (hostId) => leftovers.clear(hostId),
    clearUnusedTemplates: async (hostId) => sweepTemplates(hostId, await uriOf(hostId)),
    async probe(hostId) {
      // Bounded: a host whose daemon hangs must count as not answering, not hold the probe.
      await virsh(await uriOf(hostId), ['uri'], 'Could not reach the host', PROBE_TIMEOUT_MS);
    },

    async startingWithHost(hostId) {
      const { stdout } = await virsh(
        await uriOf(hostId),
        ['list', '--all', '--autostart', '--name'],
        'Could not list the VMs of the host',
      );
      return new Set(
        stdout
          .split('\n')
          .map((l) => l.trim())
          .filter((n) => n.startsWith(DOMAIN_PREFIX))
          .map((n) => n.slice(DOMAIN_PREFIX.length)),
      );
    },

    async setStartWithHost(vmId, on) {
      await startsWithHost(await get(vmId), on);
    },

    async powerStates(hostId) {
      const { stdout } = await virsh(
        await uriOf(hostId),
        ['list', '--all'],
        'Could not list the VMs of the host',
      );
      return parseDomainList(stdout);
    },

    async pausedByDiskErrors(hostId) {
      const uri = await uriOf(hostId);
      const { stdout } = await virsh(
        uri,
        ['domstats', '--list-paused', '--state'],
        'Could not list the paused VMs of the host',
      );
      const paused = new Map<string, DiskErrorPause>();
      for (const vmId of parseDiskErrorPaused(stdout)) {
        const errors = await virsh(
          uri,
          ['domblkerror', domainName(vmId)],
          "Could not read the VM's disk errors",
        ).then(
          (r) => r.stdout,
          (err: unknown) => {
            // Gone since the listing: not paused any more. Any other failure fails the listing
            // (taken as resumed, its condition would end and start again at the next pass).
            if (isNoDomain(err)) return undefined;
            throw err;
          },
        );
        if (errors === undefined) continue;
        paused.set(vmId, parseBlockError(errors) ?? { disk: '', error: 'io_error' });
      }
      const waiting = [...paused.values()].some((p) => p.error === 'no_space');
      // A room that cannot be read is none: the listing stands, and the operators are told.
      const storageHasRoom =
        waiting && ((await pool.room(uri).catch(() => undefined))?.bytes ?? 0) >= RESUME_ROOM_BYTES;
      return { paused, storageHasRoom };
    },

    async resumePaused(vmId) {
      const vm = await get(vmId);
      await virsh(await uriOf(vm.host_id), ['resume', domainName(vmId)], 'Could not resume the VM');
    },

    async interfaceCounters(hostId) {
      // Running domains only: a stopped one has no interfaces, so no counters.
      const { stdout } = await virsh(
        await uriOf(hostId),
        ['domstats', '--list-active', '--interface'],
        'Could not read the interface counters of the host',
      );
      return parseInterfaceStats(stdout);
    },

    async setBandwidth(vmId, mbit) {
      const vm = await get(vmId);
      const uri = await uriOf(vm.host_id);
      const name = domainName(vmId);
      const { stdout } = await virsh(uri, ['domiflist', name], 'Could not list the VM interfaces');
      // 0 clears a direction's limit.
      const rate = mbit === null ? '0' : String(kilobytesPerSecond(mbit));
      for (const mac of parseInterfaceMacs(stdout)) {
        const args = ['domiftune', name, mac, '--inbound', rate, '--outbound', rate];
        // The definition first (it outlives a reboot), then the running domain, if it runs.
        await virsh(uri, [...args, '--config'], 'Could not limit the VM interface');
        try {
          await virsh(uri, [...args, '--live'], 'Could not limit the VM interface');
        } catch (err) {
          if (!isNotRunning(err)) throw err;
        }
      }
    },

    async create(spec) {
      try {
        return await createVm(spec);
      } catch (err) {
        // A create that fails for good leaves nothing behind (row, host room, addresses, files,
        // domain), also what an earlier attempt of the same job took; a transient failure keeps
        // the work for the retry to finish.
        if (err instanceof DriverError && err.transient) throw err;
        try {
          await remove(spec.vmId, true);
        } catch (cleanup) {
          // Left half-cleaned: retry, and the retry fails and cleans up again.
          throw new DriverError(`${messageOf(err)} (cleaning up failed; retrying)`, {
            transient: true,
            cause: cleanup,
          });
        }
        throw err;
      }
    },

    async start(vmId) {
      const vm = await get(vmId);
      await startDomain(vm);
      return info(vm);
    },

    async stop(vmId, { timeoutMs }) {
      const vm = await get(vmId);
      await stopDomain(vm, timeoutMs);
      return info(vm);
    },

    async reboot(vmId, step) {
      const vm = await get(vmId);
      // The boot identity is the domain id: libvirt gives a domain a new one every time it starts
      // (this reboot is shut down + start), and none ("-") while it is off.
      const { stdout } = await virsh(
        await uriOf(vm.host_id),
        ['domid', domainName(vmId)],
        'Could not read the VM state',
      );
      const bootId = /^\d+$/.test(stdout.trim()) ? stdout.trim() : 'off';
      if (step?.recorded != null && bootId !== 'off' && step.recorded !== bootId) return info(vm);
      await step?.record(bootId);
      // A guest without ACPI handling would ignore `virsh reboot`: shut down (forced after the stop timeout), start.
      await stopDomain(vm, o.stopTimeoutMs);
      await startDomain(vm);
      return info(vm);
    },

    async powerOff(vmId) {
      const vm = await get(vmId);
      await powerOffDomain(vm);
      return info(vm);
    },

    async resize(vmId, spec) {
      const vm = await get(vmId);
      await db
        .transaction()
        .execute((tx) =>
          resizeVm(tx, 'libvirt_vms', vm, { cpu: spec.cpu, ramGb: spec.ramGb, diskGb: spec.diskGb }),
        );
      const wasRunning = (await state(vm)) === 'running';
      // vCPUs, memory and the disk change with the VM off; it comes back as it was.
      await stopDomain(vm, o.stopTimeoutMs);
      const uri = await uriOf(vm.host_id);
      const name = domainName(vmId);
      await virsh(
        uri,
        ['setvcpus', name, String(spec.cpu), '--config', '--maximum'],
        'Could not change the vCPUs',
      );
      await virsh(uri, ['setvcpus', name, String(spec.cpu), '--config'], 'Could not change the vCPUs');
      await virsh(uri, ['setmaxmem', name, `${spec.ramGb}G`, '--config'], 'Could not change the memory');
      await virsh(uri, ['setmem', name, `${spec.ramGb}G`, '--config'], 'Could not change the memory');
      const disk = vmVolumes(vmId).disk;
      const current = await pool.info(uri, disk);
      if (!current) throw new DriverError(`The disk of VM ${vmId} is missing`, { transient: false });
      if (current.capacity < spec.diskGb * GB) {
        await virsh(
          uri,
          ['vol-resize', '--pool', POOL, disk, `${spec.diskGb}G`],
          'Could not grow the VM disk',
        );
      }
      const addresses = await ipPool.addressesOf(vmId);
      if (spec.ipCount !== addresses.length) {
        if (spec.ipCount > addresses.length) await ipPool.allocate(vmId, vm.host_id, spec.ipCount);
        else await ipPool.shrink(vmId, spec.ipCount);
        await seed(vm, { hostname: vm.hostname, username: 'root', password: undefined });
      }
      if (wasRunning) await startDomain(vm);
      return info({ ...vm, cpu: spec.cpu, ram_gb: spec.ramGb, disk_gb: spec.diskGb });
    },

    async setPassword(vmId, username, password) {
      const vm = await get(vmId);
      // A new seed with a new instance id: cloud-init applies the password at the next boot.
      await seed(vm, { hostname: vm.hostname, username, password });
      if ((await state(vm)) !== 'running') return 'next_boot';
      return (await agentSetsPassword(vm, username, password)) ? 'now' : 'next_boot';
    },

    async destroy(vmId, opts) {
      await remove(vmId, opts?.createGivingUp === true);
    },

    async inspect(vmId) {
      const vm = await row(vmId);
      // A row whose domain is gone (undefined outside the API) is no VM: the reconciler's
      // check at a job's start tells a vanished VM by this.
      if (!vm || (await state(vm)) === 'missing') return undefined;
      return info(vm);
    },

    async restoreLegacyBackup(vmId, backupId, step) {
      const vm = await get(vmId);
      const uri = await uriOf(vm.host_id);
      await pool.ready(uri);
      const name = backupVolume(backupId);
      // On the VM's host, or on the host it was taken on before the VM moved: streamed here.
      if (await pool.info(uri, name)) return disks.replaceDisk(vm, uri, name, vm.disk_gb, step);
      const other = await hostHolding(name, vm.host_id);
      if (!other) throw new DriverError(`Backup ${backupId} does not exist`, { transient: false });
      // Named as the VM's restore images are: one left (the host did not answer) goes with the
      // next restore or the VM's removal (or with the next copy of it: copyBetween replaces it).
      const source = `${vmVolumes(vmId).restorePrefix}legacy-${backupId}.qcow2`;
      try {
        // Read again by the pool once uploaded (uploadNew): a qcow2, not the raw volume it was made as.
        await pool.copyBetween(other, name, uri, source);
        await disks.replaceDisk(vm, uri, source, vm.disk_gb, step);
      } finally {
        await pool.remove(uri, source).catch(() => {});
      }
    },

    exportDisk: (vmId, backupId, since) => disks.exportDisk(vmId, backupId, since),
    importDisk: (vmId, diskBytes, runs, dataBytes, step) =>
      disks.importDisk(vmId, diskBytes, runs, dataBytes, step),
    dropCheckpoint: (vmId, backupId) => disks.dropCheckpoint(vmId, backupId),
    abandonExport: (vmId, backupId) => disks.abandonExport(vmId, backupId),

    async deleteLegacyBackup(vmId, backupId) {
      // On whichever host holds it (the VM's, or where it was taken before a migration).
      const vm = await row(vmId);
      const name = backupVolume(backupId);
      for (const uri of await libvirtUris(vm?.host_id)) await removeVolume(uri, name);
    },

    reinstall: (vmId, spec) => selfService.reinstall(vmId, spec),
    rescue: (vmId, login) => selfService.rescue(vmId, login),
    unrescue: (vmId, power) => selfService.unrescue(vmId, power),
    consoles: (vmId) => selfService.consoles(vmId),
    openConsole: (vmId, kind) => selfService.openConsole(vmId, kind),

    async close() {
      // Shutting down: what still runs (a job past the shutdown grace) is ended, not left behind.
      selfService.close();
      await commands.close();
    },
  };
}
