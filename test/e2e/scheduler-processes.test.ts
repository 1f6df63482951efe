/**
 * Two server processes on one SQLite store, with a clock that makes slots come due
 * quickly (VRP_CLOCK_START, VRP_CLOCK_RATE): each slot produces exactly one backup.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { waitUntil } from '../helpers/budget.ts';
import { apiClient, fetchToken, prepareStore, smallOrder } from '../helpers/e2e.ts';
import { type ServerProcess, startServers } from '../helpers/server-process.ts';

const SLOTS = 5;
const MINUTE = 60_000;
// The servers' clocks start at this time (a Monday) and run 120 times faster than real time:
// a minute every half second, so that five slots a minute apart take two seconds.
const CLOCK_START = Date.parse('2026-01-05T09:59:00Z');
const CLOCK_RATE = 120;

test('two processes, one store: every schedule slot makes exactly one backup', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-sched-'));
  const servers: ServerProcess[] = [];
  after(async () => {
    for (const s of servers) await s.kill();
    rmSync(dataDir, { recursive: true, force: true });
  });
  const env = {
    VRP_DATA_DIR: dataDir,
    VRP_SIMULATED_SPEED: '0',
    VRP_CLOCK_START: new Date(CLOCK_START).toISOString(),
    VRP_CLOCK_RATE: String(CLOCK_RATE),
    VRP_SCHEDULER_INTERVAL: '100ms',
  };
  const { store, app } = await prepareStore(dataDir);
  // Both at once: their clocks start within the time one takes to start, so both schedulers
  // reach each slot at nearly the same moment and race for it.
  await startServers([env, env], servers);
  const base = servers[0]!.url;
  const api = apiClient(() => base, await fetchToken(base, app));
  const [{ service_id: id }] = await api.ok(
    'POST',
    'service/create-order',
    smallOrder('sched.example.com', 100),
  );
  const sent = Date.now();
  await api.ok('POST', `service/${id}/create`);
  // The create job was stamped by the first server's clock after `sent`: from it, the latest
  // time that clock can show at any moment, whatever the server took to start.
  const created = await store.db
    .selectFrom('jobs')
    .select('created_at')
    .where('service_id', '=', id)
    .where('action', '=', 'create')
    .executeTakeFirstOrThrow();
  const latestServerNow = () => Number(created.created_at) + (Date.now() - sent) * CLOCK_RATE;
  // Four times what that request took, and at least a second, of real time: on a busy machine
  // a schedule still exists before its slot comes due.
  const lead = Math.max(1000, 4 * (Date.now() - sent)) * CLOCK_RATE;

  // Each slot is a whole minute at least `lead` after that (the schedule's next run, in the
  // store, is checked to be that slot).
  const wanted: string[] = [];
  let slot = 0;
  for (let i = 0; i < SLOTS; i++) {
    slot = Math.max(slot + MINUTE, Math.ceil((latestServerNow() + lead) / MINUTE) * MINUTE);
    const time = new Date(slot).toISOString().slice(11, 16);
    await api.ok('POST', `service/${id}/backup-schedule/create`, { BsTime: time, BSDays: 'mon' });
    const schedule = await store.db
      .selectFrom('backup_schedules')
      .select('next_run_at')
      .where('service_id', '=', id)
      .where('bs_time', '=', time)
      .executeTakeFirstOrThrow();
    assert.equal(new Date(schedule.next_run_at).toISOString(), new Date(slot).toISOString(), time);
    wanted.push(time);
  }

  // Wait until every slot has been handled (about 3 s of real time), and its backup made.
  await waitUntil(
    'every slot to be handled',
    async () => (await store.db.selectFrom('schedule_slots').select('slot_at').execute()).length >= SLOTS,
    { everyMs: 200 },
  );
  let backups: { status: string; kind: string }[] = [];
  await waitUntil(
    'a backup of each slot',
    async () => {
      backups = await api.ok('GET', `service/${id}/backups`);
      return backups.length >= SLOTS && backups.every((b) => b.status === 'available');
    },
    { everyMs: 200 },
  ).catch((err: Error) => assert.fail(`${err.message}: ${JSON.stringify(backups)}`));
  assert.equal(backups.length, SLOTS);
  assert.ok(backups.every((b) => b.kind === 'scheduled'));
  // Both processes stopped: a scheduler that would (wrongly) take a slot again has had every
  // chance to, and has ended its pass (a stop waits for it).
  for (const s of servers) assert.equal(await s.stop(), 0);
  const slots = await store.db.selectFrom('schedule_slots').select(['slot_at', 'outcome']).execute();
  assert.deepEqual(
    slots.map((s) => new Date(s.slot_at).toISOString().slice(11, 16)).sort(),
    wanted,
    'each slot once',
  );
  assert.ok(slots.every((s) => s.outcome === 'queued'));
  const jobs = await store.db
    .selectFrom('jobs')
    .select(['status'])
    .where('service_id', '=', id)
    .where('action', '=', 'backup_create')
    .execute();
  assert.equal(jobs.length, SLOTS, 'one backup job per slot');
  await store.close();
});
