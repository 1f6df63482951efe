/**
 * Shutting the libvirt driver down (main.ts closes it on SIGTERM, once the
 * running jobs had their grace) ends the virsh commands still running instead of leaving them
 * behind the process. Real virsh, against a loopback "host" that accepts and never answers.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createDriver } from '../../src/drivers/create-driver.ts';
import { DriverError } from '../../src/drivers/driver.ts';
import { openStore } from '../../src/store/database.ts';
import { waitUntil } from '../helpers/budget.ts';
import { hasCommand, insertLibvirtVm } from '../helpers/libvirt.ts';

/** Our own virsh children still running (pgrep exits 1 when there are none). */
function virshChildren(): string[] {
  try {
    return execFileSync('pgrep', ['-P', String(process.pid), '-x', 'virsh'], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean);
  } catch {
    return [];
  }
}

test('closing the driver ends its running virsh commands and waits for them; later ones are refused', {
  skip: !hasCommand('virsh') && 'needs virsh',
}, async () => {
  const silent = createServer(() => {});
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const { port } = silent.address() as { port: number };
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-lvclose-'));
  const store = await openStore({ databaseUrl: undefined, dataDir });
  const config = loadConfig({
    VRP_DATA_DIR: dataDir,
    VRP_DRIVER: 'libvirt',
    VRP_LIBVIRT_URI: `qemu+tcp://127.0.0.1:${port}/system`,
    VRP_LIBVIRT_STORAGE: join(dataDir, 'storage'),
    // Not `auto`: its question to the host would be a second virsh waiting here.
    VRP_LIBVIRT_VIRT_TYPE: 'qemu',
  });
  const driver = await createDriver(config, store.db);
  try {
    const vmId = randomUUID();
    await insertLibvirtVm(store.db, vmId, 'libvirt-1');
    const starting = driver.start(vmId).catch((e: unknown) => e);
    await waitUntil('virsh to run, waiting for the host', () => virshChildren().length > 0, { everyMs: 50 });
    assert.equal(virshChildren().length, 1, 'virsh runs, waiting for the host');
    await driver.close();
    assert.deepEqual(virshChildren(), [], 'no virsh left running once the driver is closed');
    const err = await starting;
    assert.ok(err instanceof DriverError);
    assert.equal(err.transient, true, 'the job is redone (by this process after a restart, or another)');
    assert.equal(err.message, 'Could not read the VM state (the provider is shutting down)');
    const later = await driver.start(vmId).catch((e: unknown) => e);
    assert.ok(later instanceof DriverError && later.transient, 'nothing new starts once closed');
    assert.deepEqual(virshChildren(), []);
  } finally {
    // Before the fix the virsh child outlived close(): end it here, so the test process can exit.
    for (const pid of virshChildren()) process.kill(Number(pid), 'SIGKILL');
    silent.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('a host that does not answer `auto`s question delays neither the start nor the close', {
  skip: !hasCommand('virsh') && 'needs virsh',
}, async () => {
  const silent = createServer(() => {});
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const { port } = silent.address() as { port: number };
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-lvauto-'));
  const store = await openStore({ databaseUrl: undefined, dataDir });
  const config = loadConfig({
    VRP_DATA_DIR: dataDir,
    VRP_DRIVER: 'libvirt',
    VRP_LIBVIRT_URI: `qemu+tcp://127.0.0.1:${port}/system`,
    VRP_LIBVIRT_STORAGE: join(dataDir, 'storage'),
    VRP_LIBVIRT_VIRT_TYPE: 'auto',
  });
  try {
    const driver = await createDriver(config, store.db);
    // The driver is ready while its question (`virsh domcapabilities`, up to 30 s) still waits
    // for the host.
    await waitUntil('the question to run in the background', () => virshChildren().length > 0, {
      everyMs: 50,
    });
    assert.equal(virshChildren().length, 1, 'the question runs in the background');
    await driver.close();
    assert.deepEqual(virshChildren(), [], 'closing the driver ends the question too');
  } finally {
    for (const pid of virshChildren()) process.kill(Number(pid), 'SIGKILL');
    silent.close();
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
