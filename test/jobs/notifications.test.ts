/**
 * Notifications to the operators: batched by email (a real SMTP receiver with STARTTLS on
 * loopback) and by Standard Webhooks to operator webhooks (a real HTTP receiver on loopback),
 * lasting conditions notified once, SMTP failures retried without holding jobs, and the
 * OPS/webhooks and OPS/notifications routes. The flusher is driven by the test with a manual
 * clock, never by waiting for its timer.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import { ensureReseller } from '../../src/auth/applications.ts';
import { loadConfig } from '../../src/config.ts';
import { UNLIMITED } from '../../src/domain/quotas.ts';
import { sweepConditions } from '../../src/jobs/notify-conditions.ts';
import { createNotificationFlusher } from '../../src/jobs/notify-flusher.ts';
import { createSmtpMailer } from '../../src/jobs/notify-mail.ts';
import { systemAudit } from '../../src/store/repos/audit.ts';
import { queueNotification } from '../../src/store/repos/notifications.ts';
import { setQuota } from '../../src/store/repos/quotas.ts';
import { insertWebhook } from '../../src/store/repos/webhooks.ts';
import type { Database } from '../../src/store/schema.ts';
import { call, createTestApp, type TestApp } from '../helpers/app.ts';
import { WAIT_MS } from '../helpers/budget.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { createManualClock } from '../helpers/manual-clock.ts';
import { createTestOperator, operatorToken, opsCall } from '../helpers/operator.ts';
import { silentLog } from '../helpers/silent-log.ts';
import { SMTP_PASSWORD, SMTP_USER, startSmtpReceiver, throwawayCertificate } from '../helpers/smtp.ts';
import { testStores } from '../helpers/stores.ts';
import { missingTool } from '../helpers/tools.ts';
import { startReceiver } from '../helpers/webhooks.ts';

const HOUR = 3_600_000;

function smtpEnv(port: number, caFile: string): Record<string, string> {
  return {
    VRP_SMTP_URL: `smtp://${SMTP_USER}:${encodeURIComponent(SMTP_PASSWORD)}@127.0.0.1:${port}`,
    VRP_SMTP_TLS_CA: caFile,
    VRP_NOTIFY_EMAIL: 'ops@example.com, oncall@example.com',
    VRP_NOTIFY_FROM: 'vrp@provider.example',
    // The test drives the flusher; its own timer would pass next in 15 minutes.
    VRP_NOTIFY_WINDOW: '1h',
    // The manual clock moves hours on; tokens outlive it.
    VRP_TOKEN_TTL: '2592000',
  };
}

/** Orders `n` services and asks each created: with permanent faults, every create fails for good. */
async function failJobs(t: TestApp, token: string, n: number, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const order = await call(
      t,
      token,
      'POST',
      'service/create-order',
      smallOrder(`${prefix}${i}.example.com`),
    );
    assert.equal(order.status, 200, JSON.stringify(order.body));
    const id: string = order.body.data[0].service_id;
    const created = await call(t, token, 'POST', `service/${id}/create`);
    assert.equal(created.status, 200, JSON.stringify(created.body));
    ids.push(id);
  }
  return ids;
}

/** Waits until `n` notifications of `kind` are recorded (the jobs' ends write them). */
async function waitForNotifications(t: TestApp, ops: string, kind: string, n: number): Promise<any[]> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const res = await opsCall(t, ops, 'GET', `notifications?kind=${kind}&limit=500`);
    assert.equal(res.status, 200);
    if (res.body.data.length >= n) return res.body.data;
    if (Date.now() > deadline)
      throw new Error(`waited for ${n} ${kind} notifications, got ${res.body.data.length}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The first simulated host, by name. */
function firstHost(db: Kysely<Database>) {
  return db.selectFrom('hypervisor_hosts').select(['id', 'cpu']).orderBy('name').executeTakeFirstOrThrow();
}

/** Marks every CPU of the host allocated (more than 90 %: the host is full). */
async function fillCpu(db: Kysely<Database>, host: { readonly id: string; readonly cpu: number }) {
  await db.updateTable('hypervisor_hosts').set({ used_cpu: host.cpu }).where('id', '=', host.id).execute();
}

/**
 * The store as a process whose first read of the hosts is slow sees it: the read runs, and its
 * rows come back only once `release()` is called (`held` settles when it has run).
 */
function holdingHostReads(db: Kysely<Database>) {
  let release = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let ran = () => {};
  const held = new Promise<void>((resolve) => {
    ran = resolve;
  });
  const hostReads = new WeakSet<object>();
  let holding = true;
  const slow = db.withPlugin({
    transformQuery({ node, queryId }) {
      if (holding && node.kind === 'SelectQueryNode' && JSON.stringify(node).includes('"hypervisor_hosts"'))
        hostReads.add(queryId);
      return node;
    },
    async transformResult({ queryId, result }) {
      if (hostReads.has(queryId)) {
        holding = false;
        ran();
        await gate;
      }
      return result;
    },
  });
  return { db: slow, held, release: () => release() };
}

for (const store of testStores()) {
  describe(`notifications (${store})`, { skip: missingTool('openssl') }, () => {
    test(`100 jobs failing in one window make one email and one webhook message naming them (${store})`, async () => {
      const smtp = await startSmtpReceiver();
      const hookReceiver = await startReceiver();
      const clock = createManualClock();
      const t = await createTestApp(
        { ...smtpEnv(smtp.port, smtp.caFile), VRP_SIM_FAULTS: 'permanent=1', VRP_WEBHOOK_ALLOW_PRIVATE: '1' },
        { worker: true, store, clock },
      );
      try {
        const flusher = t.background?.notifications;
        assert.ok(flusher);
        const ops = await operatorToken(t);
        const created = await opsCall(t, ops, 'POST', 'webhooks', { url: hookReceiver.url });
        assert.equal(created.status, 200, JSON.stringify(created.body));
        const secret: string = created.body.data.secret;
        assert.match(secret, /^whsec_/);

        const token = await t.token();
        const services = await failJobs(t, token, 100, 'fail');
        const failed = await waitForNotifications(t, ops, 'job.failed', 100);
        assert.equal(failed.length, 100);

        const first = await flusher.pass();
        assert.deepEqual(first.failed, []);
        const [mail] = await smtp.waitFor(1);
        const [message] = await hookReceiver.waitFor(1);
        assert.ok(mail && message);
        // One email, over STARTTLS, authenticated, to both recipients, naming every job.
        assert.equal(mail.secure, true);
        assert.equal(mail.user, SMTP_USER);
        assert.equal(mail.from, 'vrp@provider.example');
        assert.deepEqual([...mail.to].sort(), ['oncall@example.com', 'ops@example.com']);
        assert.match(mail.subject, /jobs that failed after their last attempt: 100/);
        assert.match(mail.text, /Jobs that failed after their last attempt \(100\):/);
        for (const n of failed)
          assert.ok(mail.text.includes(`job ${n.subject}`), `the email names job ${n.subject}`);
        for (const [i] of services.entries()) assert.ok(mail.text.includes(`fail${i}.example.com`));
        // One webhook message, signed with the webhook's secret (Standard Webhooks).
        assert.ok(message.headers['webhook-id']);
        assert.match(String(message.headers['webhook-timestamp']), /^\d+$/);
        assert.match(String(message.headers['webhook-signature']), /^v1,/);
        const body = message.verified(secret);
        assert.equal(body.type, 'operator.notifications');
        assert.deepEqual(body.data.counts, { 'job.failed': 100 });
        assert.equal(body.data.notifications.length, 100);
        assert.throws(() => message.verified(`whsec_${Buffer.alloc(32).toString('base64')}`));

        // Within the window: one more failure waits for the next window, and nothing more goes out.
        await failJobs(t, token, 1, 'late');
        await waitForNotifications(t, ops, 'job.failed', 101);
        await flusher.pass();
        await flusher.pass();
        assert.equal(smtp.mails.length, 1);
        assert.equal(hookReceiver.received.length, 1);
        clock.advance(HOUR);
        await flusher.pass();
        const mails = await smtp.waitFor(2);
        await hookReceiver.waitFor(2);
        assert.match(mails[1]?.subject ?? '', /jobs that failed after their last attempt: 1$/);
        assert.ok(mails[1]?.text.includes('late0.example.com'));
        const listed = await opsCall(t, ops, 'GET', 'notifications?limit=1');
        assert.equal(listed.body.data.length, 1);
        assert.equal(listed.body.data[0].kind, 'job.failed');
        assert.equal(listed.body.data[0].batch, 2);
        const hooks = await opsCall(t, ops, 'GET', 'webhooks');
        assert.equal(hooks.body.data.length, 1);
        assert.equal(hooks.body.data[0].secret, undefined);
        assert.equal(hooks.body.data[0].failed_attempts, 0);
        assert.ok(hooks.body.data[0].last_sent_at);
      } finally {
        await t.close();
        await smtp.close();
        await hookReceiver.close();
      }
    });

    test(`an SMTP server down holds no job, logs no password, and gets the message once it is up (${store})`, async () => {
      const port = await freePort();
      const cert = throwawayCertificate();
      const clock = createManualClock();
      const log = new PassThrough();
      let logged = '';
      log.on('data', (c: Buffer) => {
        logged += c.toString('utf8');
      });
      const t = await createTestApp(
        { ...smtpEnv(port, cert.caFile), VRP_SIM_FAULTS: 'permanent=1' },
        { worker: true, store, clock, log },
      );
      let smtp: Awaited<ReturnType<typeof startSmtpReceiver>> | undefined;
      try {
        const flusher = t.background?.notifications;
        assert.ok(flusher);
        const ops = await operatorToken(t);
        const token = await t.token();
        const ids = await failJobs(t, token, 3, 'down');
        await waitForNotifications(t, ops, 'job.failed', 3);
        // The jobs ended as they would have with no notification at all.
        const db = t.ctx.store.db;
        const services = await db.selectFrom('services').select('status').where('id', 'in', ids).execute();
        assert.deepEqual(
          services.map((s) => s.status),
          ['failed', 'failed', 'failed'],
        );
        const jobs = await db
          .selectFrom('jobs')
          .select(['status', 'error'])
          .where('service_id', 'in', ids)
          .execute();
        assert.deepEqual(
          jobs.map((j) => j.status),
          ['failed', 'failed', 'failed'],
        );
        const down = await flusher.pass();
        assert.deepEqual(down.failed, ['email']);
        // Retried after its wait, not at every pass.
        assert.deepEqual(await flusher.pass(), { sent: [], failed: [] });
        smtp = await startSmtpReceiver({ port, cert });
        assert.deepEqual(await flusher.pass(), { sent: [], failed: [] });
        clock.advance(HOUR);
        const up = await flusher.pass();
        assert.deepEqual(up.sent, ['email']);
        const [mail] = await smtp.waitFor(1);
        assert.match(mail?.subject ?? '', /: 3$/);
        for (const i of [0, 1, 2]) assert.ok(mail?.text.includes(`down${i}.example.com`));
        assert.ok(logged.includes('notifications: message not sent'), 'the failure is logged');
        assert.ok(!logged.includes(SMTP_PASSWORD), 'the SMTP password is never logged');
        assert.ok(!logged.includes(encodeURIComponent(SMTP_PASSWORD)));
      } finally {
        await t.close();
        await smtp?.close();
      }
    });

    test(`a host full and a reseller at 90 % of a quota are notified once, and again when they end (${store})`, async () => {
      const receiver = await startReceiver();
      const clock = createManualClock();
      const t = await createTestApp(
        { VRP_WEBHOOK_ALLOW_PRIVATE: '1', VRP_NOTIFY_WINDOW: '1h', VRP_TOKEN_TTL: '2592000' },
        { worker: true, store, clock },
      );
      try {
        const flusher = t.background?.notifications;
        assert.ok(flusher);
        const ops = await operatorToken(t);
        const created = await opsCall(t, ops, 'POST', 'webhooks', { url: receiver.url });
        const secret: string = created.body.data.secret;
        const db = t.ctx.store.db;
        const host = await firstHost(db);
        await fillCpu(db, host);
        const token = await t.token({ reseller: 'near' });
        const reseller = await db
          .selectFrom('resellers')
          .select('id')
          .where('name', '=', 'near')
          .executeTakeFirstOrThrow();
        await setQuota(db, reseller.id, { ...UNLIMITED, services: 1 }, Date.now(), systemAudit('quota.set'));
        const order = await call(t, token, 'POST', 'service/create-order', smallOrder('near.example.com'));
        assert.equal(order.status, 200);

        // The conditions are looked at once per window, from the first pass on.
        clock.advance(HOUR);
        await flusher.pass();
        const [message] = await receiver.waitFor(1);
        const body = message?.verified(secret);
        assert.deepEqual(body?.data.counts, { 'host.full': 1, 'quota.near': 1 });
        // Sweeps that see the same conditions notify nothing more.
        for (let i = 0; i < 3; i++) {
          clock.advance(HOUR);
          await flusher.pass();
        }
        const all = await opsCall(t, ops, 'GET', 'notifications');
        assert.deepEqual(all.body.data.map((n: { kind: string }) => n.kind).sort(), [
          'host.full',
          'quota.near',
        ]);
        assert.equal(receiver.received.length, 1);

        // The host has room again: one notification that it ended.
        await db.updateTable('hypervisor_hosts').set({ used_cpu: 0 }).where('id', '=', host.id).execute();
        clock.advance(HOUR);
        await flusher.pass();
        const [, second] = await receiver.waitFor(2);
        assert.deepEqual(second?.verified(secret).data.counts, { 'host.full_cleared': 1 });
        clock.advance(HOUR);
        await flusher.pass();
        const after = await opsCall(t, ops, 'GET', 'notifications');
        assert.equal(after.body.data.length, 3);
      } finally {
        await t.close();
        await receiver.close();
      }
    });

    for (const before of ['was not in force', 'was in force, then ended by another'] as const)
      test(`a sweep that observed before another process started a condition does not end it (it ${before}) (${store})`, async () => {
        const clock = createManualClock();
        // The worker's driver registers the simulated hosts; its flusher's first pass is 15 min away.
        const t = await createTestApp(
          { VRP_TOKEN_TTL: '2592000', VRP_NOTIFY_WINDOW: '1h' },
          { worker: true, store, clock },
        );
        const slow = holdingHostReads(t.ctx.store.db);
        try {
          const db = t.ctx.store.db;
          const host = await firstHost(db);
          const kinds = async () =>
            (await db.selectFrom('notifications').select('kind').orderBy('created_at').execute()).map(
              (n) => n.kind,
            );
          const expected = ['host.full'];
          if (before === 'was in force, then ended by another') {
            await fillCpu(db, host);
            await sweepConditions(db, clock.now());
            await db.updateTable('hypervisor_hosts').set({ used_cpu: 0 }).where('id', '=', host.id).execute();
            expected.unshift('host.full', 'host.full_cleared');
          }
          // The slow process reads what is in force, then observes; its read of the hosts is held
          // after it ran: what it observed is older than what the others observe meanwhile.
          clock.advance(60_000);
          const slowSweep = sweepConditions(slow.db, clock.now());
          await slow.held;
          if (before === 'was in force, then ended by another') {
            await sweepConditions(db, clock.now());
            clock.advance(60_000);
          }
          // The host fills up; another process sees it and starts the condition.
          await fillCpu(db, host);
          await sweepConditions(db, clock.now());
          slow.release();
          await slowSweep;
          const inForce = await db.selectFrom('notification_conditions').select('key').execute();
          assert.deepEqual(
            inForce.map((c) => c.key),
            [`host.full:${host.id}:cpu`],
          );
          assert.deepEqual(await kinds(), expected);
        } finally {
          slow.release();
          await t.close();
        }
      });

    test(`several flushers on one store send each batch once (${store})`, async () => {
      const receiver = await startReceiver();
      const clock = createManualClock();
      const t = await createTestApp(
        { VRP_WEBHOOK_ALLOW_PRIVATE: '1', VRP_TOKEN_TTL: '2592000' },
        { store, clock },
      );
      try {
        const ops = await operatorToken(t);
        const created = await opsCall(t, ops, 'POST', 'webhooks', { url: receiver.url });
        const secret: string = created.body.data.secret;
        const flushers = [0, 1, 2].map(() =>
          createNotificationFlusher({
            store: t.ctx.store,
            clock,
            log: { info() {}, warn() {}, error() {} },
            secretBox: t.ctx.secretBox,
            lookup: t.ctx.lookup,
            allowPrivate: true,
            mailer: undefined,
            windowMs: 60_000,
          }),
        );
        for (let i = 0; i < 5; i++)
          await queueNotification(
            t.ctx.store.db,
            { kind: 'job.failed', subject: `job-${i}`, summary: `job ${i} failed`, data: {} },
            clock.now(),
          );
        const results = await Promise.all(flushers.map((f) => f.pass()));
        assert.deepEqual(
          results.flatMap((r) => r.sent),
          [created.body.data.webhook_id],
        );
        assert.equal(receiver.received.length, 1);
        assert.deepEqual(receiver.received[0]?.verified(secret).data.counts, { 'job.failed': 5 });
        // The next window: one more batch, sent once again.
        await queueNotification(
          t.ctx.store.db,
          { kind: 'job.failed', subject: 'job-5', summary: 'job 5 failed', data: {} },
          clock.now(),
        );
        await Promise.all(flushers.map((f) => f.pass()));
        assert.equal(receiver.received.length, 1);
        clock.advance(60_000);
        await Promise.all(flushers.map((f) => f.pass()));
        assert.equal(receiver.received.length, 2);
        assert.deepEqual(receiver.received[1]?.verified(secret).data.counts, { 'job.failed': 1 });
      } finally {
        await t.close();
        await receiver.close();
      }
    });

    test(`a message an SMTP server is slow to take is not sent again by another flusher meanwhile (${store})`, async () => {
      let release = () => {};
      const holdData = new Promise<void>((resolve) => {
        release = resolve;
      });
      const smtp = await startSmtpReceiver({ holdData });
      const clock = createManualClock();
      const t = await createTestApp(
        { ...smtpEnv(smtp.port, smtp.caFile), VRP_TOKEN_TTL: '2592000' },
        { store, clock },
      );
      // Each flusher's claim on a channel lasts 1 s unless renewed: the first flusher's message
      // is held by the server for longer than that.
      const { notify } = t.ctx.config;
      const smtpConfig = notify.smtp;
      assert.ok(smtpConfig);
      const mailers = [0, 1].map(() => createSmtpMailer(smtpConfig, notify.emailFrom, notify.emailTo));
      const [first, second] = mailers.map((mailer) =>
        createNotificationFlusher({
          store: t.ctx.store,
          clock,
          log: silentLog,
          secretBox: t.ctx.secretBox,
          lookup: t.ctx.lookup,
          allowPrivate: false,
          mailer,
          windowMs: 60_000,
          leaseMs: 1000,
        }),
      );
      assert.ok(first && second);
      try {
        await queueNotification(
          t.ctx.store.db,
          { kind: 'job.failed', subject: 'job-0', summary: 'job 0 failed', data: {} },
          clock.now(),
        );
        const arrived = smtp.nextData();
        const firstPass = first.pass();
        await arrived;
        // Twice the claim's length, while the server still holds the first flusher's message.
        await new Promise((resolve) => setTimeout(resolve, 2000));
        assert.deepEqual(await second.pass(), { sent: [], failed: [] });
        release();
        assert.deepEqual(await firstPass, { sent: ['email'], failed: [] });
        assert.equal(smtp.mails.length, 1);
        // Sent once: neither flusher sends it again.
        assert.deepEqual(await second.pass(), { sent: [], failed: [] });
        assert.deepEqual(await first.pass(), { sent: [], failed: [] });
        assert.equal(smtp.mails.length, 1);
      } finally {
        release();
        for (const m of mailers) m.close();
        await t.close();
        await smtp.close();
      }
    });

    test(`a reseller's webhook failing for a day is notified once, and when it delivers again (${store})`, async () => {
      const clock = createManualClock();
      const t = await createTestApp({ VRP_TOKEN_TTL: '2592000' }, { store, clock });
      try {
        const db = t.ctx.store.db;
        const ops = await operatorToken(t);
        const flusher = createNotificationFlusher({
          store: t.ctx.store,
          clock,
          log: { info() {}, warn() {}, error() {} },
          secretBox: t.ctx.secretBox,
          lookup: t.ctx.lookup,
          allowPrivate: false,
          mailer: undefined,
          windowMs: 60_000,
        });
        const reseller = await ensureReseller(db, 'hooked', Date.now());
        const hook = await insertWebhook(db, {
          id: '00000000-0000-4000-8000-0000000000aa',
          resellerId: reseller.id,
          url: 'https://receiver.example.com/hook',
          eventTypes: null,
          secretEnc: t.ctx.secretBox.seal('whsec_AAAA'),
          now: clock.now(),
        });
        const delivery = {
          webhook_id: hook.id,
          event_id: 'e1',
          status: 'pending' as const,
          attempts: 4,
          next_attempt_at: clock.now() + HOUR,
          locked_by: null,
          locked_until: null,
          last_status: 500,
          last_error: 'HTTP 500',
          created_at: clock.now() - 2 * HOUR,
          finished_at: null,
        };
        await db.insertInto('webhook_deliveries').values(delivery).execute();
        const kinds = async () =>
          (await opsCall(t, ops, 'GET', 'notifications')).body.data.map((n: { kind: string }) => n.kind);
        await flusher.pass();
        assert.deepEqual(await kinds(), [], 'failing for two hours is not a day');
        clock.advance(23 * HOUR);
        await flusher.pass();
        assert.deepEqual(await kinds(), ['webhook.failing']);
        const [failing] = (await opsCall(t, ops, 'GET', 'notifications')).body.data;
        assert.match(failing.summary, /receiver.example.com.*hooked.*HTTP 500/);
        clock.advance(HOUR);
        await flusher.pass();
        assert.deepEqual(await kinds(), ['webhook.failing']);
        await db
          .insertInto('webhook_deliveries')
          .values({
            ...delivery,
            event_id: 'e2',
            status: 'succeeded',
            last_error: null,
            finished_at: clock.now(),
          })
          .execute();
        clock.advance(HOUR);
        await flusher.pass();
        assert.deepEqual(await kinds(), ['webhook.failing_cleared', 'webhook.failing']);
      } finally {
        await t.close();
      }
    });

    test(`OPS/webhooks refuses bad receivers, unknown keys and roles that may not manage (${store})`, async () => {
      const t = await createTestApp({}, { store });
      try {
        const admin = await operatorToken(t);
        const bad = async (body: unknown, pattern: RegExp) => {
          const res = await opsCall(t, admin, 'POST', 'webhooks', body);
          assert.equal(res.status, 400, JSON.stringify(res.body));
          assert.equal(res.body.error_code, 'validation_failed');
          assert.match(res.body.message, pattern);
        };
        await bad({ url: 'ftp://example.com/hook' }, /url: must start with https:\/\/ or http:\/\//);
        await bad({ url: 'not a url' }, /url: not an absolute URL/);
        await bad({ url: 'http://10.1.2.3/hook' }, /private address/);
        await bad({ url: 'http://127.0.0.1:8080/hook' }, /loopback address/);
        await bad({ url: 'https://93.184.216.34:22/hook' }, /port 22 is not allowed/);
        await bad({ url: 'https://93.184.216.34/hook', events: ['job.failed'] }, /events/);
        await bad({}, /url/);

        for (const role of ['support', 'billing']) {
          const token = await operatorToken(t, await createTestOperator(t, { role }));
          const refused = await opsCall(t, token, 'POST', 'webhooks', { url: 'https://93.184.216.34/hook' });
          assert.equal(refused.status, 403);
          assert.equal(refused.body.error_code, 'insufficient_role');
          assert.equal((await opsCall(t, token, 'GET', 'webhooks')).status, 200);
          assert.equal((await opsCall(t, token, 'GET', 'notifications')).status, 200);
        }

        const ok = await opsCall(t, admin, 'POST', 'webhooks', { url: 'https://93.184.216.34/hook#frag' });
        assert.equal(ok.status, 200);
        assert.equal(ok.body.data.url, 'https://93.184.216.34/hook');
        const id: string = ok.body.data.webhook_id;
        const support = await operatorToken(t, await createTestOperator(t, { role: 'support' }));
        const listed = await opsCall(t, support, 'GET', 'webhooks');
        assert.equal(listed.body.data.length, 1);
        assert.equal('secret' in listed.body.data[0], false);
        const refusedDelete = await opsCall(t, support, 'POST', `webhooks/${id}/delete`);
        assert.equal(refusedDelete.status, 403);

        for (let i = 1; i < 10; i++) {
          assert.equal(
            (await opsCall(t, admin, 'POST', 'webhooks', { url: `https://93.184.216.34/h${i}` })).status,
            200,
          );
        }
        const eleventh = await opsCall(t, admin, 'POST', 'webhooks', { url: 'https://93.184.216.34/h11' });
        assert.equal(eleventh.status, 400);
        assert.equal(eleventh.body.error_code, 'webhook_limit_reached');

        const unknown = await opsCall(
          t,
          admin,
          'POST',
          'webhooks/00000000-0000-4000-8000-000000000000/delete',
        );
        assert.equal(unknown.status, 404);
        assert.equal(unknown.body.error_code, 'webhook_not_found');
        const deleted = await opsCall(t, admin, 'POST', `webhooks/${id}/delete`);
        assert.equal(deleted.status, 200);
        assert.equal((await opsCall(t, admin, 'GET', 'webhooks')).body.data.length, 9);
        const audit = await opsCall(t, admin, 'GET', 'audit?action=operator_webhook.delete');
        assert.equal(audit.status, 200);

        const badQuery = await opsCall(t, admin, 'GET', 'notifications?kinds=job.failed');
        assert.equal(badQuery.status, 400);
        assert.equal(badQuery.body.error_code, 'validation_failed');
        const badKind = await opsCall(t, admin, 'GET', 'notifications?kind=nothing');
        assert.equal(badKind.status, 400);
      } finally {
        await t.close();
      }
    });
  });
}

describe('notification settings', () => {
  test('VRP_SMTP_URL is checked without repeating its password, and needs VRP_NOTIFY_EMAIL', () => {
    assert.throws(
      () => loadConfig({ VRP_DATA_DIR: '/tmp/x', VRP_SMTP_URL: 'http://u:hunter2@mail.example.com' }),
      (err: Error) => /VRP_SMTP_URL must look like/.test(err.message) && !err.message.includes('hunter2'),
    );
    assert.throws(
      () => loadConfig({ VRP_DATA_DIR: '/tmp/x', VRP_SMTP_URL: 'smtp://u:hunter2@mail.example.com' }),
      /VRP_NOTIFY_EMAIL must be set with VRP_SMTP_URL/,
    );
    assert.throws(
      () => loadConfig({ VRP_DATA_DIR: '/tmp/x', VRP_NOTIFY_EMAIL: 'a@example.com' }),
      /VRP_SMTP_URL is not/,
    );
    assert.throws(
      () =>
        loadConfig({
          VRP_DATA_DIR: '/tmp/x',
          VRP_SMTP_URL: 'smtp://mail.example.com',
          VRP_NOTIFY_EMAIL: 'not-an-address',
        }),
      /VRP_NOTIFY_EMAIL must be comma-separated email addresses/,
    );
    assert.throws(
      () =>
        loadConfig({
          VRP_DATA_DIR: '/tmp/x',
          VRP_SMTP_URL: 'smtp://mail.example.com',
          VRP_NOTIFY_EMAIL: 'a@example.com',
          VRP_SMTP_TLS_CA: '/nonexistent/ca.pem',
        }),
      /VRP_SMTP_TLS_CA \(\/nonexistent\/ca.pem\) cannot be read/,
    );
    const c = loadConfig({
      VRP_DATA_DIR: '/tmp/x',
      VRP_SMTP_URL: 'smtp://u:p%40ss@mail.example.com',
      VRP_NOTIFY_EMAIL: 'a@example.com,b@example.com',
    });
    assert.deepEqual(c.notify.smtp, {
      host: 'mail.example.com',
      port: 587,
      implicitTls: false,
      user: 'u',
      password: 'p@ss',
      ca: undefined,
    });
    assert.deepEqual(c.notify.emailTo, ['a@example.com', 'b@example.com']);
    assert.equal(c.notify.windowMs, 60_000);
  });
});
