import { randomUUID } from 'node:crypto';
import { chmod, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import type { Database, LibvirtVmTable } from '../../store/schema.ts';
import {
  type BackupInfo,
  DriverError,
  type HypervisorDriver,
  type PowerState,
  type VmInfo,
  type VmSpec,
} from '../driver.ts';
import { free, placeVm, resizeVm } from '../hosts.ts';
import type { IpPool } from '../ip-pool.ts';
import { type CommandTiming, createCommands, isNoDomain, isNotRunning, stderrOf } from './commands.ts';
import { domainXml } from './domain-xml.ts';
import { isLocalSystem } from './local-system.ts';
import { writeSeed } from './seed.ts';
import { resolveTemplate } from './templates.ts';
import { detectVirtType, isKvmRefused, kvmRefusedChoice, type VirtChoice } from './virt-type.ts';

export interface LibvirtDriverOptions {
  readonly db: Kysely<Database>;
  readonly ipPool: IpPool;
  readonly storage: string;
  /** `kvm`, `qemu`, or `auto`: each host's libvirt is asked (`detectVirtType`) when the driver starts. */
  readonly virtType: 'auto' | 'kvm' | 'qemu';
  /** Told of each host's virtualisation once it is known (logged at info). */
  readonly onVirtChoice?: (hostId: string, choice: VirtChoice) => void;
  /** Told of every virsh/qemu-img command with its duration (logged at debug; the bench reads it). */
  readonly onCommand?: (t: CommandTiming) => void;
  readonly bridge: string | undefined;
  /** How long a graceful shutdown may take inside reboot and resize before the power is forced off. */
  readonly stopTimeoutMs: number;
  readonly now?: () => number;
}

const GB = 1024 ** 3;
/** Where the system libvirtd has QEMU write each domain's log. */
const QEMU_LOG_DIR = '/var/log/libvirt/qemu';
const DOMAIN_PREFIX = 'vrp-';
/** How long the guest agent may take to answer a password change, seconds. */
const AGENT_TIMEOUT_S = 10;
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
 * Real virtual machines through libvirt/QEMU. Each VM is a domain `vrp-<service id>` with a
 * qcow2 disk over its template's base image, a cloud-init NoCloud seed, and a console log, all
 * under `storage/<service id>/`; backups are standalone qcow2 copies under `storage/backups/`.
 * Every operation is idempotent: it looks at what libvirt and the files say and finishes the work.
 */
export function createLibvirtDriver(o: LibvirtDriverOptions): HypervisorDriver {
  const { db, ipPool } = o;
  const now = o.now ?? Date.now;
  const commands = createCommands(o.onCommand);
  const { run, virsh } = commands;
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
  // Each host is asked once, when the driver first needs its domain type; a host that does not
  // answer delays only the first domain defined on it.
  const virtTypes = new Map<string, Promise<'kvm' | 'qemu'>>();
  const virtTypeOf = (hostId: string): Promise<'kvm' | 'qemu'> => {
    let known = virtTypes.get(hostId);
    if (!known) {
      known = uriOf(hostId).then((uri) =>
        detectVirtType(o.virtType, uri, commands).then((choice) => {
          o.onVirtChoice?.(hostId, choice);
          return choice.type;
        }),
      );
      known.catch(() => virtTypes.delete(hostId));
      virtTypes.set(hostId, known);
    }
    return known;
  };
  const dir = (vmId: string) => join(o.storage, vmId);
  const files = (vmId: string) => ({
    disk: join(dir(vmId), 'disk.qcow2'),
    seed: join(dir(vmId), 'seed.iso'),
    console: join(dir(vmId), 'console.log'),
  });
  const backupFile = (backupId: string) => join(o.storage, 'backups', `${backupId}.qcow2`);
  const exists = (p: string) =>
    stat(p).then(
      () => true,
      () => false,
    );

  const row = (vmId: string) =>
    db.selectFrom('libvirt_vms').selectAll().where('id', '=', vmId).executeTakeFirst();
  async function get(vmId: string): Promise<LibvirtVmTable> {
    const r = await row(vmId);
    if (!r) throw new DriverError(`VM ${vmId} does not exist`, { transient: false });
    return r;
  }

  async function state(vm: LibvirtVmTable): Promise<'running' | 'stopped' | 'paused' | 'missing'> {
    try {
      const { stdout } = await virsh(
        await uriOf(vm.host_id),
        ['domstate', domainName(vm.id)],
        'Could not read the VM state',
      );
      const s = stdout.trim();
      if (s === 'running' || s === 'in shutdown') return 'running';
      if (s === 'paused') return 'paused';
      return 'stopped';
    } catch (err) {
      if (isNoDomain(err)) return 'missing';
      throw err;
    }
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

  /** The seed carries what cloud-init applies at boot: host name, password, addresses. */
  async function seed(
    vm: LibvirtVmTable,
    s: { hostname: string; username: string; password: string | undefined },
  ) {
    const [network = '', bits] = ipPool.cidr.split('/');
    const gateway = network.replace(/\d+$/, (d) => String(Number(d) + 1));
    await writeSeed(commands, files(vm.id).seed, join(dir(vm.id), 'seed-src'), {
      instanceId: `vrp-${vm.id}-${randomUUID().slice(0, 8)}`,
      hostname: s.hostname,
      username: s.username,
      password: s.password,
      addresses: await ipPool.addressesOf(vm.id),
      prefixLength: Number(bits),
      gateway,
    });
    await chmod(files(vm.id).seed, 0o600);
  }

  async function define(vm: LibvirtVmTable, templateId: string) {
    const template = await resolveTemplate(db, templateId);
    const f = files(vm.id);
    const xml = domainXml({
      name: domainName(vm.id),
      virtType: await virtTypeOf(vm.host_id),
      cpu: vm.cpu,
      ramGb: vm.ram_gb,
      disk: f.disk,
      seed: f.seed,
      consoleLog: f.console,
      kernel: template.kernel,
      bridge: o.bridge,
    });
    const xmlFile = join(dir(vm.id), 'domain.xml');
    await writeFile(xmlFile, xml);
    await virsh(await uriOf(vm.host_id), ['define', xmlFile], 'Could not define the VM').catch((err) => {
      // Defined by an earlier attempt of the same job: nothing left to do.
      if (!/already exists/.test(stderrOf(err))) throw err;
    });
  }

  async function startDomain(vm: LibvirtVmTable) {
    const s = await state(vm);
    if (s === 'running') return;
    if (s === 'paused') {
      await virsh(await uriOf(vm.host_id), ['resume', domainName(vm.id)], 'Could not resume the VM');
      return;
    }
    const uri = await uriOf(vm.host_id);
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
      const xmlFile = join(dir(vm.id), 'domain.xml');
      const { stdout } = await virsh(
        uri,
        ['dumpxml', '--inactive', domainName(vm.id)],
        'Could not read the VM',
      );
      await writeFile(xmlFile, stdout.replace(/<domain type=(['"])kvm\1/, "<domain type='qemu'"));
      await virsh(uri, ['define', xmlFile], 'Could not define the VM');
      await virsh(uri, ['start', domainName(vm.id)], 'Could not start the VM');
    }
  }

  /** ACPI shutdown, then forced off once `timeoutMs` has passed. */
  async function stopDomain(vm: LibvirtVmTable, timeoutMs: number) {
    if ((await state(vm)) !== 'running') return;
    const uri = await uriOf(vm.host_id);
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
    await ipPool.allocate(vm.id, spec.ipCount);
    const template = await resolveTemplate(db, spec.templateId);
    const f = files(vm.id);
    await mkdir(dir(vm.id), { recursive: true, mode: 0o711 });
    if (!(await exists(f.disk))) {
      await run(
        'qemu-img',
        [
          'create',
          '-q',
          '-f',
          'qcow2',
          '-b',
          template.disk,
          '-F',
          'qcow2',
          `${f.disk}.tmp`,
          `${spec.diskGb}G`,
        ],
        'Could not create the VM disk',
      );
      await run('mv', ['-f', `${f.disk}.tmp`, f.disk], 'Could not create the VM disk');
    }
    if ((await state(vm)) === 'missing') {
      await seed(vm, spec);
      await define(vm, spec.templateId);
    }
    await startDomain(vm);
    return info(vm);
  }

  /** Gives back everything the VM holds: the domain, its files, its addresses, its row and host room. */
  async function remove(vmId: string): Promise<void> {
    const vm = await row(vmId);
    // The seed's source holds the password in clear: gone first, whatever fails later.
    await rm(join(dir(vmId), 'seed-src'), { recursive: true, force: true });
    await rm(files(vmId).seed, { force: true });
    if (vm) {
      try {
        await powerOffDomain(vm);
        await virsh(await uriOf(vm.host_id), ['undefine', domainName(vmId)], 'Could not remove the VM').catch(
          (err) => {
            if (!isNoDomain(err)) throw err;
          },
        );
      } catch (err) {
        // libvirt out of reach: if the definition was never written, there is no domain to
        // remove (define writes domain.xml first), and the rest can go back without it.
        const neverDefined = !(await exists(join(dir(vmId), 'domain.xml')));
        if (!(err instanceof DriverError && err.transient && neverDefined)) throw err;
      }
      await removeQemuLog(vm.host_id, domainName(vmId));
    }
    await rm(dir(vmId), { recursive: true, force: true });
    await ipPool.release(vmId);
    if (vm) {
      await db.transaction().execute(async (tx) => {
        const r = await tx.deleteFrom('libvirt_vms').where('id', '=', vmId).executeTakeFirst();
        if (r.numDeletedRows > 0n)
          await free(tx, vm.host_id, { cpu: vm.cpu, ramGb: vm.ram_gb, diskGb: vm.disk_gb });
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

  return {
    name: 'libvirt',
    async migrate(vmId) {
      throw new DriverError(`Migrating ${vmId} is not built yet`, { transient: false });
    },
    async probe(hostId) {
      await virsh(await uriOf(hostId), ['uri'], 'Could not reach the host');
    },

    async powerStates(hostId) {
      const { stdout } = await virsh(
        await uriOf(hostId),
        ['list', '--all'],
        'Could not list the VMs of the host',
      );
      return parseDomainList(stdout);
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
          await remove(spec.vmId);
        } catch (cleanup) {
          // Left half-cleaned: retry, and the retry fails and cleans up again.
          throw new DriverError(
            `${err instanceof Error ? err.message : String(err)} (cleaning up failed; retrying)`,
            {
              transient: true,
              cause: cleanup,
            },
          );
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
      const disk = files(vmId).disk;
      const { stdout } = await run(
        'qemu-img',
        ['info', '--output=json', '-U', disk],
        'Could not read the VM disk',
      );
      if ((JSON.parse(stdout) as { 'virtual-size': number })['virtual-size'] < spec.diskGb * GB) {
        await run('qemu-img', ['resize', '-q', disk, `${spec.diskGb}G`], 'Could not grow the VM disk');
      }
      const current = await ipPool.addressesOf(vmId);
      if (spec.ipCount !== current.length) {
        if (spec.ipCount > current.length) await ipPool.allocate(vmId, spec.ipCount);
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

    async destroy(vmId) {
      await remove(vmId);
    },

    async inspect(vmId) {
      const vm = await row(vmId);
      // A row whose domain is gone (undefined outside the API) is no VM: the reconciler's
      // check at a job's start tells a vanished VM by this.
      if (!vm || (await state(vm)) === 'missing') return undefined;
      return info(vm);
    },

    async createBackup(vmId, backupId): Promise<BackupInfo> {
      const vm = await get(vmId);
      const target = backupFile(backupId);
      if (!(await exists(target))) {
        await mkdir(join(o.storage, 'backups'), { recursive: true, mode: 0o711 });
        const running = (await state(vm)) === 'running';
        const uri = await uriOf(vm.host_id);
        // Paused for the copy, so the disk is consistent; resumed whatever happens.
        if (running) await virsh(uri, ['suspend', domainName(vmId)], 'Could not pause the VM for the backup');
        try {
          await run(
            'qemu-img',
            ['convert', '-U', '-O', 'qcow2', files(vmId).disk, `${target}.tmp`],
            'Could not copy the VM disk',
            30 * 60_000,
          );
        } finally {
          if (running)
            await virsh(uri, ['resume', domainName(vmId)], 'Could not resume the VM after the backup');
        }
        await run('mv', ['-f', `${target}.tmp`, target], 'Could not store the backup');
      }
      const size = (await stat(target)).size;
      return { backupId, vmId, sizeGb: Math.max(0.1, Math.ceil((size / GB) * 10) / 10) };
    },

    async restoreBackup(vmId, backupId) {
      const vm = await get(vmId);
      const source = backupFile(backupId);
      if (!(await exists(source)))
        throw new DriverError(`Backup ${backupId} does not exist`, { transient: false });
      const wasRunning = (await state(vm)) === 'running';
      await powerOffDomain(vm);
      const disk = files(vmId).disk;
      await run(
        'qemu-img',
        ['convert', '-O', 'qcow2', source, `${disk}.restore`],
        'Could not restore the backup',
        30 * 60_000,
      );
      await run(
        'qemu-img',
        ['resize', '-q', `${disk}.restore`, `${vm.disk_gb}G`],
        'Could not restore the backup',
      );
      await run('mv', ['-f', `${disk}.restore`, disk], 'Could not restore the backup');
      if (wasRunning) await startDomain(vm);
    },

    async deleteBackup(_vmId, backupId) {
      await rm(backupFile(backupId), { force: true });
    },

    async close() {
      // Shutting down: what still runs (a job past the shutdown grace) is ended, not left behind.
      await commands.close();
    },
  };
}
