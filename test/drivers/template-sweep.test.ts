/**
 * The sweep of a host's template copies (src/drivers/libvirt/template-sweep.ts), over a host
 * played in memory and the real store: an upload goes only when no `host_images` row names it,
 * nothing on the host names it, and it has been seen so for a whole grace period; what is named
 * waits another grace period before it is looked at again; a failed removal is told and tried
 * again; names that are not the driver's uploads are never touched. The libvirt side (what the
 * host's domains and volumes name) runs on real VMs in test/drivers/libvirt-template-sweep.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { DriverError } from '../../src/drivers/driver.ts';
import type { CopyLimit } from '../../src/drivers/libvirt/commands.ts';
import { uploadsNamedIn } from '../../src/drivers/libvirt/host-images.ts';
import { createPoolStorage } from '../../src/drivers/libvirt/storage.ts';
import { createTemplateSweep, uploadsNamedOnHost } from '../../src/drivers/libvirt/template-sweep.ts';
import { openStore } from '../../src/store/database.ts';
import { createPgDatabase, testStores } from '../helpers/stores.ts';

const GRACE = 60_000;
const HOUR = 3_600_000;
/** Upload names as the driver makes them: `template-<id>-<sha12>-<upload8>`. */
const OLD = 'template-deb-0123456789ab-00000001';
const NEW = 'template-deb-ba9876543210-00000002';
const DEAD = 'template-deb-ba9876543210-00000003';
const KERNEL = 'template-k-cccccccccccc-00000004';

test('the uploads an XML text names: backing files, kernels and initrds, by path', () => {
  const xml = `<domain><os><kernel>/var/lib/vrp/${KERNEL}.vmlinuz</kernel><initrd>/var/lib/vrp/${KERNEL}.initrd</initrd></os>
<disk><source file='/var/lib/vrp/vm.qcow2'/><backingStore type='file'><source file='/var/lib/vrp/${OLD}.qcow2'/></backingStore></disk>
<backingStore><path>/pool/${NEW}.qcow2</path></backingStore><name>${DEAD}.qcow2</name></domain>`;
  // A bare name (no path before it) is no reference: a volume's own <name> is not a use of it.
  assert.deepEqual(uploadsNamedIn(xml).sort(), [KERNEL, KERNEL, NEW, OLD].sort());
});

/**
 * A host's virsh, scripted: each command line's output, or the stderr it fails with; its pool's
 * listing read from the scripted `vol-list vrp`, as the pool storage reads it.
 */
function scriptedVirsh(script: Map<string, string | { stderr: string }>) {
  /** Each virsh command run, those of a call of several commands one by one. */
  const asked: string[] = [];
  /** Each virsh call (a process, one connection to the host). */
  const calls: string[] = [];
  const notScripted = async (): Promise<never> => {
    throw new Error('not scripted');
  };
  // The driver's own pool storage over the scripted virsh (as `commands.virsh` is when called).
  const pool = createPoolStorage(
    {
      run: notScripted,
      virshShell: notScripted,
      close: async () => {},
      virsh: (...a) => commands.virsh(...a),
    },
    '/pool',
  );
  const commands = {
    list: (uri: string) => pool.list(uri),
    refresh: (uri: string, waitMs?: number) => pool.refresh(uri, waitMs),
    async virsh(_uri: string, args: readonly string[], _what?: string, _limit?: number | CopyLimit) {
      // `-q 'a; b; ...'`: several commands in one call, as virsh runs them: each one's output in
      // turn (nothing for one that fails), the exit status the last one's.
      if (args[0] === '-q' && args.length === 2) {
        calls.push(args.join(' '));
        let stdout = '';
        let ok = true;
        for (const command of (args[1] ?? '').split('; ')) {
          if (command.startsWith('echo ')) {
            stdout += command.slice(5);
            ok = true;
            continue;
          }
          asked.push(command);
          const r = script.get(command);
          ok = typeof r === 'string';
          if (typeof r === 'string') stdout += r;
        }
        if (!ok) throw new DriverError('Could not read', { transient: false });
        return { stdout, stderr: '' };
      }
      const line = args.join(' ');
      calls.push(line);
      asked.push(line);
      const r = script.get(line);
      if (r === undefined) throw new Error(`not scripted: ${line}`);
      if (typeof r !== 'string')
        throw new DriverError('Could not read', {
          transient: true,
          details: { command: `virsh ${line}`, exitCode: 1, signal: null, stderr: r.stderr },
        });
      return { stdout: r, stderr: '' };
    },
  };
  return { asked, calls, commands };
}
const volList = (...names: string[]) =>
  ` Name   Path\n-------------\n${names.map((n) => ` ${n}   /pool/${n}`).join('\n')}\n`;
const kernelOf = (u: string) => `<domain><os><kernel>/pool/${u}.vmlinuz</kernel></os></domain>`;
const backedBy = (u: string) => `<volume><backingStore><path>/pool/${u}.qcow2</path></backingStore></volume>`;

test("what a host names: each domain's live and next-boot definitions, then each other qcow2 volume's backing file", async () => {
  const v = scriptedVirsh(
    new Map<string, string | { stderr: string }>([
      ['list --all --uuid', 'vrp-a\nvrp-b\n\n'],
      // vrp-a runs a rescue system: its live definition boots another upload than its next boot.
      ['dumpxml vrp-a', kernelOf(KERNEL)],
      ['dumpxml --inactive vrp-a', kernelOf(OLD)],
      ['dumpxml vrp-b', '<domain/>'],
      ['dumpxml --inactive vrp-b', '<domain/>'],
      ['vol-list vrp', volList('a.qcow2', 'a.seed.iso', `${NEW}.qcow2`, `${DEAD}.qcow2`)],
      ['vol-dumpxml --pool vrp a.qcow2', backedBy(NEW)],
    ]),
  );
  assert.deepEqual(
    [...(await uploadsNamedOnHost(v.commands, 'qemu:///test'))].sort(),
    [KERNEL, NEW, OLD].sort(),
  );
  // The uploads' own volumes and raw volumes are not read.
  assert.deepEqual(
    v.asked.filter((l) => l.startsWith('vol-dumpxml')),
    ['vol-dumpxml --pool vrp a.qcow2'],
  );
  // The domains' definitions in one call, the volumes' in another: four connections in all.
  assert.deepEqual(
    v.calls.map((c) => c.replace(/@@vrp-[0-9a-f-]+@@/g, 'M')),
    [
      'list --all --uuid',
      '-q echo M; dumpxml vrp-a; echo M; dumpxml --inactive vrp-a; echo M; dumpxml vrp-b; echo M; dumpxml --inactive vrp-b; echo M',
      'vol-list vrp',
      '-q echo M; vol-dumpxml --pool vrp a.qcow2; echo M',
    ],
  );
});

test('what a host names: a read that failed among many is read again alone; names virsh would parse are read alone', async () => {
  const many = Array.from({ length: 150 }, (_, i) => `vrp-${String(i).padStart(3, '0')}`);
  const script = new Map<string, string | { stderr: string }>([
    ['list --all --uuid', `${many.join('\n')}\n`],
    ['vol-list vrp', volList("it's.qcow2")],
    ["vol-dumpxml --pool vrp it's.qcow2", backedBy(NEW)],
  ]);
  for (const d of many) {
    script.set(`dumpxml ${d}`, '<domain/>');
    script.set(`dumpxml --inactive ${d}`, '<domain/>');
  }
  script.set('dumpxml --inactive vrp-007', kernelOf(KERNEL));
  // Refused in the batch (a lookup that failed, the daemon busy), read alone then.
  script.set('dumpxml vrp-149', { stderr: 'error: Timed out during operation' });
  const v = scriptedVirsh(script);
  const listing = v.commands.virsh;
  let alone = 0;
  v.commands.virsh = async (uri, args) => {
    if (args[0] === 'dumpxml' && args[1] === 'vrp-149' && alone++ === 0) {
      v.calls.push(args.join(' '));
      return { stdout: kernelOf(OLD), stderr: '' };
    }
    return listing(uri, args);
  };
  assert.deepEqual([...(await uploadsNamedOnHost(v.commands, 'u'))].sort(), [KERNEL, NEW, OLD].sort());
  const batches = v.calls.filter((c) => c.startsWith('-q '));
  assert.equal(batches.length, 3, '300 reads in calls of at most 100');
  assert.deepEqual(
    v.calls.filter((c) => !c.startsWith('-q ')),
    [
      'list --all --uuid',
      'dumpxml vrp-149',
      'dumpxml --inactive vrp-149',
      'vol-list vrp',
      "vol-dumpxml --pool vrp it's.qcow2",
    ],
  );
});

test('what a host names: a read that fails is no answer, unless what it read is gone', async () => {
  const base = () =>
    new Map<string, string | { stderr: string }>([
      ['list --all --uuid', 'vrp-a\n'],
      ['dumpxml vrp-a', kernelOf(OLD)],
      ['dumpxml --inactive vrp-a', kernelOf(OLD)],
      ['vol-list vrp', volList('a.qcow2')],
      ['vol-dumpxml --pool vrp a.qcow2', backedBy(OLD)],
      ['pool-refresh vrp', ''],
    ]);
  // A connection that dropped: thrown as it came.
  const dropped = base().set('dumpxml --inactive vrp-a', {
    stderr: 'error: Cannot recv data: Connection reset by peer',
  });
  await assert.rejects(uploadsNamedOnHost(scriptedVirsh(dropped).commands, 'u'), /Could not read/);
  // libvirt's "failed to get domain" though the domain is still listed (its daemon restarting):
  // no answer either, rather than a domain taken for gone.
  const lookup = base().set('dumpxml vrp-a', { stderr: "error: failed to get domain 'vrp-a'" });
  await assert.rejects(
    uploadsNamedOnHost(scriptedVirsh(lookup).commands, 'u'),
    /Could not read vrp-a on the host, though it is there/,
  );
  const volume = base().set('vol-dumpxml --pool vrp a.qcow2', { stderr: 'error: Storage volume not found' });
  await assert.rejects(
    uploadsNamedOnHost(scriptedVirsh(volume).commands, 'u'),
    /Could not read a.qcow2 on the host, though it is there/,
  );
  // A volume whose file was removed outside libvirt: listed until the pool is read again, which
  // the look does before it lists the volumes again; then gone, and the rest is read.
  const stale = scriptedVirsh(
    base().set('vol-list vrp', volList('a.qcow2', 'b.qcow2')).set('vol-dumpxml --pool vrp b.qcow2', {
      stderr: "error: Storage volume not found: no storage vol with matching path '/pool/b.qcow2'",
    }),
  );
  const listBeforeRefresh = stale.commands.virsh;
  let refreshed = false;
  stale.commands.virsh = async (uri, args) => {
    if (args[0] === 'pool-refresh') refreshed = true;
    if (args[0] === 'vol-list' && refreshed) return { stdout: volList('a.qcow2'), stderr: '' };
    return listBeforeRefresh(uri, args);
  };
  assert.deepEqual([...(await uploadsNamedOnHost(stale.commands, 'u'))], [OLD]);
  assert.ok(stale.asked.includes('pool-refresh vrp'));
  // The pool cannot be read again while the host builds a volume in it (another VM's restore or
  // migration copying): no answer at this pass, without waiting for the copy.
  const copying = scriptedVirsh(
    base()
      .set('vol-dumpxml --pool vrp a.qcow2', { stderr: 'error: Storage volume not found' })
      .set('pool-refresh vrp', {
        stderr:
          "error: Failed to refresh pool vrp\nerror: internal error: pool 'vrp' has asynchronous jobs running.",
      }),
  );
  await assert.rejects(uploadsNamedOnHost(copying.commands, 'u'), (err: unknown) => {
    assert.ok(err instanceof DriverError && err.transient);
    assert.match(err.message, /busy with a copy/);
    return true;
  });
  assert.equal(copying.asked.filter((l) => l === 'pool-refresh vrp').length, 1, 'tried once');
  // Gone while it was read (a VM removed meanwhile): it names nothing, the rest is read.
  const gone = scriptedVirsh(base().set('dumpxml vrp-a', { stderr: "error: failed to get domain 'vrp-a'" }));
  let lists = 0;
  const listing = gone.commands.virsh;
  gone.commands.virsh = async (uri, args) => {
    if (args.join(' ') === 'list --all --uuid' && lists++ > 0) return { stdout: '\n', stderr: '' };
    return listing(uri, args);
  };
  assert.deepEqual([...(await uploadsNamedOnHost(gone.commands, 'u'))], [OLD], 'still named by the disk');
});

for (const kind of testStores()) {
  describe(`the template sweep (${kind})`, () => {
    async function world(grace = GRACE) {
      const dataDir = mkdtempSync(join(tmpdir(), 'vrp-sweep-'));
      const pg = kind === 'postgres' ? await createPgDatabase() : undefined;
      const store = await openStore({ databaseUrl: pg?.url, dataDir });
      const volumes = new Set<string>();
      const named = new Set<string>();
      const refused = new Set<string>();
      let now = 1_000_000;
      let lookedAtHost = 0;
      let listed = 0;
      /** Run while the sweep reads what the host names (a job's write landing meanwhile). */
      let duringRead: (() => Promise<unknown>) | undefined;
      const sweep = createTemplateSweep({
        db: store.db,
        now: () => now,
        graceMs: grace,
        list: async () => {
          listed++;
          return new Set(volumes);
        },
        named: async (_uri: string) => {
          lookedAtHost++;
          await duringRead?.();
          return new Set(named);
        },
        remove: async (_uri, v) => {
          if (refused.has(v)) throw new Error(`cannot delete ${v}`);
          volumes.delete(v);
        },
      });
      const record = (hostId: string, upload: string) =>
        store.db
          .insertInto('host_images')
          .values({
            host_id: hostId,
            template_id: 'deb',
            volume: `${upload}.qcow2`,
            sha256: 'x',
            size_bytes: 1,
            created_at: 0,
          })
          .onConflict((oc) =>
            oc.columns(['host_id', 'template_id']).doUpdateSet({ volume: `${upload}.qcow2` }),
          )
          .execute();
      return {
        volumes,
        named,
        refused,
        record,
        sweep: (hostId = 'h1') => sweep(hostId, 'qemu:///test'),
        later(ms: number) {
          now += ms;
        },
        /** `reads` reads of h1, a quarter of the grace apart; what each removed. */
        async quarters(reads: number): Promise<string[][]> {
          const out: string[][] = [];
          for (let i = 0; i < reads; i++) {
            now += grace / 4;
            out.push([...(await sweep('h1', 'qemu:///test')).removed]);
          }
          return out;
        },
        lookedAtHost: () => lookedAtHost,
        listed: () => listed,
        whileReading(f: () => Promise<unknown>) {
          duringRead = f;
        },
        async done() {
          await store.close();
          await pg?.drop();
          rmSync(dataDir, { recursive: true, force: true });
        },
      };
    }

    /** A test's body in a world of its own, closed after it whatever happens. */
    const inWorld =
      (body: (w: Awaited<ReturnType<typeof world>>) => Promise<void>, grace = GRACE) =>
      async () => {
        const w = await world(grace);
        try {
          await body(w);
        } finally {
          await w.done();
        }
      };

    test(
      'keeps the recorded upload and what the host names; removes the rest after a whole grace period',
      inWorld(async (w) => {
        for (const v of [
          `${OLD}.qcow2`,
          `${NEW}.qcow2`,
          `${DEAD}.qcow2`,
          `${KERNEL}.qcow2`,
          `${KERNEL}.vmlinuz`,
          `${KERNEL}.initrd`,
        ])
          w.volumes.add(v);
        // Not the driver's uploads: a VM's disk, a legacy name, names of other shapes.
        for (const v of ['vm-1.qcow2', 'template-deb.qcow2', 'template-deb-xyz.qcow2', `${DEAD}.txt`])
          w.volumes.add(v);
        await w.record('h1', NEW);
        w.named.add(OLD);

        // First seen, and looked at every quarter of the grace: nothing goes, the host is not read.
        assert.deepEqual(await w.sweep(), { removed: [], failed: [] });
        assert.deepEqual(await w.quarters(3), [[], [], []]);
        assert.equal(w.lookedAtHost(), 0, 'no host read before anything is due');

        // A whole grace after: the dead upload and the kernel template's three volumes (its disk last); OLD is named.
        const [first] = await w.quarters(1);
        assert.deepEqual(first, [
          `${DEAD}.qcow2`,
          `${KERNEL}.initrd`,
          `${KERNEL}.vmlinuz`,
          `${KERNEL}.qcow2`,
        ]);
        assert.deepEqual(
          [...w.volumes].sort(),
          [
            `${NEW}.qcow2`,
            `${OLD}.qcow2`,
            `${DEAD}.txt`,
            'template-deb-xyz.qcow2',
            'template-deb.qcow2',
            'vm-1.qcow2',
          ].sort(),
        );

        // The VMs on OLD are gone: it is looked at again a grace period after the look that found it named.
        w.named.delete(OLD);
        assert.deepEqual(await w.quarters(4), [[], [], [], [`${OLD}.qcow2`]]);
        // The recorded upload stays, however long it goes unnamed.
        w.later(10 * GRACE);
        assert.deepEqual((await w.sweep()).removed, []);
        assert.ok(w.volumes.has(`${NEW}.qcow2`));
      }),
    );

    test(
      "an upload recorded while the host was read is kept, and one another host's row names",
      inWorld(async (w) => {
        for (const u of [DEAD, OLD, KERNEL]) w.volumes.add(`${u}.qcow2`);
        // OLD is h2's recorded upload, seen in h1's pool: the two hosts' pools would be one
        // directory (not supported, and h2's template must not pay for it).
        await w.record('h2', OLD);
        await w.sweep();
        await w.quarters(3);
        // DEAD's row is written while the sweep reads the host (an upload that finished just then).
        w.whileReading(() => w.record('h1', DEAD));
        assert.deepEqual(await w.quarters(1), [[`${KERNEL}.qcow2`]]);
        assert.deepEqual([...w.volumes].sort(), [`${DEAD}.qcow2`, `${OLD}.qcow2`].sort());
      }),
    );

    test(
      'a sighting this process has not renewed for half a grace starts the count again',
      inWorld(async (w) => {
        w.volumes.add(`${DEAD}.qcow2`);
        await w.sweep();
        // Another process had the host's passes meanwhile (the upload may have been recorded
        // and replaced in between, unseen here): counted from this look.
        w.later(GRACE / 2 + 1);
        await w.sweep();
        // A grace after the first look, not after this one: kept.
        assert.deepEqual(await w.quarters(2), [[], []]);
        assert.deepEqual(await w.quarters(2), [[], [`${DEAD}.qcow2`]]);
      }),
    );

    test(
      'a sighting ends when the upload is seen recorded: one replaced later counts from then',
      inWorld(async (w) => {
        w.volumes.add(`${DEAD}.qcow2`);
        w.volumes.add(`${NEW}.qcow2`);
        // Seen under way (no row yet), then recorded, then replaced by NEW a quarter later.
        await w.sweep();
        await w.record('h1', DEAD);
        assert.deepEqual(await w.quarters(1), [[]]);
        await w.record('h1', NEW);
        // A whole grace from its first sighting is not enough: from the look that found it replaced.
        assert.deepEqual(await w.quarters(5), [[], [], [], [], [`${DEAD}.qcow2`]]);
      }),
    );

    test(
      'at the shortest grace an operator may set, a replaced upload stays 3.5 h and more after its row moved on',
      inWorld(async (w) => {
        w.volumes.add(`${DEAD}.qcow2`);
        w.volumes.add(`${NEW}.qcow2`);
        // This process sees DEAD under way at 0:00 and 2:45; its row is written at 2:59 and this
        // process does not look while the row names it (another process has the host's passes).
        await w.sweep();
        w.later(2.75 * HOUR);
        await w.sweep();
        await w.record('h1', DEAD);
        // The row moves on at 9:44 (the image changed; a cold migration read DEAD's row just
        // before, and names its copy within 3.5 h); this process looks again at 9:45, half a
        // grace after its last look: its sighting of 0:00 stands.
        w.later(7 * HOUR - 60_000);
        await w.record('h1', NEW);
        const moved = 9.75 * HOUR - 60_000;
        w.later(60_000);
        let at = 9.75 * HOUR;
        let removedAt: number | undefined;
        while (removedAt === undefined && at < 24 * HOUR) {
          if ((await w.sweep()).removed.includes(`${DEAD}.qcow2`)) removedAt = at;
          w.later(15 * 60_000);
          at += 15 * 60_000;
        }
        assert.ok(removedAt !== undefined, 'removed in the end');
        assert.ok(
          removedAt - moved >= 3.5 * HOUR,
          `removed ${(removedAt - moved) / HOUR} h after the row moved on`,
        );
      }, 14 * HOUR),
    );

    test(
      'a removal that fails is told, the rest of that upload waits, and the next pass finishes it',
      inWorld(async (w) => {
        for (const v of [`${KERNEL}.qcow2`, `${KERNEL}.vmlinuz`, `${KERNEL}.initrd`]) w.volumes.add(v);
        w.refused.add(`${KERNEL}.vmlinuz`);
        await w.sweep();
        await w.quarters(3);
        w.later(GRACE / 4);
        const r = await w.sweep();
        assert.deepEqual(r.removed, [`${KERNEL}.initrd`]);
        assert.equal(r.failed.length, 1);
        assert.equal(r.failed[0]?.volume, `${KERNEL}.vmlinuz`);
        assert.match(r.failed[0]?.error ?? '', /cannot delete/);
        assert.ok(w.volumes.has(`${KERNEL}.qcow2`), 'the disk, last, not removed after a failure');
        w.refused.clear();
        assert.deepEqual(await w.quarters(1), [[`${KERNEL}.vmlinuz`, `${KERNEL}.qcow2`]]);
        assert.equal(w.volumes.size, 0);
      }),
    );

    test(
      "a host's volumes are read at most every quarter of the grace period, each host on its own",
      inWorld(async (w) => {
        w.volumes.add(`${DEAD}.qcow2`);
        await w.sweep('h1');
        assert.equal(w.listed(), 1);
        w.later(GRACE / 4 - 1);
        assert.deepEqual(await w.sweep('h1'), { removed: [], failed: [] });
        assert.equal(w.listed(), 1, 'not read again so soon');
        await w.sweep('h2');
        assert.equal(w.listed(), 2, 'another host is read');
        w.later(1);
        await w.sweep('h1');
        assert.equal(w.listed(), 3);
        // Its removal comes at the first read a whole grace period after it was first seen.
        assert.deepEqual(await w.quarters(3), [[], [], [`${DEAD}.qcow2`]]);
      }),
    );

    test(
      'a host with many abandoned uploads is emptied ten uploads a pass',
      inWorld(async (w) => {
        for (let i = 0; i < 25; i++)
          w.volumes.add(`template-deb-0123456789ab-${String(i).padStart(8, '0')}.qcow2`);
        await w.sweep();
        await w.quarters(3);
        assert.deepEqual(
          (await w.quarters(3)).map((r) => r.length),
          [10, 10, 5],
        );
        assert.equal(w.volumes.size, 0);
      }),
    );

    test(
      'uploads whose removal keeps failing go after the others: they do not hold up the rest',
      inWorld(async (w) => {
        const upload = (i: number) => `template-deb-0123456789ab-${String(i).padStart(8, '0')}.qcow2`;
        for (let i = 0; i < 12; i++) w.volumes.add(upload(i));
        // The first ten by name cannot be deleted (a file the host will not let go).
        for (let i = 0; i < 10; i++) w.refused.add(upload(i));
        await w.sweep();
        await w.quarters(3);
        const [first] = await w.quarters(1);
        assert.deepEqual(first, [], 'a pass tries the first ten, all refused');
        // The next pass tries the two it has not tried before ahead of the ten that failed.
        const [second] = await w.quarters(1);
        assert.deepEqual(second, [upload(10), upload(11)]);
        // Once the host lets them go, they go too.
        w.refused.clear();
        assert.deepEqual(
          (await w.quarters(1)).map((r) => r.length),
          [10],
        );
        assert.equal(w.volumes.size, 0);
      }),
    );
  });
}
