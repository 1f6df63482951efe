import { createCipheriv, createHash } from 'node:crypto';
import { type DiskRun, DriverError } from '../driver.ts';

/**
 * The simulated disk's bytes: a deterministic function of the VM's write history, so an export
 * carries real bytes and an import can tell whether it was given the right ones.
 *
 * - A header at offset 0 (HEADER_BYTES): a magic, the VM id, its content generation and used
 *   disk, as JSON padded with zeros.
 * - For each write generation g (1 is the fresh disk): a RUN_BYTES run of pseudo-random bytes
 *   seeded by (vm id, g), in a slot of the disk's first SLOT_AREA bytes that g picks. A later
 *   generation that picks the same slot overwrites it: the newest wins.
 *
 * Everything else reads as zeros.
 */
export const HEADER_BYTES = 4096;
export const RUN_BYTES = 64 * 1024;
/** The part of the disk the runs fall in (1 GiB: within every disk a plan offers). */
const SLOT_AREA = 1024 * 1024 * 1024;
const SLOTS = SLOT_AREA / RUN_BYTES;
const MAGIC = 'vrp-simulated-disk-1';

export interface DiskHeader {
  readonly vmId: string;
  readonly contentGeneration: number;
  readonly usedDiskGb: number;
}

/** The slot (a multiple of RUN_BYTES) generation g writes; slot 0 holds the header. */
function slotOf(vmId: string, g: number): number {
  const h = createHash('sha256').update(`${vmId}:${g}:slot`).digest();
  return 1 + (h.readUInt32BE(0) % (SLOTS - 1));
}

/** Generation g's bytes: AES-256-CTR of zeros under a key made of (vm id, g). */
export function runData(vmId: string, g: number): Buffer {
  const key = createHash('sha256').update(`${vmId}:${g}:data`).digest();
  return createCipheriv('aes-256-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(RUN_BYTES));
}

export function headerData(h: DiskHeader): Buffer {
  const out = Buffer.alloc(HEADER_BYTES);
  out.write(
    JSON.stringify({ magic: MAGIC, vm: h.vmId, generation: h.contentGeneration, used_gb: h.usedDiskGb }),
  );
  return out;
}

function parseHeader(data: Buffer): DiskHeader | undefined {
  const end = data.indexOf(0);
  try {
    const v: unknown = JSON.parse(data.subarray(0, end < 0 ? data.length : end).toString('utf8'));
    if (typeof v !== 'object' || v === null) return undefined;
    const { magic, vm, generation, used_gb }: Record<string, unknown> = { ...v };
    if (magic !== MAGIC || typeof vm !== 'string' || typeof generation !== 'number') return undefined;
    if (!Number.isInteger(generation) || typeof used_gb !== 'number') return undefined;
    return { vmId: vm, contentGeneration: generation, usedDiskGb: used_gb };
  } catch {
    return undefined;
  }
}

/**
 * The slots generations `from + 1` to `to` wrote, newest winning, in ascending order: what an
 * export since the generation `from` carries (from = 0: the whole disk).
 */
function slotsWritten(vmId: string, from: number, to: number): [slot: number, generation: number][] {
  const bySlot = new Map<number, number>();
  for (let g = from + 1; g <= to; g++) bySlot.set(slotOf(vmId, g), g);
  return [...bySlot.entries()].sort((a, b) => a[0] - b[0]);
}

/** The disk's runs: its header, then the runs generations after `since` wrote (0: all of them). */
export async function* diskRuns(header: DiskHeader, since: number): AsyncGenerator<DiskRun> {
  yield { offset: 0, data: headerData(header) };
  for (const [slot, g] of slotsWritten(header.vmId, since, header.contentGeneration))
    yield { offset: slot * RUN_BYTES, data: runData(header.vmId, g) };
}

/** Bytes of the disk's content an export since `since` carries. */
export function exportBytes(header: DiskHeader, since: number): number {
  return HEADER_BYTES + slotsWritten(header.vmId, since, header.contentGeneration).length * RUN_BYTES;
}

/**
 * Reads a whole disk (`runs`: a range none covers is zeros) and returns its header, once every
 * byte is found to be what the header's write history makes: a disk put together wrongly (a
 * chain missing a link, a segment at the wrong place) is refused, nothing is changed.
 */
export async function readDisk(vmId: string, runs: AsyncIterable<DiskRun>): Promise<DiskHeader> {
  // Only the slots that hold non-zero bytes are kept: a few per write.
  const slots = new Map<number, Buffer>();
  for await (const run of runs) {
    for (let at = 0; at < run.data.length; ) {
      const offset = run.offset + at;
      const slot = Math.floor(offset / RUN_BYTES);
      const within = offset - slot * RUN_BYTES;
      const n = Math.min(RUN_BYTES - within, run.data.length - at);
      const piece = run.data.subarray(at, at + n);
      if (piece.some((b) => b !== 0)) {
        const buf = slots.get(slot) ?? Buffer.alloc(RUN_BYTES);
        slots.set(slot, buf);
        piece.copy(buf, within);
      }
      at += n;
    }
  }
  const wrong = (what: string) =>
    new DriverError(`The disk given to VM ${vmId} is not a disk of it: ${what}`, { transient: false });
  const first = slots.get(0);
  const header = first && parseHeader(first.subarray(0, HEADER_BYTES));
  if (!header) throw wrong('it has no header');
  if (header.vmId !== vmId) throw wrong(`it is VM ${header.vmId}'s`);
  const expected = new Map<number, Buffer>([
    [0, Buffer.concat([headerData(header), Buffer.alloc(RUN_BYTES - HEADER_BYTES)])],
  ]);
  for (const [slot, g] of slotsWritten(vmId, 0, header.contentGeneration))
    expected.set(slot, runData(vmId, g));
  for (const [slot, data] of expected)
    if (!slots.get(slot)?.equals(data)) throw wrong(`the bytes at ${slot * RUN_BYTES} differ`);
  for (const slot of slots.keys())
    if (!expected.has(slot)) throw wrong(`the bytes at ${slot * RUN_BYTES} differ`);
  return header;
}
