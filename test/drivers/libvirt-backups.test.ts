/**
 * Live, incremental disk exports and disk imports of the libvirt driver with one real VM on two
 * test hosts (scripts/libvirt/test-host.sh): a running guest is never paused by a full export,
 * the runs of a full export and of incrementals reassembled give the disk byte for byte, an
 * incremental carries the guest's writes only, a stopped VM stays stopped, an import brings an
 * earlier point back (and a failing source or upload changes nothing; a failure past the power-off
 * is repaired by the re-run), what a backup's dead attempts left is cleared once it is given up
 * (a frozen guest thawed), an export waits for another volume's copy in the pool to end (libvirt
 * refuses to read the pool meanwhile) and a qcow2 uploaded then is known as one, a copy of a qcow2
 * libvirt knows as raw is a copy of its disk, an export whose temporary directory turns
 * read-only mid-download fails for now, an import records its job's step marker once the disk is
 * the image (and one that fails before the disk's removal starts the VM again), a legacy backup is
 * restored on the host its VM moved to, a copy from a host that stops answering is ended once it
 * moves no data, and after a live migration the next export is full. The
 * figures (times, sizes, polls) are printed as diagnostics.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/config.ts';
import { createDriver } from '../../src/drivers/create-driver.ts';
import {
  DISK_RUN_MAX,
  type DiskExport,
  type DiskRun,
  DriverError,
  type HypervisorDriver,
  type StepMarker,
} from '../../src/drivers/driver.ts';
import { FenceDown, fenced } from '../../src/drivers/fence.ts';
import { createCommands } from '../../src/drivers/libvirt/commands.ts';
import { createPoolStorage } from '../../src/drivers/libvirt/storage.ts';
import { openStore } from '../../src/store/database.ts';
import { pause, slowWaitMs, waitUntil } from '../helpers/budget.ts';
import {
  asJobOnStore,
  claimsOfJob,
  guestExec,
  guestReport,
  poolVolumes,
  processesWhere,
  removeTemplateVolumes,
  runningJobOnStore,
  startTestHost,
  withFullTmpdir,
  withReadOnlyTmpdir,
  withSmallTmpdir,
} from '../helpers/libvirt.ts';
import { libvirtTemplate, noLibvirtTemplate } from '../helpers/libvirt-template.ts';
import { installVirshWrapper } from '../helpers/virsh-wrapper.ts';

const script = join(import.meta.dirname, '../../scripts/libvirt/test-host.sh');
const skip = noLibvirtTemplate || (!existsSync(script) && 'needs scripts/libvirt/test-host.sh');
const execFileAsync = promisify(execFile);
const virshOut = (uri: string, ...args: string[]) =>
  execFileSync('virsh', ['-c', uri, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/** A job's step marker with nothing recorded yet, and what the driver records in it. */
function recordingMarker(): { marker: StepMarker; recorded: string[] } {
  const recorded: string[] = [];
  return { marker: { recorded: null, record: async (v) => void recorded.push(v) }, recorded };
}

/** A command run in the guest through its agent; resolves with its exit code. */
const guestRun = async (uri: string, domain: string, shell: string) =>
  (await guestExec(domain, shell, uri)).code;

const sha256 = async (file: string) => {
  const hash = createHash('sha256');
  const fh = await open(file, 'r');
  try {
    for await (const chunk of fh.createReadStream()) hash.update(chunk as Buffer);
  } finally {
    await fh.close();
  }
  return hash.digest('hex');
};

/** An export's runs written into the local raw image `file` (created sparse at the disk's size). */
async function apply(e: DiskExport, file: string): Promise<{ runs: number; bytes: number }> {
  const fh = await open(file, existsSync(file) ? 'r+' : 'w+');
  let runs = 0;
  let bytes = 0;
  let end = 0;
  try {
    if ((await fh.stat()).size === 0) await fh.truncate(e.diskBytes);
    for await (const r of e.runs) {
      assert.ok(r.offset >= end, 'runs ascend and do not overlap');
      assert.ok(r.data.length > 0 && r.data.length <= DISK_RUN_MAX);
      end = r.offset + r.data.length;
      await fh.write(r.data, 0, r.data.length, r.offset);
      runs++;
      bytes += r.data.length;
    }
  } finally {
    await fh.close();
  }
  return { runs, bytes };
}

/** A local raw image read back as runs of at most DISK_RUN_MAX (all-zero stretches left out). */
async function* imageRuns(file: string, failAfter?: number): AsyncIterable<DiskRun> {
  const fh = await open(file, 'r');
  const zeros = Buffer.alloc(DISK_RUN_MAX);
  let yielded = 0;
  try {
    const size = (await fh.stat()).size;
    for (let at = 0; at < size; at += DISK_RUN_MAX) {
      const data = Buffer.alloc(Math.min(DISK_RUN_MAX, size - at));
      await fh.read(data, 0, data.length, at);
      if (data.equals(zeros.subarray(0, data.length))) continue;
      if (failAfter !== undefined && yielded >= failAfter) throw new Error('the backup store went away');
      yielded++;
      yield { offset: at, data };
    }
  } finally {
    await fh.close();
  }
}

test('live and incremental disk exports, imports and a migration, on one real VM', {
  skip,
  timeout: slowWaitMs(1_800_000),
}, async (t) => {
  const suffix = String(process.pid);
  const hostA = await startTestHost(`vrpbka${suffix}`);
  const hostB = await startTestHost(`vrpbkb${suffix}`);
  const work = mkdtempSync(join(tmpdir(), 'vrp-lvbackups-'));
  const store = await openStore({ databaseUrl: undefined, dataDir: work });
  let driver: HypervisorDriver | undefined;
  after(async () => {
    await driver?.close();
    await removeTemplateVolumes(store.db).catch(() => {});
    await store.close();
    await hostA.stop().catch(() => {});
    await hostB.stop().catch(() => {});
    rmSync(work, { recursive: true, force: true });
  });
  await store.db
    .insertInto('os_templates')
    .values({ id: 'tiny', name: 'tiny', image: libvirtTemplate ?? '', created_at: 0, updated_at: 0 })
    .execute();
  const commands: string[] = [];
  /** Each command the driver ran, with whether it succeeded. */
  const outcomes: { command: string; ok: boolean }[] = [];
  const config = loadConfig({
    VRP_DATA_DIR: work,
    VRP_DRIVER: 'libvirt',
    VRP_LIBVIRT_HOSTS: `a,${hostA.uri},4,8,100;b,${hostB.uri},4,8,100`,
    VRP_STOP_TIMEOUT: '3s',
  });
  driver = await createDriver(config, store.db, {
    info() {},
    debug(obj) {
      commands.push((obj as { command: string }).command);
      outcomes.push(obj as { command: string; ok: boolean });
    },
    warn() {},
    error() {},
  });
  const d = driver;
  const asRunningJob = <R>(jobId: string, body: () => Promise<R>) => asJobOnStore(work, jobId, body);
  /** The room claims of job `jobId`'s run as [place kind, released], by place. */
  const claimsOf = async (jobId: string) =>
    (await claimsOfJob(store.db, jobId)).map(([kind, , released]) => [kind, released]);
  const vmId = `0193bk00-0000-7000-8000-${suffix.padStart(12, '0').slice(-12)}`;
  const domain = `vrp-${vmId}`;
  const created = await d.create({
    vmId,
    hostname: 'backed-up.example.com',
    username: 'root',
    password: 'Backed-up-pass-1',
    templateId: 'tiny',
    cpu: 1,
    ramGb: 1,
    diskGb: 1,
    ipCount: 1,
  });
  const uriOf = (hostId: string) => (hostId === 'a' ? hostA.uri : hostB.uri);
  let uri = uriOf(created.hostId);
  /** A volume's file in the pool of the VM's current host, as this machine sees it (the host: /var/lib/vrp/pool). */
  const poolFile = (name: string) => join((uri === hostA.uri ? hostA : hostB).dir, 'storage', name);
  /** Removes test volumes from the VM's current host, those already gone too. */
  const removeVolumes = (...names: string[]) => {
    for (const v of names)
      try {
        virshOut(uri, 'vol-delete', '--pool', 'vrp', v);
      } catch {}
  };
  await guestReport(vmId, 1, uri, slowWaitMs(240_000));
  // The agent answers once the guest's init has started it.
  await waitUntil(
    'the guest agent',
    () =>
      execFileAsync('virsh', [
        '-c',
        uri,
        'qemu-agent-command',
        '--timeout',
        '5',
        domain,
        '{"execute":"guest-ping"}',
      ]).then(
        () => true,
        () => undefined,
      ),
    { everyMs: 500, budgetMs: slowWaitMs(120_000) },
  );
  assert.equal(await guestRun(uri, domain, 'dd if=/dev/urandom of=/data/first bs=1M count=8 && sync'), 0);
  const domstate = () => virshOut(uri, 'domstate', domain).trim();
  const checkpoints = () =>
    virshOut(uri, 'checkpoint-list', '--name', domain).split('\n').filter(Boolean).sort();
  /** The VM's disk as a raw image, read through the host's connection (the VM must be stopped). */
  const diskImage = async (name: string) => {
    const qcow2 = join(work, `${name}.qcow2`);
    const raw = join(work, `${name}.raw`);
    await execFileAsync('virsh', [
      '-c',
      uri,
      'vol-download',
      '--sparse',
      '--pool',
      'vrp',
      `${vmId}.qcow2`,
      qcow2,
    ]);
    const image = JSON.stringify({
      driver: 'qcow2',
      backing: null,
      file: { driver: 'file', filename: qcow2 },
    });
    // Its backing file (the test template's base disk, empty: all zeros) is not opened here:
    // what the overlay does not hold reads as zeros, as it does through the empty base.
    await execFileAsync('qemu-img', ['convert', '-O', 'raw', `json:${image}`, raw]);
    rmSync(qcow2, { force: true });
    return raw;
  };
  const timed = async (what: string, run: () => Promise<DiskExport>) => {
    const started = performance.now();
    const e = await run();
    const ms = Math.round(performance.now() - started);
    return { e, ms, what };
  };

  let fullBytes = 0;

  await t.test(
    'a running VM: a full export never pauses the guest, with a freeze through the agent',
    async () => {
      let polls = 0;
      const seen = new Set<string>();
      let polling = true;
      const poller = (async () => {
        while (polling) {
          const { stdout } = await execFileAsync('virsh', ['-c', uri, 'domstate', domain]);
          seen.add(stdout.trim());
          polls++;
          await pause(100);
        }
      })();
      let full: Awaited<ReturnType<typeof timed>>;
      try {
        // At least one poll before and after the export's point.
        await waitUntil('a first poll', () => polls > 0 || undefined, { everyMs: 20 });
        full = await timed('full', () => d.exportDisk(vmId, 'b1', null));
        const at = polls;
        await waitUntil('a poll after the export', () => polls > at || undefined, { everyMs: 20 });
      } finally {
        polling = false;
        await poller;
      }
      assert.equal(full.e.kind, 'full');
      assert.equal(full.e.since, null);
      assert.equal(full.e.diskBytes, 1024 ** 3);
      assert.deepEqual([...seen], ['running'], `domstate seen during the export (${polls} polls)`);
      assert.ok(commands.includes('virsh domfsfreeze') && commands.includes('virsh domfsthaw'));
      const sizes = await apply(full.e, join(work, 'chain.raw'));
      await full.e.commit();
      await full.e.close();
      execFileSync('cp', ['--sparse=always', join(work, 'chain.raw'), join(work, 'point-b1.raw')]);
      assert.deepEqual(checkpoints(), ['b1']);
      assert.ok(!poolVolumes(uri).includes('export-b1.qcow2'), 'the backup volume is gone from the host');
      t.diagnostic(
        `full export of a running VM: ${full.ms} ms, ${sizes.runs} runs, ${sizes.bytes} bytes; domstate polled ${polls} times, always running`,
      );
      fullBytes = sizes.bytes;
    },
  );

  await t.test('after writes in the guest, an incremental export carries them only', async () => {
    assert.equal(await guestRun(uri, domain, 'dd if=/dev/urandom of=/data/second bs=1M count=2 && sync'), 0);
    const inc = await timed('incremental', () => d.exportDisk(vmId, 'b2', 'b1'));
    assert.equal(inc.e.kind, 'incremental');
    assert.equal(inc.e.since, 'b1');
    const sizes = await apply(inc.e, join(work, 'chain.raw'));
    await inc.e.commit();
    await inc.e.close();
    assert.ok(sizes.bytes >= 2 * 1024 * 1024, `the 2 MiB written are in it (${sizes.bytes})`);
    assert.ok(sizes.bytes * 3 < fullBytes, `much smaller than the full one (${sizes.bytes} vs ${fullBytes})`);
    assert.deepEqual(checkpoints(), ['b1', 'b2']);
    t.diagnostic(
      `incremental export: ${inc.ms} ms, ${sizes.runs} runs, ${sizes.bytes} bytes (full: ${fullBytes})`,
    );
    // An export that is not committed leaves no checkpoint.
    const dropped = await d.exportDisk(vmId, 'b-uncommitted', 'b2');
    assert.equal(dropped.kind, 'incremental');
    await dropped.close();
    assert.deepEqual(checkpoints(), ['b1', 'b2']);
  });

  await t.test(
    "an export while the host copies another volume in the pool (another VM's restore or migration) waits for the copy, then goes on; a qcow2 uploaded meanwhile is known as one",
    async () => {
      // A volume of 1 GiB of random bytes, copied to a qcow2 as a restore copies: libvirt runs
      // qemu-img for it, which the test holds (SIGSTOP) as soon as it starts, and lets go on once
      // the export has been refused its first read of the pool. So the copy runs as the export
      // begins however slow or fast the machine is.
      virshOut(uri, 'vol-create-as', 'vrp', 'busy-source.raw', '1G', '--format', 'raw');
      // The host's pool directory as this machine sees it (the host sees it at /var/lib/vrp/pool).
      const source = poolFile('busy-source.raw');
      execFileSync('dd', [
        'if=/dev/urandom',
        `of=${source}`,
        'bs=1M',
        'count=1024',
        'conv=notrunc',
        'status=none',
      ]);
      const xml = join(work, 'busy-copy.xml');
      writeFileSync(
        xml,
        "<volume><name>busy-copy.qcow2</name><capacity>0</capacity><target><format type='qcow2'/></target></volume>\n",
      );
      let copied = false;
      const copy = execFileAsync('virsh', [
        '-c',
        uri,
        'vol-create-from',
        'vrp',
        xml,
        '--inputpool',
        'vrp',
        'busy-source.raw',
      ]).then(() => {
        copied = true;
      });
      let held: number | undefined;
      const letGo = () => {
        if (held !== undefined) process.kill(held, 'SIGCONT');
        held = undefined;
      };
      try {
        held = await waitUntil(
          "the copy's qemu-img",
          () => {
            assert.equal(copied, false, 'the copy ended before the test could hold it');
            const [pid] = processesWhere(
              (argv) => /qemu-img$/.test(argv[0] ?? '') && argv.at(-1)?.endsWith('/busy-copy.qcow2') === true,
            );
            if (pid !== undefined) process.kill(pid, 'SIGSTOP');
            return pid;
          },
          { everyMs: 5 },
        );
        // libvirt refuses to read the pool again while the copy runs.
        await waitUntil(
          'the copy under way',
          () => {
            try {
              virshOut(uri, 'pool-refresh', 'vrp');
              return undefined;
            } catch (err) {
              return (
                /has asynchronous jobs running/.test(String((err as { stderr?: unknown }).stderr)) ||
                undefined
              );
            }
          },
          { everyMs: 20 },
        );
        assert.equal(copied, false, 'the copy still runs as the export begins');
        // Meanwhile a qcow2 (5 GiB virtual, a few hundred KiB of file) is uploaded, as a
        // template's disk or a migrated disk is: libvirt skips its own reading of the upload
        // while the copy runs, and the volume would stay raw, of the file's size.
        const small = join(work, 'busy-upload.qcow2');
        execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', small, '5G']);
        const uploads = createCommands();
        const pool = createPoolStorage(uploads, '/var/lib/vrp/pool');
        const uploaded = pool
          .uploadNew(uri, 'busy-upload.qcow2', small)
          .then(() => virshOut(uri, 'vol-dumpxml', '--pool', 'vrp', 'busy-upload.qcow2'))
          .finally(() => uploads.close());
        const from = outcomes.length;
        const exporting = d.exportDisk(vmId, 'b-busy', 'b2');
        const refreshes = () =>
          outcomes
            .slice(from)
            .filter((o) => o.command === 'virsh pool-refresh')
            .map((o) => o.ok);
        await waitUntil('the export to read the pool', () => refreshes().length > 0 || undefined, {
          everyMs: 20,
        });
        letGo();
        const e = await exporting;
        await e.close();
        assert.deepEqual(checkpoints(), ['b1', 'b2'], 'not committed: no checkpoint');
        assert.equal(e.kind, 'incremental');
        const volume = await uploaded;
        assert.match(volume, /<format type='qcow2'\/>/, 'known as a qcow2 once uploaded');
        assert.match(volume, /<capacity unit='bytes'>5368709120<\/capacity>/, 'of its virtual size');
        assert.equal(copied, true, 'the export read the pool once the copy had ended');
        // Its first read of the pool was refused (the copy ran), a later one went through.
        assert.equal(refreshes()[0], false, `refused first (${refreshes().join(', ')})`);
        assert.ok(refreshes().includes(true));
      } finally {
        letGo();
        await copy.catch(() => {});
        removeVolumes('busy-copy.qcow2', 'busy-source.raw', 'busy-upload.qcow2');
      }
    },
  );

  await t.test(
    'a copy of a qcow2 that libvirt knows as raw reads the pool again first: not its bytes as a disk',
    async () => {
      // As an upload that libvirt did not read again leaves it: a raw volume whose file is a qcow2.
      virshOut(uri, 'vol-create-as', 'vrp', 'stale-raw.qcow2', '1M', '--format', 'raw');
      const file = poolFile('stale-raw.qcow2');
      execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', file, '3G']);
      assert.match(virshOut(uri, 'vol-dumpxml', '--pool', 'vrp', 'stale-raw.qcow2'), /<format type='raw'\/>/);
      const commands = createCommands();
      try {
        await createPoolStorage(commands, '/var/lib/vrp/pool').cloneFlat(
          uri,
          'stale-raw.qcow2',
          'stale-copy.qcow2',
        );
        const copy = virshOut(uri, 'vol-dumpxml', '--pool', 'vrp', 'stale-copy.qcow2');
        assert.match(
          copy,
          /<capacity unit='bytes'>3221225472<\/capacity>/,
          "the copy is the image's 3 GiB disk",
        );
      } finally {
        await commands.close();
        removeVolumes('stale-raw.qcow2', 'stale-copy.qcow2');
      }
    },
  );

  await t.test(
    'a backup given up after its attempts died: the guest left frozen is thawed, its volume and checkpoint go',
    async () => {
      // What attempts that died can leave: the checkpoint (committed, the store never written),
      // the export's volume on the host, and the guest frozen for the backup's point.
      const dead = await d.exportDisk(vmId, 'b-dead', 'b2');
      await dead.commit();
      await dead.close();
      assert.deepEqual(checkpoints(), ['b-dead', 'b1', 'b2']);
      // The export's file as QEMU makes it: in the pool's directory, not yet a volume libvirt knows.
      execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', poolFile('export-b-dead.qcow2'), '1M']);
      assert.ok(!poolVolumes(uri).includes('export-b-dead.qcow2'), 'not known to libvirt yet');
      const freezeStatus = () =>
        virshOut(uri, 'qemu-agent-command', domain, '{"execute":"guest-fsfreeze-status"}').trim();
      virshOut(uri, 'domfsfreeze', domain);
      assert.equal(freezeStatus(), '{"return":"frozen"}');
      await d.abandonExport(vmId, 'b-dead');
      assert.equal(freezeStatus(), '{"return":"thawed"}');
      assert.equal(
        await guestRun(uri, domain, 'echo written > /data/after-thaw && sync'),
        0,
        'writes go through',
      );
      assert.deepEqual(checkpoints(), ['b1', 'b2']);
      assert.ok(!poolVolumes(uri).includes('export-b-dead.qcow2'), "the export's volume is gone");
      assert.ok(
        !existsSync(poolFile('export-b-dead.qcow2')),
        'and its file, which libvirt did not know of, with it',
      );
      assert.equal(domstate(), 'running');
      // Nothing left: nothing to do.
      await d.abandonExport(vmId, 'b-dead');
      assert.deepEqual(checkpoints(), ['b1', 'b2']);
    },
  );

  await t.test(
    'a stopped VM stays stopped; full + incrementals reassembled are its disk, and so is a full export',
    async () => {
      await d.stop(vmId, { timeoutMs: 3000 });
      assert.equal(domstate(), 'shut off');
      // What an attempt that died would have left: the domain held paused, a checkpoint of the
      // backup's name, its target volume.
      virshOut(uri, 'start', '--paused', domain);
      virshOut(
        uri,
        'metadata',
        domain,
        '--uri',
        'https://vrp.invalid/held-paused',
        '--key',
        'vrp',
        '--set',
        '<held/>',
        '--live',
      );
      const ck = join(work, 'ck.xml');
      writeFileSync(
        ck,
        "<domaincheckpoint><name>b3</name><disks><disk name='vda' checkpoint='bitmap'/><disk name='vdb' checkpoint='no'/></disks></domaincheckpoint>",
      );
      virshOut(uri, 'checkpoint-create', domain, ck);
      virshOut(uri, 'vol-create-as', 'vrp', 'export-b3.qcow2', '1M');
      const inc = await timed('incremental of a stopped VM', () => d.exportDisk(vmId, 'b3', 'b2'));
      assert.equal(domstate(), 'shut off', 'the stopped VM is off again');
      assert.equal(inc.e.kind, 'incremental');
      const sizes = await apply(inc.e, join(work, 'chain.raw'));
      await inc.e.commit();
      await inc.e.close();
      const disk = await diskImage('disk-b3');
      assert.equal(
        await sha256(join(work, 'chain.raw')),
        await sha256(disk),
        'full + incrementals == the disk',
      );
      const full = await timed('full of a stopped VM', () => d.exportDisk(vmId, 'b4', null));
      assert.equal(full.e.kind, 'full');
      const fullSizes = await apply(full.e, join(work, 'full-b4.raw'));
      await full.e.commit();
      await full.e.close();
      assert.equal(await sha256(join(work, 'full-b4.raw')), await sha256(disk), 'a full export == the disk');
      assert.equal(domstate(), 'shut off');
      assert.deepEqual(checkpoints(), ['b1', 'b2', 'b3', 'b4']);
      assert.ok(!poolVolumes(uri).some((v) => v.startsWith('export-')), 'no export volume left on the host');
      t.diagnostic(
        `stopped VM: incremental ${inc.ms} ms ${sizes.bytes} bytes; full ${full.ms} ms ${fullSizes.bytes} bytes`,
      );
      // dropCheckpoint of a stopped VM's checkpoint (its bitmap goes too); twice is fine.
      await d.dropCheckpoint(vmId, 'b4');
      await d.dropCheckpoint(vmId, 'b4');
      assert.deepEqual(checkpoints(), ['b1', 'b2', 'b3']);
      assert.equal(domstate(), 'shut off');
    },
  );

  await t.test(
    "an export and an import are refused for good where this machine's temporary directory cannot hold their copies, before anything changes",
    async () => {
      const before = await sha256(await diskImage('disk-before-refusals'));
      const tmpRefusal = (need: string) => (err: unknown) => {
        assert.ok(err instanceof DriverError && !err.transient, String(err));
        assert.match(
          err.message,
          new RegExp(
            `^The temporary directory of the vrp process that copies \\(TMPDIR\\) has 0\\.0 MiB free; the copy needs about ${need} and \\d+\\.\\d [MG]iB kept free$`,
          ),
        );
        return true;
      };
      // An incremental export passes at most the disk's own bytes (what it holds over the
      // template; a full one would add the template's).
      const own = Number(
        /^Allocation:\s+(\d+)/m.exec(
          virshOut(uri, 'vol-info', '--bytes', '--pool', 'vrp', `${vmId}.qcow2`),
        )?.[1],
      );
      assert.ok(own > 0);
      const commandsBefore = commands.length;
      await withFullTmpdir(async () => {
        await assert.rejects(
          d.exportDisk(vmId, 'b-no-room', 'b3'),
          tmpRefusal(`${(own / 2 ** 20).toFixed(1).replace('.', '\\.')} MiB`),
        );
        assert.ok(
          !commands.slice(commandsBefore).some((c) => c === 'virsh start' || c === 'virsh backup-begin'),
          'refused before the domain is started or a backup begun',
        );
        // An import's raw file and its qcow2 lie side by side here: twice the data it is given.
        await assert.rejects(
          d.importDisk(vmId, 1024 ** 3, imageRuns(join(work, 'point-b1.raw')), 64 * 2 ** 20),
          tmpRefusal('128\\.0 MiB'),
        );
      });
      assert.deepEqual(checkpoints(), ['b1', 'b2', 'b3'], 'no checkpoint made, none dropped');
      assert.ok(!poolVolumes(uri).some((v) => v.startsWith('export-')), 'no export volume on the host');
      assert.deepEqual(
        poolVolumes(uri).filter((v) => v.startsWith(vmId)),
        [`${vmId}.console.log`, `${vmId}.qcow2`, `${vmId}.seed.iso`],
        'no staged image on the host',
      );
      assert.equal(domstate(), 'shut off');
      assert.equal(await sha256(await diskImage('disk-after-refusals')), before, 'the disk is untouched');
    },
  );

  await t.test(
    'an export that fails once its room is held (its backup cannot begin; its temporary directory cannot be made, or turns read-only during its download) lets the room go and leaves nothing behind',
    async () => {
      // This process's (other test files make and remove theirs in the same directory meanwhile).
      const ourDirs = () =>
        readdirSync(tmpdir()).filter((n) => new RegExp(`^vrp-lv-[^-]+-[^-]+-${process.pid}-`).test(n));
      const dirsBefore = ourDirs();
      /** What an export of job `jobId` that failed leaves: its room let go, nothing on the host, the VM as it was. */
      const leftNothing = async (jobId: string) => {
        assert.deepEqual(
          await claimsOf(jobId),
          [
            ['fs', true],
            ['pool', true],
          ],
          'the room was held, and is let go',
        );
        assert.ok(!poolVolumes(uri).some((v) => v.startsWith('export-')), 'no export volume on the host');
        assert.deepEqual(checkpoints(), ['b1', 'b2', 'b3'], 'no checkpoint of its own left');
        assert.equal(domstate(), 'shut off');
      };
      const readOnly = (err: unknown) => {
        assert.ok(err instanceof DriverError && err.transient, String(err));
        assert.equal(
          err.message,
          'The temporary directory of the vrp process that copies (TMPDIR) cannot be used: it is read-only',
        );
        return true;
      };
      const commandsBefore = commands.length;
      const wrapper = installVirshWrapper();
      try {
        wrapper.refuse(['backup-begin', domain]);
        await assert.rejects(
          asRunningJob('job-begin-fails', () => d.exportDisk(vmId, 'b-begin-fails', 'b3')),
          /Could not start the backup/,
        );
      } finally {
        wrapper.remove();
      }
      assert.ok(commands.slice(commandsBefore).includes('virsh backup-begin'), 'the backup was asked for');
      await leftNothing('job-begin-fails');
      assert.deepEqual(ourDirs(), dirsBefore, 'no private directory left');
      // Room to read, none to write: the directory cannot be made after the hold.
      await withReadOnlyTmpdir(async () => {
        await assert.rejects(
          asRunningJob('job-no-dir', () => d.exportDisk(vmId, 'b-no-dir', 'b3')),
          readOnly,
        );
      });
      await leftNothing('job-no-dir');

      // The directory turns read-only while the export's volume is downloaded into it (held
      // until then): the download fails, and so does the export, for now, saying why. (The
      // wrapper's files are out of the directory that turns read-only.)
      const held = installVirshWrapper();
      try {
        await withSmallTmpdir(async (small) => {
          held.hold(['vol-download', 'export-']);
          const exporting = asRunningJob('job-turned-ro', () => d.exportDisk(vmId, 'b-turned-ro', 'b3'));
          // Its outcome is awaited below, whatever happens first.
          exporting.catch(() => {});
          await waitUntil('the download to be held', () => held.holding() || undefined);
          execFileSync('mount', ['-o', 'remount,ro', small]);
          held.allow();
          await assert.rejects(exporting, (err: unknown) => {
            readOnly(err);
            assert.match(String((err as DriverError).cause), /Could not download a storage volume/);
            return true;
          });
        });
      } finally {
        held.remove();
      }
      await leftNothing('job-turned-ro');
    },
  );

  await t.test(
    "an export that waited for another copy's room while its server was started fails for now, holding nothing, and the server runs on",
    async () => {
      // Another job's copy holds more than the host's pool has: the export waits for it.
      const place = `pool:${created.hostId}`;
      runningJobOnStore(work, 'job-copying');
      await store.db
        .insertInto('room_claims')
        .values({
          id: 'claim-of-another-copy',
          place,
          bytes: 2 ** 50,
          job_id: 'job-copying',
          attempt: 1,
          created_at: Date.now(),
          released_at: null,
        })
        .execute();
      const startedAt = Date.now();
      const waiting = asRunningJob('job-waits', () => d.exportDisk(vmId, 'b-waits', 'b3')).then(
        async (e) => {
          await e.close();
          return new Error('the export went on');
        },
        (err: unknown) => err,
      );
      try {
        // Its first look at the room is made (and found too little).
        await waitUntil('the export to look at the room', async () => {
          const places = await store.db.selectFrom('room_places').selectAll().execute();
          return places.some((p) => p.place === place && Number(p.fresh_at) >= startedAt) || undefined;
        });
        await d.start(vmId);
        assert.equal(domstate(), 'running');
      } finally {
        // Whatever failed above, the export does not wait on, nor go on into the next steps.
        await store.db.deleteFrom('room_claims').where('id', '=', 'claim-of-another-copy').execute();
        await waiting;
      }
      const err = await waiting;
      assert.ok(err instanceof DriverError && err.transient, String(err));
      assert.equal(err.message, "The server's power state changed while its backup waited for room");
      assert.deepEqual(
        await claimsOf('job-waits'),
        [
          ['fs', true],
          ['pool', true],
        ],
        'the room it held is let go',
      );
      assert.equal(domstate(), 'running', 'the server runs on');
      assert.ok(!poolVolumes(uri).some((v) => v.startsWith('export-')), 'no export volume on the host');
      assert.deepEqual(checkpoints(), ['b1', 'b2', 'b3']);
      await d.stop(vmId, { timeoutMs: 3000 });
      assert.equal(domstate(), 'shut off');
    },
  );

  await t.test(
    'an import brings an earlier point back and the next export is full; a failing source changes nothing',
    async () => {
      const before = await sha256(await diskImage('disk-before-import'));
      await assert.rejects(
        d.importDisk(vmId, 1024 ** 3, imageRuns(join(work, 'point-b1.raw'), 2)),
        /the backup store went away/,
      );
      assert.equal(await sha256(await diskImage('disk-after-failed')), before, 'the old disk is untouched');
      assert.deepEqual(checkpoints(), ['b1', 'b2', 'b3']);
      assert.equal(domstate(), 'shut off');
      // The host's connection drops while the image is uploaded: the disk and its checkpoints stay.
      const wrapper = installVirshWrapper();
      try {
        wrapper.refuse(['vol-upload', vmId]);
        await assert.rejects(
          d.importDisk(vmId, 1024 ** 3, imageRuns(join(work, 'point-b1.raw'))),
          /Could not upload a storage volume/,
        );
        wrapper.allow();
        assert.equal(await sha256(await diskImage('disk-after-upload')), before, 'the old disk is untouched');
        assert.deepEqual(checkpoints(), ['b1', 'b2', 'b3']);
        assert.equal(domstate(), 'shut off');
        assert.deepEqual(
          poolVolumes(uri).filter((v) => v.startsWith(vmId)),
          [`${vmId}.console.log`, `${vmId}.qcow2`, `${vmId}.seed.iso`],
          'no staged image left',
        );
        const started = performance.now();
        await d.importDisk(vmId, 1024 ** 3, imageRuns(join(work, 'point-b1.raw')));
        const ms = Math.round(performance.now() - started);
        assert.equal(domstate(), 'shut off', 'a stopped VM stays stopped');
        assert.deepEqual(checkpoints(), []);
        assert.equal(
          await sha256(await diskImage('disk-imported')),
          await sha256(join(work, 'point-b1.raw')),
        );
        t.diagnostic(`import of the first point: ${ms} ms`);
        // A running VM whose uploaded image is gone before its copy (another attempt of the
        // restore, begun since, removed it): nothing of the VM changed, and it is tried again.
        await d.start(vmId);
        assert.equal(domstate(), 'running');
        const domId = virshOut(uri, 'domid', domain).trim();
        // An attempt whose lease runs out while its image uploads (its job may be another
        // worker's by then: fence.ts) takes no further step: the VM runs on, on its own disk, and
        // the image it uploaded stays for the next import to remove.
        const lease = new AbortController();
        const fence = { signal: lease.signal, check: () => lease.signal.throwIfAborted() };
        wrapper.hold(['vol-upload', `${vmId}.restore-`]);
        const late = fenced(fence, () =>
          d.importDisk(vmId, 1024 ** 3, imageRuns(join(work, 'point-b1.raw'))),
        ).catch((e: unknown) => e);
        await waitUntil('the upload to begin', () => wrapper.holding());
        lease.abort(new FenceDown());
        wrapper.allow();
        assert.ok((await late) instanceof FenceDown, String(await late));
        assert.equal(virshOut(uri, 'domid', domain).trim(), domId, 'the same run of the domain');
        assert.deepEqual(checkpoints(), [], 'nothing else of the VM changed');
        assert.equal(poolVolumes(uri).filter((v) => v.startsWith(`${vmId}.restore-`)).length, 1);
        wrapper.refuse(
          ['vol-info', `${vmId}.restore-`],
          'error: Storage volume not found: no storage vol with matching name',
        );
        await assert.rejects(d.importDisk(vmId, 1024 ** 3, imageRuns(join(work, 'point-b1.raw'))), (err) => {
          assert.ok(err instanceof DriverError && err.transient, String(err));
          assert.match(err.message, /The image to restore left the host before it was copied/);
          return true;
        });
        wrapper.allow();
        assert.equal(virshOut(uri, 'domid', domain).trim(), domId, 'the same run of the domain');
        // A running VM whose import fails for good after its power-off but before its disk is
        // removed: it runs again, on its own disk; the restore is not recorded as done.
        const { marker, recorded } = recordingMarker();
        wrapper.refuse(['vol-delete', `${vmId}.qcow2`], 'error: Requested operation is not valid: refused');
        await assert.rejects(
          d.importDisk(vmId, 1024 ** 3, imageRuns(join(work, 'point-b1.raw')), undefined, marker),
          (err) => {
            assert.ok(err instanceof DriverError && !err.transient, String(err));
            return true;
          },
        );
        wrapper.allow();
        assert.equal(domstate(), 'running', 'started again');
        assert.notEqual(virshOut(uri, 'domid', domain).trim(), domId, 'after its power-off');
        assert.ok(poolVolumes(uri).includes(`${vmId}.qcow2`), 'its disk is there');
        assert.deepEqual(recorded, []);
        // A running VM whose import fails past its power-off (the copy into place on the host
        // refused): it is off, the failure is tried again (the VM has no disk), and the re-run
        // brings the image in (the restore job then starts it, as it ran when the job began).
        wrapper.refuse(
          ['vol-create-from', `${vmId}.restore-`],
          'error: internal error: no space left on device',
        );
        await assert.rejects(
          d.importDisk(vmId, 1024 ** 3, imageRuns(join(work, 'point-b1.raw')), undefined, marker),
          (err) => {
            assert.ok(err instanceof DriverError && err.transient, String(err));
            assert.match(
              err.message,
              /^The disk was removed and its replacement could not be copied .*: the server has no disk until a restore succeeds/,
            );
            return true;
          },
        );
        wrapper.allow();
        assert.equal(domstate(), 'shut off');
        assert.deepEqual(recorded, [], 'not restored');
        assert.deepEqual(
          poolVolumes(uri).filter((v) => v.startsWith(`${vmId}.restore-`)),
          [],
        );
        // An image an attempt that died left on the host goes when the next import begins; one
        // libvirt still copies from (its virsh was ended) is left for a later import, and the
        // import goes on.
        virshOut(uri, 'vol-create-as', 'vrp', `${vmId}.restore-deadbeef.qcow2`, '1M', '--format', 'qcow2');
        wrapper.refuse(
          ['vol-delete', `${vmId}.restore-deadbeef`],
          "error: Requested operation is not valid: volume 'x' is still in use.",
        );
        await d.importDisk(vmId, 1024 ** 3, imageRuns(join(work, 'point-b1.raw')), undefined, marker);
        wrapper.allow();
        assert.deepEqual(recorded, ['disk-restored'], 'recorded once the disk is the image');
        assert.deepEqual(
          poolVolumes(uri).filter((v) => v.startsWith(`${vmId}.restore-`)),
          [`${vmId}.restore-deadbeef.qcow2`],
        );
        assert.equal(domstate(), 'shut off');
        assert.equal(
          await sha256(await diskImage('disk-imported-again')),
          await sha256(join(work, 'point-b1.raw')),
        );
        await d.importDisk(vmId, 1024 ** 3, imageRuns(join(work, 'point-b1.raw')));
        assert.deepEqual(
          poolVolumes(uri).filter((v) => v.startsWith(`${vmId}.restore-`)),
          [],
          "no staged image left, the dead attempt's neither",
        );
      } finally {
        wrapper.remove();
      }
      // Running again, the guest boots from the imported disk; the next export is full.
      await d.start(vmId);
      const next = await d.exportDisk(vmId, 'b5', 'b3');
      assert.equal(next.kind, 'full');
      await next.commit();
      await next.close();
      assert.deepEqual(checkpoints(), ['b5']);
    },
  );

  await t.test(
    'a copy from a host that stops answering is ended once it moves no data for the stall window (transient), and goes through once the host answers',
    async () => {
      const host = uri === hostA.uri ? hostA : hostB;
      virshOut(uri, 'vol-create-as', 'vrp', 'stall-source.raw', '64M', '--format', 'raw');
      execFileSync('dd', [
        'if=/dev/urandom',
        `of=${poolFile('stall-source.raw')}`,
        'bs=1M',
        'count=64',
        'conv=notrunc',
        'status=none',
      ]);
      const copies = createCommands(undefined, { stallMs: 2000, minBytesPerSecond: 10 * 1024 * 1024 });
      const pool = createPoolStorage(copies, '/var/lib/vrp/pool');
      const file = join(work, 'stall.raw');
      // The host's libvirtd stopped, as a host that hangs: connections are taken, nothing answers.
      const daemon = Number(readFileSync(join(host.dir, 'libvirtd.pid'), 'utf8'));
      try {
        process.kill(daemon, 'SIGSTOP');
        let err: unknown;
        try {
          err = await pool
            .download(uri, 'stall-source.raw', file, { bytes: 64 << 20 })
            .catch((e: unknown) => e);
        } finally {
          process.kill(daemon, 'SIGCONT');
        }
        assert.ok(err instanceof DriverError, String(err));
        assert.equal(err.transient, true);
        assert.equal(err.message, 'Could not download a storage volume (the copy moved no data for 2 s)');
        // Its own size read from the host, and its bytes watched as they move: all of them.
        await pool.download(uri, 'stall-source.raw', file);
        assert.equal(await sha256(file), await sha256(poolFile('stall-source.raw')));
      } finally {
        await copies.close();
        rmSync(file, { force: true });
        removeVolumes('stall-source.raw');
      }
    },
  );

  await t.test(
    'after a live migration the next export is full; a VM with checkpoints is destroyed',
    async () => {
      const from = created.hostId;
      // A legacy backup (a standalone qcow2 on the host, taken before the backup store) of the
      // first point, on the host the VM is on now (running).
      const legacyId = '0193bk00-1e9a-7000-8000-000000000001';
      const legacy = join(work, 'legacy.qcow2');
      execFileSync('qemu-img', ['convert', '-f', 'raw', '-O', 'qcow2', join(work, 'point-b1.raw'), legacy]);
      virshOut(uri, 'vol-create-as', 'vrp', `backup-${legacyId}.qcow2`, '1G', '--format', 'qcow2');
      virshOut(uri, 'vol-upload', '--pool', 'vrp', `backup-${legacyId}.qcow2`, legacy);
      // Restored there (copied into the disk's place from the backup, which stays), the running
      // VM started again.
      const sameHost = recordingMarker();
      await d.restoreLegacyBackup(vmId, legacyId, sameHost.marker);
      assert.deepEqual(sameHost.recorded, ['disk-restored']);
      assert.equal(domstate(), 'running', 'a running VM runs again');
      assert.ok(poolVolumes(uri).includes(`backup-${legacyId}.qcow2`), 'the backup stays');
      const moved = await d.migrate(vmId, null);
      assert.notEqual(moved.hostId, from);
      assert.equal(moved.power, 'running');
      uri = uriOf(moved.hostId);
      t.diagnostic(`checkpoints on the destination after the move: [${checkpoints().join(', ')}]`);
      // Restored on the host the VM moved to: streamed there as a restore image of the VM's, which
      // goes once the disk is the backup's; the restore recorded as done; the backup stays where
      // it was taken.
      await d.powerOff(vmId);
      const otherHost = recordingMarker();
      await d.restoreLegacyBackup(vmId, legacyId, otherHost.marker);
      assert.deepEqual(otherHost.recorded, ['disk-restored']);
      assert.equal(domstate(), 'shut off', 'a stopped VM stays stopped');
      assert.equal(
        await sha256(await diskImage('disk-legacy')),
        await sha256(join(work, 'point-b1.raw')),
        "the legacy backup's disk",
      );
      assert.deepEqual(
        poolVolumes(uri).filter((v) => v.startsWith(`${vmId}.restore-`)),
        [],
        'no restore image left',
      );
      assert.ok(poolVolumes(uriOf(from)).includes(`backup-${legacyId}.qcow2`));
      await d.deleteLegacyBackup(vmId, legacyId);
      assert.ok(!poolVolumes(uriOf(from)).includes(`backup-${legacyId}.qcow2`), 'deleted where it was');
      await d.start(vmId);
      const next = await d.exportDisk(vmId, 'b6', 'b5');
      assert.equal(next.kind, 'full');
      await next.commit();
      await next.close();
      assert.deepEqual(checkpoints(), ['b6']);
      // A terminate whose lease runs out while it removes the VM (fence.ts): the command under
      // way is ended, and the VM keeps its record and addresses for the job's next run; so does
      // one whose host does not answer (before, a process that had not reached the host for this
      // VM took that for a host with nothing of it, and gave the addresses of a VM that still ran
      // to the next one).
      const addresses = (await d.inspect(vmId))?.ips;
      const lease = new AbortController();
      const fence = { signal: lease.signal, check: () => lease.signal.throwIfAborted() };
      const wrapper = installVirshWrapper();
      // The driver of a process that did not create the VM (this one's, restarted).
      const restarted = await createDriver(config, store.db);
      try {
        wrapper.hold(['undefine', domain]);
        const late = fenced(fence, () => restarted.destroy(vmId)).catch((e: unknown) => e);
        await waitUntil('the removal to reach the domain', () => wrapper.holding());
        lease.abort(new FenceDown());
        assert.ok((await late) instanceof FenceDown, String(await late));
        wrapper.allow();
        wrapper.refuse(['destroy', domain]);
        await assert.rejects(restarted.destroy(vmId), (err: unknown) => {
          assert.ok(err instanceof DriverError && err.transient, String(err));
          return true;
        });
        // Nor does a create's last attempt giving up in a process that did not make the earlier
        // ones: the store says an attempt reached the host (before, only the process that made
        // it knew, and a restarted one gave the addresses away).
        await assert.rejects(restarted.destroy(vmId, { createGivingUp: true }), (err: unknown) => {
          assert.ok(err instanceof DriverError && err.transient, String(err));
          return true;
        });
        // Its domain is still there (off: the fenced attempt had powered it off), still its own.
        assert.match(virshOut(uri, 'domstate', domain), /shut off/);
      } finally {
        wrapper.remove();
        await restarted.close();
      }
      assert.deepEqual(
        (await d.inspect(vmId))?.ips,
        addresses,
        'the VM is still recorded, its addresses its own',
      );
      await d.destroy(vmId);
      assert.equal(await d.inspect(vmId), undefined);
      assert.deepEqual(
        poolVolumes(uri).filter((v) => v.startsWith(vmId)),
        [],
      );
    },
  );
});
