/**
 * The SDK drives a service's whole life against a real server over loopback (the worker and
 * the simulated hypervisor at speed 0), on each store: what a reseller's code would do.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type VrpClient, VrpError } from '../../client/src/index.ts';
import { sshKeyFingerprint } from '../../src/domain/ssh-keys.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { sshKeyPair } from '../helpers/ssh-key-pair.ts';
import { testStores } from '../helpers/stores.ts';
import { startReceiver } from '../helpers/webhooks.ts';
import { product, sdkClient, smallOrder } from './sdk.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

for (const store of testStores()) {
  describe(`the SDK drives the whole lifecycle (${store})`, () => {
    let t: TestApp;
    let vrp: VrpClient;

    before(async () => {
      t = await createTestApp({ VRP_WEBHOOK_ALLOW_PRIVATE: '1' }, { worker: true, store });
      vrp = await sdkClient(t);
    });
    after(() => t.close());

    test('connection, version, catalogue and usage', async () => {
      await vrp.testConnection();
      assert.deepEqual(await vrp.version(), { version: '2.0.0' });
      const products = await vrp.products();
      const starter = products.find((p) => p.id === product.id);
      assert.ok(starter, JSON.stringify(products));
      assert.deepEqual(
        starter.os_templates.map((o) => o.template_id).sort(),
        [...product.os_templates].sort(),
      );
      const { default_plans: plans } = await vrp.plans(product.id);
      assert.deepEqual(plans.map((p) => p.name).sort(), product.plans.map((p) => p.name).sort());
      const usage = await vrp.usage();
      assert.equal(usage.quota.services, null);
      assert.equal(typeof usage.use.cpu, 'number');
    });

    test('order, create, stop/start/restart, upgrade, password, backups, schedules, suspend, terminate', async () => {
      // An order sent twice with one key is one service.
      const [ordered] = await vrp.createOrder(smallOrder('life.example.com'), {
        idempotencyKey: `life-${store}`,
      });
      const id = ordered!.service_id;
      assert.match(id, UUID);
      const [again] = await vrp.createOrder(smallOrder('life.example.com'), {
        idempotencyKey: `life-${store}`,
      });
      assert.equal(again!.service_id, id);
      assert.equal((await vrp.details(id)).status, 'pending');

      const created = await vrp.create(id);
      assert.match(created.jobId!, UUID);
      const running = await vrp.waitForStatus(id, 'running', { timeoutMs: 20_000, pollMs: 20 });
      assert.equal(running.status, 'running');
      assert.equal(running.job, null);
      assert.ok(running.allowed_actions.includes('stop'));
      const details = await vrp.details(id);
      assert.equal(details.username, 'root');
      assert.notEqual(details.ip, '');

      await vrp.stop(id);
      assert.equal((await vrp.waitForStatus(id, 'stopped', { pollMs: 20 })).status, 'stopped');
      // Stopping a stopped server is safe to retry: no job, and the server says why.
      const noop = await vrp.stop(id);
      assert.equal(noop.jobId, null);
      assert.notEqual(noop.message, '');
      await vrp.start(id);
      await vrp.waitForStatus(id, 'running', { pollMs: 20 });
      await vrp.restart(id);
      await vrp.waitForStatus(id, 'running', { pollMs: 20 });

      const bigger = { cpu: 2, ram: 2, hdd: 40, ip: 2, backup: 20 };
      await vrp.upgrade(id, bigger);
      await vrp.waitForStatus(id, 'running', { pollMs: 20 });
      const upgraded = await vrp.details(id);
      assert.deepEqual(
        {
          cpu: upgraded.cpu,
          ram: upgraded.ram,
          hdd: upgraded.hdd,
          ip: upgraded.ip_count,
          backup: upgraded.backup,
        },
        bigger,
      );
      assert.equal(upgraded.ips.length, 2);

      await vrp.resetPassword(id, 'N3w-passw0rd!');
      await vrp.waitForStatus(id, 'running', { pollMs: 20 });
      assert.equal((await vrp.details(id)).password, 'N3w-passw0rd!');

      const backupJob = await vrp.createBackup(id);
      assert.match(backupJob.jobId!, UUID);
      await vrp.waitForStatus(id, 'running', { pollMs: 20 });
      const [backup] = await vrp.backups(id);
      assert.equal(backup?.status, 'available');
      assert.equal(backup.kind, 'manual');
      await vrp.restoreBackup(id, backup.backup_id);
      await vrp.waitForStatus(id, 'running', { pollMs: 20 });
      await vrp.deleteBackup(id, backup.backup_id);
      await vrp.waitForStatus(id, 'running', { pollMs: 20 });
      assert.deepEqual(await vrp.backups(id), []);

      const schedule = await vrp.createBackupSchedule(id, { time: '03:30', days: ['mon', 'thu'] });
      assert.equal(schedule.jobId, null, 'schedules take effect at once, without a job');
      const [made] = await vrp.backupSchedules(id);
      assert.equal(made?.BsTime, '03:30');
      assert.equal(made.BSDays, 'mon,thu');
      await vrp.deleteBackupSchedule(id, made.backup_schedule_id);
      assert.deepEqual(await vrp.backupSchedules(id), []);

      await vrp.suspend(id, 'invoice 42 unpaid');
      await vrp.waitForStatus(id, 'suspended', { pollMs: 20 });
      assert.equal((await vrp.details(id)).suspend_reason, 'invoice 42 unpaid');
      await vrp.unsuspend(id);
      assert.equal((await vrp.waitForStatus(id, 'running', { pollMs: 20 })).status, 'running');

      await vrp.terminate(id);
      const terminated = await vrp.waitForStatus(id, 'terminated', { pollMs: 20 });
      assert.deepEqual(terminated.allowed_actions, []);

      const jobs = await vrp.jobs(id);
      assert.ok(
        jobs.every((j) => j.status === 'succeeded'),
        JSON.stringify(jobs),
      );
      // Newest first.
      assert.deepEqual(jobs.map((j) => j.action).reverse(), [
        'create',
        'stop',
        'start',
        'restart',
        'upgrade',
        'reset_password',
        'backup_create',
        'backup_restore',
        'backup_delete',
        'suspend',
        'unsuspend',
        'terminate',
      ]);
      assert.equal((await vrp.jobs(id, { limit: 2 })).length, 2);

      // The feed told every step, oldest first, and pages with after and limit.
      const events = await vrp.events({ limit: 1000 });
      const mine = events.filter((e) => e.data.service_id === id);
      const statuses = mine.flatMap((e) => (e.type === 'service.status_changed' ? [e.data.to] : []));
      assert.deepEqual(statuses.slice(0, 3), ['provisioning', 'running', 'stopping']);
      assert.equal(statuses.at(-1), 'terminated');
      const [first, second] = events;
      assert.deepEqual(await vrp.events({ after: first!.event_id, limit: 1 }), [second]);
    });

    test('reinstall: another template, a password and keys; their fingerprints in details; a bad key is a VrpError', async () => {
      const key = sshKeyPair('ed25519', { comment: 'sdk' }).public.trim();
      const [ordered] = await vrp.createOrder({ ...smallOrder('reinstall-sdk.example.com'), ssh_keys: [] });
      const id = ordered!.service_id;
      await vrp.create(id);
      await vrp.waitForStatus(id, 'running', { pollMs: 20 });
      const template = product.os_templates[1]!;
      const accepted = await vrp.reinstall(id, {
        templateId: template,
        password: 'Sdk-Reinstall-1',
        sshKeys: [key],
      });
      assert.match(accepted.jobId!, UUID);
      await vrp.waitForStatus(id, 'running', { pollMs: 20 });
      const details = await vrp.details(id);
      assert.deepEqual(
        [details.template_id, details.password, details.ssh_key_fingerprints],
        [template, 'Sdk-Reinstall-1', [sshKeyFingerprint(key)]],
      );
      // Without a password or keys: a generated password, the keys kept.
      await vrp.reinstall(id, { templateId: template });
      await vrp.waitForStatus(id, 'running', { pollMs: 20 });
      const again = await vrp.details(id);
      assert.notEqual(again.password, 'Sdk-Reinstall-1');
      assert.deepEqual(again.ssh_key_fingerprints, [sshKeyFingerprint(key)]);
      await assert.rejects(
        vrp.reinstall(id, { templateId: template, sshKeys: ['ssh-rsa nope'] }),
        (e: unknown) => e instanceof VrpError && e.status === 400 && e.errorCode === 'invalid_ssh_key',
      );
    });

    test('rescue answers the login and the job; unrescue brings the own system back', async () => {
      const [ordered] = await vrp.createOrder(smallOrder('rescue.example.com'));
      const id = ordered!.service_id;
      await vrp.create(id);
      await vrp.waitForStatus(id, 'running', { timeoutMs: 20_000, pollMs: 20 });
      const login = await vrp.rescue(id);
      assert.equal(login.username, 'root');
      assert.equal(login.password.length, 20);
      assert.match(login.jobId!, UUID);
      await vrp.waitForStatus(id, 'rescue', { timeoutMs: 20_000, pollMs: 20 });
      assert.equal(typeof (await vrp.details(id)).rescue_until, 'string');
      await assert.rejects(vrp.rescue(id), (e: any) => e.status === 400 && e.errorCode === 'invalid_state');
      const left = await vrp.unrescue(id);
      assert.match(left.jobId!, UUID);
      await vrp.waitForStatus(id, 'running', { timeoutMs: 20_000, pollMs: 20 });
      assert.equal((await vrp.details(id)).rescue_until, null);
    });

    test('webhooks: register, receive a signed delivery that standardwebhooks verifies, list, delete', async () => {
      const receiver = await startReceiver();
      try {
        const created = await vrp.createWebhook({ url: receiver.url, events: ['job.finished'] });
        assert.match(created.secret, /^whsec_/);
        const listed = await vrp.webhooks();
        assert.deepEqual(
          listed.map((w) => ({ id: w.webhook_id, url: w.url, events: w.events })),
          [{ id: created.webhook_id, url: receiver.url, events: ['job.finished'] }],
        );
        assert.ok(!('secret' in listed[0]!));

        const [ordered] = await vrp.createOrder(smallOrder('hooked.example.com'));
        const { jobId } = await vrp.create(ordered!.service_id);
        const [delivery] = await receiver.waitFor(1);
        const message = delivery!.verified(created.secret);
        assert.equal(message.type, 'job.finished');
        assert.deepEqual(
          { job_id: message.data.job_id, service_id: message.data.service_id, status: message.data.status },
          { job_id: jobId, service_id: ordered!.service_id, status: 'succeeded' },
        );

        await vrp.deleteWebhook(created.webhook_id);
        assert.deepEqual(await vrp.webhooks(), []);
      } finally {
        await receiver.close();
      }
    });
  });
}
