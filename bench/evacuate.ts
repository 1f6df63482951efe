/**
 * `node bench/evacuate.ts`: migration and evacuation on the simulated hypervisor at speed 1 (the
 * step timings of src/drivers/simulated/timings.ts), in one process on a fresh SQLite store: one
 * migration of a running service (1 vCPU, 1 GB RAM) timed from queueing to its job's end, then
 * the evacuation of a host with 10 such services at VRP_EVACUATE_CONCURRENCY=2, timed from the
 * host's `evacuating` to its `draining`. Target: the evacuation within 1.5 x one migration x 10 / 2
 * (the moves run two at a time and the next starts as soon as one ends). Writes its section of
 * bench/RESULTS.md (between `<!-- evacuation -->` markers). Not part of `npm run bench`: about 30 s
 * of waiting on simulated timers.
 */

import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config.ts';
import { createDriver } from '../src/drivers/create-driver.ts';
import { startBackground } from '../src/jobs/background.ts';
import { requestMigration } from '../src/jobs/migration-queue.ts';
import { createTestApp, orderRunning, testEnv } from '../test/helpers/app.ts';
import { writeSection } from './sections.ts';

const here = dirname(fileURLToPath(import.meta.url));
const SERVICES = 10;
const CONCURRENCY = 2;
const env = {
  VRP_SIM_HOSTS: 'src:64:64:1000:10,dst-1:64:64:1000:10,dst-2:64:64:1000:10',
  VRP_EVACUATE_CONCURRENCY: String(CONCURRENCY),
};

async function waitFor(what: string, check: () => Promise<boolean>): Promise<void> {
  const until = Date.now() + 300_000;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// Services are created at speed 0 (the test app's), then moved by a worker at speed 1.
const t = await createTestApp(env, { worker: true });
const db = t.ctx.store.db;
try {
  await db.updateTable('hypervisor_hosts').set({ state: 'draining' }).where('id', '!=', 'src').execute();
  const token = await t.token();
  const ids: string[] = [];
  for (let i = 0; i <= SERVICES; i++) ids.push(await orderRunning(t, token, `bench${i}.example.com`));
  await db.updateTable('hypervisor_hosts').set({ state: 'active' }).where('id', '!=', 'src').execute();
  await t.background?.stop(1000);
  const driver = await createDriver(loadConfig(testEnv(t.dataDir, { ...env, VRP_SIMULATED_SPEED: '1' })), db);
  const background = startBackground(t.ctx, driver, t.app.log, { pollMs: 20 });
  try {
    const [first, ...rest] = ids;
    if (!first) throw new Error('no service');
    let started = performance.now();
    const job = await requestMigration(db, 'simulated', first, null, undefined, t.ctx.clock.now());
    t.ctx.jobSignal.notify();
    await waitFor('the migration', async () => {
      const row = await db
        .selectFrom('jobs')
        .select('status')
        .where('id', '=', job.id)
        .executeTakeFirstOrThrow();
      if (row.status === 'failed') throw new Error('the migration failed');
      return row.status === 'succeeded';
    });
    const oneMs = performance.now() - started;

    started = performance.now();
    await db
      .updateTable('hypervisor_hosts')
      .set({ state: 'evacuating', evacuation_started_at: t.ctx.clock.now() })
      .where('id', '=', 'src')
      .execute();
    background.evacuator.wake();
    await waitFor('the evacuation', async () => {
      const h = await db
        .selectFrom('hypervisor_hosts')
        .select('state')
        .where('id', '=', 'src')
        .executeTakeFirstOrThrow();
      return h.state === 'draining';
    });
    const evacuationMs = performance.now() - started;
    const left = await db.selectFrom('services').select('id').where('host_id', '=', 'src').execute();
    if (left.length > 0 || rest.length !== SERVICES)
      throw new Error(`${left.length} services left on the host`);

    const targetMs = (1.5 * oneMs * SERVICES) / CONCURRENCY;
    const s = (ms: number) => (ms / 1000).toFixed(2);
    const holds = evacuationMs <= targetMs;
    console.log(`one live migration (1 GB RAM): ${s(oneMs)} s`);
    console.log(`evacuating ${SERVICES} services, ${CONCURRENCY} at a time: ${s(evacuationMs)} s`);
    console.log(
      `target <= 1.5 x ${s(oneMs)} x ${SERVICES} / ${CONCURRENCY} = ${s(targetMs)} s: ${holds ? 'holds' : 'MISSED'}`,
    );

    const section = [
      '<!-- evacuation -->',
      '## Migration and evacuation (simulated hypervisor, speed 1)',
      '',
      `Written by \`node bench/evacuate.ts\` on ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')}: one process, SQLite, services of 1 vCPU / 1 GB RAM / 20 GB disk, running (live moves).`,
      '',
      '| scenario | time | target | holds |',
      '|---|---:|---|---|',
      `| one migration, queued -> job succeeded | ${s(oneMs)} s | — | — |`,
      `| evacuation of ${SERVICES} services, VRP_EVACUATE_CONCURRENCY=${CONCURRENCY}, evacuating -> draining | ${s(evacuationMs)} s | <= 1.5 x one x ${SERVICES} / ${CONCURRENCY} = ${s(targetMs)} s | ${holds ? 'yes' : '**no**'} |`,
      '<!-- /evacuation -->',
    ].join('\n');
    const file = join(here, 'RESULTS.md');
    writeSection(file, 'evacuation', section);
    console.log(`wrote its section of ${file}`);
  } finally {
    await background.stop(1000);
    await driver.close();
  }
} finally {
  await t.close();
}
