import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { DriverError } from '../../src/drivers/driver.ts';
import { checkFence, FenceDown, fenced } from '../../src/drivers/fence.ts';
import {
  type Commands,
  copyTimeMs,
  createCommands,
  isNoDomain,
  processIoBytes,
  STALL_BYTES,
  watchProgress,
} from '../../src/drivers/libvirt/commands.ts';
import { createPoolStorage } from '../../src/drivers/libvirt/storage.ts';
import { waitUntil } from '../helpers/budget.ts';

const { run } = createCommands();
const fail = (stderr: string) => run('sh', ['-c', `echo "${stderr}" >&2; exit 1`], 'Could not start the VM');

test('libvirt failures: readable message for the reseller, libvirt text only in the cause', async () => {
  const err = await fail('error: internal error: qemu unexpectedly closed the monitor').catch(
    (e: unknown) => e,
  );
  assert.ok(err instanceof DriverError);
  assert.equal(err.message, 'Could not start the VM');
  assert.equal(err.transient, false);
  assert.match(String((err.cause as Error).message), /qemu unexpectedly closed the monitor/);
  assert.equal(err.details?.exitCode, 1);
  assert.match(err.details?.stderr ?? '', /qemu unexpectedly closed the monitor/);
});

test('lost connections, held locks and timeouts are transient (retried)', async () => {
  for (const stderr of [
    'error: failed to connect to the hypervisor',
    'error: Timed out during operation: cannot acquire state change lock',
    'error: End of file while reading data: Input/output error',
    // A copy that libvirtd goes on with after its command was ended at its time limit.
    "error: Failed to delete vol x.migrating.qcow2\nerror: Requested operation is not valid: volume 'x.migrating.qcow2' is still being allocated.",
    // Its source, as libvirt says while it copies from it (libvirt 9.0).
    "error: Failed to delete vol x.restore-1.qcow2\nerror: Requested operation is not valid: volume 'x.restore-1.qcow2' is still in use.",
    // A destination whose migration ports are all taken by other moves (libvirt's words).
    "error: internal error: Unable to find an unused port in range 'migration' (49152-49215)",
  ]) {
    const err = await fail(stderr).catch((e: unknown) => e);
    assert.ok(err instanceof DriverError);
    assert.equal(err.transient, true, stderr);
    // Whether it is retried is the job's decision (it may be the last attempt): no promise here.
    assert.equal(err.message, 'Could not start the VM (the host did not answer)');
  }
  const slow = await run('sleep', ['5'], 'Could not stop the VM', 100).catch((e: unknown) => e);
  assert.ok(slow instanceof DriverError);
  assert.equal(slow.transient, true, 'a command that hangs is killed and retried');
});

test('"no such domain" is recognised, so idempotent operations accept it', async () => {
  assert.equal(isNoDomain(await fail("error: failed to get domain 'vrp-x'").catch((e: unknown) => e)), true);
  assert.equal(
    isNoDomain(await fail('error: Domain not found: no domain with matching name').catch((e: unknown) => e)),
    true,
  );
  assert.equal(isNoDomain(await fail('error: some other failure').catch((e: unknown) => e)), false);
});

test('commands run in the C locale whatever the process has, so the words the driver reads are English', async () => {
  const saved = { LANG: process.env.LANG, LC_ALL: process.env.LC_ALL, LANGUAGE: process.env.LANGUAGE };
  Object.assign(process.env, { LANG: 'de_DE.UTF-8', LC_ALL: 'de_DE.UTF-8', LANGUAGE: 'de' });
  try {
    const { stdout } = await run('sh', ['-c', 'echo "$LC_ALL"'], 'Could not read the locale');
    assert.equal(stdout.trim(), 'C');
    // The rest of the environment is the process's (virsh finds its configuration and ssh keys).
    const home = await run('sh', ['-c', 'echo "$HOME"'], 'Could not read HOME');
    assert.equal(home.stdout.trim(), process.env.HOME);
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
});

/** A fence (drivers/fence.ts) that a test takes down when it likes, as a lease that ran out. */
function testFence() {
  const abort = new AbortController();
  return {
    signal: abort.signal,
    check: () => abort.signal.throwIfAborted(),
    down: () => abort.abort(new FenceDown()),
  };
}

test('a job attempt whose fence is down starts no command on a host; one whose fence is up does', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vrp-fence-'));
  try {
    const fence = testFence();
    await fenced(fence, () => run('touch', [join(dir, 'before')], 'Could not touch'));
    fence.down();
    const err = await fenced(fence, () => run('touch', [join(dir, 'after')], 'Could not touch')).catch(
      (e: unknown) => e,
    );
    assert.ok(err instanceof FenceDown, String(err));
    assert.equal(err.transient, true);
    assert.deepEqual(await readdir(dir), ['before'], 'the command was never started');
    // Outside any fence (host health's probes, the reconciler), commands run as ever.
    await run('touch', [join(dir, 'outside')], 'Could not touch');
    assert.deepEqual((await readdir(dir)).sort(), ['before', 'outside']);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("a host's pool made ready for several jobs at once is not stopped by the fence of the one that began it", async () => {
  let release!: () => void;
  const held = new Promise<void>((r) => {
    release = r;
  });
  const asked: string[] = [];
  // virsh's answers for a pool that is there, running and autostarted; each command checks the
  // caller's fence, as the real ones do, and the first is held until the test lets it go.
  const answers: Record<string, string> = {
    'pool-list': 'vrp\n',
    'pool-dumpxml': '<pool><target><path>/var/lib/vrp/pool</path></target></pool>',
    'pool-info': 'State:          running\nAutostart:      yes\n',
  };
  const commands: Commands = {
    run: () => Promise.reject(new Error('not used')),
    virshShell: () => Promise.reject(new Error('not used')),
    close: async () => {},
    async virsh(_uri, args) {
      asked.push(args[0]!);
      if (asked.length === 1) await held;
      checkFence();
      return { stdout: answers[args[0]!] ?? '', stderr: '' };
    },
  };
  const storage = createPoolStorage(commands, '/var/lib/vrp/pool');
  const first = testFence();
  const second = testFence();
  const firstReady = fenced(first, () => storage.ready('qemu:///system')).catch((e: unknown) => e);
  const secondReady = fenced(second, () => storage.ready('qemu:///system'));
  first.down();
  release();
  assert.equal(await secondReady, '/var/lib/vrp/pool', 'the second job has its pool');
  assert.equal(await firstReady, '/var/lib/vrp/pool', 'the shared work finished, for the first too');
  assert.deepEqual(asked, ['pool-list', 'pool-dumpxml', 'pool-info'], 'asked once for both');
});

test('a command under way when its attempt’s fence goes down is ended, and the attempt told why', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'vrp-fence-'));
  try {
    const fence = testFence();
    const pidFile = join(dir, 'pid');
    const late = fenced(fence, () =>
      run('sh', ['-c', 'echo $$ > "$0"; exec sleep 600', pidFile], 'Could not copy the disk', 900_000),
    ).catch((e: unknown) => e);
    const pid = Number(
      await waitUntil(
        'the command to start',
        async () => /^[0-9]+\n$/.exec(await readFile(pidFile, 'utf8').catch(() => ''))?.[0],
      ),
    );
    assert.ok(pid > 0);
    fence.down();
    const err = await late;
    assert.ok(err instanceof FenceDown, String(err));
    // Ended (SIGTERM), not left to run its ten minutes.
    await waitUntil('the command to end', () => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

describe('copies: given the time their bytes take, ended when they stop moving data', () => {
  /** Reads that grow by a stall window's worth each time, or stay where they are once `stuck`. */
  const counter = () => {
    const c = { reads: 0, stuck: false, moved: 0 };
    const progress = async () => {
      c.reads += 1;
      if (!c.stuck) c.moved += STALL_BYTES;
      return c.moved;
    };
    return { c, progress };
  };

  test('a copy whose bytes keep moving runs past many stall windows', async () => {
    const copies = createCommands(undefined, { stallMs: 60, minBytesPerSecond: 1 });
    const { c, progress } = counter();
    let settled = false;
    const copy = copies
      .run('sleep', ['600'], 'Could not copy a volume', { bytes: 0, progress })
      .finally(() => {
        settled = true;
      });
    // A read every 50 ms: ten reads are eight stall windows or more.
    await waitUntil('ten reads of the copy’s progress', () => c.reads >= 10 || undefined, { everyMs: 10 });
    assert.equal(settled, false, 'not ended while its bytes moved');
    // Ended as a shutdown ends it, not for a stall.
    await copies.close();
    const err = await copy.catch((e: unknown) => e);
    assert.ok(err instanceof DriverError, String(err));
    assert.equal(err.message, 'Could not copy a volume (the provider is shutting down)');
  });

  test('a copy that stops moving data is ended, as transient, and says so', async () => {
    // A whole time of a minute: a stall not seen fails the test by the message, not a hang.
    const copies = createCommands(undefined, { stallMs: 200, minBytesPerSecond: 1, baseMs: 60_000 });
    const { c, progress } = counter();
    const copy = copies.run('sleep', ['600'], 'Could not download a storage volume', { bytes: 0, progress });
    await waitUntil('the copy to move', () => c.reads >= 3 || undefined, { everyMs: 10 });
    c.stuck = true;
    const err = await copy.catch((e: unknown) => e);
    assert.ok(err instanceof DriverError, String(err));
    assert.equal(err.transient, true);
    assert.equal(err.message, 'Could not download a storage volume (the copy moved no data for 200 ms)');
    assert.equal(err.details?.signal, 'SIGTERM');
  });

  test('a copy whose progress cannot be read is not ended for it; its whole time still bounds it', async () => {
    // No stall counted (every read says nothing), and a whole time of 300 ms for 0 bytes.
    const copies = createCommands(undefined, { stallMs: 50, minBytesPerSecond: 1, baseMs: 300 });
    let reads = 0;
    const unseen = async () => {
      reads += 1;
      return undefined;
    };
    const ok = await copies.run('sh', ['-c', 'echo copied'], 'Could not copy', {
      bytes: 0,
      progress: unseen,
    });
    assert.equal(ok.stdout, 'copied\n');
    const err = await copies
      .run('sleep', ['600'], 'Could not copy a storage volume', { bytes: 0, progress: unseen })
      .catch((e: unknown) => e);
    assert.ok(err instanceof DriverError, String(err));
    assert.equal(err.transient, true);
    assert.equal(err.message, 'Could not copy a storage volume (the copy took longer than its 300 ms)');
    assert.ok(reads > 0, 'its progress was asked for');
  });

  test('a copy’s whole time: the base and its bytes at the slowest rate accepted', () => {
    const pace = { stallMs: 1000, minBytesPerSecond: 10 * 1024 * 1024 };
    assert.equal(copyTimeMs(0, pace), 30 * 60_000);
    // 500 GiB at 10 MiB/s: 51,200 s more.
    assert.equal(copyTimeMs(500 * 1024 ** 3, pace), 30 * 60_000 + 51_200_000);
    assert.equal(copyTimeMs(1024, { ...pace, baseMs: 0, minBytesPerSecond: 1024 }), 1000);
    // At most the longest a timer waits (2^31 - 1 ms, about 24.8 days): a longer one would fire at once.
    assert.equal(copyTimeMs(4 * 1024 ** 4, { ...pace, minBytesPerSecond: 1024 * 1024 }), 2 ** 31 - 1);
  });

  test('by default a copy’s progress is its own reads and writes (/proc/<pid>/io)', async () => {
    // A child that writes 8 MiB, then waits for its input to end.
    const child = spawn(process.execPath, [
      '-e',
      "require('fs').writeFileSync('/dev/null', Buffer.alloc(8 << 20)); process.stdout.write('written\\n'); process.stdin.resume()",
    ]);
    try {
      await new Promise((r) => child.stdout.once('data', r));
      const moved = await processIoBytes(child.pid!);
      assert.ok(moved !== undefined && moved >= 8 << 20, `read ${moved}`);
    } finally {
      child.stdin.end();
      await new Promise((r) => child.once('exit', r));
    }
    assert.equal(await processIoBytes(child.pid!), undefined, 'a process gone: cannot tell');
  });

  test('a watch stops when told: no reads after its stop', async () => {
    let reads = 0;
    const stop = watchProgress(
      async () => {
        reads += 1;
        return reads * STALL_BYTES;
      },
      50,
      () => assert.fail('not stalled'),
    );
    await waitUntil('a read', () => reads > 0 || undefined, { everyMs: 5 });
    stop();
    const after = reads;
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(reads <= after + 1, `${reads} reads after ${after}`);
  });
});
