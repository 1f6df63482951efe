import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { messageOf } from '../../domain/errors.ts';
import type { Database } from '../../store/schema.ts';
import { DriverError, type TemplateSweep } from '../driver.ts';
import { type Commands, isNoDomain } from './commands.ts';
import { isTemplateVolume, uploadOf, uploadsNamedIn } from './host-images.ts';
import { isNoVolume, POOL, type PoolStorage } from './storage.ts';

/**
 * The grace when none is given (config's VRP_TEMPLATE_SWEEP_GRACE has the same default, and 14 h
 * at least). What it must cover:
 * - an upload under way: three parts each copied up and read back, each copy bounded by 30
 *   minutes, and the pool's read after the disk part by 30 minutes (3.5 h; it has no row until
 *   then). Its sighting begins after it did: due 14 h later.
 * - a step that read the row just before it moved on and names the upload on the host later (a
 *   create, reinstall or rescue within minutes). A cold migration copies the disk for as long as
 *   its size needs (commands.ts, CopyLimit) before it names the upload: it looks at the upload
 *   again first and fails the attempt if it is gone (libvirt-driver.ts, move). A sighting survives
 *   a gap of up to half a grace in this process's looks, so one begun while the upload was under
 *   way (up to 3.5 h before its row) can outlast the row's whole life if this process never
 *   looked while the row named it: the removal then comes at least half a grace less 3.5 h after
 *   the row moved on, 3.5 h at the minimum.
 */
export const TEMPLATE_GRACE_MS = 16 * 3_600_000;

/** Uploads removed per host per sweep: a host with many old copies is emptied over several passes. */
const PER_SWEEP = 10;

export interface TemplateSweepDeps {
  readonly db: Kysely<Database>;
  /** A clock that only goes forward (performance.now): a step of the wall clock shortens no grace. */
  readonly now: () => number;
  /**
   * How long an upload no `host_images` row names must have been seen so before it goes: longer
   * than any upload takes (one under way has no row yet). Also how long one found in use waits
   * before it is looked at again.
   */
  readonly graceMs: number;
  /** The host's pool's volumes (none for a host whose pool is not made yet). */
  list(uri: string): Promise<Set<string>>;
  /** The uploads the host's domains (live and next-boot definitions) and other volumes name. */
  named(uri: string): Promise<Set<string>>;
  remove(uri: string, volume: string): Promise<void>;
}

/** An upload no row names, as this process has seen it. */
interface Sighting {
  /** Seen so since (reset when this process has not looked for half a grace). */
  since: number;
  lastSeen: number;
  /** Not looked at again before (found named). */
  notBefore: number;
  /** Removals of it that failed: it is tried after the uploads due that failed less often. */
  failures: number;
}

/**
 * The copies of templates that no VM uses any more, removed from each host: an older upload
 * after the catalogue's image changed (the host's row names the new one; VMs made from the old
 * one keep it as their disk's backing file, or boot its kernel, until they are gone), and the
 * volumes of an upload whose worker died before it recorded or deleted them.
 *
 * An upload goes when no row names it (any host's), nothing on the host names it (read over
 * every domain and every other volume of the pool, once it is due), and this process has seen it
 * so for a whole grace period: an upload under way (no row until its copy is checked) is never
 * taken for an abandoned one, and a create that read the row just before it moved on has long
 * made its disk. What this process saw is kept in memory: a restart only delays a removal, and a
 * sighting older than half a grace (another process had the host's passes meanwhile, and the
 * upload may have been recorded and replaced in between) starts the count again. A host's
 * volumes are read at most every quarter of the grace (15 minutes at most).
 */
export function createTemplateSweep(d: TemplateSweepDeps) {
  /** Per host: each unrecorded upload seen. */
  const seen = new Map<string, Map<string, Sighting>>();
  /** Per host: when this process last read its volumes. */
  const swept = new Map<string, number>();
  /** Time between two reads of a host's volumes: a quarter of the grace, at most 15 minutes. */
  const everyMs = Math.min(d.graceMs / 4, 15 * 60_000);

  /**
   * The uploads any host's row names: a host's own, and (upload names being unique) another's,
   * seen in this pool only if two hosts' pools were one directory, which the driver does not support.
   */
  const recordedUploads = async () =>
    new Set((await d.db.selectFrom('host_images').select('volume').execute()).map((r) => uploadOf(r.volume)));

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
    const mine = seen.get(hostId) ?? new Map<string, Sighting>();
    seen.set(hostId, mine);
    for (const u of mine.keys()) if (!uploads.has(u) || recorded.has(u)) mine.delete(u);
    const due: [string, Sighting][] = [];
    for (const u of uploads.keys()) {
      if (recorded.has(u)) continue;
      let s = mine.get(u);
      if (!s || t - s.lastSeen > d.graceMs / 2) {
        s = { since: t, lastSeen: t, notBefore: 0, failures: 0 };
        mine.set(u, s);
      }
      s.lastSeen = t;
      if (t - s.since >= d.graceMs && t >= s.notBefore) due.push([u, s]);
    }
    if (due.length === 0) return { removed: [], failed: [] };

    const named = await d.named(uri);
    // Read again after the host was read: a row written meanwhile keeps its upload.
    recorded = await recordedUploads();
    const removed: string[] = [];
    const failed: { volume: string; error: string }[] = [];
    // Those whose removal keeps failing (a file the host will not let go) last: they do not hold
    // up the others' removal pass after pass.
    due.sort(([a, s], [b, z]) => s.failures - z.failures || a.localeCompare(b));
    for (const [u, s] of due.slice(0, PER_SWEEP)) {
      if (recorded.has(u)) continue;
      if (named.has(u)) {
        s.notBefore = t + d.graceMs;
        continue;
      }
      // The disk last: an upload's parts without it are still recognised as its leftovers.
      const parts = (uploads.get(u) ?? []).sort(
        (a, b) => Number(a.endsWith('.qcow2')) - Number(b.endsWith('.qcow2')) || a.localeCompare(b),
      );
      for (const v of parts) {
        try {
          await d.remove(uri, v);
          removed.push(v);
        } catch (err) {
          failed.push({ volume: v, error: messageOf(err) });
          s.failures += 1;
          break;
        }
      }
    }
    return { removed, failed };
  };
}

/** virsh commands given to one virsh call, at most (its one argument stays far below the kernel's 128 KiB). */
const PER_CALL = 100;
/** Names given to virsh's own command line as they are: nothing its parser would read as quoting or a separator. */
const PLAIN = /^[A-Za-z0-9._:+@-]+$/;

/**
 * Each command's output, the commands given to as few virsh calls as can be (`;` between them, as
 * virsh's command line takes them): one connection to the host instead of one per command, which
 * over SSH is most of what a read costs. A marker echoed before each command tells the outputs
 * apart; a command that failed printed nothing (its error is not told apart, and its item is read
 * again alone). A call that fails as a whole leaves its commands' outputs undefined too.
 */
async function virshEach(
  host: Pick<Commands, 'virsh'>,
  uri: string,
  lines: readonly string[][],
  what: string,
): Promise<(string | undefined)[]> {
  const out: (string | undefined)[] = [];
  for (let i = 0; i < lines.length; i += PER_CALL) {
    const chunk = lines.slice(i, i + PER_CALL);
    const mark = `@@vrp-${randomUUID()}@@`;
    // The last echo keeps virsh's exit status that of the connection, not of the last command.
    const script = [...chunk.map((l) => `echo ${mark}; ${l.join(' ')}`), `echo ${mark}`].join('; ');
    const parts = await host
      .virsh(uri, ['-q', script], what)
      .then((r) => r.stdout.split(mark).slice(1, chunk.length + 1))
      .catch(() => []);
    for (let j = 0; j < chunk.length; j++) out.push(parts[j]?.trim() || undefined);
  }
  return out;
}

/**
 * What a libvirt host's domains and volumes name of the template uploads: each domain's live and
 * next-boot definitions (a kernel, an initrd, a running disk's backing chain; a rescue system's
 * live one), then each other qcow2 volume's backing file, the volumes listed after the domains
 * were (a disk made meanwhile is read). The reads go to the host in calls of many commands each
 * (a host with hundreds of VMs is read in a few connections); an item whose read failed there is
 * read again alone. Fails closed: a domain or volume whose read failed counts as gone only if a
 * new listing no longer has it (the pool read again first: a volume whose file was removed
 * outside libvirt leaves it); any other failure throws, and the sweep removes nothing.
 */
export async function uploadsNamedOnHost(
  host: Pick<Commands, 'virsh'> & Pick<PoolStorage, 'list' | 'refresh'>,
  uri: string,
): Promise<Set<string>> {
  const named = new Set<string>();
  const take = (xml: string) => {
    for (const u of uploadsNamedIn(xml)) named.add(u);
  };
  const domains = async () =>
    // By UUID: `dumpxml NAME` takes a name that is a number for a domain's ID (another domain).
    (await host.virsh(uri, ['list', '--all', '--uuid'], 'Could not list the VMs of the host')).stdout
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
  const volumes = async () => [...(await host.list(uri))];
  /**
   * Reads each item (`lines`: its virsh commands), in batches, then alone where that failed, its
   * failures of the kind `gone` kept aside; throws if one of those is still listed.
   */
  async function readAll(
    items: string[],
    lines: (item: string) => string[][],
    what: string,
    gone: (err: unknown) => boolean,
    again: () => Promise<string[]>,
  ) {
    const batched = items.filter((item) => PLAIN.test(item));
    const outputs = await virshEach(host, uri, batched.flatMap(lines), what);
    const alone = items.filter((item) => !PLAIN.test(item));
    let at = 0;
    for (const item of batched) {
      const mine = outputs.slice(at, at + lines(item).length);
      at += lines(item).length;
      if (mine.every((x) => x !== undefined)) for (const xml of mine) take(xml);
      else alone.push(item);
    }
    const failed = new Map<string, unknown>();
    for (const item of alone) {
      try {
        for (const args of lines(item)) take((await host.virsh(uri, args, what)).stdout);
      } catch (err) {
        if (!gone(err)) throw err;
        failed.set(item, err);
      }
    }
    if (failed.size === 0) return;
    for (const item of await again()) {
      const err = failed.get(item);
      if (err !== undefined)
        throw new DriverError(`Could not read ${item} on the host, though it is there: ${messageOf(err)}`, {
          transient: true,
          cause: err,
        });
    }
  }
  await readAll(
    await domains(),
    (name) => [
      ['dumpxml', name],
      ['dumpxml', '--inactive', name],
    ],
    'Could not read a VM',
    isNoDomain,
    domains,
  );
  await readAll(
    (await volumes()).filter((v) => !isTemplateVolume(v) && v.endsWith('.qcow2')),
    (v) => [['vol-dumpxml', '--pool', POOL, v]],
    'Could not read a storage volume',
    isNoVolume,
    // A volume whose file went behind libvirt's back stays listed until the pool is read again
    // (not waiting: a host busy with a copy is swept at a later pass).
    async () => {
      await host.refresh(uri, 0);
      return volumes();
    },
  );
  return named;
}
