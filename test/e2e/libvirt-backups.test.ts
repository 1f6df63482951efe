/**
 * Live, incremental backups of a real VM through the reseller API, with VRP_DRIVER=libvirt and
 * the backup store in the data dir: while a backup is taken `virsh domstate` never says paused;
 * the second backup is an incremental one on the first (the operator's view: its parent, its
 * stored bytes far below the first's); each backup restores its own point of the guest's disk
 * (markers checked in the guest through its agent); both verify; terminate leaves nothing in the
 * backup store and no domain or volume. One VM for the whole file (a define is slow here).
 * The VM lives on a test host of its own (scripts/libvirt/test-host.sh). Runs where
 * VRP_TEST_LIBVIRT_TEMPLATE names the tiny test template (.ci/run builds it).
 * The figures (backup times, stored sizes, polls, the guest's largest tick gap) are diagnostics.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { createOperator } from '../../src/auth/operators.ts';
import { OPS } from '../../src/http/base-path.ts';
import { pause, slowWaitMs, waitUntil } from '../helpers/budget.ts';
import { fetchToken } from '../helpers/e2e.ts';
import { guestAgent, guestExec, poolVolumes, startLibvirtE2eOnTestHost } from '../helpers/libvirt.ts';
import { noLibvirtTemplate } from '../helpers/libvirt-template.ts';

const execFileAsync = promisify(execFile);
/** The VM: its domain, on the libvirt at `uri`. */
interface Vm {
  readonly uri: string;
  readonly domain: string;
}

const agent = (vm: Vm, command: unknown) => guestAgent(vm.domain, command, vm.uri);
const guest = (vm: Vm, shell: string) => guestExec(vm.domain, shell, vm.uri);

/** The guest's output of `shell`, which must succeed. */
async function guestOk(vm: Vm, shell: string): Promise<string> {
  const r = await guest(vm, shell);
  assert.equal(r.code, 0, `in the guest: ${shell}\n${r.out}`);
  return r.out;
}

/** Waits until the guest's agent answers (after a boot: init starts it once /data is mounted). */
const agentUp = (vm: Vm) =>
  waitUntil(
    'the guest agent',
    () =>
      agent(vm, { execute: 'guest-ping' }).then(
        () => true,
        () => undefined,
      ),
    { everyMs: 500, budgetMs: slowWaitMs(240_000) },
  );

/** The guest's uptime in seconds (its first field of /proc/uptime). */
const uptimeOf = (line: string) => Number(line.trim().split(/\s+/)[0]);

test('live, incremental backups of a real VM through the API: never paused, restore, verify, terminate', {
  skip: noLibvirtTemplate,
  timeout: slowWaitMs(1_800_000),
}, async (t) => {
  const { api, order, server, store, dataDir, uri } = await startLibvirtE2eOnTestHost(
    'lvbackups',
    'lvbackups',
    'backed-up.example.com',
  );
  assert.ok(order.backup > 0, 'the order has backup room');
  const [{ service_id: id }] = await api.ok('POST', 'service/create-order', order);
  await api.ok('POST', `service/${id}/create`);
  const deadline = () => Date.now() + slowWaitMs(300_000);
  await api.settled(id, 'running', deadline(), 500);
  const domain = `vrp-${id}`;
  const vm: Vm = { uri, domain };
  await agentUp(vm);

  const operator = await createOperator(store.db, { name: 'backups-ops' }, Date.now());
  const opsToken = await fetchToken(server.url, operator);
  const ops = async (method: 'GET' | 'POST', path: string) => {
    const res = await fetch(`${server.url}${OPS}/${path}`, {
      method,
      headers: { authorization: `Bearer ${opsToken}` },
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    return (JSON.parse(text) as { data: any }).data;
  };

  // A ticker in the guest (on its tmpfs root, which no freeze touches): its uptime every 100 ms.
  await agent(vm, {
    execute: 'guest-exec',
    arguments: {
      path: '/bin/sh',
      arg: ['-c', 'while :; do cat /proc/uptime >> /tmp/ticks; usleep 100000; done'],
    },
  });
  const markerA = (
    await guestOk(vm, 'dd if=/dev/urandom of=/data/a bs=1M count=24 2>/dev/null && sync && sha256sum /data/a')
  ).split(' ')[0];
  assert.match(markerA ?? '', /^[0-9a-f]{64}$/);

  /** Takes a backup through the reseller API while domstate is polled; the new backup and figures. */
  const backup = async () => {
    const before = new Set<string>(
      (await api.ok('GET', `service/${id}/backups`)).map((b: any) => b.backup_id),
    );
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
    const started = performance.now();
    let ms = 0;
    let taken: any;
    try {
      await waitUntil('a first poll', () => polls > 0 || undefined, { everyMs: 20 });
      await api.ok('POST', `service/${id}/backup/create`);
      taken = await waitUntil(
        'the backup to be available',
        async () => {
          const list = await api.ok('GET', `service/${id}/backups`);
          const b = list.find((x: any) => !before.has(x.backup_id));
          assert.notEqual(b?.status, 'failed', JSON.stringify(await api.ok('GET', `service/${id}/jobs`)));
          return b?.status === 'available' ? b : undefined;
        },
        { everyMs: 100, budgetMs: slowWaitMs(300_000) },
      );
      ms = Math.round(performance.now() - started);
      const at = polls;
      await waitUntil('a poll after the backup', () => polls > at || undefined, { everyMs: 20 });
    } finally {
      polling = false;
      await poller;
    }
    assert.deepEqual([...seen], ['running'], `domstate seen during the backup (${polls} polls)`);
    assert.ok(polls >= 3, `domstate polled a few times during the backup (${polls})`);
    await api.settled(id, 'running', deadline());
    return { b: taken, ms, polls };
  };

  /**
   * The room the service's last `action` job held while it copied (room-claims.ts): per place
   * (the host's pool, this machine's temporary directory), its bytes, all released at its end.
   */
  const roomHeldBy = async (action: 'backup_create' | 'backup_restore') => {
    const job = await store.db
      .selectFrom('jobs')
      .select('id')
      .where('service_id', '=', id)
      .where('action', '=', action)
      .orderBy('seq', 'desc')
      .executeTakeFirstOrThrow();
    const claims = await store.db
      .selectFrom('room_claims')
      .select(['place', 'bytes', 'released_at'])
      .where('job_id', '=', job.id)
      .orderBy('place')
      .execute();
    assert.ok(
      claims.every((c) => c.released_at !== null),
      `${action}'s room released at its end: ${JSON.stringify(claims)}`,
    );
    return claims.map((c) => [c.place.replace(/^(pool|fs):.*$/, '$1'), Number(c.bytes)] as const);
  };
  /**
   * [pool bytes, temporary directory bytes] of a job that held room on both, each more than none
   * (the test host's pool is not this machine's filesystem: two places).
   */
  const heldOnBoth = (held: readonly (readonly [string, number])[]) => {
    assert.deepEqual(
      held.map(([place]) => place),
      ['fs', 'pool'],
    );
    const [[, tmp = 0] = [], [, pool = 0] = []] = held;
    assert.ok(pool > 0 && tmp > 0, JSON.stringify(held));
    return [pool, tmp] as const;
  };
  /** The VM's disk volume's allocated bytes on its host. */
  const diskAllocation = () =>
    Number(
      /^Allocation:\s+(\d+)/m.exec(
        execFileSync('virsh', ['-c', uri, 'vol-info', '--bytes', '--pool', 'vrp', `${id}.qcow2`], {
          encoding: 'utf8',
        }),
      )?.[1],
    );

  const windowStart = uptimeOf(await guestOk(vm, 'cat /proc/uptime'));
  const one = await backup();
  assert.ok(one.b.size_gb > 0, `backup 1 has a size (${one.b.size_gb} GB)`);
  // The export's volume in the host's pool and its file here: the disk's data (24 MiB written in
  // the guest at least), never more than its 20 GB.
  const [exportPool, exportTmp] = heldOnBoth(await roomHeldBy('backup_create'));
  assert.ok(
    exportPool === exportTmp && exportPool >= 24 * 2 ** 20 && exportPool <= 20 * 1024 ** 3,
    `backup 1's export held ${exportPool} bytes in the pool, ${exportTmp} here`,
  );

  const markerB = (
    await guestOk(vm, 'dd if=/dev/urandom of=/data/b bs=1M count=4 2>/dev/null && sync && sha256sum /data/b')
  ).split(' ')[0];
  const two = await backup();
  const windowEnd = uptimeOf(await guestOk(vm, 'cat /proc/uptime'));
  assert.ok(two.b.size_gb > 0);

  const seenByOps = (await ops('GET', `services/${id}`)).backups as any[];
  const opsOne = seenByOps.find((b) => b.backup_id === one.b.backup_id);
  const opsTwo = seenByOps.find((b) => b.backup_id === two.b.backup_id);
  assert.equal(opsOne.format, 'archive');
  assert.equal(opsOne.parent_id, null, 'backup 1 is a full one');
  assert.equal(opsTwo.parent_id, one.b.backup_id, 'backup 2 is an incremental one on backup 1');
  assert.ok(
    opsTwo.stored_bytes * 3 < opsOne.stored_bytes,
    `backup 2 stores far less than backup 1 (${opsTwo.stored_bytes} vs ${opsOne.stored_bytes} bytes)`,
  );

  // The guest's ticks during the backups: how long its vCPUs went without a tick (not asserted:
  // a busy machine's scheduling decides it; that the domain never paused is the check).
  const ticks = (await guestOk(vm, 'cat /tmp/ticks'))
    .split('\n')
    .filter(Boolean)
    .map(uptimeOf)
    .filter((u) => u >= windowStart && u <= windowEnd);
  assert.ok(ticks.length > 2, `the ticker ran during the backups (${ticks.length} ticks)`);
  let gap = 0;
  for (let i = 1; i < ticks.length; i++) gap = Math.max(gap, ticks[i]! - ticks[i - 1]!);
  const figures =
    `backup 1 (full): ${one.ms} ms from request to available, ${opsOne.stored_bytes} bytes stored ` +
    `(${one.b.size_gb} GB), domstate polled ${one.polls} times; backup 2 (incremental): ${two.ms} ms, ` +
    `${opsTwo.stored_bytes} bytes stored (${two.b.size_gb} GB), polled ${two.polls} times; ` +
    `the guest's largest gap between ticks (every 100 ms) over the backups: ${Math.round(gap * 1000)} ms ` +
    `(${ticks.length} ticks in ${Math.round((windowEnd - windowStart) * 1000)} ms)`;
  t.diagnostic(figures);
  console.log(figures);

  // Restore backup 1: marker A is there, /data/b is not.
  const restore = async (backupId: string) => {
    const started = performance.now();
    await api.ok('POST', `service/${id}/backup/restore/${backupId}`);
    await api.settled(id, 'running', deadline(), 500);
    await agentUp(vm);
    return Math.round(performance.now() - started);
  };
  const allocationBefore = diskAllocation();
  const restoreOneMs = await restore(one.b.backup_id);
  // Here, the image's raw file and its qcow2 side by side: twice the backup's data (from its
  // manifest), which the export's figure bounds; on the host, the staged image, and the disk's
  // copy of it less what the old disk (deleted first) held.
  const [restorePool, restoreTmp] = heldOnBoth(await roomHeldBy('backup_restore'));
  const data = restoreTmp / 2;
  assert.ok(
    data >= 24 * 2 ** 20 && data <= exportTmp,
    `restore held ${restoreTmp} bytes here; the export ${exportTmp}`,
  );
  assert.equal(restorePool, data + Math.max(0, data - allocationBefore));
  assert.equal((await guestOk(vm, 'sha256sum /data/a')).split(' ')[0], markerA, 'marker A is back');
  const noB = await guest(vm, 'ls /data/b');
  assert.notEqual(noB.code, 0, `/data/b is not in backup 1 (${noB.out})`);
  // Restore backup 2 (its chain: backup 1, then its changes): /data/b is back, as written.
  const restoreTwoMs = await restore(two.b.backup_id);
  assert.equal((await guestOk(vm, 'sha256sum /data/b')).split(' ')[0], markerB, 'marker B is back');
  assert.equal((await guestOk(vm, 'sha256sum /data/a')).split(' ')[0], markerA);
  const restores =
    `restore of backup 1: ${restoreOneMs} ms, of backup 2: ${restoreTwoMs} ms (request to running, agent up); ` +
    `room held: backup 1's export ${exportPool} bytes in the pool and here, its restore ${restorePool} in the pool and ${restoreTmp} here`;
  t.diagnostic(restores);
  console.log(restores);

  for (const b of [one.b, two.b]) {
    const v = await ops('POST', `backups/${b.backup_id}/verify`);
    assert.equal(v.ok, true, JSON.stringify(v));
    assert.ok(v.segments > 0);
    assert.deepEqual(v.bad, []);
  }

  await api.ok('POST', `service/${id}/terminate`);
  await api.settled(id, 'terminated', deadline(), 500);
  const stored = join(dataDir, 'backups', id);
  assert.deepEqual(existsSync(stored) ? readdirSync(stored) : [], [], 'nothing left in the backup store');
  assert.deepEqual(await api.ok('GET', `service/${id}/backups`), []);
  const all = execFileSync('virsh', ['-c', uri, 'list', '--all', '--name'], { encoding: 'utf8' });
  assert.ok(!all.includes(domain), 'no domain left');
  assert.deepEqual(
    poolVolumes(uri).filter(
      (n) =>
        n.startsWith(id) ||
        n === `export-${one.b.backup_id}.qcow2` ||
        n === `export-${two.b.backup_id}.qcow2`,
    ),
    [],
    'no disk, seed, console or export volume left',
  );
});
