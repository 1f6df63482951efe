/** The libvirt driver's readings of virsh's storage answers and of host URIs (no libvirt needed). */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DriverError } from '../../src/drivers/driver.ts';
import { FenceDown, fenced } from '../../src/drivers/fence.ts';
import type { Commands, CopyLimit, CopyPace } from '../../src/drivers/libvirt/commands.ts';
import {
  jobBytesProcessed,
  migrationAddress,
  migrationAddressArgs,
  parseJobInfo,
} from '../../src/drivers/libvirt/libvirt-driver.ts';
import {
  checkRoom,
  createPoolStorage,
  isNoPool,
  largestVolumeIn,
  parseVolumeList,
  parseVolumeXml,
} from '../../src/drivers/libvirt/storage.ts';
import { waitUntil } from '../helpers/budget.ts';

/** The pool storage over a scripted `virsh` (the driver's other commands are not used). */
function scriptedPool(virsh: Commands['virsh'], pace?: CopyPace) {
  const never = async (): Promise<never> => {
    throw new Error('not used');
  };
  return createPoolStorage({ virsh, run: never, virshShell: never, close: async () => {} }, '/p', pace);
}

/** virsh's failure of `line` as the driver's commands report it (exit 1, libvirt's `stderr`). */
const virshFailure = (what: string, line: string, stderr: string) =>
  new DriverError(what, {
    transient: false,
    details: { command: `virsh ${line}`, exitCode: 1, signal: null, stderr },
  });

test("a live migration's data goes to the destination's host name, or to loopback for a local libvirtd", () => {
  assert.equal(migrationAddress('qemu+ssh://root@kvm2.internal/system'), 'kvm2.internal');
  assert.equal(migrationAddress('qemu+tcp://10.0.0.7:16509/system'), '10.0.0.7');
  assert.equal(migrationAddress('qemu+unix:///system?socket=/run/vrp-test/b/libvirt-sock'), '127.0.0.1');
  assert.equal(migrationAddress('qemu:///system'), '127.0.0.1');
});

test('a migration to a loopback address makes the destination listen on that address only', () => {
  // libvirt refuses a loopback migration_address in qemu.conf: without --listen-address the
  // destination's QEMU (and its NBD server for the disks) would listen on every address.
  assert.deepEqual(
    migrationAddressArgs('qemu+unix:///system?socket=/tmp/vrp-test-hosts/b/run/libvirt-sock'),
    ['--listen-address', '127.0.0.1', '--migrateuri', 'tcp://127.0.0.1'],
  );
  assert.deepEqual(migrationAddressArgs('qemu:///system'), [
    '--listen-address',
    '127.0.0.1',
    '--migrateuri',
    'tcp://127.0.0.1',
  ]);
  assert.deepEqual(migrationAddressArgs('qemu+tcp://[::1]/system'), [
    '--listen-address',
    '::1',
    '--migrateuri',
    'tcp://[::1]',
  ]);
  // A remote host listens where its own libvirt says (qemu.conf), and the data goes to its name.
  assert.deepEqual(migrationAddressArgs('qemu+ssh://root@kvm2.internal/system'), [
    '--migrateuri',
    'tcp://kvm2.internal',
  ]);
});

test("the volume names of `virsh vol-list`'s table", () => {
  const table = ` Name                         Path
---------------------------------------------------------------
 0c0c.qcow2                   /var/lib/vrp/pool/0c0c.qcow2
 template-tiny-d00f960734d3-337fe70b.initrd   /var/lib/vrp/pool/template-tiny-d00f960734d3-337fe70b.initrd

`;
  assert.deepEqual(parseVolumeList(table), ['0c0c.qcow2', 'template-tiny-d00f960734d3-337fe70b.initrd']);
  assert.deepEqual(parseVolumeList(' Name   Path\n--------------\n\n'), []);
});

test("a migration's figures from the destination's `domjobinfo --completed`", () => {
  const out = `Job type:         Completed
Operation:        Incoming migration
Time elapsed:     9035         ms
Data processed:   1.003 GiB
Total downtime:   95           ms
Downtime w/o network: 93           ms
`;
  assert.deepEqual(parseJobInfo(out), { downtime_ms: 95, elapsed_ms: 9035 });
  assert.deepEqual(parseJobInfo('Job type:         None\n'), {});
});

test("a pool's largest volume from `virsh vol-list --details` (libvirt 9.0's words and units)", () => {
  const listing = ` Name            Path                              Type   Capacity    Allocation
----------------------------------------------------------------------------------
 probe-a.qcow2   /var/lib/vrp/pool/probe-a.qcow2   file   20.00 GiB   196.00 KiB
 probe-b.raw     /var/lib/vrp/pool/probe-b.raw     file   1.50 GiB    1.50 GiB
`;
  assert.equal(largestVolumeIn(listing), 20 * 1024 ** 3);
  assert.equal(largestVolumeIn(' a   /p/a   file   1.00 TiB   2.50 TiB\n'), 2.5 * 1024 ** 4);
  assert.equal(largestVolumeIn(' Name   Path   Type   Capacity   Allocation\n-----\n'), 0, 'an empty pool');
});

test("a domain job's bytes moved so far, from `virsh domjobinfo --rawstats` (libvirt 9.0's words)", () => {
  // A push backup under way, as libvirt 9.0 reported one.
  const backup =
    'Job type: 2\n\noperation: 9\ntime_elapsed: 4923\ndisk_total: 2147483648\ndisk_processed: 1013972992\ndisk_remaining: 1133510656\n';
  assert.equal(jobBytesProcessed(backup), 1013972992);
  // A migration: its data, memory and disk together.
  const migration =
    'Job type: 2\n\noperation: 3\ndata_total: 3221225472\ndata_processed: 734003200\nmemory_processed: 100000\ndisk_processed: 733903200\n';
  assert.equal(jobBytesProcessed(migration), 734003200);
  assert.equal(jobBytesProcessed('Job type: 2\n\nmemory_processed: 5\n'), 5);
  // No job: nothing to tell.
  assert.equal(jobBytesProcessed('Job type: 0\n\n'), undefined);
});

test('a pool refresh refused while the host builds a volume is tried again; past its wait it fails as transient', async () => {
  const busy =
    "error: Failed to refresh pool vrp\nerror: internal error: pool 'vrp' has asynchronous jobs running.";
  /**
   * A host whose pool-refresh answers each of `answers` in turn (a stderr fails it), then
   * succeeds; its pool's largest volume is `largest` (vol-list --details, as virsh prints it).
   */
  const host = (answers: (string | null)[], pace?: CopyPace, largest = '20.00 GiB') => {
    const asked: string[] = [];
    const virsh = async (_uri: string, args: readonly string[]) => {
      asked.push(args.join(' '));
      if (args[0] === 'vol-list')
        return {
          stdout: ` Name   Path   Type   Capacity   Allocation\n---\n a.qcow2   /p/a.qcow2   file   ${largest}   1.00 B\n`,
          stderr: '',
        };
      const stderr = answers.shift();
      if (stderr)
        throw new DriverError('Could not read the storage pool', {
          transient: false,
          details: { command: `virsh ${args.join(' ')}`, exitCode: 1, signal: null, stderr },
        });
      return { stdout: '', stderr: '' };
    };
    return {
      asked,
      pool: scriptedPool(virsh, pace),
    };
  };
  // Another VM's copy in the pool ends after two tries: the refresh then reads the pool. Its
  // wait, once first refused, is as long as a copy of the pool's largest volume may take.
  const copying = host([busy, busy, null]);
  await copying.pool.refresh('u');
  assert.deepEqual(copying.asked, [
    'pool-refresh vrp',
    'vol-list --details vrp',
    'pool-refresh vrp',
    'pool-refresh vrp',
  ]);
  // That wait, at a pace where a copy of the largest volume takes a second: tries until the next
  // pause would pass it (one to three of them), then a transient failure.
  const outlasting = host(
    Array(20).fill(busy),
    { stallMs: 1000, minBytesPerSecond: 1024, baseMs: 0 },
    '1.00 KiB',
  );
  await assert.rejects(outlasting.pool.refresh('u'), (err: unknown) => {
    assert.ok(err instanceof DriverError && err.transient);
    assert.match(err.message, /busy with a copy/);
    return true;
  });
  assert.equal(outlasting.asked.filter((a) => a === 'vol-list --details vrp').length, 1, 'read once');
  assert.ok(outlasting.asked.filter((a) => a === 'pool-refresh vrp').length < 20, 'not waited out');
  // Any other refusal is not waited out.
  const lost = host(['error: Cannot recv data: Connection reset by peer']);
  await assert.rejects(lost.pool.refresh('u'), /Could not read the storage pool/);
  assert.equal(lost.asked.length, 1);
  // With no wait (the template sweep's), one try, and a transient failure that says why.
  const once = host([busy, null]);
  await assert.rejects(once.pool.refresh('u', 0), (err: unknown) => {
    assert.ok(err instanceof DriverError && err.transient);
    assert.match(err.message, /busy with a copy/);
    assert.match(err.details?.stderr ?? '', /asynchronous jobs running/);
    return true;
  });
  assert.equal(once.asked.length, 1);
  // An attempt whose fence goes down (its lease lost: fence.ts) while it waits stops at once.
  const abort = new AbortController();
  const fence = { signal: abort.signal, check: () => abort.signal.throwIfAborted() };
  const leaseLost = host([busy, busy, busy, busy, busy, busy, null]);
  const waiting = fenced(fence, () => leaseLost.pool.refresh('u')).catch((e: unknown) => e);
  await waitUntil('a first try', () => leaseLost.asked.length > 0 || undefined, { everyMs: 5 });
  abort.abort(new FenceDown());
  assert.ok((await waiting) instanceof FenceDown);
  assert.equal(leaseLost.asked.filter((a) => a === 'pool-refresh vrp').length, 1, 'not tried again');
});

test('a pool whose refresh failed is checked again by the next ready() (libvirt may have stopped it)', async () => {
  const asked: string[] = [];
  let refreshFails = true;
  const virsh = async (_uri: string, args: readonly string[]) => {
    const line = args.join(' ');
    asked.push(line);
    if (line === 'pool-refresh vrp' && refreshFails)
      throw virshFailure('Could not read the storage pool', line, 'error: cannot open directory');
    const answers: Record<string, string> = {
      'pool-list --all --name': 'vrp\n',
      'pool-dumpxml vrp': '<pool><target><path>/p</path></target></pool>',
      'pool-info vrp': 'State:          running\nAutostart:      yes\n',
    };
    return { stdout: answers[line] ?? '', stderr: '' };
  };
  const pool = scriptedPool(virsh);
  await pool.ready('u');
  await pool.ready('u');
  assert.equal(asked.filter((l) => l.startsWith('pool-list')).length, 1, 'checked once, then known');
  await assert.rejects(pool.refresh('u'), /Could not read the storage pool/);
  refreshFails = false;
  await pool.ready('u');
  assert.equal(
    asked.filter((l) => l.startsWith('pool-list')).length,
    2,
    'checked again after the failed refresh',
  );
  await pool.refresh('u');
  await pool.ready('u');
  assert.equal(
    asked.filter((l) => l.startsWith('pool-list')).length,
    2,
    'a refresh that went through changes nothing',
  );
});

test('a pool gone or stopped since it was prepared is prepared again and read once more; one never prepared is left as it is', async () => {
  const asked: string[] = [];
  /** What the host says to the next read of its pool (as virsh 9.0 says each), once. */
  let gone: string | undefined;
  /** The pool reads as stopped, and its pool-start is refused. */
  let startRefused = false;
  let refreshFails = false;
  const virsh = async (_uri: string, args: readonly string[]) => {
    const line = args.join(' ');
    asked.push(line);
    if (refreshFails && line === 'pool-refresh vrp')
      throw virshFailure('Could not read the storage pool', line, 'error: cannot open directory');
    if (startRefused && line === 'pool-info vrp') return { stdout: 'State:          inactive\n', stderr: '' };
    if (startRefused && /^pool-(build|start)/.test(line))
      throw virshFailure('Could not prepare the storage pool', line, 'error: cannot open directory');
    const said = gone;
    if (said && /^vol-(info|list|dumpxml)/.test(line)) {
      gone = undefined;
      throw virshFailure('Could not read a storage volume', line, said);
    }
    if (line === 'vol-info --bytes --pool vrp y.qcow2')
      throw new DriverError('Could not read a storage volume', {
        transient: false,
        details: {
          command: `virsh ${line}`,
          exitCode: 1,
          signal: null,
          stderr:
            "error: failed to get vol 'y.qcow2'\nerror: Storage volume not found: no storage vol with matching path 'y.qcow2'",
        },
      });
    const answers: Record<string, string> = {
      'pool-list --all --name': 'vrp\n',
      'pool-dumpxml vrp': '<pool><target><path>/p</path></target></pool>',
      'pool-info vrp': 'State:          running\nAutostart:      yes\n',
      'vol-info --bytes --pool vrp x.qcow2': 'Capacity:       1024 bytes\nAllocation:     512 bytes\n',
      'vol-list vrp': ' Name      Path\n---------------------\n x.qcow2   /p/x.qcow2\n',
      'vol-dumpxml --pool vrp x.qcow2':
        "<volume><capacity unit='bytes'>1024</capacity><allocation unit='bytes'>512</allocation><target><format type='qcow2'/></target></volume>",
    };
    return { stdout: answers[line] ?? '', stderr: '' };
  };
  const pool = scriptedPool(virsh);
  const checks = () => asked.filter((l) => l.startsWith('pool-list')).length;
  const noPool =
    "error: failed to get pool 'vrp'\nerror: Storage pool not found: no storage pool with matching name 'vrp'";
  // Never prepared by this process: libvirt's error, as it is (a host without the pool yet).
  gone = noPool;
  const err = await pool.info('u', 'x.qcow2').then(
    () => assert.fail('read a pool that is not there'),
    (e: unknown) => e,
  );
  assert.ok(isNoPool(err), String(err));
  assert.equal(checks(), 0, 'not prepared by a read');
  await pool.ready('u');
  for (const [said, read, expected] of [
    [noPool, () => pool.info('u', 'x.qcow2'), { capacity: 1024, allocation: 512 }],
    ["error: pool 'vrp' is not active", () => pool.info('u', 'x.qcow2'), { capacity: 1024, allocation: 512 }],
    [
      "error: Failed to list volumes\nerror: Requested operation is not valid: storage pool 'vrp' is not active",
      () => pool.list('u'),
      new Set(['x.qcow2']),
    ],
    [noPool, () => pool.checkQcow2('u', 'x.qcow2'), { capacity: 1024, allocation: 512 }],
  ] as const) {
    gone = said;
    const before = checks();
    assert.deepEqual(await read(), expected, said);
    assert.equal(checks(), before + 1, `${said}: prepared again`);
  }
  assert.deepEqual(await pool.info('u', 'x.qcow2'), { capacity: 1024, allocation: 512 });
  await pool.ready('u');
  assert.equal(checks(), 5, 'a read that went through changes nothing');
  // A missing volume is no missing pool: no error, and the pool is not prepared again.
  assert.equal(await pool.info('u', 'y.qcow2'), undefined);
  assert.equal(checks(), 5);
  // Gone, and cannot be prepared again now (its directory cannot be made): the read fails with
  // the preparation's error; the next read that finds it gone prepares it again.
  startRefused = true;
  gone = noPool;
  const refused = await pool.info('u', 'x.qcow2').then(
    () => assert.fail('read a pool that could not be prepared'),
    (e: unknown) => e,
  );
  assert.ok(refused instanceof DriverError && !refused.transient, String(refused));
  assert.match(
    refused.message,
    /The host's storage pool was gone or stopped, and could not be prepared again: Could not prepare the storage pool/,
  );
  startRefused = false;
  let last = checks();
  gone = noPool;
  assert.deepEqual(await pool.info('u', 'x.qcow2'), { capacity: 1024, allocation: 512 });
  assert.equal(checks(), last + 1, 'prepared again after the failed preparation');
  // A refresh that failed (libvirt stops the pool then): forgotten, and the next read that finds
  // it stopped prepares it again.
  refreshFails = true;
  await assert.rejects(pool.refresh('u'), /Could not read the storage pool/);
  refreshFails = false;
  last = checks();
  gone = "error: pool 'vrp' is not active";
  assert.deepEqual(await pool.info('u', 'x.qcow2'), { capacity: 1024, allocation: 512 });
  assert.equal(checks(), last + 1, 'prepared again after the failed refresh');
  // A read that finds no pool while this process's first preparation is under way waits for
  // it, and reads again: one preparation.
  const fresh = scriptedPool(virsh);
  const before = checks();
  gone = noPool;
  const [, read] = await Promise.all([fresh.ready('u'), fresh.info('u', 'x.qcow2')]);
  assert.deepEqual(read, { capacity: 1024, allocation: 512 });
  assert.equal(checks(), before + 1, 'prepared once');
});

test('a copy of a .qcow2 volume libvirt knows by another format: the pool read again first, and refused if still so', async () => {
  /** A host whose `vol-dumpxml` of the source says each of `formats` in turn. */
  const host = (formats: string[]) => {
    const asked: string[] = [];
    const limits: unknown[] = [];
    const virsh = async (
      _uri: string,
      args: readonly string[],
      _what: string,
      limit?: number | CopyLimit,
    ) => {
      asked.push(args[0] ?? '');
      if (args[0] === 'vol-create-from') limits.push(limit);
      const stdout =
        args[0] === 'vol-dumpxml'
          ? `<volume><capacity unit='bytes'>${formats.length === 1 ? 21474836480 : 1}</capacity><allocation unit='bytes'>1073741824</allocation><target><format type='${formats.shift()}'/></target></volume>`
          : '';
      return { stdout, stderr: '' };
    };
    return {
      asked,
      limits,
      pool: scriptedPool(virsh),
    };
  };
  const known = host(['qcow2']);
  await known.pool.cloneFlat('u', 'a.qcow2', 'b.qcow2');
  // Its size for its time limit read with its format, once: the virtual size (20 GiB), the
  // larger; libvirtd copies and tells nothing of its progress.
  assert.deepEqual(known.asked, ['vol-dumpxml', 'vol-create-from']);
  const [limit] = known.limits as CopyLimit[];
  assert.equal(limit?.bytes, 21474836480);
  assert.equal(await limit?.progress?.(1), undefined);
  const stale = host(['raw', 'qcow2']);
  await stale.pool.cloneFlat('u', 'a.qcow2', 'b.qcow2');
  assert.deepEqual(stale.asked, ['vol-dumpxml', 'pool-refresh', 'vol-dumpxml', 'vol-create-from']);
  assert.equal(
    (stale.limits as CopyLimit[])[0]?.bytes,
    21474836480,
    'the size of the read after the refresh',
  );
  const raw = host(['raw', 'raw']);
  await assert.rejects(raw.pool.cloneFlat('u', 'a.qcow2', 'b.qcow2'), (err: unknown) => {
    assert.ok(err instanceof DriverError && !err.transient);
    assert.match(err.message, /a\.qcow2 is not a qcow2 image \(libvirt reads it as raw\)/);
    return true;
  });
  assert.ok(!raw.asked.includes('vol-create-from'), 'nothing copied');
});

test("a pool's free bytes: read again first, the last figure while a copy holds the pool; a copy refused where it cannot fit", async () => {
  const busy =
    "error: Failed to refresh pool vrp\nerror: internal error: pool 'vrp' has asynchronous jobs running.";
  /** A host whose pool-refresh fails with `refresh` (a stderr) or succeeds, and whose pool-info says `info`. */
  const host = (refresh: string | null, info: string) => {
    const asked: string[] = [];
    const virsh = async (_uri: string, args: readonly string[]) => {
      const line = args.join(' ');
      asked.push(line);
      if (line === 'pool-refresh vrp' && refresh)
        throw virshFailure('Could not read the storage pool', line, refresh);
      return { stdout: line === 'pool-info --bytes vrp' ? info : '', stderr: '' };
    };
    return {
      asked,
      pool: scriptedPool(virsh),
    };
  };
  const info =
    'Name:           vrp\nState:          running\nCapacity:       105089261568\nAllocation:     42241024000\nAvailable:      62848237568\n';
  // Available less 5% of Capacity (ext4 keeps that for root by default; QEMU's user cannot write it).
  const free = 62_848_237_568 - 5_254_463_079;
  const fresh = host(null, info);
  assert.deepEqual(await fresh.pool.room('u'), { bytes: free, fresh: true });
  assert.deepEqual(fresh.asked, ['pool-refresh vrp', 'pool-info --bytes vrp']);
  const copying = host(busy, info);
  assert.deepEqual(await copying.pool.room('u'), { bytes: free, fresh: false }, 'the last figure, said so');
  assert.deepEqual(copying.asked, ['pool-refresh vrp', 'pool-info --bytes vrp'], 'not waited out');
  await assert.rejects(
    host('error: cannot open directory', info).pool.room('u'),
    /Could not read the storage pool/,
  );
  assert.deepEqual(await host(null, 'Capacity:       1000\nAvailable:      10\n').pool.room('u'), {
    bytes: 0,
    fresh: true,
  });
  await assert.rejects(host(null, 'State: running\n').pool.room('u'), (err: unknown) => {
    assert.ok(err instanceof DriverError && err.transient);
    assert.match(err.message, /did not say how much room it has/);
    return true;
  });

  // A pool whose directory is on this machine (this machine's system libvirt): its filesystem's
  // free bytes to users other than root, read now, without libvirt (one place with TMPDIR there).
  const dir = mkdtempSync(join(tmpdir(), 'vrp-local-pool-'));
  try {
    const asked: string[] = [];
    const local = createPoolStorage(
      {
        virsh: async (_uri, args) => {
          asked.push(args.join(' '));
          return { stdout: info, stderr: '' };
        },
        run: async () => assert.fail('not used'),
        virshShell: async () => assert.fail('not used'),
        close: async () => {},
      },
      dir,
    );
    const fsFree = () => {
      const s = statfsSync(dir);
      return s.bavail * s.bsize;
    };
    // Read until the filesystem did not change around the read (other processes write to it).
    for (let tries = 1; ; tries++) {
      const before = fsFree();
      const room = await local.room('qemu:///system');
      if (before === fsFree()) {
        assert.deepEqual(room, { bytes: before, fresh: true });
        break;
      }
      assert.ok(tries < 100, 'the filesystem changed around every read');
    }
    assert.deepEqual(asked, [], 'libvirt not asked');
    // Another host (or this one through another URI): libvirt's figure, as above.
    assert.deepEqual(await local.room('qemu+ssh://h2.example/system'), { bytes: free, fresh: true });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  // Kept free beyond the copy: as much as the copy, up to 1 GiB.
  const GiB = 2 ** 30;
  const MiB = 2 ** 20;
  checkRoom(3 * GiB, 2 * GiB, 'here');
  assert.throws(
    () => checkRoom(3 * GiB - 1, 2 * GiB, "Host b's storage pool"),
    (err: unknown) => {
      assert.ok(err instanceof DriverError && !err.transient, 'a full disk is not waited out');
      assert.equal(
        err.message,
        "Host b's storage pool has 3.0 GiB free; the copy needs about 2.0 GiB and 1.0 GiB kept free",
      );
      return true;
    },
  );
  checkRoom(2 * MiB, MiB, 'here');
  checkRoom(0, 0, 'a copy of nothing');
  assert.throws(() => checkRoom(2 * MiB - 1, MiB, 'There'), {
    message: 'There has 2.0 MiB free; the copy needs about 1.0 MiB and 1.0 MiB kept free',
  });
});

test("a volume's size, allocation and backing file from `vol-dumpxml`", () => {
  const xml = (backing: string) => `<volume type='file'>
  <name>top.qcow2</name>
  <key>/var/lib/vrp/pool/top.qcow2</key>
  <capacity unit='bytes'>1073741824</capacity>
  <allocation unit='bytes'>200704</allocation>
  <physical unit='bytes'>196624</physical>
  <target>
    <path>/var/lib/vrp/pool/top.qcow2</path>
    <format type='qcow2'/>
  </target>${backing}
</volume>
`;
  assert.deepEqual(
    parseVolumeXml(
      xml(`
  <backingStore>
    <path>/var/lib/vrp/pool/template-tiny-d00f.qcow2</path>
    <format type='qcow2'/>
  </backingStore>`),
    ),
    { capacity: 1073741824, allocation: 200704, backing: '/var/lib/vrp/pool/template-tiny-d00f.qcow2' },
  );
  // A flat disk (restored, or moved cold before): no backing file.
  assert.deepEqual(parseVolumeXml(xml('')), { capacity: 1073741824, allocation: 200704 });
});
