/**
 * The product's live migration of a VM whose disk is 2 GB with 1 GB of written (random) data,
 * between two test hosts (scripts/libvirt/test-host.sh), through the libvirt driver: total time,
 * libvirt's migration time and the guest's pause (the driver's `libvirt migration` log line,
 * from the destination's `domjobinfo --completed`). Writes its section of bench/RESULTS.md.
 *
 *   node bench/libvirt-migration-2g.ts [TEMPLATE_DIR]   (root; after scripts/libvirt/setup-ci.sh)
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config.ts';
import { createDriver } from '../src/drivers/create-driver.ts';
import { openStore } from '../src/store/database.ts';
import { guestReports, removeTemplateVolumes } from '../test/helpers/libvirt.ts';
import { bigTemplate } from './big-template.ts';
import { writeSection } from './sections.ts';

const here = dirname(fileURLToPath(import.meta.url));
const template = process.argv[2] || process.env['VRP_TEST_LIBVIRT_TEMPLATE'] || '/tmp/vrp-test-template';
const script = join(here, '../scripts/libvirt/test-host.sh');
const work = mkdtempSync(join(tmpdir(), 'vrp-mig2g-'));
const hosts = { a: `m2ga${process.pid}`, b: `m2gb${process.pid}` };
const startHost = (name: string) =>
  execFileSync('bash', [script, 'start', name], { encoding: 'utf8' }).trim().split('\n').at(-1) ?? '';

const big = bigTemplate(template, work);

const uriA = startHost(hosts.a);
const uriB = startHost(hosts.b);
const store = await openStore({ databaseUrl: undefined, dataDir: work });
const migrations: Record<string, unknown>[] = [];
const driver = await createDriver(
  loadConfig({
    VRP_DATA_DIR: work,
    VRP_DRIVER: 'libvirt',
    VRP_LIBVIRT_HOSTS: `a,${uriA},4,8,100;b,${uriB},4,8,100`,
    VRP_STOP_TIMEOUT: '3s',
  }),
  store.db,
  {
    info(obj, msg) {
      if (msg === 'libvirt migration') migrations.push({ ...obj });
    },
    debug() {},
    warn() {},
    error() {},
  },
);
const vmId = '0d0d0d0d-0000-4000-8000-0000000002a0';
try {
  await store.db
    .insertInto('os_templates')
    .values({ id: 'big', name: 'big', image: big, created_at: 0, updated_at: 0 })
    .execute();
  await store.db.updateTable('hypervisor_hosts').set({ state: 'draining' }).where('id', '=', 'b').execute();
  await driver.create({
    vmId,
    hostname: 'big.example.com',
    username: 'root',
    password: 'Big-disk-pass-1',
    templateId: 'big',
    cpu: 1,
    ramGb: 1,
    diskGb: 2,
    ipCount: 1,
  });
  // Booted: the guest reported on its console.
  while (guestReports(vmId, uriA).length === 0) await new Promise((r) => setTimeout(r, 500));
  await store.db.updateTable('hypervisor_hosts').set({ state: 'active' }).where('id', '=', 'b').execute();
  await driver.migrate(vmId, 'b');
  const m = migrations.at(-1) ?? {};
  console.log(JSON.stringify(m));
  const s = (ms: unknown) => (typeof ms === 'number' ? `${(ms / 1000).toFixed(1)} s` : '-');
  writeSection(
    join(here, 'RESULTS.md'),
    'libvirt-migration-2g',
    [
      '<!-- libvirt-migration-2g -->',
      `## Live migration of a 2 GB disk with 1 GB written, through the driver (${new Date().toISOString().slice(0, 10)})`,
      '',
      'Written by `node bench/libvirt-migration-2g.ts`: two test hosts on this machine (TCG, 2 cores),',
      '1 vCPU, 1 GB RAM, the test template grown to 2 GB with 1 GB of random data; the total includes',
      "uploading that 2 GB template to the destination's pool (read back and checked) before the move.",
      '',
      '| total (job) | `virsh migrate` | guest paused (downtime) | target |',
      '|---:|---:|---:|---|',
      `| ${s(m['total_ms'])} | ${s(m['migrate_ms'])} | ${typeof m['downtime_ms'] === 'number' ? `${m['downtime_ms']} ms` : '-'} | pause <= 1 s |`,
      '<!-- /libvirt-migration-2g -->',
    ].join('\n'),
  );
} finally {
  await driver.destroy(vmId).catch(() => {});
  await removeTemplateVolumes(store.db).catch(() => {});
  await driver.close();
  await store.close();
  for (const n of Object.values(hosts)) execFileSync('bash', [script, 'stop', n], { stdio: 'ignore' });
  rmSync(work, { recursive: true, force: true });
}
