/**
 * What the libvirt driver's look at both hosts makes of a live move whose source is paused (its
 * give-up, abandonMigration, which records a move that switched over and undoes one that did
 * not), by the states and reasons libvirt gives: a source paused for the move (`paused
 * (migrating)`) and a destination defined there and stopped with its disk, or paused since, ran
 * the guest there (recorded; a stopped one started); a destination whose Finish failed (`shut off
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
import { openStore } from '../../src/store/database.ts';
import { insertLibvirtVm } from '../helpers/libvirt.ts';
import { createPgDatabase, testStores } from '../helpers/stores.ts';

/** A domain on a scripted host: its state and reason as `virsh domstate --reason` says them, whether it is defined, whether its disk is in the pool. */
interface Domain {
  readonly state: 'running' | 'paused' | 'shut off';
  readonly reason: string;
  readonly persistent: boolean;
  readonly disk: boolean;
}

/**
 * A `virsh` that answers for hosts `a` and `b` (the last part of their URI) from files in `dir`
 * and writes each command it is given to `dir/log` as `HOST COMMAND ARGS`: the VM's domain state
 * (domstate, dominfo; none: libvirt's "no domain"), its disk (vol-info; vol-delete removes it),
 * a ready pool at `poolPath`; resume and start make it run, destroy stops it, undefine removes
 * it; anything else succeeds with nothing to say.
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
no_domain() { echo "error: failed to get domain '$1'" >&2; echo "error: Domain not found: no domain with matching name '$1'" >&2; exit 1; }
case "$1" in
  domstate)
    if [ "$2" = --reason ]; then dom=$3; else dom=$2; fi
    [ -e "$d.state" ] || no_domain "$dom"
    if [ "$2" = --reason ]; then echo "$(cat "$d.state") ($(cat "$d.reason"))"; else cat "$d.state"; fi ;;
  dominfo)
    [ -e "$d.state" ] || no_domain "$2"
    echo "Persistent:     $(cat "$d.persistent")" ;;
  resume|start) [ -e "$d.state" ] || no_domain "$2"; echo running > "$d.state"; echo booted > "$d.reason" ;;
  destroy) [ -e "$d.state" ] || no_domain "$2"; echo 'shut off' > "$d.state"; echo destroyed > "$d.reason" ;;
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

for (const kind of testStores()) {
  test(`a move's give-up with its source paused: switched over or not, by libvirt's states and reasons (${kind})`, async (t) => {
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
      for (const row of ROWS)
        await t.test(row.name, async () => {
          for (const [host, d] of [['a', row.a] as const, ['b', row.b] as const]) {
            writeFileSync(join(dir, `${host}.state`), `${d.state}\n`);
            writeFileSync(join(dir, `${host}.reason`), `${d.reason}\n`);
            writeFileSync(join(dir, `${host}.persistent`), d.persistent ? 'yes\n' : 'no\n');
            if (d.disk) writeFileSync(join(dir, `${host}.disk`), `${vmId}.qcow2\n`);
            else rmSync(join(dir, `${host}.disk`), { force: true });
          }
          writeFileSync(join(dir, 'log'), '');
          // The VM on A, moving to B: both hosts' room taken, as the move's first attempt left them.
          await insertLibvirtVm(store.db, vmId, 'a');
          await store.db
            .updateTable('libvirt_vms')
            .set({ migrating_to: 'b' })
            .where('id', '=', vmId)
            .execute();
          for (const id of ['a', 'b'])
            await store.db
              .updateTable('hypervisor_hosts')
              .set({ used_cpu: 1, used_ram_gb: 1, used_disk_gb: 10 })
              .where('id', '=', id)
              .execute();
          try {
            await driver.abandonMigration(vmId);
            const vm = await store.db
              .selectFrom('libvirt_vms')
              .select(['host_id', 'migrating_to'])
              .where('id', '=', vmId)
              .executeTakeFirstOrThrow();
            assert.deepEqual(vm, { host_id: row.on, migrating_to: null });
            const left = row.on === 'a' ? 'b' : 'a';
            const room = await store.db
              .selectFrom('hypervisor_hosts')
              .select(['id', 'used_ram_gb'])
              .orderBy('id')
              .execute();
            assert.deepEqual(
              room.map((h) => [h.id, h.used_ram_gb]),
              [
                ['a', row.on === 'a' ? 1 : 0],
                ['b', row.on === 'b' ? 1 : 0],
              ],
              'the room of the host it left given back',
            );
            const log = readFileSync(join(dir, 'log'), 'utf8').split('\n');
            const power = log
              .map((l) => l.split(' '))
              .filter(([, command]) => ['destroy', 'start', 'resume'].includes(command ?? ''))
              .map(([host, command]) => `${host} ${command}`);
            assert.deepEqual(power, row.power, log.join('\n'));
            assert.equal(existsSync(join(dir, `${row.on}.disk`)), true, 'its disk kept where it is recorded');
            assert.equal(existsSync(join(dir, `${left}.disk`)), false, 'the other copy of its disk removed');
            assert.equal(
              existsSync(join(dir, `${left}.state`)),
              false,
              'the other copy of its domain removed',
            );
          } finally {
            await store.db.deleteFrom('libvirt_leftovers').execute();
            await store.db.deleteFrom('libvirt_vms').where('id', '=', vmId).execute();
          }
        });
    } finally {
      process.env.PATH = savedPath;
      await driver.close();
      await store.close();
      await pg?.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
