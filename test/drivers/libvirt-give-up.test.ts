/**
 * A create's last attempt giving up (destroy with createGivingUp) on a host that does not answer
 * (a libvirt connection to a socket that is not there: real virsh, no VM), on both stores: the
 * VM's record, room and addresses go only while no attempt ever had an answer from its host
 * (`libvirt_vms.reached_at`); once one had, whichever process asks now, the give-up fails
 * (transient) and keeps them, since the host may run the VM with those addresses.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createDriver } from '../../src/drivers/create-driver.ts';
import { DriverError } from '../../src/drivers/driver.ts';
import { openStore } from '../../src/store/database.ts';
import { hasCommand, insertLibvirtVm } from '../helpers/libvirt.ts';
import { createPgDatabase, testStores } from '../helpers/stores.ts';

/**
 * The driver's commands are real virsh ones (they fail to connect): without virsh, the test is
 * skipped, saying how to get it.
 */
const skip =
  !hasCommand('virsh') &&
  'needs virsh (Debian: libvirt-clients; as root, `bash scripts/libvirt/setup-ci.sh` installs it)';

for (const kind of testStores()) {
  test(`a create giving up on a silent host keeps the VM once any attempt reached that host (${kind})`, {
    skip,
  }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vrp-give-up-'));
    const pg = kind === 'postgres' ? await createPgDatabase() : undefined;
    const store = await openStore({ databaseUrl: pg?.url, dataDir });
    const driver = await createDriver(
      loadConfig({
        VRP_DATA_DIR: dataDir,
        VRP_DRIVER: 'libvirt',
        VRP_LIBVIRT_HOSTS: `silent,qemu+unix:///system?socket=${join(dataDir, 'no-daemon.sock')},4,8,100`,
      }),
      store.db,
    );
    try {
      // Two VMs placed there by earlier attempts (their room taken): one whose host never
      // answered, one whose host answered an attempt (of another process: this driver never ran it).
      await insertLibvirtVm(store.db, 'never-reached', 'silent');
      await insertLibvirtVm(store.db, 'reached', 'silent');
      await store.db.updateTable('libvirt_vms').set({ reached_at: 1 }).where('id', '=', 'reached').execute();
      await store.db
        .updateTable('hypervisor_hosts')
        .set({ used_cpu: 2, used_ram_gb: 2, used_disk_gb: 20 })
        .where('id', '=', 'silent')
        .execute();
      const kept = async () =>
        (await store.db.selectFrom('libvirt_vms').select('id').orderBy('id').execute()).map((r) => r.id);
      const used = async () =>
        (
          await store.db
            .selectFrom('hypervisor_hosts')
            .select('used_ram_gb')
            .where('id', '=', 'silent')
            .executeTakeFirstOrThrow()
        ).used_ram_gb;

      await assert.rejects(driver.destroy('reached', { createGivingUp: true }), (err: unknown) => {
        assert.ok(err instanceof DriverError && err.transient, String(err));
        return true;
      });
      assert.deepEqual(await kept(), ['never-reached', 'reached']);
      assert.equal(await used(), 2);

      // A plain terminate never takes a silent host for an empty one.
      await assert.rejects(
        driver.destroy('never-reached'),
        (err: unknown) => err instanceof DriverError && err.transient,
      );
      assert.deepEqual(await kept(), ['never-reached', 'reached']);

      // The host never answered any attempt for this one: nothing of it can be there.
      await driver.destroy('never-reached', { createGivingUp: true });
      assert.deepEqual(await kept(), ['reached']);
      assert.equal(await used(), 1, 'its room given back');
    } finally {
      await driver.close();
      await store.close();
      await pg?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}
