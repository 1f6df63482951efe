/**
 * Webhooks are delivered from a durable queue that survives restarts. A real server
 * process makes the first attempt (the receiver answers 503), is killed with SIGKILL, and a new
 * process makes the retry on schedule: same webhook-id, a signature that verifies. The new
 * process's clock starts just before the retry is due, as if it had started 5 s later.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { apiClient, fetchToken, prepareStore, smallOrder } from '../helpers/e2e.ts';
import { until } from '../helpers/job-worker.ts';
import { type ServerProcess, startServer } from '../helpers/server-process.ts';
import { createPgDatabase, testStores } from '../helpers/stores.ts';
import { startReceiver } from '../helpers/webhooks.ts';

for (const kind of testStores()) {
  test(`a delivery that failed before kill -9 is retried by the next process (${kind})`, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vrp-webhook-e2e-'));
    const pgDb = kind === 'postgres' ? await createPgDatabase() : undefined;
    const receiver = await startReceiver();
    const servers: ServerProcess[] = [];
    const { store, app } = await prepareStore(dataDir, pgDb?.url);
    after(async () => {
      for (const s of servers) await s.kill();
      await receiver.close();
      await store.close();
      await pgDb?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const env = {
      VRP_DATA_DIR: dataDir,
      ...(pgDb ? { VRP_DATABASE_URL: pgDb.url } : {}),
      VRP_SECRET_KEY: randomBytes(32).toString('hex'),
      VRP_SIMULATED_SPEED: '0',
      VRP_WEBHOOK_ALLOW_PRIVATE: '1',
    };
    receiver.answer((n) => (n === 1 ? 503 : 200));

    // Its clock runs a thousand times slower than real time: the retry, due 5 s later on it,
    // cannot come before the kill, however slow the machine.
    const first = await startServer({ ...env, VRP_CLOCK_RATE: '0.001' });
    servers.push(first);
    const api = apiClient(() => first.url, await fetchToken(first.url, app));
    const hook = await api.ok('POST', 'webhooks', { url: receiver.url, events: ['job.finished'] });
    const [{ service_id: id }] = await api.ok(
      'POST',
      'service/create-order',
      smallOrder('restart.example.com'),
    );
    await api.ok('POST', `service/${id}/create`);
    const [firstTry] = await receiver.waitFor(1);
    const delivery = () => store.db.selectFrom('webhook_deliveries').selectAll().executeTakeFirstOrThrow();
    // The failed attempt is on record, its retry due 5 s later (on the slow clock); the process
    // dies before then.
    await until(async () => (await delivery()).last_status === 503, 'the first attempt recorded');
    await first.kill('SIGKILL');
    const failed = await delivery();
    assert.equal(failed.status, 'pending');
    assert.equal(failed.attempts, 1);
    assert.equal(receiver.received.length, 1, 'killed before the retry was due');

    // The next process starts when the retry is nearly due: its clock shows a time 0.3 s before
    // it (VRP_CLOCK_START), not 5 s of waiting.
    const second = await startServer({
      ...env,
      VRP_CLOCK_START: new Date(failed.next_attempt_at - 300).toISOString(),
    });
    servers.push(second);
    const [, retried] = await receiver.waitFor(2);
    assert.equal(retried!.headers['webhook-id'], firstTry!.headers['webhook-id']);
    const message = retried!.verified(hook.secret);
    assert.equal(message.type, 'job.finished');
    assert.equal(message.data.service_id, id);
    assert.equal(message.data.status, 'succeeded');
    await until(async () => (await delivery()).status === 'succeeded', 'the retry recorded');
    const done = await delivery();
    assert.equal(done.attempts, 2);
    assert.equal(done.last_status, 200);
    assert.ok(Number(done.finished_at) >= failed.next_attempt_at, 'not before it was due');
    assert.equal(await second.stop(), 0);
  });
}
