/**
 * This machine's private directories of copies (src/drivers/libvirt/storage.ts): named after the
 * machine, the PID namespace and the process (pid and start time); a process started later
 * removes those of this machine's processes that ended (or whose pid is another process's now)
 * and those named without their process a day after their last change, and leaves a live
 * process's, another machine's or namespace's and anything else; one it cannot remove is
 * counted and does not stop the rest. The libvirt driver sweeps as it starts, and says what it
 * removed and what it could not. A copy that fails because its directory turned full or
 * read-only fails for now, saying so (as root: a small tmpfs).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DriverError } from '../../src/drivers/driver.ts';
import {
  localPlace,
  localRoom,
  makePrivateDir,
  reportStuckPrivateDirs,
  sweepPrivateDirs,
  withPrivateDir,
} from '../../src/drivers/libvirt/storage.ts';
import { closeLibvirtDriverOnStore, libvirtDriverOnStore, withSmallTmpdir } from '../helpers/libvirt.ts';

/** A process of this machine that has ended: its pid. */
async function endedPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await once(child, 'exit');
  return child.pid ?? assert.fail('no pid');
}

/** The start time of process `pid` (field 22 of /proc/<pid>/stat). */
const startOf = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? assert.fail('no start time');
};

/** This machine's name as private directories carry it, and this process's PID namespace. */
const machine = hostname().replace(/[^A-Za-z0-9.]/g, '_');
const nsOf = () =>
  /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1] ?? assert.fail('no PID namespace');

/**
 * Makes `path` a directory the sweep cannot remove: a mount point (as root), or holding a
 * directory its files cannot leave (as another user). Returns its undoing.
 */
function stuckDir(path: string): () => void {
  mkdirSync(path);
  if (process.getuid?.() === 0) {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'vrp-stuck', path]);
    return () => execFileSync('umount', [path]);
  }
  mkdirSync(join(path, 'locked'));
  writeFileSync(join(path, 'locked', 'part'), 'x');
  chmodSync(join(path, 'locked'), 0o500);
  return () => execFileSync('chmod', ['-R', 'u+w', path]);
}

test('a process removes the private directories of ended processes of its machine and PID namespace, and only those; one it cannot remove does not stop it', async () => {
  const usual = process.env['TMPDIR'];
  const dir = mkdtempSync(join(tmpdir(), 'vrp-private-dirs-'));
  process.env['TMPDIR'] = dir;
  const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)']);
  let unstick = () => {};
  try {
    const ns = nsOf();
    const me = `${machine}-${ns}-${process.pid}-${startOf(process.pid)}`;
    const mine = await makePrivateDir();
    assert.ok(mine.startsWith(join(dir, `vrp-lv-${me}-`)), mine);
    assert.match(mine, /-[A-Za-z0-9]{6}$/);
    await withPrivateDir(async (used) => {
      assert.ok(used.startsWith(join(dir, `vrp-lv-${me}-`)), used);
    });
    const dead = await endedPid();
    const livePid = live.pid ?? assert.fail('no pid');
    const make = (name: string, ageMs = 0) => {
      const path = join(dir, name);
      mkdirSync(path);
      // A copy's file in it (a 1 MiB part of a disk).
      writeFileSync(join(path, 'export.qcow2'), Buffer.alloc(2 ** 20, 1));
      const at = (Date.now() - ageMs) / 1000;
      utimesSync(path, at, at);
      return name;
    };
    const day = 24 * 60 * 60_000;
    const gone = [
      make(`vrp-lv-${machine}-${ns}-${dead}-123-aB3dE9`),
      // The pid runs, but it is another process (a pid used again; a container's PID 1 restarted).
      make(`vrp-lv-${machine}-${ns}-${livePid}-1-cD4eF5`),
      make('vrp-lv-export-Qx7Lm2', day + 60_000),
      make('vrp-lv-Zz9Yy8', day + 60_000),
    ];
    const kept = [
      mine.slice(dir.length + 1),
      make(`vrp-lv-${machine}-${ns}-${livePid}-${startOf(livePid)}-Kp4Rt6`),
      make(`vrp-lv-other.machine-${ns}-${dead}-123-Mn5Op7`),
      make(`vrp-lv-${machine}-4026531000-${dead}-123-Gh6Ij7`),
      make(`vrp-lv-${machine}-x-${dead}-0-Lm8No9`),
      make('vrp-lv-export-Fr3sh1', day - 60_000),
      make('vrp-lv-notes'),
      make('something-else'),
    ];
    // A dead process's directory that cannot be removed.
    const stuck = `vrp-lv-${machine}-${ns}-${dead}-123-St1ck2`;
    unstick = stuckDir(join(dir, stuck));
    assert.deepEqual(await sweepPrivateDirs(), { removed: gone.length, failed: 1 });
    assert.deepEqual(readdirSync(dir).sort(), [...kept, stuck].sort());
    // Nothing more to remove.
    assert.deepEqual(await sweepPrivateDirs(), { removed: 0, failed: 1 });
  } finally {
    live.kill();
    unstick();
    if (usual === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = usual;
    execFileSync('chmod', ['-R', 'u+w', dir]);
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the libvirt driver's start-up sweeps: what it removed at info, what it could not at warn; where the temporary directory cannot be read, a warning and the driver still starts; copies then fail for now, saying why", async () => {
  const usual = process.env['TMPDIR'];
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-private-dirs-store-'));
  const dir = mkdtempSync(join(tmpdir(), 'vrp-private-dirs-'));
  const lines: { level: string; msg: string; obj: Record<string, unknown> }[] = [];
  const at =
    (level: string) =>
    (obj: object, msg: string): void => {
      lines.push({ level, msg, obj: obj as Record<string, unknown> });
    };
  const log = { info: at('info'), warn: at('warn'), error: at('error'), debug: () => {} };
  const sweepLines = () => lines.filter((l) => / temporary directories/.test(l.msg));
  let unstick = () => {};
  let s: Awaited<ReturnType<typeof libvirtDriverOnStore>> | undefined;
  try {
    process.env['TMPDIR'] = dir;
    const dead = await endedPid();
    mkdirSync(join(dir, `vrp-lv-${machine}-${nsOf()}-${dead}-123-aB3dE9`));
    const stuck = join(dir, `vrp-lv-${machine}-${nsOf()}-${dead}-123-St1ck2`);
    unstick = stuckDir(stuck);
    s = await libvirtDriverOnStore(dataDir, {}, log);
    assert.deepEqual(
      sweepLines().map((l) => [l.level, l.msg, l.obj['removed'] ?? l.obj['failed'], l.obj['dir']]),
      [
        ['info', 'libvirt: removed temporary directories of processes that ended', 1, dir],
        [
          'warn',
          'libvirt: could not remove temporary directories of processes that ended (remove them by hand)',
          1,
          dir,
        ],
      ],
    );
    assert.deepEqual(readdirSync(dir), [stuck.slice(dir.length + 1)]);
    await closeLibvirtDriverOnStore(s, dataDir);
    s = undefined;

    // A temporary directory that is not there: the sweep cannot look, the driver starts all the same.
    lines.length = 0;
    mkdirSync(dataDir);
    process.env['TMPDIR'] = join(dir, 'not-there');
    s = await libvirtDriverOnStore(dataDir, {}, log);
    assert.deepEqual(
      sweepLines().map((l) => [l.level, l.msg, (l.obj['err'] as NodeJS.ErrnoException | undefined)?.code]),
      [['warn', 'libvirt: could not look for temporary directories left by ended processes', 'ENOENT']],
    );
    // A copy that needs the directory fails for now, saying why.
    const unusable = (err: unknown) => {
      assert.ok(err instanceof DriverError && err.transient, String(err));
      assert.equal(
        err.message,
        'The temporary directory of the vrp process that copies (TMPDIR) cannot be used: it does not exist',
      );
      return true;
    };
    await assert.rejects(makePrivateDir(), unusable);
    await assert.rejects(localRoom(), unusable);
    await assert.rejects(localPlace(), unusable);
    // A file where the directory should be: its room can be read, nothing made in it.
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    process.env['TMPDIR'] = file;
    await assert.rejects(makePrivateDir(), (err: unknown) => {
      assert.ok(err instanceof DriverError && err.transient, String(err));
      assert.match(err.message, /\(TMPDIR\) cannot be used: it is not a directory$/);
      return true;
    });
    // A failure that says nothing of the directory itself (a name too long for the system):
    // thrown as it is.
    process.env['TMPDIR'] = join(dir, 'x'.repeat(300));
    await assert.rejects(localRoom(), (err: NodeJS.ErrnoException) => {
      assert.ok(!(err instanceof DriverError), String(err));
      assert.equal(err.code, 'ENAMETOOLONG');
      return true;
    });
  } finally {
    if (usual === undefined) delete process.env['TMPDIR'];
    else process.env['TMPDIR'] = usual;
    if (s) await closeLibvirtDriverOnStore(s, dataDir);
    rmSync(dataDir, { recursive: true, force: true });
    unstick();
    execFileSync('chmod', ['-R', 'u+w', dir]);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a copy that fails because its private directory turned full or read-only fails for now, saying so; other failures are thrown as they were; the directory goes, or stays where it cannot be removed', {
  skip: process.getuid?.() !== 0 && 'needs root, to mount a small tmpfs as TMPDIR',
}, async () => {
  await withSmallTmpdir(async (small) => {
    const ours = () => readdirSync(small).filter((n) => n.startsWith('vrp-lv-'));
    // As a command fails: `virsh vol-download` into the directory unless said otherwise.
    const commandFailed = (
      command = `virsh -c qemu:///system vol-download --sparse --pool vrp v.qcow2 ${small}/v.qcow2`,
    ) =>
      new DriverError('Could not download a storage volume', {
        transient: false,
        details: { command, exitCode: 1, signal: null, stderr: 'error: failed' },
      });
    const fill = () =>
      execFileSync('sh', ['-c', 'dd if=/dev/zero of="$1/filler" bs=1M 2>/dev/null; true', '_', small]);
    const unusable = (why: string, cause: (c: unknown) => void) => (err: unknown) => {
      assert.ok(err instanceof DriverError && err.transient, String(err));
      assert.equal(
        err.message,
        `The temporary directory of the vrp process that copies (TMPDIR) cannot be used: ${why}`,
      );
      cause(err.cause);
      return true;
    };

    // This process's own write runs out of room.
    await assert.rejects(
      withPrivateDir((dir) => writeFile(join(dir, 'disk.raw'), Buffer.alloc(80 * 2 ** 20, 1))),
      unusable('it is full', (c) => assert.equal((c as NodeJS.ErrnoException).code, 'ENOSPC')),
    );
    assert.deepEqual(ours(), [], 'the directory removed');

    // A command fails, and another program has filled the directory's disk meanwhile.
    const failed = commandFailed();
    await assert.rejects(
      withPrivateDir(async () => {
        fill();
        throw failed;
      }),
      unusable('it is full', (c) => assert.equal(c, failed)),
    );
    // Full, but the command that failed does not write here (an upload to a host whose pool is
    // full): as it was.
    const upload = commandFailed(
      `virsh -c qemu+ssh://h/system vol-upload --pool vrp v.qcow2 ${small}/v.qcow2`,
    );
    await assert.rejects(
      withPrivateDir(async () => {
        throw upload;
      }),
      (err) => err === upload,
    );
    // Full, but the failure is a refusal (no command's details): as it was.
    const refusal = new DriverError('The pool has 1.0 MiB free; the copy needs about 2.0 GiB', {
      transient: false,
    });
    await assert.rejects(
      withPrivateDir(async () => {
        throw refusal;
      }),
      (err) => err === refusal,
    );
    rmSync(join(small, 'filler'));

    // A command fails, the directory is fine: as it was.
    const other = commandFailed();
    await assert.rejects(
      withPrivateDir(async () => {
        throw other;
      }),
      (err) => err === other,
    );
    // A file of the copy's own that is missing is not the directory missing.
    await assert.rejects(
      withPrivateDir((dir) => readFile(join(dir, 'never-written'))),
      (err: NodeJS.ErrnoException) => !(err instanceof DriverError) && err.code === 'ENOENT',
    );
    assert.deepEqual(ours(), []);

    // The directory's disk turns read-only during the copy: the copy fails for now, and the
    // directory, which cannot be removed now, stays (a later start sweeps it), reported.
    const stuck: [string, string][] = [];
    reportStuckPrivateDirs((dir, err) => stuck.push([dir, String((err as NodeJS.ErrnoException).code)]));
    const readOnly = commandFailed();
    await assert.rejects(
      withPrivateDir(async (dir) => {
        await writeFile(join(dir, 'part'), 'x');
        execFileSync('mount', ['-o', 'remount,ro', small]);
        throw readOnly;
      }),
      unusable('it is read-only', (c) => assert.equal(c, readOnly)),
    );
    assert.equal(ours().length, 1, 'the directory stays');
    assert.deepEqual(stuck, [[join(small, ours()[0] ?? ''), 'EROFS']], 'and is reported');
  });
});
