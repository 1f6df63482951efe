/** The backup archive (segments compressed and sealed, manifests, chains) on a local store. */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import {
  BackupCorruptError,
  BackupDecryptError,
  type BackupMeta,
  createArchive,
} from '../../src/drivers/backup-store/archive.ts';
import { localBackupStore } from '../../src/drivers/backup-store/local.ts';
import type { DiskRun } from '../../src/drivers/driver.ts';

const MiB = 1024 * 1024;
const DISK = 24 * MiB;
const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function setup() {
  const root = await mkdtemp(join(tmpdir(), 'vrp-archive-'));
  dirs.push(root);
  const store = localBackupStore(root);
  const key = randomBytes(32);
  return { root, store, key, archive: createArchive(store, key) };
}

/** A disk as a buffer, and the runs a driver would give of it (only where `written` says). */
function runsOf(disk: Buffer, ranges: readonly [number, number][]): AsyncIterable<DiskRun> {
  return (async function* () {
    for (const [from, to] of ranges) {
      // Runs of at most 1 MiB, as a driver's reads come.
      for (let at = from; at < to; at += MiB)
        yield { offset: at, data: Buffer.from(disk.subarray(at, Math.min(to, at + MiB))) };
    }
  })();
}

async function assemble(runs: AsyncIterable<DiskRun>, size = DISK): Promise<Buffer> {
  const out = Buffer.alloc(size);
  let last = -1;
  for await (const run of runs) {
    assert.ok(run.offset >= last, 'runs come in ascending order');
    run.data.copy(out, run.offset);
    last = run.offset + run.data.length;
  }
  return out;
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const meta = (backupId: string, parentId: string | null): BackupMeta => ({
  backupId,
  serviceId: 'svc-1',
  parentId,
  kind: parentId ? 'incremental' : 'full',
  diskBytes: DISK,
  createdAt: 1,
});

/** A disk with random data, compressible text, and zeros in between. */
function firstDisk(): Buffer {
  const disk = Buffer.alloc(DISK);
  randomBytes(6 * MiB).copy(disk, 0);
  Buffer.from('all work and no play makes jack a dull boy\n'.repeat(100_000)).copy(disk, 10 * MiB);
  randomBytes(2 * MiB).copy(disk, 20 * MiB);
  return disk;
}

test('a full backup restores the exact disk, stored compressed and sealed', async () => {
  const { archive, root } = await setup();
  const disk = firstDisk();
  const m = await archive.write(meta('b1', null), runsOf(disk, [[0, DISK]]));
  assert.equal(m.kind, 'full');
  // A segment of zeros (16-20 MiB) is left out of a full backup; text compresses; random data
  // does not grow by more than the seals.
  assert.equal(m.dataBytes, 20 * MiB);
  assert.ok(m.storedBytes < 9 * MiB, `stored ${m.storedBytes}`);
  const read = await archive.manifest('svc-1', 'b1');
  assert.deepEqual(read, m);
  assert.equal(sha(await assemble(archive.restoreRuns([m]))), sha(disk));
  // Nothing in the store is plain: the text is nowhere in the objects.
  for (const name of await readdir(join(root, 'svc-1', 'b1')))
    assert.ok(!(await readFile(join(root, 'svc-1', 'b1', name))).includes('all work and no play'));
});

test('each backup of an incremental chain restores its own point, zeroed ranges included', async () => {
  const { archive } = await setup();
  const d1 = firstDisk();
  const full = await archive.write(meta('b1', null), runsOf(d1, [[0, DISK]]));
  const d2 = Buffer.from(d1);
  randomBytes(MiB).copy(d2, 3 * MiB);
  d2.fill(0, 20 * MiB, 21 * MiB);
  const inc1 = await archive.write(
    meta('b2', 'b1'),
    runsOf(d2, [
      [3 * MiB, 4 * MiB],
      [20 * MiB, 21 * MiB],
    ]),
  );
  const d3 = Buffer.from(d2);
  randomBytes(MiB / 2).copy(d3, 3 * MiB + MiB / 4);
  randomBytes(64 * 1024).copy(d3, 23 * MiB);
  const inc2 = await archive.write(
    meta('b3', 'b2'),
    runsOf(d3, [
      [3 * MiB + MiB / 4, 3 * MiB + (3 * MiB) / 4],
      [23 * MiB, 23 * MiB + 64 * 1024],
    ]),
  );
  assert.ok(inc1.storedBytes < full.storedBytes / 4, 'an incremental stores about what changed');
  assert.ok(inc2.storedBytes < (MiB / 2 + 64 * 1024) * 1.3, `stored ${inc2.storedBytes}`);
  assert.equal(sha(await assemble(archive.restoreRuns([full]))), sha(d1));
  assert.equal(sha(await assemble(archive.restoreRuns([full, inc1]))), sha(d2));
  assert.equal(sha(await assemble(archive.restoreRuns([full, inc1, inc2]))), sha(d3));
  // What a restore writes other than zeros, from the manifests, in the stored segments' units
  // (a full backup's: 4 MiB): the full one's data; less the MiB the first incremental zeroed (its
  // change over data is no more); the second's changes fall in segments stored already; a third
  // one's 64 KiB in a segment the full one left out (all zeros) adds them.
  assert.equal(archive.restoreDataBytes([full]), full.dataBytes);
  assert.equal(archive.restoreDataBytes([full, inc1]), full.dataBytes - MiB);
  assert.equal(archive.restoreDataBytes([full, inc1, inc2]), full.dataBytes - MiB);
  const d4 = Buffer.from(d3);
  randomBytes(64 * 1024).copy(d4, 17 * MiB);
  const inc3 = await archive.write(meta('b4', 'b3'), runsOf(d4, [[17 * MiB, 17 * MiB + 64 * 1024]]));
  assert.equal(sha(await assemble(archive.restoreRuns([full, inc1, inc2, inc3]))), sha(d4));
  assert.equal(archive.restoreDataBytes([full, inc1, inc2, inc3]), full.dataBytes - MiB + 64 * 1024);
  assert.throws(() => archive.restoreRuns([inc1, inc2]), BackupCorruptError);
  await assert.rejects(assemble(archive.restoreRuns([full, inc2])), /not one chain/);
});

test('merging a deleted backup into its child keeps every later point restorable', async () => {
  const { archive, store } = await setup();
  const d1 = firstDisk();
  const full = await archive.write(meta('b1', null), runsOf(d1, [[0, DISK]]));
  const d2 = Buffer.from(d1);
  randomBytes(2 * MiB).copy(d2, 5 * MiB);
  const inc1 = await archive.write(meta('b2', 'b1'), runsOf(d2, [[5 * MiB, 7 * MiB]]));
  const d3 = Buffer.from(d2);
  d3.fill(7, 6 * MiB, 8 * MiB);
  const inc2 = await archive.write(meta('b3', 'b2'), runsOf(d3, [[6 * MiB, 8 * MiB]]));

  // The middle one goes: b3 takes b2's changes and hangs from b1.
  const merged = await archive.mergeIntoChild(inc1, inc2);
  await archive.remove('svc-1', 'b2');
  assert.equal(merged.parentId, 'b1');
  assert.equal(merged.kind, 'incremental');
  assert.equal(sha(await assemble(archive.restoreRuns([full, merged]))), sha(d3));
  // The full one goes: b3 becomes full on its own.
  const alone = await archive.mergeIntoChild(full, merged);
  await archive.remove('svc-1', 'b1');
  assert.equal(alone.parentId, null);
  assert.equal(alone.kind, 'full');
  assert.deepEqual(await archive.manifest('svc-1', 'b3'), alone);
  assert.equal(sha(await assemble(archive.restoreRuns([alone]))), sha(d3));
  // Only b3's manifest and its one data object are left.
  assert.deepEqual((await store.list('svc-1')).sort(), [`svc-1/b3/${alone.dataObject}`, 'svc-1/b3/manifest']);
  await assert.rejects(archive.mergeIntoChild(full, alone), /not a child/);
});

test('another key cannot read a backup: "backup cannot be decrypted"', async () => {
  const { archive, store } = await setup();
  await archive.write(meta('b1', null), runsOf(firstDisk(), [[0, DISK]]));
  const other = createArchive(store, randomBytes(32));
  await assert.rejects(other.manifest('svc-1', 'b1'), (err: unknown) => {
    assert.ok(err instanceof BackupDecryptError);
    assert.equal((err as Error).message, 'backup cannot be decrypted');
    return true;
  });
  await assert.rejects(other.verify('svc-1', 'b1'), BackupDecryptError);
  assert.equal((await archive.verify('svc-1', 'b1')).ok, true);
});

test('verify and restore name the damaged part of a backup', async () => {
  const { archive, root } = await setup();
  const disk = firstDisk();
  const m = await archive.write(meta('b1', null), runsOf(disk, [[0, DISK]]));
  const good = await archive.verify('svc-1', 'b1');
  assert.deepEqual(good, { ok: true, segments: m.segments.length, bad: [] });
  const file = join(root, 'svc-1', 'b1', m.dataObject);
  const bytes = await readFile(file);
  const victim = m.segments[1];
  assert.ok(victim);
  bytes[victim.storedOffset + 100] = (bytes[victim.storedOffset + 100] as number) ^ 0xff;
  await writeFile(file, bytes);
  const report = await archive.verify('svc-1', 'b1');
  assert.equal(report.ok, false);
  assert.deepEqual(report.bad, [
    { segment: 1, offset: victim.offset, length: victim.length, reason: 'does not match its checksum' },
  ]);
  await assert.rejects(assemble(archive.restoreRuns([m])), (err: unknown) => {
    assert.ok(err instanceof BackupCorruptError);
    assert.match((err as Error).message, new RegExp(`segment 1 \\(disk bytes ${victim.offset}-`));
    return true;
  });
  // Cut short: the last segments are reported, with the object's size.
  await truncate(file, bytes.length - 10);
  const cut = await archive.verify('svc-1', 'b1');
  assert.equal(cut.ok, false);
  assert.match(cut.bad[0]?.reason ?? '', /data object is \d+ bytes/);
  assert.ok(cut.bad.some((b) => b.segment === m.segments.length - 1 && /cut short/.test(b.reason)));
  // A damaged manifest is told from a wrong key.
  const manifestFile = join(root, 'svc-1', 'b1', 'manifest');
  const mb = await readFile(manifestFile);
  mb[mb.length - 1] = (mb[mb.length - 1] as number) ^ 1;
  await writeFile(manifestFile, mb);
  await assert.rejects(archive.manifest('svc-1', 'b1'), /manifest of backup b1 is damaged/);
});

test('verify of a backup whose data object is cut in half or gone names every segment it lost', async () => {
  const { archive, root } = await setup();
  const m = await archive.write(meta('b1', null), runsOf(firstDisk(), [[0, DISK]]));
  const file = join(root, 'svc-1', 'b1', m.dataObject);
  const whole = await readFile(file);
  // Half of it: the segments past the cut are reported, each cut short.
  await truncate(file, Math.floor(whole.length / 2));
  const half = await archive.verify('svc-1', 'b1');
  assert.equal(half.ok, false);
  const lost = m.segments.filter((s) => s.storedOffset + s.storedLength > whole.length / 2).length;
  assert.equal(half.bad.filter((b) => /cut short/.test(b.reason)).length, lost);
  // Gone: every stored segment is reported missing, with where its bytes go on the disk.
  await rm(file);
  const gone = await archive.verify('svc-1', 'b1');
  assert.equal(gone.ok, false);
  assert.deepEqual(
    gone.bad,
    m.segments.map((s, segment) => ({
      segment,
      offset: s.offset,
      length: s.length,
      reason: 'data object missing',
    })),
  );
});

test('a source that fails midway leaves no backup and nothing in the store', async () => {
  const { archive, store } = await setup();
  const disk = firstDisk();
  async function* failing(): AsyncGenerator<DiskRun> {
    yield* runsOf(disk, [[0, 5 * MiB]]);
    throw new Error('the hypervisor went away');
  }
  await assert.rejects(archive.write(meta('b1', null), failing()), /went away/);
  assert.equal(await archive.manifest('svc-1', 'b1'), undefined);
  assert.deepEqual(await store.list('svc-1'), []);
});

test('small contiguous runs are joined into segments of up to 4 MiB; a rewrite replaces the data', async () => {
  const { archive, store } = await setup();
  const disk = randomBytes(10 * MiB);
  async function* small(): AsyncGenerator<DiskRun> {
    for (let at = 0; at < disk.length; at += 64 * 1024)
      yield { offset: at, data: disk.subarray(at, at + 64 * 1024) };
  }
  const first = await archive.write({ ...meta('b1', null), diskBytes: 10 * MiB }, small());
  assert.deepEqual(
    first.segments.map((s) => [s.offset, s.length]),
    [
      [0, 4 * MiB],
      [4 * MiB, 4 * MiB],
      [8 * MiB, 2 * MiB],
    ],
  );
  const second = await archive.write({ ...meta('b1', null), diskBytes: 10 * MiB }, small());
  assert.notEqual(second.dataObject, first.dataObject);
  assert.deepEqual((await store.list('svc-1')).sort(), [
    `svc-1/b1/${second.dataObject}`,
    'svc-1/b1/manifest',
  ]);
  assert.equal(sha(await assemble(archive.restoreRuns([second]), 10 * MiB)), sha(disk));
  await archive.remove('svc-1', 'b1');
  assert.deepEqual(await store.list('svc-1'), []);
  await archive.remove('svc-1', 'b1');
});

test('a removed backup leaves no directory in a local store, nor does a service whose backups are all removed', async () => {
  const { archive, root } = await setup();
  const d1 = firstDisk();
  await archive.write(meta('b1', null), runsOf(d1, [[0, DISK]]));
  const d2 = Buffer.from(d1);
  randomBytes(MiB).copy(d2, 5 * MiB);
  await archive.write(meta('b2', 'b1'), runsOf(d2, [[5 * MiB, 6 * MiB]]));
  await archive.write({ ...meta('b1', null), serviceId: 'svc-2' }, runsOf(d1, [[0, MiB]]));
  await archive.remove('svc-1', 'b2');
  assert.deepEqual(await readdir(join(root, 'svc-1')), ['b1']);
  await archive.remove('svc-1', 'b1');
  assert.deepEqual(await readdir(root), ['svc-2'], 'svc-1 is gone, svc-2 is kept');
  // Removing it again is fine.
  await archive.remove('svc-1', 'b1');
  await archive.remove('svc-2', 'b1');
  assert.deepEqual(await readdir(root), []);
});

test('a write after an attempt that died between its data and its manifest leaves one data object', async () => {
  const { archive, store, key } = await setup();
  const disk = firstDisk();
  // The first attempt's process dies once its data object is stored: its manifest never comes.
  const dying = createArchive(
    {
      ...store,
      async put(name, data) {
        if (name.endsWith('/manifest')) throw new Error('killed');
        return store.put(name, data);
      },
    },
    key,
  );
  await assert.rejects(dying.write(meta('b1', null), runsOf(disk, [[0, 8 * MiB]])), /killed/);
  assert.equal((await store.list('svc-1/b1/')).length, 1, 'the dead attempt left its data object');
  const m = await archive.write(meta('b1', null), runsOf(disk, [[0, 8 * MiB]]));
  assert.deepEqual((await store.list('svc-1/b1/')).sort(), [`svc-1/b1/${m.dataObject}`, 'svc-1/b1/manifest']);
  assert.equal((await archive.verify('svc-1', 'b1')).ok, true);
  const expected = Buffer.alloc(DISK);
  disk.copy(expected, 0, 0, 8 * MiB);
  assert.equal(sha(await assemble(archive.restoreRuns([m]))), sha(expected));
});

test('part files a killed write left go with a re-run of that write and with the removed backup', async () => {
  const { archive, store, root } = await setup();
  const disk = firstDisk();
  /** What a process killed while the store wrote `name` leaves: a part file beside it. */
  const plant = async (name: string) => {
    await mkdir(join(root, 'svc-1', 'b1'), { recursive: true });
    await writeFile(join(root, 'svc-1', 'b1', `${name}.part-0123456789ab`), randomBytes(1000));
  };
  // The first attempt was killed while writing its data object: a re-run leaves only its own.
  await plant('data.aaaaaaaaaaaa');
  const m = await archive.write(meta('b1', null), runsOf(disk, [[0, 8 * MiB]]));
  assert.deepEqual((await readdir(join(root, 'svc-1', 'b1'))).sort(), [m.dataObject, 'manifest']);
  // A rewrite (a merge) was killed while writing its data object, then its manifest.
  await plant('data.bbbbbbbbbbbb');
  await plant('manifest');
  assert.deepEqual(await store.list('svc-1/b1/'), [`svc-1/b1/${m.dataObject}`, 'svc-1/b1/manifest'].sort());
  assert.equal((await archive.verify('svc-1', 'b1')).ok, true, 'the backup is whole beside them');
  await archive.remove('svc-1', 'b1');
  assert.deepEqual(await readdir(root), [], 'nothing is left, no directory either');
});

test('runs that go backwards are refused', async () => {
  const { archive } = await setup();
  async function* backwards(): AsyncGenerator<DiskRun> {
    yield { offset: MiB, data: randomBytes(1024) };
    yield { offset: 0, data: randomBytes(1024) };
  }
  await assert.rejects(archive.write(meta('b1', null), backwards()), /overlap or go backwards/);
});
