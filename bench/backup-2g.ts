/**
 * Live backups of a running VM whose disk is 2 GB (the test template grown to 2 GB with 1 GB of
 * random data), through the libvirt driver's export and the backup archive, into each backup
 * store: the local one, an SFTP server (Debian's openssh-server on loopback) and an S3-compatible
 * one (s3rver, in a child process on loopback). Per store: a full backup, then 10 % of the disk
 * (200 MiB of random data) changed in the guest, then an incremental one. Records duration, bytes
 * stored, throughput, the worker's CPU per GB, `virsh domstate` polled every 100 ms (paused
 * polls), and the longest gap in the guest's own clock (a ticker in the guest writing its uptime
 * every 100 ms) during each backup. Writes its section of bench/RESULTS.md.
 *
 *   node bench/backup-2g.ts [TEMPLATE_DIR]   (root; after scripts/libvirt/setup-ci.sh)
 */
import { type ChildProcess, execFileSync, fork } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config.ts';
import { type BackupManifest, createArchive } from '../src/drivers/backup-store/archive.ts';
import { createBackupStore } from '../src/drivers/backup-store/index.ts';
import type { BackupStore } from '../src/drivers/backup-store/store.ts';
import { createDriver } from '../src/drivers/create-driver.ts';
import { openStore } from '../src/store/database.ts';
import { guestExec, guestReports, guestSpawn, removeTemplateVolumes } from '../test/helpers/libvirt.ts';
import { startSshd } from '../test/helpers/sshd.ts';
import { bigTemplate } from './big-template.ts';
import { writeSection } from './sections.ts';

const here = dirname(fileURLToPath(import.meta.url));
const template = process.argv[2] || process.env['VRP_TEST_LIBVIRT_TEMPLATE'] || '/tmp/vrp-test-template';
const script = join(here, '../scripts/libvirt/test-host.sh');
const work = mkdtempSync(join(tmpdir(), 'vrp-bk2g-'));
const hostName = `bk2g${process.pid}`;
const MiB = 1024 * 1024;
const CHANGED = 200 * MiB;

const big = bigTemplate(template, work);

const uri =
  execFileSync('bash', [script, 'start', hostName], { encoding: 'utf8' }).trim().split('\n').at(-1) ?? '';
const store = await openStore({ databaseUrl: undefined, dataDir: work });
const driver = await createDriver(
  loadConfig({
    VRP_DATA_DIR: work,
    VRP_DRIVER: 'libvirt',
    VRP_LIBVIRT_HOSTS: `a,${uri},4,8,100`,
    VRP_STOP_TIMEOUT: '3s',
  }),
  store.db,
  { info() {}, debug() {}, warn() {}, error() {} },
);
const vmId = '0d0d0d0d-0000-4000-8000-0000000002b0';
const domain = `vrp-${vmId}`;

/** A command in the guest through its agent; resolves with its output (it must succeed). */
async function guest(shell: string): Promise<string> {
  const r = await guestExec(domain, shell, uri);
  if (r.code !== 0) throw new Error(`guest command failed (${r.code}): ${shell}`);
  return r.out;
}

/** CPU seconds of this process and of its children it has waited for (virsh, qemu-img). */
function cpuSeconds(): number {
  const own = process.cpuUsage();
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]?.split(' ') ?? [];
  const ticks = Number(fields[13]) + Number(fields[14]);
  return (own.user + own.system) / 1e6 + ticks / 100;
}

/**
 * Polls the domain's state every 100 ms until stopped: how many polls, how many did not say
 * running. The loop runs outside this process's tree (a subshell left to init), so its virsh
 * calls do not count in the worker's CPU.
 */
function pollState() {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-bk2g-poll-'));
  const out = join(dir, 'states');
  const stop = join(dir, 'stop');
  const done = join(dir, 'done');
  execFileSync('sh', [
    '-c',
    `(while [ ! -e ${stop} ]; do virsh -c '${uri}' domstate ${domain} >> ${out} 2>&1; sleep 0.1; done; touch ${done}) >/dev/null 2>&1 &`,
  ]);
  return {
    async end() {
      writeFileSync(stop, '');
      while (!existsSync(done)) await new Promise((r) => setTimeout(r, 50));
      const states = readFileSync(out, 'utf8')
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean);
      rmSync(dir, { recursive: true, force: true });
      return { polls: states.length, paused: states.filter((l) => l !== 'running').length };
    },
  };
}

/** The guest's uptime now, and the host's clock at that moment (within a command's time). */
async function guestUptime(): Promise<{ uptime: number; at: number }> {
  const before = Date.now();
  const out = await guest('cat /proc/uptime');
  return { uptime: Number(out.split(' ')[0]), at: (before + Date.now()) / 2 };
}

interface Row {
  store: string;
  kind: string;
  seconds: number;
  /** Until the driver's export was read out of the host (the backup job and the download). */
  exportSeconds: number;
  carried: number;
  stored: number;
  cpuPerGb: number;
  polls: number;
  paused: number;
  window: [number, number];
}

async function backup(
  label: string,
  target: BackupStore,
  since: string | null,
): Promise<{ row: Row; manifest: BackupManifest }> {
  const archive = createArchive(target, randomBytes(32).fill(7));
  const backupId = randomUUID();
  const poll = pollState();
  const cpu0 = cpuSeconds();
  const t0 = Date.now();
  const exported = await driver.exportDisk(vmId, backupId, since);
  const tExported = Date.now();
  let manifest: BackupManifest;
  try {
    manifest = await archive.write(
      {
        backupId,
        serviceId: vmId,
        parentId: exported.kind === 'incremental' ? exported.since : null,
        kind: exported.kind,
        diskBytes: exported.diskBytes,
        createdAt: t0,
      },
      exported.runs,
    );
    await exported.commit();
  } finally {
    await exported.close();
  }
  const t1 = Date.now();
  const cpu = cpuSeconds() - cpu0;
  const { polls, paused } = await poll.end();
  const report = await archive.verify(vmId, backupId);
  if (!report.ok) throw new Error(`backup ${backupId} does not verify: ${JSON.stringify(report.bad)}`);
  return {
    manifest,
    row: {
      store: label,
      kind: manifest.kind,
      seconds: (t1 - t0) / 1000,
      exportSeconds: (tExported - t0) / 1000,
      carried: manifest.dataBytes,
      stored: manifest.storedBytes,
      cpuPerGb: cpu / (manifest.dataBytes / 1e9),
      polls,
      paused,
      window: [t0, t1],
    },
  };
}

const sshd = await startSshd();
const s3script = join(work, 's3.ts');
writeFileSync(
  s3script,
  `import { startS3 } from ${JSON.stringify(join(here, '../test/helpers/s3.ts'))};\n` +
    'const s = await startS3();\nprocess.send?.({ endpoint: s.endpoint, bucket: s.bucket, accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey });\n' +
    // Stopped, it removes its objects' directory.
    "process.once('SIGTERM', () => s.close().then(() => process.exit(0)));\n",
);
const s3child: ChildProcess = fork(s3script, { stdio: 'ignore' });
const s3 = await new Promise<{
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
}>((resolve) => s3child.once('message', (m) => resolve(m as never)));
const stores: [string, BackupStore][] = [
  ['local', await createBackupStore({ kind: 'local', path: join(work, 'backups') })],
  [
    'sftp',
    await createBackupStore({
      kind: 'sftp',
      host: '127.0.0.1',
      port: sshd.port,
      username: sshd.username,
      path: join(sshd.dir, 'backups'),
      keyFile: sshd.clientKeyFile,
      privateKey: sshd.clientKey,
      hostKey: { fingerprint: sshd.hostKeyFingerprint, type: 'ssh-ed25519' },
    }),
  ],
  [
    's3',
    await createBackupStore({
      kind: 's3',
      bucket: s3.bucket,
      prefix: 'bench',
      endpoint: s3.endpoint,
      region: 'us-east-1',
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
      forcePathStyle: true,
    }),
  ],
];

const rows: Row[] = [];
try {
  await store.db
    .insertInto('os_templates')
    .values({ id: 'big', name: 'big', image: big, created_at: 0, updated_at: 0 })
    .execute();
  await driver.create({
    vmId,
    hostname: 'backup.example.com',
    username: 'root',
    password: 'Big-disk-pass-1',
    templateId: 'big',
    cpu: 1,
    ramGb: 1,
    diskGb: 2,
    ipCount: 1,
  });
  while (guestReports(vmId, uri).length === 0) await new Promise((r) => setTimeout(r, 500));
  // The agent starts after the report.
  for (;;) {
    try {
      await guest('true');
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  await guestSpawn(domain, 'while true; do cat /proc/uptime >> /tmp/ticks; usleep 100000; done', uri);
  const clock = await guestUptime();

  for (const [index, [label, target]] of stores.entries()) {
    await target.probe();
    const full = await backup(label, target, null);
    rows.push(full.row);
    // 10 % of the disk changed: 200 MiB of the random data copied over another part of it.
    await guest(
      `dd if=/dev/vda of=/dev/vda bs=1M skip=1824 seek=${1024 + index * 200} count=200 conv=fsync 2>/dev/null`,
    );
    const inc = await backup(label, target, full.manifest.backupId);
    rows.push(inc.row);
    for (const m of [inc.manifest, full.manifest])
      await createArchive(target, randomBytes(32).fill(7)).remove(vmId, m.backupId);
  }

  // The guest's ticks, on the host's clock: the longest gap within each backup.
  const ticks = (await guest('cat /tmp/ticks'))
    .split('\n')
    .map((l) => Number(l.split(' ')[0]))
    .filter((n) => Number.isFinite(n) && n > 0)
    .map((u) => clock.at + (u - clock.uptime) * 1000);
  const gapIn = ([from, to]: [number, number]) => {
    const inside = ticks.filter((t) => t >= from - 1000 && t <= to + 1000);
    let gap = 0;
    for (let i = 1; i < inside.length; i++)
      gap = Math.max(gap, (inside[i] as number) - (inside[i - 1] as number));
    return gap;
  };
  const mb = (n: number) => (n / 1e6).toFixed(1);
  const lines = rows.map(
    (r) =>
      `| ${r.store} | ${r.kind} | ${r.seconds.toFixed(1)} s | ${r.exportSeconds.toFixed(1)} s | ${mb(r.carried)} MB | ${mb(r.stored)} MB | ${(r.carried / 1e6 / r.seconds).toFixed(0)} MB/s | ${r.cpuPerGb.toFixed(1)} s | ${r.paused} of ${r.polls} | ${(gapIn(r.window) / 1000).toFixed(2)} s |`,
  );
  const incs = rows.filter((r) => r.kind === 'incremental');
  const ratio = Math.max(...incs.map((r) => r.stored / CHANGED));
  console.log(lines.join('\n'));
  writeSection(
    join(here, 'RESULTS.md'),
    'backup-2g',
    [
      '<!-- backup-2g -->',
      `## Live backups of a 2 GB disk, full then incremental after 10 % changed, per store (${new Date().toISOString().slice(0, 10)})`,
      '',
      'Written by `node bench/backup-2g.ts`: a test host on this machine (TCG, 2 cores), 1 vCPU, 1 GB RAM,',
      'the test template grown to 2 GB with 1 GB of random data; between the two backups 200 MiB (10 %)',
      'of the disk is overwritten with random data in the guest. Duration from the export call to the',
      'stored manifest, "of which export" until the driver has the point read out of the host (backup job,\n' +
        'download, map); "carried" is the guest data the backup holds; throughput is carried / duration;',
      "CPU is the worker's (this process and its virsh/qemu-img children) per GB carried; `domstate`",
      "polled every 100 ms during the backup; the guest's clock gap is the longest interval between the",
      "guest's own uptime ticks (every 100 ms) within the backup. Every backup was read back and verified.",
      '',
      '| store | backup | duration | of which export | carried | stored | throughput | CPU per GB | paused polls | longest guest clock gap |',
      '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...lines,
      '',
      `Incremental stored / changed data: at most ${ratio.toFixed(2)} (target <= 1.3). Targets: local throughput >= 100 MB/s; no paused poll; guest gap <= 1 s.`,
      '<!-- /backup-2g -->',
    ].join('\n'),
  );
} finally {
  await driver.destroy(vmId).catch(() => {});
  await removeTemplateVolumes(store.db).catch(() => {});
  await driver.close();
  await store.close();
  for (const [, s] of stores) await s.close().catch(() => {});
  s3child.kill();
  await new Promise((r) => s3child.once('exit', r));
  await sshd.close();
  execFileSync('bash', [script, 'stop', hostName], { stdio: 'ignore' });
  rmSync(work, { recursive: true, force: true });
}
