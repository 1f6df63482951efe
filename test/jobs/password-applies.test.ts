/**
 * A password reset says when the new password reaches the server, over the
 * simulated hypervisor on both stores: a running guest whose agent answers has it `now`; a
 * guest without an agent, or a stopped one, at its `next_boot`. The job's `result` and the
 * service's details say which; the events feed and the logs never carry the password.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { outside } from '../../src/drivers/simulated/outside.ts';
import { call, createTestApp, orderRunning, type TestApp, waitForStatus } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

const OFF = { VRP_RECONCILE_INTERVAL: '0' };

/** Resets the password and waits for the job; returns the finished job as the API shows it. */
async function reset(t: TestApp, token: string, id: string, password: string, settled: string) {
  const res = await call(t, token, 'POST', `service/${id}/reset-password`, { password });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  await waitForStatus(t, token, id, settled);
  const jobs = (await call(t, token, 'GET', `service/${id}/jobs`)).body.data;
  assert.equal(jobs[0].action, 'reset_password');
  assert.equal(jobs[0].status, 'succeeded', JSON.stringify(jobs[0]));
  return jobs[0];
}

const details = async (t: TestApp, token: string, id: string) =>
  (await call(t, token, 'GET', `service/${id}/details`, undefined, { 'x-envelope-variant': 'B' })).body.data;

for (const store of testStores()) {
  describe(`password resets say when they apply (${store})`, () => {
    test('a running guest with an agent has it now; details and the job say so', async () => {
      let logged = '';
      const log = new Writable({
        write(chunk, _enc, done) {
          logged += String(chunk);
          done();
        },
      });
      const t = await createTestApp(OFF, { worker: true, store, log });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'agent.example.com');
        assert.equal((await details(t, token, id)).password_applies, null, 'no reset yet');
        const job = await reset(t, token, id, 'Live-pass-word-1', 'running');
        assert.deepEqual(job.result, { password_applies: 'now' });
        const d = await details(t, token, id);
        assert.equal(d.password_applies, 'now');
        assert.equal(d.password, 'Live-pass-word-1');
        // Other jobs report nothing beyond their status.
        const create = (await call(t, token, 'GET', `service/${id}/jobs`)).body.data.find(
          (j: { action: string }) => j.action === 'create',
        );
        assert.equal(create.result, null);
        const events = await call(t, token, 'GET', 'events');
        assert.equal(events.status, 200);
        assert.ok(JSON.stringify(events.body).includes(id), 'the feed tells of the service');
        assert.doesNotMatch(JSON.stringify(events.body), /Live-pass-word-1/);
        assert.ok(logged.length > 0, 'the app logged');
        assert.doesNotMatch(logged, /Live-pass-word-1/, 'the password is in no log line');
      } finally {
        await t.close();
      }
    });

    test('a guest whose agent does not answer gets it at its next boot', async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'noagent.example.com');
        assert.equal(await outside.guestAgent(t.ctx.store.db, id, false), true);
        const job = await reset(t, token, id, 'Boot-pass-word-2', 'running');
        assert.deepEqual(job.result, { password_applies: 'next_boot' });
        assert.equal((await details(t, token, id)).password_applies, 'next_boot');
        // The agent back: the next reset applies at once again.
        assert.equal(await outside.guestAgent(t.ctx.store.db, id, true), true);
        assert.deepEqual((await reset(t, token, id, 'Live-pass-word-3', 'running')).result, {
          password_applies: 'now',
        });
        assert.equal((await details(t, token, id)).password_applies, 'now');
      } finally {
        await t.close();
      }
    });

    test('a stopped server gets it at its next boot', async () => {
      const t = await createTestApp(OFF, { worker: true, store });
      try {
        const token = await t.token();
        const id = await orderRunning(t, token, 'stopped.example.com');
        assert.equal((await call(t, token, 'POST', `service/${id}/stop`)).status, 200);
        await waitForStatus(t, token, id, 'stopped');
        const job = await reset(t, token, id, 'Boot-pass-word-4', 'stopped');
        assert.deepEqual(job.result, { password_applies: 'next_boot' });
        assert.equal((await details(t, token, id)).password_applies, 'next_boot');
      } finally {
        await t.close();
      }
    });
  });
}
