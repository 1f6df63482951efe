/**
 * The driver contract with real VMs (libvirt/QEMU; TCG where KVM does not work). Runs where
 * VRP_TEST_LIBVIRT_TEMPLATE names a template built by scripts/libvirt/build-test-template.sh
 * and libvirtd runs (.ci/run sets both up).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.ts';
import { createDriver } from '../../src/drivers/create-driver.ts';
import { openStore } from '../../src/store/database.ts';
import { driverContract } from './contract.ts';

const template = process.env['VRP_TEST_LIBVIRT_TEMPLATE'];

/** The guest's reports (one line per boot) on its serial console. */
function reports(storage: string, vmId: string): Record<string, string>[] {
  let text = '';
  try {
    text = readFileSync(join(storage, vmId, 'console.log'), 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((l) => l.startsWith('VRP-GUEST '))
    .map((l) =>
      Object.fromEntries(
        l
          .trim()
          .split(' ')
          .slice(1)
          .map((kv) => kv.split('=') as [string, string]),
      ),
    );
}

if (template) {
  driverContract(
    'libvirt',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'vrp-lv-'));
      const storage = mkdtempSync(join(tmpdir(), 'vrp-lv-storage-'));
      await chmod(storage, 0o711);
      const store = await openStore({ databaseUrl: undefined, dataDir });
      await store.db
        .insertInto('os_templates')
        .values({ id: 'tiny', name: 'tiny test template', image: template, created_at: 0, updated_at: 0 })
        .execute();
      const config = loadConfig({
        VRP_DATA_DIR: dataDir,
        VRP_DRIVER: 'libvirt',
        VRP_LIBVIRT_STORAGE: storage,
      });
      const driver = await createDriver(config, store.db);
      return {
        driver,
        templateId: 'tiny',
        async guest(vmId, n) {
          const until = Date.now() + 180_000;
          for (;;) {
            const r = reports(storage, vmId);
            if (r.length >= n) return r[n - 1]!;
            if (Date.now() > until) throw new Error(`the guest gave ${r.length} reports, not ${n}`);
            await new Promise((res) => setTimeout(res, 250));
          }
        },
        async cleanup() {
          await driver.close();
          await store.close();
          rmSync(dataDir, { recursive: true, force: true });
          rmSync(storage, { recursive: true, force: true });
        },
      };
    },
    { stopTimeoutMs: 3000 },
  );
}
