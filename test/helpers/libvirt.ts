/** Set-up shared by the tests that use real libvirt commands (virsh, qemu-img) and VMs. */
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after } from 'node:test';
import { promisify } from 'node:util';
import type { Kysely } from 'kysely';
import type { RegisteredApplication } from '../../src/auth/applications.ts';
import { type Config, loadConfig } from '../../src/config.ts';
import { createDriver, type DriverLog } from '../../src/drivers/create-driver.ts';
import type { HypervisorDriver } from '../../src/drivers/driver.ts';
import { fenced } from '../../src/drivers/fence.ts';
import { parseVolumeList } from '../../src/drivers/libvirt/storage.ts';
import { openStore, type Store } from '../../src/store/database.ts';
import type { Database } from '../../src/store/schema.ts';
import { slowWaitMs, waitUntil } from './budget.ts';
import { apiClient, fetchToken, prepareStore, smallOrder } from './e2e.ts';
import { libvirtTemplate } from './libvirt-template.ts';
import type { ServerProcess } from './server-process.ts';
import { startServer } from './server-process.ts';

const execFileAsync = promisify(execFile);

/**
 * A SQLite store in `dataDir` with the tiny test template (`tiny`), and the libvirt driver on it
 * with the settings `env` adds (a short `VRP_STOP_TIMEOUT` unless given) and then `over`, logging to `log`.
 */
export async function libvirtDriverOnStore(
  dataDir: string,
  env: Record<string, string> = {},
  log?: DriverLog,
  /** Settings over those `env` gives, beyond what the environment may set (a grace no operator may choose). */
  over: Partial<Config> = {},
): Promise<{ store: Store; driver: HypervisorDriver }> {
  const store = await openStore({ databaseUrl: undefined, dataDir });
  await store.db
    .insertInto('os_templates')
    .values({
      id: 'tiny',
      name: 'tiny test template',
      image: libvirtTemplate ?? '',
      created_at: 0,
      updated_at: 0,
    })
    .execute();
  const driver = await createDriver(
    {
      ...loadConfig({ VRP_DATA_DIR: dataDir, VRP_DRIVER: 'libvirt', VRP_STOP_TIMEOUT: '3s', ...env }),
      ...over,
    },
    store.db,
    log,
  );
  return { store, driver };
}

/**
 * A running job `jobId` in its first attempt, its lease ten minutes on, as a worker's claim
 * leaves it, in the SQLite store of `dataDir`: what a copy's room is held for (room-claims.ts).
 * Its row is written on a connection of its own without foreign keys: a driver's test store has
 * no service for it.
 */
export function runningJobOnStore(dataDir: string, jobId: string): void {
  const raw = new DatabaseSync(join(dataDir, 'vrp.sqlite'), { enableForeignKeyConstraints: false });
  try {
    raw.exec('pragma busy_timeout = 5000');
    const now = Date.now();
    raw
      .prepare(
        `insert into jobs (id, service_id, reseller_id, action, params, status, attempts, seq, run_at, created_at, started_at, locked_by, locked_until)
         values (?, ?, 'r', 'backup', '{}', 'running', 1, 1, ?, ?, ?, 'worker-1', ?)`,
      )
      .run(jobId, `service-of-${jobId}`, now, now, now, now + 600_000);
  } finally {
    raw.close();
  }
}

/** Runs `body` as the attempt of such a job (runningJobOnStore), its fence never going down. */
export function asJobOnStore<R>(dataDir: string, jobId: string, body: () => Promise<R>): Promise<R> {
  runningJobOnStore(dataDir, jobId);
  const signal = new AbortController().signal;
  return fenced({ run: { jobId, attempt: 1 }, signal, check: () => signal.throwIfAborted() }, body);
}

/** The room claims of job `jobId` as [place kind (`pool`, `fs`), bytes, released], by place. */
export async function claimsOfJob(db: Kysely<Database>, jobId: string): Promise<[string, number, boolean][]> {
  return (
    await db.selectFrom('room_claims').selectAll().where('job_id', '=', jobId).orderBy('place').execute()
  ).map((c) => [c.place.replace(/^(pool|fs):.*$/, '$1'), Number(c.bytes), c.released_at !== null]);
}

/**
 * Undoes libvirtDriverOnStore: the test's VMs destroyed (whatever state they are in), the driver
 * closed, the template's volumes removed from the pool, the store closed and its directory gone.
 */
export async function closeLibvirtDriverOnStore(
  s: { readonly store?: Store | undefined; readonly driver?: HypervisorDriver | undefined },
  dataDir: string,
  vmIds: readonly string[] = [],
): Promise<void> {
  for (const vmId of vmIds) await s.driver?.destroy(vmId).catch(() => {});
  await s.driver?.close();
  if (s.store) {
    await removeTemplateVolumes(s.store.db);
    await s.store.close();
  }
  rmSync(dataDir, { recursive: true, force: true });
}

/** Whether the libvirt at `uri` says its QEMU can use KVM (`domcapabilities` names kvm). */
export function libvirtSaysKvm(uri = 'qemu:///system'): boolean {
  try {
    return execFileSync('virsh', ['-c', uri, 'domcapabilities', '--virttype', 'kvm'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).includes('<domain>kvm</domain>');
  } catch {
    return false;
  }
}

/** A server's JSON log lines (its output's other lines left out). */
export const logLines = (text: string): Record<string, unknown>[] =>
  text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/**
 * A Linux bridge named `name` for the VMs' interfaces (VRP_LIBVIRT_BRIDGE), up; made here unless
 * an earlier run that did not finish left it. The returned function removes it if it was made
 * here.
 */
export function testBridge(name: string): () => void {
  let made = false;
  try {
    execFileSync('ip', ['link', 'add', name, 'type', 'bridge']);
    made = true;
  } catch {
    // Already there: used as it is.
  }
  execFileSync('ip', ['link', 'set', name, 'up']);
  return () => {
    if (made) execFileSync('ip', ['link', 'del', name]);
  };
}

/**
 * Runs `use` with this process's TMPDIR a full 1 MiB tmpfs (0.0 MiB free: where copies between
 * hosts, exports and imports pass), then as it was.
 */
export function withFullTmpdir<T>(use: () => Promise<T>): Promise<T> {
  return withTestTmpdir('full', use);
}

/**
 * Runs `use` with this process's TMPDIR a 64 MiB tmpfs (`dir`), writable, that the test may
 * fill or turn read-only (`mount -o remount,ro`), then as it was.
 */
export function withSmallTmpdir<T>(use: (dir: string) => Promise<T>): Promise<T> {
  return withTestTmpdir('small', use);
}

/**
 * Runs `use` with this process's TMPDIR a 2 GiB tmpfs mounted read-only: its room can be read,
 * but nothing made in it (not even by root), then as it was.
 */
export function withReadOnlyTmpdir<T>(use: () => Promise<T>): Promise<T> {
  return withTestTmpdir('read-only', use);
}

async function withTestTmpdir<T>(
  kind: 'full' | 'read-only' | 'small',
  use: (dir: string) => Promise<T>,
): Promise<T> {
  const small = mkdtempSync(join(tmpdir(), 'vrp-small-tmp-'));
  execFileSync('mount', [
    '-t',
    'tmpfs',
    '-o',
    { full: 'size=1m', 'read-only': 'size=2g', small: 'size=64m' }[kind],
    'vrp-small-tmp',
    small,
  ]);
  const usual = process.env['TMPDIR'];
  try {
    // Filled (dd stops where the tmpfs is full).
    if (kind === 'full')
      execFileSync('sh', [
        '-c',
        'dd if=/dev/zero of="$1/filler" bs=64k count=32 2>/dev/null; true',
        '_',
        small,
      ]);
    else if (kind === 'read-only') execFileSync('mount', ['-o', 'remount,ro', small]);
    process.env['TMPDIR'] = small;
    return await use(small);
  } finally {
    if (usual === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = usual;
    execFileSync('umount', [small]);
    rmSync(small, { recursive: true, force: true });
  }
}

/** The processes on this machine whose arguments (`/proc/<pid>/cmdline`) `match`. */
export function processesWhere(match: (argv: string[]) => boolean): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').slice(0, -1);
    } catch {
      continue; // ended meanwhile
    }
    if (match(argv)) pids.push(Number(name));
  }
  return pids;
}

/** Whether `command` can be run here (`--version` answers). */
export function hasCommand(command: string): boolean {
  try {
    execFileSync(command, ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * A data dir with a prepared store (demo catalogue, one application) and a VM storage dir
 * libvirt's QEMU can traverse; the server the test starts is registered with `serve` and
 * killed, and everything removed, after the test.
 */
export async function prepareLibvirtE2e(name: string): Promise<{
  dataDir: string;
  storage: string;
  store: Store;
  app: RegisteredApplication;
  serve(server: ServerProcess): ServerProcess;
}> {
  const dataDir = mkdtempSync(join(tmpdir(), `vrp-${name}-`));
  const storage = mkdtempSync(join(tmpdir(), `vrp-${name}-storage-`));
  chmodSync(storage, 0o711);
  let server: ServerProcess | undefined;
  const { store, app } = await prepareStore(dataDir);
  after(async () => {
    await server?.kill();
    await removeTemplateVolumes(store.db);
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(storage, { recursive: true, force: true });
  });
  return {
    dataDir,
    storage,
    store,
    app,
    serve(s) {
      server = s;
      return s;
    },
  };
}

/** A VM record as an earlier attempt would have left it, on `hostId`. */
export async function insertLibvirtVm(db: Kysely<Database>, vmId: string, hostId: string): Promise<void> {
  await db
    .insertInto('libvirt_vms')
    .values({
      id: vmId,
      host_id: hostId,
      hostname: 'x.example.com',
      cpu: 1,
      ram_gb: 1,
      disk_gb: 10,
      created_at: 0,
    })
    .execute();
}

/**
 * Runs `body` while the store has a libvirt record of `vmId` whose interface has `mac` (as the
 * libvirt driver keeps it), on a host `lv`; the record is removed after.
 */
export async function withLibvirtMac<T>(
  db: Kysely<Database>,
  vmId: string,
  mac: string,
  body: () => Promise<T>,
): Promise<T> {
  await insertLibvirtVm(db, vmId, 'lv');
  await db.updateTable('libvirt_vms').set({ mac }).where('id', '=', vmId).execute();
  try {
    return await body();
  } finally {
    await db.deleteFrom('libvirt_vms').where('id', '=', vmId).execute();
  }
}

/**
 * A server process with the libvirt driver on a prepared store (prepareLibvirtE2e), whose demo
 * OS template is mapped to the test template's image, as an operator's catalogue would; with an
 * API client as the store's application and an order body for `domainName`. `env` adds or
 * overrides settings (the stop timeout is 3 s unless given).
 */
export async function startLibvirtE2e(name: string, domainName: string, env: Record<string, string> = {}) {
  const prepared = await prepareLibvirtE2e(name);
  const order = smallOrder(domainName);
  // The operator maps the OS template to its image on the hosts (catalogue `image`).
  await prepared.store.db
    .updateTable('os_templates')
    .set({ image: libvirtTemplate! })
    .where('id', '=', order.template_id)
    .execute();
  const server = prepared.serve(
    await startServer({
      VRP_DATA_DIR: prepared.dataDir,
      VRP_DRIVER: 'libvirt',
      // Each host's pool `vrp` at the default path (VRP_LIBVIRT_STORAGE), as in production.
      VRP_STOP_TIMEOUT: '3s',
      ...env,
    }),
  );
  const api = apiClient(() => server.url, await fetchToken(server.url, prepared.app));
  return { ...prepared, order, server, api };
}

/**
 * startLibvirtE2e on a test host of its own (startTestHost, stopped after the test), the server's
 * one libvirt host: for files that need a host and nothing of the system daemon's own. With the
 * host's URI, for the test's own `virsh` calls.
 */
export async function startLibvirtE2eOnTestHost(
  host: string,
  name: string,
  domainName: string,
  env: Record<string, string> = {},
  hostOptions: TestHostOptions = {},
) {
  const { uri, stop } = await startTestHost(host, hostOptions);
  after(stop);
  return { ...(await startLibvirtE2e(name, domainName, { ...env, VRP_LIBVIRT_URI: uri })), uri };
}

/** How a test host is made: `storageMb`, its pool a disk of that size (a tmpfs only it sees), that fills up. */
export interface TestHostOptions {
  readonly storageMb?: number;
}

/** The script that starts a libvirt host of its own on this machine (scripts/libvirt/test-host.sh). */
export const testHostScript = join(import.meta.dirname, '..', '..', 'scripts', 'libvirt', 'test-host.sh');

/**
 * Starts test host `name` ([a-z0-9-]{1,20}): a libvirtd of its own on this machine (own mount
 * namespace, host UUID and storage at /var/lib/vrp/pool, with pool `vrp`), which libvirt treats
 * as another host, so migrations to and from it are real. Needs root and libvirt (run where the
 * real-VM tests run). `stop()` destroys its domains and removes everything it made.
 */
export async function startTestHost(
  name: string,
  options: TestHostOptions = {},
): Promise<{ uri: string; dir: string; stop(): Promise<void> }> {
  const { stdout } = await execFileAsync('bash', [testHostScript, 'start', name], {
    timeout: 180_000,
    env: {
      ...process.env,
      ...(options.storageMb ? { VRP_TEST_HOST_STORAGE_MB: String(options.storageMb) } : {}),
    },
  });
  const uri = stdout.trim().split('\n').at(-1) ?? '';
  if (!uri.startsWith('qemu+unix://')) throw new Error(`test host ${name} gave no URI: ${stdout}`);
  return {
    uri,
    dir: join('/tmp/vrp-test-hosts', name),
    async stop() {
      await execFileAsync('bash', [testHostScript, 'stop', name], { timeout: 180_000 });
    },
  };
}

/** The names of the volumes in the `vrp` pool of the libvirt at `uri` (none if it has no such pool). */
export function poolVolumes(uri = 'qemu:///system'): string[] {
  try {
    return parseVolumeList(
      execFileSync('virsh', ['-c', uri, 'vol-list', 'vrp'], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }),
    );
  } catch {
    return [];
  }
}

/** A VM's serial console log, read through its host's libvirt connection (vol-download); '' if none yet. */
export function consoleText(vmId: string, uri = 'qemu:///system'): string {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-console-'));
  try {
    execFileSync(
      'virsh',
      ['-c', uri, 'vol-download', '--pool', 'vrp', `${vmId}.console.log`, join(dir, 'console.log')],
      {
        stdio: 'ignore',
      },
    );
    return readFileSync(join(dir, 'console.log'), 'utf8');
  } catch {
    return '';
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The whole lines of a VM's console log. The log may be read while the guest is still writing a
 * line (a serial console is slow): the text after the last newline is then a line cut short, and
 * does not count.
 */
export function consoleLines(vmId: string, uri = 'qemu:///system'): string[] {
  return consoleText(vmId, uri).split('\n').slice(0, -1);
}

/** The guest's reports (one `VRP-GUEST` line per boot) on its console, as key/value records. */
export function guestReports(vmId: string, uri = 'qemu:///system'): Record<string, string>[] {
  return reportsIn(consoleLines(vmId, uri));
}

/** The `VRP-GUEST` reports among a console's lines, as key/value records. */
function reportsIn(lines: readonly string[]): Record<string, string>[] {
  return lines
    .filter((l) => l.startsWith('VRP-GUEST '))
    .map((l) =>
      Object.fromEntries(
        l
          .trim()
          .split(' ')
          .slice(1)
          .map((kv) => kv.split('=') as [string, string]),
      ),
    );
}

/** What `virsh domstate` says of a VM's domain (`vrp-<id>`), or why it could not say. */
function domainState(vmId: string, uri: string): string {
  try {
    return execFileSync('virsh', ['-c', uri, 'domstate', '--reason', `vrp-${vmId}`], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
  } catch (err) {
    return `unknown (${err instanceof Error ? err.message.split('\n')[0] : String(err)})`;
  }
}

/**
 * Waits until `pick` finds what it wants among the guest's boot reports (its `VRP-GUEST` lines)
 * on its serial console log, and returns that. A real VM booting is slow on any machine, so the
 * budget is generous; if it runs out, the error says how many reports the console has, what the
 * domain's state was and what the console showed last, so that a boot that never reported can
 * be told from one that was only slow.
 */
export async function guestWait<T>(
  what: string,
  vmId: string,
  pick: (reports: Record<string, string>[]) => T | undefined,
  { uri = 'qemu:///system', everyMs = 250, budgetMs = slowWaitMs(180_000) } = {},
): Promise<T> {
  try {
    return await waitUntil(what, () => pick(guestReports(vmId, uri)), { everyMs, budgetMs });
  } catch (err) {
    const lines = consoleLines(vmId, uri);
    throw new Error(
      `${err instanceof Error ? err.message : String(err)}; the console has ${reportsIn(lines).length} report(s); ` +
        `the domain is ${domainState(vmId, uri)}; the console's last lines:\n${lines.slice(-30).join('\n')}`,
      { cause: err },
    );
  }
}

/** The guest's `n`th boot report, waited for as guestWait waits. */
export function guestReport(
  vmId: string,
  n: number,
  uri = 'qemu:///system',
  budgetMs = slowWaitMs(180_000),
): Promise<Record<string, string>> {
  return guestWait(`boot report ${n} of the guest`, vmId, (reports) => reports[n - 1], { uri, budgetMs });
}

/**
 * Deletes the template volumes a store recorded on its hosts (`host_images`), which the driver
 * keeps for the host's next VMs: a test's clean-up, so the hosts' pools are left as found.
 */
export async function removeTemplateVolumes(db: Kysely<Database>): Promise<void> {
  const rows = await db
    .selectFrom('host_images')
    .innerJoin('hypervisor_hosts', 'hypervisor_hosts.id', 'host_images.host_id')
    .select(['host_images.volume', 'hypervisor_hosts.uri'])
    .execute();
  for (const r of rows) {
    if (!r.uri) continue;
    const prefix = r.volume.replace(/\.qcow2$/, '');
    for (const name of poolVolumes(r.uri).filter((n) => n.startsWith(`${prefix}.`))) {
      try {
        execFileSync('virsh', ['-c', r.uri, 'vol-delete', '--pool', 'vrp', name], { stdio: 'ignore' });
      } catch {
        // Gone already.
      }
    }
  }
}

/** A guest agent command on `domain` (of the libvirt at `uri`): its `return`. */
export async function guestAgent(domain: string, command: unknown, uri = 'qemu:///system'): Promise<any> {
  const { stdout } = await execFileAsync('virsh', [
    '-c',
    uri,
    'qemu-agent-command',
    '--timeout',
    '20',
    domain,
    JSON.stringify(command),
  ]);
  return (JSON.parse(stdout) as { return: unknown }).return;
}

/** A shell command run in the guest through its agent (guest-exec), waited for: exit code and output. */
export async function guestExec(
  domain: string,
  shell: string,
  uri = 'qemu:///system',
): Promise<{ code: number; out: string }> {
  const { pid } = await guestAgent(
    domain,
    { execute: 'guest-exec', arguments: { path: '/bin/sh', arg: ['-c', shell], 'capture-output': true } },
    uri,
  );
  return waitUntil(
    `guest command ${shell}`,
    async () => {
      const s = await guestAgent(domain, { execute: 'guest-exec-status', arguments: { pid } }, uri);
      if (!s.exited) return undefined;
      const out = s['out-data'] ? Buffer.from(s['out-data'], 'base64').toString('utf8') : '';
      return { code: (s.exitcode as number | undefined) ?? -1, out };
    },
    { everyMs: 200, budgetMs: slowWaitMs(120_000) },
  );
}

/** A shell command in the guest through its agent (guestExec), once the agent answers (it starts after the boot report). */
export function guestExecWhenUp(
  domain: string,
  shell: string,
  uri = 'qemu:///system',
): Promise<{ code: number; out: string }> {
  return waitUntil(
    `the guest agent to run ${shell}`,
    () =>
      guestExec(domain, shell, uri).catch((err: unknown) => {
        if (/guest agent is not (connected|responding)/i.test(String(err))) return undefined;
        throw err;
      }),
    { everyMs: 500, budgetMs: slowWaitMs(120_000) },
  );
}

/** Starts a shell command in the guest without waiting for it (a loop left running). */
export async function guestSpawn(domain: string, shell: string, uri = 'qemu:///system'): Promise<void> {
  await guestAgent(
    domain,
    { execute: 'guest-exec', arguments: { path: '/bin/sh', arg: ['-c', shell] } },
    uri,
  );
}
