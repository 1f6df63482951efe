/**
 * A libvirt VM's MAC address (src/drivers/libvirt/macs.ts), on both stores: new ones are never
 * in libvirt's own random range; a VM gets one no other VM of the store has (the one its domain
 * had, if free; else a new one), given once and kept, also when two processes ask at once.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DriverError } from '../../src/drivers/driver.ts';
import { definitionMac, macOf, randomMac, withDefinitionMac } from '../../src/drivers/libvirt/macs.ts';
import { openStore, type Store } from '../../src/store/database.ts';
import { insertLibvirtVm } from '../helpers/libvirt.ts';
import { createPgDatabase, testStores } from '../helpers/stores.ts';

test('a new MAC is 52:54 and 32 random bits, never in libvirt’s own 52:54:00 range', () => {
  const seen = new Set<string>();
  for (let i = 0; i < 20_000; i++) {
    const mac = randomMac();
    assert.match(mac, /^52:54:[0-9a-f]{2}(?::[0-9a-f]{2}){3}$/);
    assert.notEqual(mac.slice(0, 8), '52:54:00', mac);
    seen.add(mac);
  }
  // 20,000 draws of 32 bits: a repeat has a chance of about 5%; more than two, almost none.
  assert.ok(seen.size >= 19_998, `${20_000 - seen.size} repeats`);
});

test("a definition's MAC: its first interface's, whatever else the element says; changed there only", () => {
  const xml = (mac: string) => `<domain type='qemu'>
  <name>vrp-x</name>
  <devices>
    <disk type='file' device='disk'><source file='/p/x.qcow2'/></disk>
    <interface type='bridge'>
      ${mac}
      <source bridge='br0'/>
      <model type='virtio'/>
    </interface>
    <interface type='bridge'>
      <mac address='52:54:00:99:99:99'/>
      <source bridge='br1'/>
    </interface>
  </devices>
</domain>
`;
  for (const element of [
    "<mac address='52:54:00:AB:cd:ef'/>",
    '<mac address="52:54:00:ab:cd:ef"/>',
    "<mac address='52:54:00:ab:cd:ef' type='static'/>",
    "<mac type='generated' address='52:54:00:ab:cd:ef' check='yes'/>",
  ]) {
    assert.equal(definitionMac(xml(element)), '52:54:00:ab:cd:ef', element);
    const changed = withDefinitionMac(xml(element), '52:54:0a:0b:0c:0d');
    assert.equal(definitionMac(changed), '52:54:0a:0b:0c:0d', element);
    assert.equal(
      changed,
      xml(element.replace(/52:54:00:ab:cd:ef/i, '52:54:0a:0b:0c:0d')),
      'nothing else changed',
    );
  }
  const none = "<domain><devices><disk type='file'/></devices></domain>";
  assert.equal(definitionMac(none), undefined);
  assert.equal(withDefinitionMac(none, '52:54:0a:0b:0c:0d'), none);
  assert.throws(
    () =>
      definitionMac(
        "<domain><devices><interface type='bridge'><source bridge='br0'/></interface></devices></domain>",
      ),
    (err: unknown) => err instanceof DriverError && !err.transient,
  );
});

/** A store of `kind` for one test, and a second process's connection to it (`another`); removed after. */
async function withStore(
  kind: string,
  body: (store: Store, another: () => Promise<Store>) => Promise<void>,
): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-macs-'));
  const pg = kind === 'postgres' ? await createPgDatabase() : undefined;
  const store = await openStore({ databaseUrl: pg?.url, dataDir });
  const others: Store[] = [];
  try {
    await body(store, async () => {
      const other = await openStore({ databaseUrl: pg?.url, dataDir });
      others.push(other);
      return other;
    });
  } finally {
    for (const other of others) await other.close();
    await store.close();
    await pg?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const stored = async (store: Store, id: string) =>
  (await store.db.selectFrom('libvirt_vms').select('mac').where('id', '=', id).executeTakeFirstOrThrow()).mac;

/** Answers the given MACs in turn. */
const scripted = (...macs: string[]) => {
  let i = 0;
  return () => macs[i++] ?? assert.fail('more MACs asked than scripted');
};

for (const kind of testStores()) {
  test(`a VM keeps its domain’s MAC if free, gets a new one if another VM has it, and keeps what it got (${kind})`, async () => {
    await withStore(kind, async (store) => {
      for (const id of ['vm-a', 'vm-b', 'vm-c']) await insertLibvirtVm(store.db, id, 'h1');
      // A VM stored before MACs were: the one its domain has (as virsh prints it, any case).
      assert.equal(await macOf(store.db, 'vm-a', '52:54:00:AB:CD:EF', scripted()), '52:54:00:ab:cd:ef');
      // Another whose domain has the same (libvirt's random MACs collided): a new one.
      assert.equal(
        await macOf(store.db, 'vm-b', '52:54:00:ab:cd:ef', scripted('52:54:01:02:03:04')),
        '52:54:01:02:03:04',
      );
      // A new MAC that another VM has is drawn again.
      assert.equal(
        await macOf(store.db, 'vm-c', undefined, scripted('52:54:01:02:03:04', '52:54:0a:0b:0c:0d')),
        '52:54:0a:0b:0c:0d',
      );
      // Given once: asked again (with another domain MAC), the same.
      assert.equal(await macOf(store.db, 'vm-a', '52:54:00:11:11:11', scripted()), '52:54:00:ab:cd:ef');
      assert.deepEqual(
        [await stored(store, 'vm-a'), await stored(store, 'vm-b'), await stored(store, 'vm-c')],
        ['52:54:00:ab:cd:ef', '52:54:01:02:03:04', '52:54:0a:0b:0c:0d'],
      );
      // Something that is not a MAC is not taken as the domain's.
      await insertLibvirtVm(store.db, 'vm-d', 'h1');
      assert.equal(
        await macOf(store.db, 'vm-d', 'vnet0', scripted('52:54:0d:0d:0d:0d')),
        '52:54:0d:0d:0d:0d',
      );
    });
  });

  test(`two processes giving one VM its MAC at once agree on one (${kind})`, async () => {
    await withStore(kind, async (store, another) => {
      await insertLibvirtVm(store.db, 'vm-a', 'h1');
      const other = await another();
      const got = await Promise.all([
        macOf(store.db, 'vm-a', undefined, scripted('52:54:01:00:00:01')),
        macOf(other.db, 'vm-a', undefined, scripted('52:54:01:00:00:02')),
      ]);
      assert.equal(got[0], got[1]);
      assert.equal(await stored(store, 'vm-a'), got[0]);
    });
  });

  test(`no free MAC after eight draws: transient; a VM without a row: permanent (${kind})`, async () => {
    await withStore(kind, async (store) => {
      await insertLibvirtVm(store.db, 'vm-a', 'h1');
      await insertLibvirtVm(store.db, 'vm-b', 'h1');
      await macOf(store.db, 'vm-a', '52:54:01:01:01:01');
      const taken = () => '52:54:01:01:01:01';
      await assert.rejects(macOf(store.db, 'vm-b', undefined, taken), (err: unknown) => {
        assert.ok(err instanceof DriverError && err.transient, String(err));
        return true;
      });
      assert.equal(await stored(store, 'vm-b'), null);
      await assert.rejects(
        macOf(store.db, 'vm-gone', undefined, scripted('52:54:02:02:02:02')),
        (err: unknown) => {
          assert.ok(err instanceof DriverError && !err.transient, String(err));
          return true;
        },
      );
    });
  });
}
