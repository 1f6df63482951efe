/**
 * What the libvirt driver's look at both hosts makes of a live move whose source is paused (its
 * give-up, abandonMigration, which records a move that switched over and undoes one that did
 * not), by the states and reasons libvirt gives: a source paused for the move (`paused
 * (migrating)`) and a destination defined there and stopped with its disk, or paused since, ran
 * the guest there (recorded; a stopped one started, one asleep since left so); a destination whose Finish failed (`shut off
 * (failed)`), or an incoming domain never defined (`paused (migrating)`, not persistent), never
 * did (undone: the source resumed); a source paused for another reason is never taken for a
 * switch-over. The hosts are a scripted `virsh` ahead of the real one on PATH, answering from
 * files (no libvirt needed); the real sequence of one row is step (q) of libvirt-hosts.test.ts.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createDriver } from '../../src/drivers/create-driver.ts';
import { DriverError, type HypervisorDriver } from '../../src/drivers/driver.ts';
import { openStore, type Store } from '../../src/store/database.ts';
import { insertLibvirtVm } from '../helpers/libvirt.ts';
import { createPgDatabase, testStores } from '../helpers/stores.ts';

/** A domain on a scripted host: its state and reason as `virsh domstate --reason` says them, whether it is defined, whether its disk is in the pool. */
interface Domain {
  readonly state: 'running' | 'paused' | 'pmsuspended' | 'shut off';
  readonly reason: string;
  readonly persistent: boolean;
  readonly disk: boolean;
}

/**
 * A `virsh` that answers for hosts `a` and `b` (the last part of their URI) from files in `dir`
 * and writes each command it is given to `dir/log` as `HOST COMMAND ARGS`: the VM's domain state
 * (domstate, dominfo, dumpxml; none: libvirt's "no domain"), its disk (vol-info; vol-delete removes it),
 * a ready pool at `poolPath`; resume, start and dompmwakeup make it run, destroy stops it, undefine removes
 * it; anything else succeeds with nothing to say. The command that `dir/fail` begins with fails
 * as a connection lost.
 */
function scriptedVirsh(dir: string, poolPath: string): string {
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  const script = `#!/bin/bash
dir=${JSON.stringify(dir)}
[ "$1" = -q ] && shift
[ "$1" = -c ] && { host=\${2##*/}; shift 2; }
echo "$host $*" >> "$dir/log"
d="$dir/$host"
# A host that stops answering at the command the file fail begins with ("b dominfo").
if [ -s "$dir/fail" ] && [[ "$host $*" == "$(cat "$dir/fail")"* ]]; then echo 'error: failed to connect to the hypervisor' >&2; exit 1; fi
no_domain() { echo "error: failed to get domain '$1'" >&2; echo "error: Domain not found: no domain with matching name '$1'" >&2; exit 1; }
case "$1" in
  domstate)
    if [ "$2" = --reason ]; then dom=$3; else dom=$2; fi
    [ -e "$d.state" ] || no_domain "$dom"
    if [ "$2" = --reason ]; then echo "$(cat "$d.state") ($(cat "$d.reason"))"; else cat "$d.state"; fi ;;
  dominfo)
    [ -e "$d.state" ] || no_domain "$2"
    echo "Persistent:     $(cat "$d.persistent")" ;;
  resume|start|dompmwakeup) [ -e "$d.state" ] || no_domain "$2"; echo running > "$d.state"; echo booted > "$d.reason" ;;
  destroy) [ -e "$d.state" ] || no_domain "$2"; echo 'shut off' > "$d.state"; echo destroyed > "$d.reason" ;;
  dumpxml) [ -e "$d.state" ] || no_domain "\${!#}"; echo "<domain><pm><suspend-to-mem enabled='no'/><suspend-to-disk enabled='no'/></pm><devices/></domain>" ;;
  autostart) ;;
  undefine) rm -f "$d.state" "$d.reason" "$d.persistent" ;;
  vol-info)
    name=\${!#}
    if [ -e "$d.disk" ] && [ "$name" = "$(cat "$d.disk")" ]; then printf 'Capacity:       1073741824 bytes\\nAllocation:     1048576 bytes\\n'
    else echo "error: failed to get vol '$name'" >&2; echo "error: Storage volume not found: no storage vol with matching path '$name'" >&2; exit 1; fi ;;
  vol-delete) name=\${!#}; [ -e "$d.disk" ] && [ "$name" = "$(cat "$d.disk")" ] && rm -f "$d.disk"; true ;;
  pool-list) echo vrp ;;
  pool-dumpxml) echo "<pool><target><path>${poolPath}</path></target></pool>" ;;
  pool-info) printf 'State:          running\\nAutostart:      yes\\n' ;;
  vol-list) printf ' Name   Path\\n-------------\\n' ;;
  *) [ -t 0 ] || cat > /dev/null ;;
esac
`;
  writeFileSync(join(bin, 'virsh'), script);
  chmodSync(join(bin, 'virsh'), 0o755);
  return bin;
}

const vmId = '5e5e5e5e-0000-4000-8000-000000000001';

/** A source and destination as the row gives them, and what the give-up should make of them. */
interface Row {
  readonly name: string;
  readonly a: Domain;
  readonly b: Domain;
  /** Recorded on b (moved), or left on a (undone). */
  readonly on: 'a' | 'b';
  /** The commands that change a domain's power, per host, in order. */
  readonly power: string[];
}

/** A domain in `state (reason)`, defined, with its disk there unless said. */
const domain = (state: Domain['state'], reason: string, o: Partial<Domain> = {}): Domain => ({
  state,
  reason,
  persistent: true,
  disk: true,
  ...o,
});
const pausedForMove = domain('paused', 'migrating');
const moved = ['a destroy', 'b start'];
const undone = ['b destroy', 'a resume'];
const ROWS: Row[] = [
  [
    'stopped there after it ran (destroyed): moved, started there',
    pausedForMove,
    domain('shut off', 'destroyed'),
    'b',
    moved,
  ],
  [
    'stopped there with a reason its daemon forgot (unknown): moved, started there',
    pausedForMove,
    domain('shut off', 'unknown'),
    'b',
    moved,
  ],
  [
    'paused there since it ran (an I/O error): moved, left paused',
    pausedForMove,
    domain('paused', 'I/O error'),
    'b',
    ['a destroy'],
  ],
  [
    'asleep there since it ran (the guest suspended itself, pmsuspended): moved, left as it is',
    pausedForMove,
    domain('pmsuspended', 'unknown'),
    'b',
    ['a destroy'],
  ],
  [
    'its Finish failed there (shut off (failed)): undone, the source resumed',
    pausedForMove,
    domain('shut off', 'failed'),
    'a',
    undone,
  ],
  [
    'an incoming domain never defined there (paused (migrating)): undone, the source resumed',
    pausedForMove,
    domain('paused', 'migrating', { persistent: false }),
    'a',
    undone,
  ],
  [
    'stopped there without its disk: undone, the source resumed',
    pausedForMove,
    domain('shut off', 'destroyed', { disk: false }),
    'a',
    undone,
  ],
  [
    'the source paused for another reason (an I/O error): never a switch-over; undone',
    domain('paused', 'I/O error'),
    domain('shut off', 'destroyed'),
    'a',
    undone,
  ],
].map(([name, a, b, on, power]) => ({ name, a, b, on, power }) as Row);

/** Each host's domain as the row gives it, the VM on A moving to B, both hosts' room taken (as the move's first attempt left them). */
async function setUp(db: Store['db'], dir: string, a: Domain, b: Domain): Promise<void> {
  for (const [host, d] of [['a', a] as const, ['b', b] as const]) {
    writeFileSync(join(dir, `${host}.state`), `${d.state}\n`);
    writeFileSync(join(dir, `${host}.reason`), `${d.reason}\n`);
    writeFileSync(join(dir, `${host}.persistent`), d.persistent ? 'yes\n' : 'no\n');
    if (d.disk) writeFileSync(join(dir, `${host}.disk`), `${vmId}.qcow2\n`);
    else rmSync(join(dir, `${host}.disk`), { force: true });
  }
  writeFileSync(join(dir, 'log'), '');
  await insertLibvirtVm(db, vmId, 'a');
  await db.updateTable('libvirt_vms').set({ migrating_to: 'b' }).where('id', '=', vmId).execute();
  for (const id of ['a', 'b'])
    await db
      .updateTable('hypervisor_hosts')
      .set({ used_cpu: 1, used_ram_gb: 1, used_disk_gb: 10 })
      .where('id', '=', id)
      .execute();
}

/** Where the VM is recorded, and each host's memory taken. */
async function recorded(db: Store['db']) {
  const vm = await db
    .selectFrom('libvirt_vms')
    .select(['host_id', 'migrating_to'])
    .where('id', '=', vmId)
    .executeTakeFirstOrThrow();
  const room = await db.selectFrom('hypervisor_hosts').select(['id', 'used_ram_gb']).orderBy('id').execute();
  return { vm, room: room.map((h) => [h.id, h.used_ram_gb]) };
}

/** The commands that changed a domain's power, per host, in order, and the whole log. */
function powerCommands(dir: string): { power: string[]; log: string } {
  const log = readFileSync(join(dir, 'log'), 'utf8');
  const power = log
    .split('\n')
    .map((l) => l.split(' '))
    .filter(([, command]) => ['destroy', 'start', 'resume', 'dompmwakeup'].includes(command ?? ''))
    .map(([host, command]) => `${host} ${command}`);
  return { power, log };
}

/** The scripted hosts, a store of `kind` and the driver over them, for `use`; all gone after. */
async function withScriptedHosts(
  kind: string,
  use: (o: { dir: string; store: Store; driver: HypervisorDriver }) => Promise<void>,
): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-switch-over-'));
  const poolPath = join(dir, 'pool');
  const pg = kind === 'postgres' ? await createPgDatabase() : undefined;
  const store = await openStore({ databaseUrl: pg?.url, dataDir: dir });
  const savedPath = process.env.PATH;
  process.env.PATH = `${scriptedVirsh(dir, poolPath)}:${savedPath}`;
  const driver = await createDriver(
    loadConfig({
      VRP_DATA_DIR: dir,
      VRP_DRIVER: 'libvirt',
      VRP_LIBVIRT_STORAGE: poolPath,
      VRP_LIBVIRT_HOSTS: `a,qemu+unix:///system?socket=${dir}/a,4,8,100;b,qemu+unix:///system?socket=${dir}/b,4,8,100`,
    }),
    store.db,
  );
  try {
    await use({ dir, store, driver });
  } finally {
    process.env.PATH = savedPath;
    await driver.close();
    await store.close();
    await pg?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Clears what a row left in the store. */
async function clearRow(db: Store['db']): Promise<void> {
  await db.deleteFrom('libvirt_leftovers').execute();
  await db.deleteFrom('libvirt_vms').where('id', '=', vmId).execute();
}

for (const kind of testStores()) {
  test(`a move's give-up with its source paused: switched over or not, by libvirt's states and reasons (${kind})`, async (t) => {
    await withScriptedHosts(kind, async ({ dir, store, driver }) => {
      for (const row of ROWS)
        await t.test(row.name, async () => {
          await setUp(store.db, dir, row.a, row.b);
          try {
            await driver.abandonMigration(vmId);
            const left = row.on === 'a' ? 'b' : 'a';
            const now = await recorded(store.db);
            assert.deepEqual(now.vm, { host_id: row.on, migrating_to: null });
            assert.deepEqual(
              now.room,
              [
                ['a', row.on === 'a' ? 1 : 0],
                ['b', row.on === 'b' ? 1 : 0],
              ],
              'the room of the host it left given back',
            );
            const { power, log } = powerCommands(dir);
            assert.deepEqual(power, row.power, log);
            assert.equal(existsSync(join(dir, `${row.on}.disk`)), true, 'its disk kept where it is recorded');
            assert.equal(existsSync(join(dir, `${left}.disk`)), false, 'the other copy of its disk removed');
            assert.equal(
              existsSync(join(dir, `${left}.state`)),
              false,
              'the other copy of its domain removed',
            );
          } finally {
            await clearRow(store.db);
          }
        });
    });
  });
}

/** The look's reading at which a host stops answering (the command it fails at), and the domains it is taken on. */
const CUT_SHORT: [string, string, Domain, Domain][] = [
  ["the source's reason", 'a domstate --reason', pausedForMove, domain('shut off', 'destroyed')],
  ["the destination's reason", 'b domstate --reason', pausedForMove, domain('shut off', 'destroyed')],
  ["the destination's disk", 'b vol-info', pausedForMove, domain('shut off', 'destroyed')],
  ["the destination's definition", 'b dominfo', pausedForMove, domain('paused', 'I/O error')],
];

for (const kind of testStores()) {
  test(`a give-up whose look is cut short by a host that stops answering changes nothing, and says to try again (${kind})`, async (t) => {
    await withScriptedHosts(kind, async ({ dir, store, driver }) => {
      for (const [name, failing, a, b] of CUT_SHORT)
        await t.test(`${name} (${failing})`, async () => {
          await setUp(store.db, dir, a, b);
          writeFileSync(join(dir, 'fail'), failing);
          try {
            const before = await recorded(store.db);
            const err = await driver.abandonMigration(vmId).then(
              () => undefined,
              (e: unknown) => e,
            );
            assert.ok(err instanceof DriverError, String(err));
            assert.equal(err.transient, true, err.message);
            const { power, log } = powerCommands(dir);
            assert.ok(log.includes(`${failing} `), `the reading was made and failed:\n${log}`);
            // Still moving to B, both hosts' room held, no domain powered or removed, both disks kept.
            assert.deepEqual(await recorded(store.db), before);
            assert.deepEqual(before.vm, { host_id: 'a', migrating_to: 'b' });
            assert.deepEqual(power, [], log);
            for (const host of ['a', 'b']) {
              assert.equal(existsSync(join(dir, `${host}.state`)), true, `${host}'s domain kept`);
              assert.equal(existsSync(join(dir, `${host}.disk`)), true, `${host}'s disk kept`);
            }
            // Once the host answers again, the give-up settles it (here: moved, as the first test's rows).
            writeFileSync(join(dir, 'fail'), '');
            await driver.abandonMigration(vmId);
            assert.deepEqual((await recorded(store.db)).vm, { host_id: 'b', migrating_to: null });
          } finally {
            writeFileSync(join(dir, 'fail'), '');
            await clearRow(store.db);
          }
        });
    });
  });
}
