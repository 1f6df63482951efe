/**
 * The pieces of a live disk export that need no host: the XML of libvirt's backup API (push
 * mode) and its checkpoint, and the runs read out of the backup's qcow2 file once it is on this
 * machine (from `qemu-img map`'s extents).
 */
import { open } from 'node:fs/promises';
import { DISK_RUN_MAX, type DiskRun, DriverError } from '../driver.ts';

/** Names libvirt and the pool get from us (checkpoints, volumes): a backup id is a UUID. */
export function checkName(name: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(name))
    throw new DriverError(`Not a valid backup id: ${name}`, { transient: false });
  return name;
}

/**
 * `virsh backup-begin`'s backup XML: disk vda pushed by QEMU into the qcow2 file `target`
 * (on the host), every range (full) or the ranges written since checkpoint `since`
 * (incremental); the seed disk not at all.
 */
export function backupXml(target: string, since: string | null): string {
  const incremental = since === null ? '' : `<incremental>${checkName(since)}</incremental>`;
  return (
    `<domainbackup mode='push'>${incremental}<disks>` +
    `<disk name='vda' backup='yes' type='file'><target file='${target.replace(/[<>&'"]/g, '')}'/><driver type='qcow2'/></disk>` +
    `<disk name='vdb' backup='no'/>` +
    `</disks></domainbackup>\n`
  );
}

/** The checkpoint the backup makes at its point in time: a dirty bitmap `name` on vda. */
export function checkpointXml(name: string): string {
  return (
    `<domaincheckpoint><name>${checkName(name)}</name><disks>` +
    `<disk name='vda' checkpoint='bitmap'/><disk name='vdb' checkpoint='no'/>` +
    `</disks></domaincheckpoint>\n`
  );
}

/** One extent of `qemu-img map --output=json`. */
export interface MapExtent {
  readonly start: number;
  readonly length: number;
  /** Allocated in this image (not in a backing file, which is not opened). */
  readonly present: boolean;
  readonly zero: boolean;
  readonly data: boolean;
  /** Where the extent's bytes are in the image file (a data extent of an uncompressed qcow2). */
  readonly offset?: number;
}

export function parseMap(stdout: string): MapExtent[] {
  const parsed: MapExtent[] = JSON.parse(stdout);
  if (!Array.isArray(parsed)) throw new Error('qemu-img map gave no list');
  return parsed;
}

/** A run to yield: `length` bytes at guest `offset`, zeros or read from the file at `reads`. */
export interface RunPlan {
  readonly offset: number;
  length: number;
  readonly zero: boolean;
  readonly reads: { from: number; length: number }[];
}

/**
 * The runs of an export from its backup file's extents, ascending, each at most DISK_RUN_MAX,
 * adjacent ones of the same kind joined up to that size. Extents not present in the file are
 * not runs (a full backup: never-written ranges; an incremental one: unchanged ranges). Present
 * zero extents are zero runs in an incremental export (the guest wrote or discarded them since
 * the checkpoint), and nothing in a full one (an uncovered range reads as zeros anyway).
 */
export function planRuns(extents: readonly MapExtent[], kind: 'full' | 'incremental'): RunPlan[] {
  const out: RunPlan[] = [];
  for (const e of extents) {
    if (!e.present || e.length <= 0) continue;
    const zero = e.zero || !e.data;
    if (zero && kind === 'full') continue;
    if (!zero && e.offset === undefined)
      throw new DriverError('The backup file has data without an offset (compressed?)', { transient: false });
    let pos = 0;
    while (pos < e.length) {
      const at = e.start + pos;
      const last = out.at(-1);
      const joins =
        last !== undefined &&
        last.zero === zero &&
        last.offset + last.length === at &&
        last.length < DISK_RUN_MAX;
      const room = joins ? DISK_RUN_MAX - last.length : DISK_RUN_MAX;
      const take = Math.min(room, e.length - pos);
      const run: RunPlan = joins ? last : { offset: at, length: 0, zero, reads: [] };
      if (!joins) out.push(run);
      run.length += take;
      if (!zero) {
        const from = (e.offset ?? 0) + pos;
        const prev = run.reads.at(-1);
        if (prev && prev.from + prev.length === from) prev.length += take;
        else run.reads.push({ from, length: take });
      }
      pos += take;
    }
  }
  return out;
}

/** The runs of `plan`, read from the local file `file` (zero runs are zero buffers). */
export async function* readRuns(file: string, plan: readonly RunPlan[]): AsyncIterable<DiskRun> {
  const fh = await open(file, 'r');
  try {
    for (const p of plan) {
      if (p.zero) {
        yield { offset: p.offset, data: Buffer.alloc(p.length) };
        continue;
      }
      const data = Buffer.allocUnsafe(p.length);
      let at = 0;
      for (const r of p.reads) {
        const { bytesRead } = await fh.read(data, at, r.length, r.from);
        if (bytesRead !== r.length)
          throw new DriverError('The backup file is shorter than its map', { transient: false });
        at += r.length;
      }
      yield { offset: p.offset, data };
    }
  } finally {
    await fh.close();
  }
}
