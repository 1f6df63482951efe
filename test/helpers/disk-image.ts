/**
 * A disk put back together from a driver's exports, as the backup store would hold it: a sparse
 * local file at the disk's size, each export's runs written over it (a full one, then incrementals
 * since it), and read back as runs for importDisk. Only the 4 MiB blocks some run touched are read
 * back, so a disk of gigabytes that holds a few megabytes costs a few megabytes.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { DISK_RUN_MAX, type DiskExport, type DiskRun } from '../../src/drivers/driver.ts';

export interface DiskImage {
  readonly file: string;
  readonly diskBytes: number;
  /** Writes the export's runs over the image (checking they ascend, never overlap, are at most DISK_RUN_MAX). */
  apply(e: DiskExport): Promise<{ runs: number; bytes: number }>;
  /** The image as runs (all-zero blocks left out): the whole disk for importDisk. */
  runs(): AsyncIterable<DiskRun>;
  /** A copy of the image in `file`, to apply a later export to while this one stays. */
  copy(file: string): Promise<DiskImage>;
  sha256(): Promise<string>;
}

export function diskImage(file: string, diskBytes: number, touched: Iterable<number> = []): DiskImage {
  const blocks = new Set<number>(touched);
  const image: DiskImage = {
    file,
    diskBytes,
    async apply(e) {
      assert.equal(e.diskBytes, diskBytes, 'the export is of a disk of the image size');
      const fh = await open(file, existsSync(file) ? 'r+' : 'w+');
      let runs = 0;
      let bytes = 0;
      let end = 0;
      try {
        if ((await fh.stat()).size < diskBytes) await fh.truncate(diskBytes);
        for await (const r of e.runs) {
          assert.ok(r.offset >= end, 'runs ascend and do not overlap');
          assert.ok(r.data.length > 0 && r.data.length <= DISK_RUN_MAX, 'a run holds 1 byte to DISK_RUN_MAX');
          assert.ok(r.offset + r.data.length <= diskBytes, 'a run lies within the disk');
          end = r.offset + r.data.length;
          await fh.write(r.data, 0, r.data.length, r.offset);
          for (let b = Math.floor(r.offset / DISK_RUN_MAX); b * DISK_RUN_MAX < end; b++) blocks.add(b);
          runs++;
          bytes += r.data.length;
        }
      } finally {
        await fh.close();
      }
      return { runs, bytes };
    },
    async *runs() {
      const fh = await open(file, 'r');
      try {
        for (const b of [...blocks].sort((x, y) => x - y)) {
          const at = b * DISK_RUN_MAX;
          const data = Buffer.alloc(Math.min(DISK_RUN_MAX, diskBytes - at));
          await fh.read(data, 0, data.length, at);
          if (data.some((byte) => byte !== 0)) yield { offset: at, data };
        }
      } finally {
        await fh.close();
      }
    },
    async copy(to) {
      // Block by block (a plain file copy could fill the holes of a sparse file).
      const fh = await open(to, 'w+');
      try {
        await fh.truncate(diskBytes);
        for await (const r of image.runs()) await fh.write(r.data, 0, r.data.length, r.offset);
      } finally {
        await fh.close();
      }
      return diskImage(to, diskBytes, blocks);
    },
    async sha256() {
      // The touched blocks with their places: the rest of the image is zeros in every copy.
      const hash = createHash('sha256');
      for await (const r of image.runs()) hash.update(`${r.offset}:`).update(r.data);
      return hash.digest('hex');
    },
  };
  return image;
}
