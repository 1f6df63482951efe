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
import { createTemplateSweep, uploadsNamedIn } from '../../src/drivers/libvirt/template-sweep.ts';
import { openStore } from '../../src/store/database.ts';
import { createPgDatabase, testStores } from '../helpers/stores.ts';

const GRACE = 60_000;
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

for (const kind of testStores()) {
  describe(`the template sweep (${kind})`, () => {
    async function world() {
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
        graceMs: GRACE,
        list: async () => {
          listed++;
          return new Set(volumes);
        },
        named: async () => {
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

    test('keeps the recorded upload and what the host names; removes the rest after a whole grace period', async () => {
      const w = await world();
      try {
        for (const v of [
          `${OLD}.qcow2`,
          `${NEW}.qcow2`,
          `${DEAD}.qcow2`,
          `${KERNEL}.qcow2`,
          `${KERNEL}.vmlinuz`,
          `${KERNEL}.initrd`,
        ])
          w.volumes.add(v);
        // Not the driver's uploads: a VM's disk, a legacy name, an upload name with another shape.
        for (const v of ['vm-1.qcow2', 'template-deb.qcow2', 'template-deb-xyz.qcow2']) w.volumes.add(v);
        await w.record('h1', NEW);
        w.named.add(OLD);

        // First seen: nothing goes, and the host is not read (nothing is due).
        assert.deepEqual(await w.sweep(), { removed: [], failed: [] });
        w.later(GRACE - 1);
        assert.deepEqual(await w.sweep(), { removed: [], failed: [] });
        assert.equal(w.lookedAtHost(), 0, 'no host read before anything is due');

        // The next read, a quarter of the grace later (reads are that far apart): due now.
        w.later(GRACE / 4);
        const first = await w.sweep();
        assert.deepEqual(first.failed, []);
        // The dead upload and the kernel template's three volumes (its disk last); OLD is named.
        assert.deepEqual(first.removed, [
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
            'template-deb-xyz.qcow2',
            'template-deb.qcow2',
            'vm-1.qcow2',
          ].sort(),
        );

        // The VMs on OLD are gone: it waits a grace period from the look that found it named.
        w.named.delete(OLD);
        w.later(GRACE - 1);
        assert.deepEqual((await w.sweep()).removed, []);
        w.later(GRACE / 4);
        assert.deepEqual((await w.sweep()).removed, [`${OLD}.qcow2`]);
        // The recorded upload stays, however long it goes unnamed.
        w.later(10 * GRACE);
        assert.deepEqual((await w.sweep()).removed, []);
        assert.ok(w.volumes.has(`${NEW}.qcow2`));
      } finally {
        await w.done();
      }
    });

    test("an upload recorded while the host was read is kept, and one another host's row names", async () => {
      const w = await world();
      try {
        for (const u of [DEAD, OLD, KERNEL]) w.volumes.add(`${u}.qcow2`);
        // OLD is h2's recorded upload, seen in h1's pool: the two hosts' pools would be one
        // directory (not supported, and h2's template must not pay for it).
        await w.record('h2', OLD);
        await w.sweep();
        w.later(GRACE);
        // DEAD's row is written while the sweep reads the host (an upload that finished just then).
        w.whileReading(() => w.record('h1', DEAD));
        const r = await w.sweep();
        assert.deepEqual(r, { removed: [`${KERNEL}.qcow2`], failed: [] });
        assert.deepEqual([...w.volumes].sort(), [`${DEAD}.qcow2`, `${OLD}.qcow2`].sort());
      } finally {
        await w.done();
      }
    });

    test('a removal that fails is told, the rest of that upload waits, and the next pass finishes it', async () => {
      const w = await world();
      try {
        for (const v of [`${KERNEL}.qcow2`, `${KERNEL}.vmlinuz`, `${KERNEL}.initrd`]) w.volumes.add(v);
        w.refused.add(`${KERNEL}.vmlinuz`);
        await w.sweep();
        w.later(GRACE);
        const r = await w.sweep();
        assert.deepEqual(r.removed, [`${KERNEL}.initrd`]);
        assert.equal(r.failed.length, 1);
        assert.equal(r.failed[0]?.volume, `${KERNEL}.vmlinuz`);
        assert.match(r.failed[0]?.error ?? '', /cannot delete/);
        assert.ok(w.volumes.has(`${KERNEL}.qcow2`), 'the disk, last, not removed after a failure');
        w.refused.clear();
        w.later(GRACE / 4);
        assert.deepEqual((await w.sweep()).removed, [`${KERNEL}.vmlinuz`, `${KERNEL}.qcow2`]);
        assert.equal(w.volumes.size, 0);
      } finally {
        await w.done();
      }
    });

    test("a host's volumes are read at most every quarter of the grace period, each host on its own", async () => {
      const w = await world();
      try {
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
        for (let i = 0; i < 3; i++) {
          w.later(GRACE / 4);
          assert.deepEqual((await w.sweep('h1')).removed, i < 2 ? [] : [`${DEAD}.qcow2`]);
        }
      } finally {
        await w.done();
      }
    });

    test('a host with many abandoned uploads is emptied ten uploads a pass', async () => {
      const w = await world();
      try {
        for (let i = 0; i < 25; i++)
          w.volumes.add(`template-deb-0123456789ab-${String(i).padStart(8, '0')}.qcow2`);
        await w.sweep();
        w.later(GRACE);
        assert.equal((await w.sweep()).removed.length, 10);
        w.later(GRACE / 4);
        assert.equal((await w.sweep()).removed.length, 10);
        w.later(GRACE / 4);
        assert.equal((await w.sweep()).removed.length, 5);
        assert.equal(w.volumes.size, 0);
      } finally {
        await w.done();
      }
    });
  });
}
