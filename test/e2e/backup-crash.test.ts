/**
 * kill -9 of the server process in the middle of backups (simulated hypervisor at speed 1: an
 * export or an import takes about 2 s), with the backup store on the local disk:
 * - a backup job killed while it runs is run again after a restart: the backup ends `available`,
 *   verify says it is whole, the store holds exactly its data object and its manifest, and
 *   (below) a restore brings its point back;
 * - the next backup after a restart continues the chain from a backup taken before the kill;
 * - a restore killed while it runs is run again: the disk is the backup's point, whole.
 * The tests run in order on one service: each goes on from the state the one before left.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RegisteredApplication } from '../../src/auth/applications.ts';
import { createOperator } from '../../src/auth/operators.ts';
import { OPS } from '../../src/http/base-path.ts';
import type { Store } from '../../src/store/database.ts';
import { WAIT_MS, waitUntil } from '../helpers/budget.ts';
import { apiClient, fetchToken, prepareStore, smallOrder } from '../helpers/e2e.ts';
import { type ServerProcess, startServer } from '../helpers/server-process.ts';

describe('kill -9 during backups', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-backup-crash-'));
  const env = {
    VRP_DATA_DIR: dataDir,
    VRP_SIM_HOSTS: 'h:8:16:500:50',
    VRP_SIMULATED_SPEED: '1',
    VRP_JOB_LEASE: '2s',
  };
  const servers: ServerProcess[] = [];
  let store: Store;
  let app: RegisteredApplication;
  let operator: Awaited<ReturnType<typeof createOperator>>;
  let server: ServerProcess;
  let api: ReturnType<typeof apiClient>;
  let opsToken: string;
  let id: string;
  /** The first backup (taken across a kill) and the disk's point it holds. */
  let first: { id: string; generation: number; usedDiskGb: number };

  /** A new server process on the same store (the one before is dead), with fresh tokens. */
  async function restart() {
    server = await startServer(env);
    servers.push(server);
    api = apiClient(() => server.url, await fetchToken(server.url, app));
    opsToken = await fetchToken(server.url, operator);
  }
  /** kill -9 of the server, stopped first so that it does nothing more between the two signals. */
  async function crash() {
    server.child.kill('SIGSTOP');
    await server.kill('SIGKILL');
  }
  async function ops(method: 'GET' | 'POST', path: string): Promise<any> {
    const res = await fetch(`${server.url}${OPS}/${path}`, {
      method,
      headers: { authorization: `Bearer ${opsToken}` },
    });
    const body = (await res.json()) as any;
    assert.equal(res.status, 200, `${method} ${path}: ${JSON.stringify(body)}`);
    return body.data;
  }
  const vm = () => store.db.selectFrom('sim_vms').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const job = (jobId: string) =>
    store.db.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirstOrThrow();
  /** The service's newest job of `action`. */
  const newestJob = (action: 'backup_create' | 'backup_restore') =>
    store.db
      .selectFrom('jobs')
      .selectAll()
      .where('service_id', '=', id)
      .where('action', '=', action)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow();
  const waitFor = (what: string, until: () => Promise<boolean>) =>
    waitUntil(what, async () => ((await until()) ? true : undefined), { everyMs: 20 }).catch((err: Error) =>
      assert.fail(`${err.message}:\n${server.output()}`),
    );
  /** A write to the disk: a password reset (1 s at speed 1, a reboot would take 5 s). */
  let writes = 0;
  async function write() {
    await api.ok('POST', `service/${id}/reset-password`, { password: `Crash-pass-word-${++writes}` });
    await api.settled(id, 'running', Date.now() + WAIT_MS);
  }
  /** The operator's view of the service's backups, newest first. */
  const backups = async (): Promise<any[]> => (await ops('GET', `services/${id}`)).backups;
  /**
   * The files in the backup store's directory of a backup (part files included), the data
   * object's random suffix left out: a whole backup is `['data', 'manifest']`.
   */
  const objects = (backupId: string) =>
    readdirSync(join(dataDir, 'backups', id, backupId))
      .map((name) => name.replace(/^data\.[0-9a-f]+$/, 'data'))
      .sort();

  before(async () => {
    ({ store, app } = await prepareStore(dataDir));
    operator = await createOperator(store.db, { name: 'crash-ops' }, Date.now());
    await restart();
    const [created] = await api.ok('POST', 'service/create-order', smallOrder('backed.example.com'));
    id = created.service_id;
    await api.ok('POST', `service/${id}/create`);
    await api.settled(id, 'running', Date.now() + WAIT_MS);
    await write();
  });
  after(async () => {
    for (const s of servers) await s.kill();
    await store?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  test('a backup job killed while it runs is run again: available, verified, one data object and one manifest', async () => {
    const at = await vm();
    await api.ok('POST', `service/${id}/backup/create`);
    const backupJob = await newestJob('backup_create');
    await waitFor('the backup job to run', async () => (await job(backupJob.id)).status === 'running');
    await crash();
    const backupId = (JSON.parse(backupJob.params) as { backup_id: string }).backup_id;

    await restart();
    await waitFor('the backup job to succeed after the restart', async () => {
      const j = await job(backupJob.id);
      assert.notEqual(j.status, 'failed', j.error ?? '');
      return j.status === 'succeeded';
    });
    assert.equal((await job(backupJob.id)).attempts, 2, 'run again once, after the crash');
    await api.settled(id, 'running', Date.now() + WAIT_MS);
    const [b] = await backups();
    assert.equal(b.backup_id, backupId);
    assert.equal(b.status, 'available');
    assert.equal(b.format, 'archive');
    assert.equal(b.parent_id, null, 'the first backup is full');
    const verified = await ops('POST', `backups/${backupId}/verify`);
    assert.equal(verified.ok, true, JSON.stringify(verified));
    assert.ok(verified.segments > 0);
    assert.deepEqual(
      objects(backupId),
      ['data', 'manifest'],
      'one data object and one manifest, nothing else',
    );
    const point = await vm();
    assert.equal(point.content_generation, at.content_generation, 'the backup is of the disk as it was');
    first = { id: backupId, generation: point.content_generation, usedDiskGb: point.used_disk_gb };
  });

  test('the next backup after a kill continues the chain from a backup taken before it', async () => {
    assert.ok(first, 'needs the backup of the test before');
    await crash();
    await restart();
    await write();
    await api.ok('POST', `service/${id}/backup/create`);
    await api.settled(id, 'running', Date.now() + WAIT_MS);
    const [next, parent] = await backups();
    assert.equal(parent.backup_id, first.id);
    assert.equal(next.status, 'available');
    assert.equal(
      next.parent_id,
      first.id,
      'incremental: the checkpoint of the backup before the kill is its base',
    );
    assert.ok(next.stored_bytes < parent.stored_bytes, 'it carries only the change');
    assert.deepEqual(objects(next.backup_id), ['data', 'manifest']);
  });

  test('a restore killed while it runs is run again: the disk is the backup point, whole', async () => {
    assert.ok(first, 'needs the backup of the first test');
    await write();
    assert.notEqual((await vm()).content_generation, first.generation, 'the disk differs from the backup');
    await api.ok('POST', `service/${id}/backup/restore/${first.id}`);
    const restoreJob = await newestJob('backup_restore');
    await waitFor('the restore job to run', async () => (await job(restoreJob.id)).status === 'running');
    await crash();

    await restart();
    await waitFor('the restore job to succeed after the restart', async () => {
      const j = await job(restoreJob.id);
      assert.notEqual(j.status, 'failed', j.error ?? '');
      return j.status === 'succeeded';
    });
    assert.equal((await job(restoreJob.id)).attempts, 2, 'run again once, after the crash');
    await api.settled(id, 'running', Date.now() + WAIT_MS);
    // The simulated import takes a disk only once every byte of it is the disk the backup's
    // write history makes: the counter is the backup's and the content came whole.
    const restored = await vm();
    assert.deepEqual(
      [restored.content_generation, restored.used_disk_gb, restored.power],
      [first.generation, first.usedDiskGb, 'running'],
      "the backup's point, with the power state it had",
    );
    assert.equal((await api.ok('GET', `service/${id}/details`)).disk_revision, first.generation);
    assert.equal((await backups()).find((b) => b.backup_id === first.id).status, 'available');
    // The disk was replaced: the next backup starts a new chain.
    await api.ok('POST', `service/${id}/backup/create`);
    await api.settled(id, 'running', Date.now() + WAIT_MS);
    assert.equal((await backups())[0].parent_id, null, 'the backup after a restore is full');
  });
});
