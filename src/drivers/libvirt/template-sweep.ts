import type { Kysely } from 'kysely';
import { messageOf } from '../../domain/errors.ts';
import type { Database } from '../../store/schema.ts';
import type { TemplateSweep } from '../driver.ts';
import { type Commands, isNoDomain } from './commands.ts';
import { isTemplateVolume } from './host-images.ts';
import { isNoVolume, POOL } from './storage.ts';

/** The grace when none is given (config's VRP_TEMPLATE_SWEEP_GRACE has the same default). */
export const TEMPLATE_GRACE_MS = 2 * 3_600_000;

/** Uploads removed per host per sweep: a host with many old copies is emptied over several passes. */
const PER_SWEEP = 10;

/** An upload's name prefix (`template-<id>-<sha12>-<upload8>`), from any of its volumes' names. */
const uploadOf = (volume: string) => volume.replace(/\.\w+$/, '');

/** The uploads an XML text (a domain's, a volume's) names by path: a backing file, a kernel, an initrd. */
export function uploadsNamedIn(xml: string): string[] {
  return [...xml.matchAll(/\/(template-[^<>'"/\s]+)\.(?:qcow2|vmlinuz|initrd)\b/g)].map((m) => m[1] ?? '');
}

export interface TemplateSweepDeps {
  readonly db: Kysely<Database>;
  readonly now: () => number;
  /**
   * How long an upload no `host_images` row names must have been seen so before it goes: longer
   * than any upload takes (one under way has no row yet; each of its two copies, up and back, is
   * bounded by 30 minutes). Also how long one found in use waits before it is looked at again.
   */
  readonly graceMs: number;
  /** The host's pool's volumes. */
  list(uri: string): Promise<Set<string>>;
  /** The uploads the host's domains (live and next-boot definitions) and other volumes name. */
  named(uri: string, volumes: ReadonlySet<string>): Promise<Set<string>>;
  remove(uri: string, volume: string): Promise<void>;
}

/**
 * The copies of templates that no VM uses any more, removed from each host: an older upload
 * after the catalogue's image changed (the host's row names the new one; VMs made from the old
 * one keep it as their disk's backing file, or boot its kernel, until they are gone), and the
 * volumes of an upload whose worker died before it recorded or deleted them.
 *
 * An upload goes when no row names it, nothing on the host names it (read over every domain and
 * every other volume of the pool, after the grace period), and it has been seen so for a whole
 * grace period by this process: an upload under way is never taken for an abandoned one, and
 * a create that read the row just before it changed has long made its disk. What this process
 * saw is kept in memory: a restart only delays a removal. A host's volumes are read at most every
 * quarter of the grace period (15 minutes at most), whatever the reconciler's interval.
 */
export function createTemplateSweep(d: TemplateSweepDeps) {
  /** Per host: each unrecorded upload seen, and when it is next looked at. */
  const seen = new Map<string, Map<string, number>>();

  /**
   * The uploads any host's row names: a host's own, and (upload names being unique) another's
   * seen in this pool only if the two hosts' pools are one directory, which the driver does not
   * support but which must not cost that host its template.
   */
  const recordedUploads = async () =>
    new Set((await d.db.selectFrom('host_images').select('volume').execute()).map((r) => uploadOf(r.volume)));

  /** Per host: when this process last read its volumes. */
  const swept = new Map<string, number>();
  /** Time between two reads of a host's volumes: a quarter of the grace, at most 15 minutes. */
  const everyMs = Math.min(d.graceMs / 4, 15 * 60_000);

  return async function sweep(hostId: string, uri: string): Promise<TemplateSweep> {
    const last = swept.get(hostId);
    if (last !== undefined && d.now() - last < everyMs) return { removed: [], failed: [] };
    swept.set(hostId, d.now());
    const volumes = await d.list(uri);
    const uploads = new Map<string, string[]>();
    for (const v of volumes) {
      if (!isTemplateVolume(v)) continue;
      const u = uploadOf(v);
      uploads.set(u, [...(uploads.get(u) ?? []), v]);
    }
    let recorded = await recordedUploads();
    const t = d.now();
    const mine = seen.get(hostId) ?? new Map<string, number>();
    seen.set(hostId, mine);
    for (const u of mine.keys()) if (!uploads.has(u) || recorded.has(u)) mine.delete(u);
    const due: string[] = [];
    for (const u of uploads.keys()) {
      if (recorded.has(u)) continue;
      const at = mine.get(u);
      if (at === undefined) mine.set(u, t + d.graceMs);
      else if (t >= at) due.push(u);
    }
    if (due.length === 0) return { removed: [], failed: [] };

    const named = await d.named(uri, volumes);
    // Read again after the host was read: a row written meanwhile keeps its upload.
    recorded = await recordedUploads();
    const removed: string[] = [];
    const failed: { volume: string; error: string }[] = [];
    for (const u of due.sort().slice(0, PER_SWEEP)) {
      if (recorded.has(u)) continue;
      if (named.has(u)) {
        mine.set(u, t + d.graceMs);
        continue;
      }
      // The disk last: an upload's parts without it are still recognised as its leftovers.
      const parts = (uploads.get(u) ?? [])
        .sort()
        .sort((a, b) => Number(a.endsWith('.qcow2')) - Number(b.endsWith('.qcow2')));
      for (const v of parts) {
        try {
          await d.remove(uri, v);
          removed.push(v);
        } catch (err) {
          failed.push({ volume: v, error: messageOf(err) });
          break;
        }
      }
    }
    return { removed, failed };
  };
}

/**
 * What a libvirt host's domains and volumes name of the template uploads: each domain's live and
 * next-boot definitions (a kernel, an initrd, a running disk's backing chain), and each other
 * qcow2 volume's backing file. One that went while it was read (a VM removed) names nothing; any
 * other failure throws, and the sweep removes nothing.
 */
export async function uploadsNamedOnHost(
  commands: Pick<Commands, 'virsh'>,
  uri: string,
  volumes: ReadonlySet<string>,
): Promise<Set<string>> {
  const named = new Set<string>();
  const take = (xml: string) => {
    for (const u of uploadsNamedIn(xml)) named.add(u);
  };
  const { stdout } = await commands.virsh(
    uri,
    ['list', '--all', '--name'],
    'Could not list the VMs of the host',
  );
  for (const name of stdout.split('\n').map((l) => l.trim())) {
    if (!name) continue;
    for (const flags of [[], ['--inactive']]) {
      try {
        take((await commands.virsh(uri, ['dumpxml', ...flags, name], 'Could not read a VM')).stdout);
      } catch (err) {
        if (!isNoDomain(err)) throw err;
      }
    }
  }
  for (const v of volumes) {
    if (isTemplateVolume(v) || !v.endsWith('.qcow2')) continue;
    try {
      take(
        (await commands.virsh(uri, ['vol-dumpxml', '--pool', POOL, v], 'Could not read a storage volume'))
          .stdout,
      );
    } catch (err) {
      if (!isNoVolume(err)) throw err;
    }
  }
  return named;
}
