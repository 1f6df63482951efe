/**
 * Issue 4: two server processes on one SQLite store, with a clock that makes slots come due
 * quickly (VRP_CLOCK_START, VRP_CLOCK_RATE): each slot produces exactly one backup.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { apiClient, fetchToken, prepareStore, smallOrder } from '../helpers/e2e.ts';
import { type ServerProcess, startServer } from '../helpers/server-process.ts';

const SLOTS = ['10:01', '10:02', '10:03', '10:04', '10:05'];

test('two processes, one store: every schedule slot makes exactly one backup', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-sched-'));
  const servers: ServerProcess[] = [];
  after(async () => {
    for (const s of servers) await s.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });
  // 20 times real time: a minute every 3 seconds, from just before 10:00 on a Monday.
  const env = {
    VRP_DATA_DIR: dataDir,
    VRP_SIMULATED_SPEED: '0',
    VRP_CLOCK_START: '2026-01-05T09:59:00Z',
    VRP_CLOCK_RATE: '20',
    VRP_SCHEDULER_INTERVAL: '100ms',
  };
  const { store, app } = await prepareStore(dataDir);
  servers.push(await startServer(env));
  const base = servers[0]!.url;
  const api = apiClient(() => base, await fetchToken(base, app));
  const [{ service_id: id }] = await api.ok(
    'POST',
    'service/create-order',
    smallOrder('sched.example.com', 100),
  );
  await api.ok('POST', `service/${id}/create`);
  for (const time of SLOTS) {
    await api.ok('POST', `service/${id}/backup-schedule/create`, { BsTime: time, BSDays: 'mon' });
  }
  servers.push(await startServer(env));

  // Wait until every slot of the day has been handled (about 20 s of real time).
  const until = Date.now() + 60_000;
  for (;;) {
    const slots = await store.db
      .selectFrom('schedule_slots')
      .select(['schedule_id', 'slot_at', 'outcome'])
      .execute();
    if (slots.length >= SLOTS.length) break;
    assert.ok(Date.now() < until, `only ${slots.length} slots handled`);
    await new Promise((r) => setTimeout(r, 200));
  }
  // Give both schedulers time to (wrongly) take a slot again.
  await new Promise((r) => setTimeout(r, 1500));
  const slots = await store.db.selectFrom('schedule_slots').select(['slot_at', 'outcome']).execute();
  assert.deepEqual(
    slots.map((s) => new Date(s.slot_at).toISOString().slice(11, 16)).sort(),
    SLOTS,
    'each slot once',
  );
  assert.ok(slots.every((s) => s.outcome === 'queued'));
  const jobs = await store.db
    .selectFrom('jobs')
    .select(['status'])
    .where('service_id', '=', id)
    .where('action', '=', 'backup_create')
    .execute();
  assert.equal(jobs.length, SLOTS.length, 'one backup job per slot');
  const deadline = Date.now() + 20_000;
  for (;;) {
    const backups = await api.ok('GET', `service/${id}/backups`);
    if (
      backups.length === SLOTS.length &&
      backups.every((b: { status: string }) => b.status === 'available')
    ) {
      assert.ok(backups.every((b: { kind: string }) => b.kind === 'scheduled'));
      break;
    }
    assert.ok(Date.now() < deadline, JSON.stringify(backups));
    await new Promise((r) => setTimeout(r, 200));
  }
  await store.close();
  for (const s of servers) assert.equal(await s.stop(), 0);
});
