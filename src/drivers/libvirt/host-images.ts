import { createHash, randomUUID } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import type { Database } from '../../store/schema.ts';
import { DriverError } from '../driver.ts';
import { COPY_BASE_MS, type CopyLimit } from './commands.ts';
import { holdRoom } from './room-claims.ts';
import {
  LOCAL_ROOM,
  localPlace,
  localRoom,
  type PoolStorage,
  sha256File,
  withPrivateDir,
} from './storage.ts';
import type { Template } from './templates.ts';

/** A template's image as volumes of one host's pool. */
export interface HostTemplate {
  /** The volume of the base disk a VM's disk is an overlay on. */
  readonly disk: string;
  readonly kernel?: { readonly kernel: string; readonly initrd: string; readonly cmdline: string };
}

/** The files of a template and the suffix of each one's volume. */
function partsOf(t: Template): { ext: string; file: string }[] {
  return [
    { ext: 'qcow2', file: t.disk },
    ...(t.kernel
      ? [
          { ext: 'vmlinuz', file: t.kernel.kernel },
          { ext: 'initrd', file: t.kernel.initrd },
        ]
      : []),
  ];
}

/** The volumes of an upload whose disk volume is `diskVolume` (`<prefix>.qcow2`). */
export function hostTemplate(t: Template, diskVolume: string): HostTemplate {
  const prefix = uploadOf(diskVolume);
  return {
    disk: diskVolume,
    ...(t.kernel
      ? { kernel: { kernel: `${prefix}.vmlinuz`, initrd: `${prefix}.initrd`, cmdline: t.kernel.cmdline } }
      : {}),
  };
}

/**
 * An upload's name without its part's suffix, as `ensure` makes it: `template-<id>-<sha12>-<upload8>`
 * (template ids are UUIDs, or the rescue image's key). A name of any other shape is never taken
 * for an upload.
 */
export const UPLOAD_NAME = String.raw`template-[\w.-]+-[0-9a-f]{12}-[0-9a-f]{8}`;

/** Whether a volume is one of the driver's template uploads (`<upload name>.qcow2|.vmlinuz|.initrd`). */
const TEMPLATE_VOLUME = new RegExp(`^${UPLOAD_NAME}\\.(?:qcow2|vmlinuz|initrd)$`);
export const isTemplateVolume = (name: string) => TEMPLATE_VOLUME.test(name);

/** An upload's name (`template-<id>-<sha12>-<upload8>`), from any of its volumes' names. */
export const uploadOf = (volume: string) => volume.replace(/\.\w+$/, '');

/**
 * A template part's copy to a host and its read back: bounded by COPY_BASE_MS (30 minutes)
 * whatever its size, as template-sweep.ts counts on (its grace covers an upload under way), and
 * ended sooner if it stalls (CopyLimit); so is the pool's read after the disk part's upload
 * (uploadNew's refresh, which otherwise waits as long as any copy in the pool may take).
 */
const TEMPLATE_COPY: CopyLimit = { bytes: 0 };

const NAMED_UPLOAD = new RegExp(`/(${UPLOAD_NAME})\\.(?:qcow2|vmlinuz|initrd)\\b`, 'g');

/** The uploads an XML text (a domain's, a volume's) names by path: a backing file, a kernel, an initrd. */
export function uploadsNamedIn(xml: string): string[] {
  return [...xml.matchAll(NAMED_UPLOAD)].map((m) => m[1] ?? '');
}

/**
 * Template base images on the hosts: each host gets a template's files as volumes of its pool,
 * uploaded once, checked by checksum, and recorded in `host_images`.
 *
 * Each upload has its own volume names (`template-<template id>-<sha12>-<upload id>.<ext>`):
 * libvirt 9.0 cannot rename a volume, so a finished upload cannot be moved to a final name, and
 * two jobs uploading the same template to the same host at once write different volumes. The
 * `host_images` row decides which one the host uses: the first upload recorded wins, the other
 * job deletes its own volumes and uses the winner's.
 */
export function createHostImages(db: Kysely<Database>, storage: PoolStorage, now: () => number) {
  /** Each local file's checksum, computed once per content (size and modification time). */
  const sums = new Map<string, { key: string; sha: Promise<string> }>();
  async function localSha(file: string): Promise<string> {
    const s = await stat(file);
    const key = `${s.size}:${s.mtimeMs}`;
    let known = sums.get(file);
    if (known?.key !== key) {
      known = { key, sha: sha256File(file) };
      known.sha.catch(() => sums.delete(file));
      sums.set(file, known);
    }
    return known.sha;
  }

  const rowOf = (hostId: string, templateId: string) =>
    db
      .selectFrom('host_images')
      .selectAll()
      .where('host_id', '=', hostId)
      .where('template_id', '=', templateId)
      .executeTakeFirst();

  return {
    /**
     * The template's volumes on the host, uploaded first if the host has no checked copy of this
     * content (its row and all its volumes there).
     */
    async ensure(hostId: string, uri: string, templateId: string, t: Template): Promise<HostTemplate> {
      const parts = await Promise.all(
        partsOf(t).map(async (p) => ({ ...p, sha: await localSha(p.file), size: (await stat(p.file)).size })),
      );
      // One checksum for the whole template: the disk's, or the parts' together.
      const sha =
        parts.length === 1
          ? (parts[0]?.sha ?? '')
          : createHash('sha256')
              .update(parts.map((p) => `${p.ext}:${p.sha}`).join('\n'))
              .digest('hex');
      /** The host's recorded upload, and its volumes if it is of this content and they are all there. */
      const onHost = async () => {
        const recorded = await rowOf(hostId, templateId);
        if (recorded?.sha256 !== sha) return { row: recorded };
        const have = await storage.list(uri);
        const mine = hostTemplate(t, recorded.volume);
        const names = [mine.disk, ...(mine.kernel ? [mine.kernel.kernel, mine.kernel.initrd] : [])];
        return { row: recorded, there: names.every((n) => have.has(n)) ? mine : undefined };
      };
      const { row, there } = await onHost();
      if (there) return there;

      const prefix = `template-${templateId}-${sha.slice(0, 12)}-${randomUUID().slice(0, 8)}`;
      const uploaded: string[] = [];
      const dropMine = async () => {
        for (const name of uploaded) await storage.remove(uri, name).catch(() => {});
      };
      // The files go whole into the host's pool, and each is read back into this machine's
      // temporary directory (all kept there until the end): refused for good, before anything is
      // written, where they cannot fit; held while they are written (room-claims.ts). Another
      // job's upload of the same content, recorded while this one waited, is used instead.
      const size = parts.reduce((n, p) => n + p.size, 0);
      const meanwhile: { there?: HostTemplate } = {};
      const release = await holdRoom(
        db,
        [
          {
            place: await storage.place(hostId, uri),
            where: `Host ${hostId}'s storage pool (a template's first copy there)`,
            need: size,
            room: () => storage.room(uri),
          },
          { place: await localPlace(), where: LOCAL_ROOM, need: size, room: localRoom },
        ],
        {
          done: async () => {
            meanwhile.there = (await onHost()).there;
            return meanwhile.there !== undefined;
          },
        },
      );
      if (meanwhile.there) return meanwhile.there;
      try {
        await withPrivateDir(async (dir) => {
          for (const p of parts) {
            const name = `${prefix}.${p.ext}`;
            uploaded.push(name);
            await storage.uploadNew(uri, name, p.file, TEMPLATE_COPY, COPY_BASE_MS);
            // Read back and compared with the local file's checksum: a broken copy is never used.
            const back = join(dir, p.ext);
            await storage.download(uri, name, back, TEMPLATE_COPY);
            if ((await sha256File(back)) !== p.sha)
              throw new DriverError('The template image reached the host damaged', { transient: true });
          }
        });
        const values = { volume: `${prefix}.qcow2`, sha256: sha, size_bytes: size, created_at: now() };
        // Recorded if no upload was recorded meanwhile, or over the row read above (an older
        // content, or volumes gone): conditional, so one of two concurrent uploads wins.
        if (row) {
          await db
            .updateTable('host_images')
            .set(values)
            .where('host_id', '=', hostId)
            .where('template_id', '=', templateId)
            .where('volume', '=', row.volume)
            .execute();
        } else {
          await db
            .insertInto('host_images')
            .values({ host_id: hostId, template_id: templateId, ...values })
            .onConflict((oc) => oc.columns(['host_id', 'template_id']).doNothing())
            .execute();
        }
      } catch (err) {
        await dropMine();
        throw err;
      } finally {
        await release();
      }
      const recorded = await rowOf(hostId, templateId);
      if (recorded?.volume !== `${prefix}.qcow2`) {
        // Another job's upload was recorded first: its volumes are the host's copy.
        await dropMine();
        if (recorded?.sha256 !== sha)
          throw new DriverError('The template image changed while it was being copied', { transient: true });
        return hostTemplate(t, recorded.volume);
      }
      return hostTemplate(t, recorded.volume);
    },

    /** The host's recorded upload of the template, if any. */
    row: rowOf,
  };
}

export type HostImages = ReturnType<typeof createHostImages>;
