/** The libvirt driver's export pieces that need no host: backup XML, qemu-img map to runs, reading them. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DISK_RUN_MAX, DriverError } from '../../src/drivers/driver.ts';
import {
  backupXml,
  checkpointXml,
  type MapExtent,
  parseMap,
  planRuns,
  readRuns,
} from '../../src/drivers/libvirt/disk-export.ts';
import { capacityBytes } from '../../src/drivers/libvirt/storage.ts';

const MiB = 1024 * 1024;

test('the backup XML pushes vda into the target file, incremental when a checkpoint is named; the checkpoint is a bitmap of vda', () => {
  const full = backupXml('/var/lib/vrp/pool/export-b1.qcow2', null);
  assert.match(full, /^<domainbackup mode='push'><disks>/);
  assert.match(
    full,
    /<disk name='vda' backup='yes' type='file'><target file='\/var\/lib\/vrp\/pool\/export-b1.qcow2'\/><driver type='qcow2'\/><\/disk>/,
  );
  assert.match(full, /<disk name='vdb' backup='no'\/>/);
  assert.doesNotMatch(full, /incremental/);
  assert.match(backupXml('/p/export-b2.qcow2', 'b1'), /<incremental>b1<\/incremental>/);
  assert.match(
    checkpointXml('b2'),
    /<name>b2<\/name>.*<disk name='vda' checkpoint='bitmap'\/><disk name='vdb' checkpoint='no'\/>/,
  );
  assert.throws(
    () => checkpointXml("b'><x"),
    (err: unknown) => err instanceof DriverError && !err.transient,
  );
  assert.throws(() => backupXml('/p/x', '../b1'), DriverError);
});

test("qemu-img map's extents become ascending runs of at most 4 MiB: data from the file, zeros only in an incremental, absent ranges never", () => {
  const extents: MapExtent[] = parseMap(
    JSON.stringify([
      { start: 0, length: MiB, depth: 0, present: true, zero: false, data: true, offset: 327680 },
      // Adjacent, elsewhere in the file: joined into the same run, read from both places.
      { start: MiB, length: MiB, depth: 0, present: true, zero: false, data: true, offset: 10 * MiB },
      { start: 2 * MiB, length: 2 * MiB, depth: 0, present: false, zero: true, data: false },
      { start: 4 * MiB, length: 3 * MiB, depth: 0, present: true, zero: true, data: false },
      { start: 7 * MiB, length: 9 * MiB, depth: 0, present: true, zero: false, data: true, offset: 20 * MiB },
    ]),
  );
  const inc = planRuns(extents, 'incremental');
  assert.deepEqual(
    inc.map((r) => [r.offset / MiB, r.length / MiB, r.zero]),
    [
      [0, 2, false],
      [4, 3, true],
      [7, 4, false],
      [11, 4, false],
      [15, 1, false],
    ],
  );
  assert.deepEqual(inc[0]?.reads, [
    { from: 327680, length: MiB },
    { from: 10 * MiB, length: MiB },
  ]);
  assert.deepEqual(inc[3]?.reads, [{ from: 24 * MiB, length: 4 * MiB }]);
  for (const r of inc) assert.ok(r.length <= DISK_RUN_MAX);
  // A full export has no zero runs: an uncovered range reads as zeros.
  assert.deepEqual(
    planRuns(extents, 'full').map((r) => [r.offset / MiB, r.length / MiB, r.zero]),
    [
      [0, 2, false],
      [7, 4, false],
      [11, 4, false],
      [15, 1, false],
    ],
  );
  // A data extent without a file offset (a compressed cluster) cannot be read as is.
  assert.throws(
    () => planRuns([{ start: 0, length: MiB, present: true, zero: false, data: true }], 'full'),
    DriverError,
  );
});

test('the runs read the planned ranges of the local file', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-disk-export-'));
  try {
    const file = join(dir, 'f');
    const bytes = Buffer.alloc(64);
    for (let i = 0; i < 64; i++) bytes[i] = i;
    writeFileSync(file, bytes);
    const runs = [];
    for await (const r of readRuns(file, [
      {
        offset: 0,
        length: 8,
        zero: false,
        reads: [
          { from: 4, length: 4 },
          { from: 40, length: 4 },
        ],
      },
      { offset: 100, length: 3, zero: true, reads: [] },
    ]))
      runs.push([r.offset, [...r.data]]);
    assert.deepEqual(runs, [
      [0, [4, 5, 6, 7, 40, 41, 42, 43]],
      [100, [0, 0, 0]],
    ]);
    await assert.rejects(async () => {
      for await (const _ of readRuns(file, [
        { offset: 0, length: 8, zero: false, reads: [{ from: 60, length: 8 }] },
      ]));
    }, DriverError);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('volume capacities as vol-create-as takes them', () => {
  assert.equal(capacityBytes('10G'), 10 * 1024 ** 3);
  assert.equal(capacityBytes('512M'), 512 * MiB);
  assert.equal(capacityBytes('4096'), 4096);
  assert.throws(() => capacityBytes('ten'), DriverError);
});
