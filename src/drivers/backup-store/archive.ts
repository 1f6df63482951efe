import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { constants, zstdCompress, zstdDecompress } from 'node:zlib';
import { DISK_RUN_MAX, type DiskRun, DriverError } from '../driver.ts';
import { checkFence } from '../fence.ts';
import { ByteReader } from './byte-reader.ts';
import type { BackupStore } from './store.ts';

/**
 * The backup archive: how a disk's runs are kept in a backup store.
 *
 * A backup is two objects under `<service id>/<backup id>/`: a DATA object (`data.<random>`), the
 * concatenation of its segments, and the MANIFEST (`manifest`), written last, so a backup without
 * a manifest is not one. A segment is at most 4 MiB of contiguous guest bytes, compressed with
 * zstd (kept plain when that does not make it smaller), then sealed with AES-256-GCM: a random
 * 12-byte nonce, the ciphertext, the 16-byte tag; its associated data names the backup and the
 * segment's place, so segments cannot be swapped between backups or positions. The manifest lists
 * every segment (guest offset and length, place and length in the data object, SHA-256 of the
 * stored bytes) and is itself sealed. A segment of zeros in an incremental backup is stored as a
 * zero segment (no bytes); a full backup leaves zeros out (a range no segment covers is zeros).
 *
 * An incremental backup carries what changed since its parent; restoring one reads its chain
 * (the full backup first) and takes each range from the newest backup that has it.
 */

const MANIFEST_MAGIC = Buffer.from('VRPBKM1\n');
const NONCE = 12;
const TAG = 16;
/** Segments being compressed and sealed at once, in order: the worker's cores, not more. */
const IN_FLIGHT = 3;
/** A reader skips a gap in a data object by reading it up to this size; beyond, it asks for a range. */
const SKIP_BY_READING = 16 * 1024 * 1024;
const ZEROS = Buffer.alloc(DISK_RUN_MAX);

const zstd = promisify(zstdCompress);
/**
 * zstd's level 1: on this kind of machine it packs random (incompressible) data at ~770 MiB/s
 * where level 3 does ~640, and text at ~3 GiB/s; what level 3 gains in size on disk images is small.
 */
/** The element at `i` of `list`, which the caller's bounds guarantee (a bug otherwise). */
function item<T>(list: readonly T[], i: number): T {
  const value = list[i];
  if (value === undefined) throw new Error(`no element ${i} of ${list.length}`);
  return value;
}

const compress = (data: Buffer) =>
  zstd(data, {
    params: { [constants.ZSTD_c_compressionLevel]: 1 },
    // The whole output in one chunk: zlib's default (16 KiB) costs a callback and a copy per chunk.
    chunkSize: data.length + 64 * 1024,
  });
const decompress = promisify(zstdDecompress);

export interface ManifestSegment {
  /** Where the segment's bytes go on the guest disk, and how many. */
  readonly offset: number;
  readonly length: number;
  /** All zeros: nothing stored. */
  readonly zero: boolean;
  /** Where its stored (sealed) bytes are in the data object, and how many. */
  readonly storedOffset: number;
  readonly storedLength: number;
  /** SHA-256 (hex) of the stored bytes; empty for a zero segment. */
  readonly sha256: string;
  readonly compressed: boolean;
}

export interface BackupManifest {
  readonly format: 1;
  readonly backupId: string;
  readonly serviceId: string;
  /** The backup this one carries the changes since; null for a full one. */
  readonly parentId: string | null;
  readonly kind: 'full' | 'incremental';
  /** The guest disk's size in bytes. */
  readonly diskBytes: number;
  /** Guest bytes the segments carry (zero segments included). */
  readonly dataBytes: number;
  /** The data object's key (under the backup's prefix) and size. */
  readonly dataObject: string;
  readonly dataObjectBytes: number;
  /** Data object plus manifest object: what the backup takes in the store. */
  readonly storedBytes: number;
  readonly segments: readonly ManifestSegment[];
  readonly createdAt: number;
}

export interface BackupMeta {
  readonly backupId: string;
  readonly serviceId: string;
  readonly parentId: string | null;
  readonly kind: 'full' | 'incremental';
  readonly diskBytes: number;
  readonly createdAt: number;
}

export interface VerifyReport {
  readonly ok: boolean;
  readonly segments: number;
  readonly bad: readonly { segment: number; offset: number; length: number; reason: string }[];
}

/** The key the backup was sealed with is not this one: nothing can be read (nor overwritten). */
export class BackupDecryptError extends DriverError {
  override name = 'BackupDecryptError';
  constructor() {
    super('backup cannot be decrypted', { transient: false });
  }
}

/** A stored object is not what was written (a checksum or a seal does not match). */
export class BackupCorruptError extends DriverError {
  override name = 'BackupCorruptError';
  constructor(message: string) {
    super(message, { transient: false });
  }
}

export interface BackupArchive {
  /** Stores the runs as the backup `meta` names; resolves once data and manifest are stored. */
  write(meta: BackupMeta, runs: AsyncIterable<DiskRun>): Promise<BackupManifest>;
  /** The backup's manifest; undefined when it is not (completely) written. */
  manifest(serviceId: string, backupId: string): Promise<BackupManifest | undefined>;
  /** The whole disk at the chain's last backup (`chain`: the full one first, each the next's parent). */
  restoreRuns(chain: readonly BackupManifest[]): AsyncIterable<DiskRun>;
  /** How many of restoreRuns' bytes come from segments that are not all zeros (from the manifests alone). */
  restoreDataBytes(chain: readonly BackupManifest[]): number;
  /** Reads the backup back and checks every segment: checksum, seal, length. */
  verify(serviceId: string, backupId: string): Promise<VerifyReport>;
  /** Rewrites `child` so that it stands without `parent` (its parent's parent becomes its own). */
  mergeIntoChild(parent: BackupManifest, child: BackupManifest): Promise<BackupManifest>;
  /**
   * Removes every object of the backup (its manifest first) and the part files a killed write
   * left; a missing backup is removed already.
   */
  remove(serviceId: string, backupId: string): Promise<void>;
}

/**
 * The store as a job's run writes to it: each write (an object put, an object deleted) checks
 * the run's fence first (fence.ts), so a run whose lease ran out writes nothing more to the
 * backup store either. Checked where the write is asked, in the run's own context: never inside
 * a transfer's stream, whose callbacks may run in the context of whoever opened the connection.
 */
function fencedWrites(store: BackupStore): BackupStore {
  return {
    get description() {
      return store.description;
    },
    get: (key, range) => store.get(key, range),
    size: (key) => store.size(key),
    list: (prefix, options) => store.list(prefix, options),
    probe: () => store.probe(),
    close: () => store.close(),
    put: (key, data) => {
      checkFence();
      return store.put(key, data);
    },
    delete: (key) => {
      checkFence();
      return store.delete(key);
    },
  };
}

export function createArchive(given: BackupStore, key: Buffer): BackupArchive {
  if (key.length !== 32) throw new Error('a backup key is 32 bytes');
  const store = fencedWrites(given);
  const keyId = createHmac('sha256', key).update('vrp backup key id').digest().subarray(0, 8);
  const prefix = (serviceId: string, backupId: string) => `${serviceId}/${backupId}/`;

  /** Nonce, ciphertext and tag, as parts (a segment's are written one after the other, not copied together). */
  const sealParts = (plain: Buffer, aad: string): Buffer[] => {
    const nonce = randomBytes(NONCE);
    const cipher = createCipheriv('aes-256-gcm', key, nonce);
    cipher.setAAD(Buffer.from(aad));
    return [nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()];
  };
  const seal = (plain: Buffer, aad: string): Buffer => Buffer.concat(sealParts(plain, aad));
  /** The plain bytes, or undefined when the seal does not hold. */
  const open = (sealed: Buffer, aad: string): Buffer | undefined => {
    if (sealed.length < NONCE + TAG) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, NONCE));
      decipher.setAAD(Buffer.from(aad));
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG));
      return Buffer.concat([decipher.update(sealed.subarray(NONCE, sealed.length - TAG)), decipher.final()]);
    } catch {
      return undefined;
    }
  };
  const segmentAad = (backupId: string, index: number, offset: number) => `${backupId}/${index}/${offset}`;

  async function readAll(stream: Readable): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const chunk of stream) parts.push(chunk);
    return Buffer.concat(parts);
  }

  async function manifest(serviceId: string, backupId: string): Promise<BackupManifest | undefined> {
    const name = `${prefix(serviceId, backupId)}manifest`;
    if ((await store.size(name)) === undefined) return undefined;
    const raw = await readAll(await store.get(name));
    const head = MANIFEST_MAGIC.length;
    if (!raw.subarray(0, head).equals(MANIFEST_MAGIC))
      throw new BackupCorruptError(`The manifest of backup ${backupId} is damaged`);
    if (!raw.subarray(head, head + keyId.length).equals(keyId)) throw new BackupDecryptError();
    const plain = open(raw.subarray(head + keyId.length), `manifest/${serviceId}/${backupId}`);
    if (!plain) throw new BackupCorruptError(`The manifest of backup ${backupId} is damaged`);
    const parsed: Omit<BackupManifest, 'storedBytes'> = JSON.parse(plain.toString('utf8'));
    return { ...parsed, storedBytes: parsed.dataObjectBytes + raw.length };
  }

  /** Guest runs cut into segments: contiguous runs joined up to DISK_RUN_MAX, zeros marked. */
  async function* segmentsOf(runs: AsyncIterable<DiskRun>): AsyncGenerator<{ offset: number; data: Buffer }> {
    let start = 0;
    let parts: Buffer[] = [];
    let length = 0;
    const flush = () => {
      const out = { offset: start, data: parts.length === 1 ? item(parts, 0) : Buffer.concat(parts) };
      parts = [];
      length = 0;
      return out;
    };
    let end = -1;
    for await (const run of runs) {
      if (run.offset < end) throw new Error(`disk runs overlap or go backwards at ${run.offset}`);
      for (let at = 0; at < run.data.length; at += DISK_RUN_MAX) {
        const piece = run.data.subarray(at, at + DISK_RUN_MAX);
        const offset = run.offset + at;
        if (length > 0 && (offset !== start + length || length + piece.length > DISK_RUN_MAX)) yield flush();
        if (length === 0) start = offset;
        parts.push(piece);
        length += piece.length;
      }
      end = run.offset + run.data.length;
    }
    if (length > 0) yield flush();
  }

  async function write(meta: BackupMeta, runs: AsyncIterable<DiskRun>): Promise<BackupManifest> {
    const base = prefix(meta.serviceId, meta.backupId);
    const dataObject = `data.${randomBytes(6).toString('hex')}`;
    // An attempt that died after its data object and before its manifest left a data object no
    // manifest names, and one killed while writing left the store's part files: they go now. The
    // manifest and the data object it names stay until the new manifest replaces them (a merge
    // rewrites a backup). A manifest that cannot be read: nothing goes.
    const earlier = await manifest(meta.serviceId, meta.backupId).then(
      (m) => ({ m }),
      () => undefined,
    );
    if (earlier) {
      for (const name of await store.list(base, { parts: true })) {
        const file = name.slice(base.length);
        if (file !== 'manifest' && file !== earlier.m?.dataObject) await store.delete(name);
      }
    }
    const segments: ManifestSegment[] = [];
    let dataBytes = 0;
    let storedOffset = 0;

    const sealSegment = async (index: number, offset: number, data: Buffer) => {
      const packed = await compress(data);
      const compressed = packed.length < data.length;
      const stored = sealParts(compressed ? packed : data, segmentAad(meta.backupId, index, offset));
      return { compressed, stored };
    };

    async function* stored(): AsyncGenerator<Buffer> {
      const queue: Promise<{ compressed: boolean; stored: Buffer[]; offset: number; length: number }>[] = [];
      const take = async function* () {
        const next = queue.shift();
        if (!next) return;
        const done = await next;
        const hash = createHash('sha256');
        let length = 0;
        for (const part of done.stored) {
          hash.update(part);
          length += part.length;
        }
        segments.push({
          offset: done.offset,
          length: done.length,
          zero: false,
          storedOffset,
          storedLength: length,
          sha256: hash.digest('hex'),
          compressed: done.compressed,
        });
        storedOffset += length;
        yield* done.stored;
      };
      for await (const seg of segmentsOf(runs)) {
        dataBytes += seg.data.length;
        const zero = seg.data.equals(ZEROS.subarray(0, seg.data.length));
        if (zero) {
          // Zeros in a full backup are the default; in an incremental they are a change.
          while (queue.length > 0) yield* take();
          if (meta.kind === 'incremental')
            segments.push({
              offset: seg.offset,
              length: seg.data.length,
              zero: true,
              storedOffset,
              storedLength: 0,
              sha256: '',
              compressed: false,
            });
          else dataBytes -= seg.data.length;
          continue;
        }
        const index = segments.length + queue.length;
        const { offset } = seg;
        const length = seg.data.length;
        queue.push(sealSegment(index, offset, seg.data).then((r) => ({ ...r, offset, length })));
        // Nothing is dropped on the floor if a later step fails: the rejections are awaited in order.
        queue.at(-1)?.catch(() => {});
        if (queue.length >= IN_FLIGHT) yield* take();
      }
      while (queue.length > 0) yield* take();
    }

    const dataObjectBytes = await store.put(base + dataObject, Readable.from(stored()));
    const body = {
      format: 1 as const,
      backupId: meta.backupId,
      serviceId: meta.serviceId,
      parentId: meta.parentId,
      kind: meta.kind,
      diskBytes: meta.diskBytes,
      dataBytes,
      dataObject,
      dataObjectBytes,
      segments,
      createdAt: meta.createdAt,
    };
    const sealed = Buffer.concat([
      MANIFEST_MAGIC,
      keyId,
      seal(Buffer.from(JSON.stringify(body)), `manifest/${meta.serviceId}/${meta.backupId}`),
    ]);
    // The manifest replaces an earlier one whole (a merge rewrites a backup): then the old data goes.
    const before = earlier?.m;
    await store.put(`${base}manifest`, Readable.from([sealed]));
    if (before && before.dataObject !== dataObject) await store.delete(base + before.dataObject);
    return { ...body, storedBytes: dataObjectBytes + sealed.length };
  }

  /** Reads segments of one backup's data object in ascending order, skipping what is not asked. */
  function segmentReader(m: BackupManifest) {
    let reader: ByteReader | undefined;
    let base = 0;
    const name = prefix(m.serviceId, m.backupId) + m.dataObject;
    return {
      /** The segment's plain guest bytes; throws BackupCorruptError when they are not what was written. */
      async read(index: number): Promise<Buffer> {
        const seg = item(m.segments, index);
        if (seg.zero) return ZEROS.subarray(0, seg.length);
        const at = reader ? base + reader.position : -1;
        if (!reader || at > seg.storedOffset || seg.storedOffset - at > SKIP_BY_READING) {
          await reader?.close();
          reader = new ByteReader(
            await store.get(name, {
              start: seg.storedOffset,
              end: Math.max(seg.storedOffset, m.dataObjectBytes - 1),
            }),
          );
          base = seg.storedOffset;
        } else {
          await reader.skip(seg.storedOffset - at);
        }
        const stored = await reader.read(seg.storedLength);
        const problem = await checkSegment(m, index, stored);
        if (typeof problem === 'string')
          throw new BackupCorruptError(
            `Backup ${m.backupId} is damaged: segment ${index} (disk bytes ${seg.offset}-${seg.offset + seg.length - 1}) ${problem}`,
          );
        return problem;
      },
      async close() {
        await reader?.close();
      },
    };
  }

  /** The segment's plain bytes, or what is wrong with its stored bytes. */
  function checkSegment(m: BackupManifest, index: number, stored: Buffer): Promise<Buffer | string> | string {
    const seg = item(m.segments, index);
    if (stored.length !== seg.storedLength)
      return `is cut short (${stored.length} of ${seg.storedLength} bytes)`;
    if (createHash('sha256').update(stored).digest('hex') !== seg.sha256)
      return 'does not match its checksum';
    const plain = open(stored, segmentAad(m.backupId, index, seg.offset));
    if (!plain) return 'does not open with the backup key';
    const unpack = seg.compressed ? decompress(plain) : Promise.resolve(plain);
    return unpack.then(
      (data) => (data.length === seg.length ? data : `holds ${data.length} bytes, not ${seg.length}`),
      () => 'does not decompress',
    );
  }

  /**
   * Which backup of `chain` each range of the disk comes from (the newest that has it), in
   * ascending order: [member, segment index, from, to) pieces.
   */
  function plan(chain: readonly BackupManifest[]) {
    const points = new Set<number>();
    for (const m of chain)
      for (const s of m.segments) {
        points.add(s.offset);
        points.add(s.offset + s.length);
      }
    const cuts = [...points].sort((a, b) => a - b);
    const cursor = chain.map(() => 0);
    const pieces: { member: number; segment: number; from: number; to: number }[] = [];
    for (let i = 0; i + 1 < cuts.length; i++) {
      const from = item(cuts, i);
      const to = item(cuts, i + 1);
      for (let member = chain.length - 1; member >= 0; member--) {
        const segs = item(chain, member).segments;
        let c = item(cursor, member);
        for (let s = segs[c]; s && s.offset + s.length <= from; s = segs[c]) c++;
        cursor[member] = c;
        const seg = segs[c];
        if (seg && seg.offset <= from && to <= seg.offset + seg.length) {
          const last = pieces.at(-1);
          if (last && last.member === member && last.segment === c && last.to === from) last.to = to;
          else pieces.push({ member, segment: c, from, to });
          break;
        }
      }
    }
    return pieces;
  }

  async function* chainRuns(chain: readonly BackupManifest[]): AsyncGenerator<DiskRun> {
    for (let i = 1; i < chain.length; i++)
      if (item(chain, i).parentId !== item(chain, i - 1).backupId)
        throw new BackupCorruptError('The backups given are not one chain');
    const readers = chain.map(segmentReader);
    const cache = chain.map((): { index: number; data: Buffer } => ({ index: -1, data: Buffer.alloc(0) }));
    try {
      for (const piece of plan(chain)) {
        const held = item(cache, piece.member);
        if (held.index !== piece.segment) {
          held.data = await item(readers, piece.member).read(piece.segment);
          held.index = piece.segment;
        }
        const seg = item(item(chain, piece.member).segments, piece.segment);
        yield {
          offset: piece.from,
          data: held.data.subarray(piece.from - seg.offset, piece.to - seg.offset),
        };
      }
    } finally {
      for (const r of readers) await r.close();
    }
  }

  return {
    write,
    manifest,

    restoreRuns(chain) {
      if (chain[0]?.kind !== 'full')
        throw new BackupCorruptError('A restore needs its chain from a full backup');
      return chainRuns(chain);
    },

    restoreDataBytes(chain) {
      let bytes = 0;
      for (const piece of plan(chain))
        if (!item(item(chain, piece.member).segments, piece.segment).zero) bytes += piece.to - piece.from;
      return bytes;
    },

    async verify(serviceId, backupId) {
      const m = await manifest(serviceId, backupId);
      if (!m) throw new BackupCorruptError(`Backup ${backupId} has no manifest in the store`);
      const bad: { segment: number; offset: number; length: number; reason: string }[] = [];
      const stored = m.segments.filter((s) => !s.zero);
      const size = await store.size(prefix(serviceId, backupId) + m.dataObject);
      if (size === undefined) {
        return {
          ok: false,
          segments: m.segments.length,
          bad: m.segments
            .map((s, segment) => ({
              segment,
              offset: s.offset,
              length: s.length,
              reason: 'data object missing',
            }))
            .filter((_, i) => !item(m.segments, i).zero),
        };
      }
      if (size !== m.dataObjectBytes)
        bad.push({
          segment: -1,
          offset: 0,
          length: 0,
          reason: `data object is ${size} bytes, not ${m.dataObjectBytes}`,
        });
      const reader =
        stored.length > 0
          ? new ByteReader(await store.get(prefix(serviceId, backupId) + m.dataObject))
          : undefined;
      try {
        for (let index = 0; index < m.segments.length; index++) {
          const seg = item(m.segments, index);
          if (seg.zero || !reader) continue;
          await reader.skip(seg.storedOffset - reader.position);
          const problem = await checkSegment(m, index, await reader.read(seg.storedLength));
          if (typeof problem === 'string')
            bad.push({ segment: index, offset: seg.offset, length: seg.length, reason: problem });
        }
      } finally {
        await reader?.close();
      }
      return { ok: bad.length === 0, segments: m.segments.length, bad };
    },

    async mergeIntoChild(parent, child) {
      if (child.parentId !== parent.backupId)
        throw new BackupCorruptError(`Backup ${child.backupId} is not a child of ${parent.backupId}`);
      const meta: BackupMeta = {
        backupId: child.backupId,
        serviceId: child.serviceId,
        parentId: parent.parentId,
        kind: parent.kind,
        diskBytes: Math.max(parent.diskBytes, child.diskBytes),
        createdAt: child.createdAt,
      };
      return write(meta, chainRuns([parent, child]));
    },

    async remove(serviceId, backupId) {
      const base = prefix(serviceId, backupId);
      await store.delete(`${base}manifest`);
      for (const name of await store.list(base, { parts: true })) await store.delete(name);
    },
  };
}
