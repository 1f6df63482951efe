/**
 * Reinstall (POST .../service/{id}/reinstall) and SSH keys (create-order's and reinstall's
 * `ssh_keys`, details' `ssh_key_fingerprints`), through both doors, on the simulated hypervisor.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sshKeyFingerprint } from '../../src/domain/ssh-keys.ts';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { listAuditEntries } from '../../src/store/repos/audit.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../helpers/app.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { operatorToken, opsCall } from '../helpers/operator.ts';
import { sshKeyPair } from '../helpers/ssh-key-pair.ts';
import { testStores } from '../helpers/stores.ts';

const [debian, ubuntu, rocky, alma] = DEMO_CATALOG.os_templates.map((o) => o.id);
const edKey = (comment = 'user@laptop') => sshKeyPair('ed25519', { comment }).public.trim();
const rsaKey = (bits: number) => sshKeyPair('rsa', { bits, comment: `rsa-${bits}` }).public.trim();

for (const store of testStores()) {
  describe(`reinstall and SSH keys (${store})`, () => {
    let t: TestApp;
    let token: string;
    let tokenA: string;
    let ops: string;

    before(async () => {
      t = await createTestApp({}, { worker: true, store });
      token = await t.token({ reseller: 'acme' });
      tokenA = await t.token({ reseller: 'acme', variant: 'A' });
      ops = await operatorToken(t);
    });
    after(() => t.close());

    async function ordered(domain: string, extra: Record<string, unknown> = {}): Promise<string> {
      const res = await call(t, token, 'POST', 'service/create-order', { ...smallOrder(domain), ...extra });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.data[0].service_id;
    }
    async function running(domain: string, extra: Record<string, unknown> = {}): Promise<string> {
      const id = await ordered(domain, extra);
      assert.equal((await call(t, token, 'POST', `service/${id}/create`)).status, 200);
      await waitForStatus(t, token, id, 'running');
      return id;
    }
    const details = async (id: string) => (await call(t, token, 'GET', `service/${id}/details`)).body.data;
    const services = async () => (await t.ctx.store.db.selectFrom('services').select('id').execute()).length;

    test('create-order with keys: details show their fingerprints, the job hands them to the server', async () => {
      const keys = [edKey(), rsaKey(2048)];
      const id = await running('keys.example.com', { ssh_keys: keys });
      const d = await details(id);
      assert.deepEqual(d.ssh_key_fingerprints, keys.map(sshKeyFingerprint));
      assert.match(d.ssh_key_fingerprints[0], /^SHA256:[A-Za-z0-9+/]{43}$/);
      assert.ok(!JSON.stringify(d).includes(keys[0]!.split(' ')[1]!), 'the keys themselves are not shown');
      const withoutKeys = await ordered('nokeys.example.com');
      assert.deepEqual((await details(withoutKeys)).ssh_key_fingerprints, []);
      // The operator's details show the same.
      const theirs = await opsCall(t, ops, 'GET', `services/${id}`);
      assert.deepEqual(theirs.body.data.ssh_key_fingerprints, keys.map(sshKeyFingerprint));
    });

    test('create-order with a bad key: 400 invalid_ssh_key naming it, nothing created (both variants)', async () => {
      const before = await services();
      const cases: [unknown[], RegExp][] = [
        [[edKey(), edKey(), rsaKey(1024)], /^ssh_keys\[2\]: an RSA key must have at least 2048 bits/],
        [[edKey(), 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0'], /^ssh_keys\[1\]: /],
        [Array.from({ length: 11 }, () => edKey()), /^ssh_keys: at most 10 keys, got 11/],
        [[sshKeyPair('ed25519').private], /^ssh_keys\[0\]: this is a private key/],
        // Over-long entries too, not validation_failed from the schema.
        [[`ssh-ed25519 ${'A'.repeat(16_400)}`], /^ssh_keys\[0\]: longer than 16384 characters/],
        [[edKey(), `${edKey()} ${'c'.repeat(20_000)}`], /^ssh_keys\[1\]: longer than 16384 characters/],
        [[edKey(), 'x'.repeat(500_000)], /^ssh_keys\[1\]: longer than 16384 characters/],
      ];
      for (const [keys, message] of cases) {
        const res = await call(t, token, 'POST', 'service/create-order', {
          ...smallOrder('bad.example.com'),
          ssh_keys: keys,
        });
        assert.equal(res.status, 400, JSON.stringify(res.body));
        assert.equal(res.body.error_code, 'invalid_ssh_key');
        assert.match(res.body.message, message);
      }
      const a = await call(t, tokenA, 'POST', 'service/create-order', {
        ...smallOrder('bad-a.example.com'),
        ssh_keys: ['ssh-dss AAAA'],
      });
      assert.equal(a.status, 400);
      assert.equal(a.body.success, 'false');
      assert.equal(a.body.error_code, 'invalid_ssh_key');
      const wrongType = await call(t, token, 'POST', 'service/create-order', {
        ...smallOrder('bad-type.example.com'),
        ssh_keys: [42],
      });
      assert.equal(wrongType.body.error_code, 'validation_failed');
      assert.equal(await services(), before, 'nothing was created');
    });

    test('reinstall of a running server: back to running, same addresses, new password and template; backups and schedules stay', async () => {
      const key = edKey();
      const id = await running('reinstall.example.com', { ssh_keys: [key] });
      const backup = await call(t, token, 'POST', `service/${id}/backup/create`);
      assert.equal(backup.status, 200, JSON.stringify(backup.body));
      await waitForStatus(t, token, id, 'running');
      const schedule = await call(t, token, 'POST', `service/${id}/backup-schedule/create`, {
        BsTime: '03:30',
        BSDays: 'mon',
      });
      assert.equal(schedule.status, 200, JSON.stringify(schedule.body));
      await call(t, token, 'POST', `service/${id}/restart`);
      await waitForStatus(t, token, id, 'running');
      const before = await details(id);
      assert.ok(before.disk_revision > 1, 'the restart wrote to the disk');

      const res = await call(t, token, 'POST', `service/${id}/reinstall`, {
        template_id: ubuntu,
        password: 'New-Root-pass-9',
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body.data, []);
      const jobId = res.headers['x-job-id'];
      assert.ok(jobId);
      await waitForStatus(t, token, id, 'running');
      const after = await details(id);
      assert.deepEqual(after.ips, before.ips, 'the addresses stay');
      assert.equal(after.template_id, ubuntu);
      assert.equal(after.password, 'New-Root-pass-9');
      assert.equal(after.password_applies, 'now');
      assert.deepEqual(after.ssh_key_fingerprints, [sshKeyFingerprint(key)], 'no ssh_keys: the keys stay');
      assert.equal(after.disk_revision, 1, 'a fresh disk');
      const jobs = (await call(t, token, 'GET', `service/${id}/jobs`)).body.data;
      assert.deepEqual([jobs[0].job_id, jobs[0].action, jobs[0].status], [jobId, 'reinstall', 'succeeded']);
      assert.equal((await call(t, token, 'GET', `service/${id}/backups`)).body.data.length, 1);
      assert.equal((await call(t, token, 'GET', `service/${id}/backup-schedule`)).body.data.length, 1);
      // The next backup is a full one (no parent): the reinstall dropped the disk's checkpoints.
      assert.equal((await call(t, token, 'POST', `service/${id}/backup/create`)).status, 200);
      await waitForStatus(t, token, id, 'running');
      const kinds = await t.ctx.store.db
        .selectFrom('backups')
        .select(['parent_id', 'status'])
        .where('service_id', '=', id)
        .orderBy('created_at')
        .execute();
      assert.deepEqual(
        kinds.map((b) => [b.parent_id, b.status]),
        [
          [null, 'available'],
          [null, 'available'],
        ],
      );

      // Events: running -> reinstalling -> running, made by the job; the audit entry.
      const events = (await call(t, token, 'GET', 'events?limit=1000')).body.data.filter(
        (e: any) => e.data.service_id === id && e.data.job_id === jobId,
      );
      assert.deepEqual(
        events.map((e: any) => [e.type, e.data.from, e.data.to, e.data.action]),
        [
          ['service.status_changed', 'running', 'reinstalling', undefined],
          ['service.status_changed', 'reinstalling', 'running', undefined],
          ['job.finished', undefined, undefined, 'reinstall'],
        ],
      );
      const audit = await listAuditEntries(t.ctx.store.db, { serviceId: id, limit: 100 });
      const entry = audit.find((e) => e.action === 'service.reinstall');
      assert.ok(entry, 'an audit entry service.reinstall');
      assert.deepEqual([entry.outcome, entry.actor.type], ['ok', 'application']);
      const text = JSON.stringify(await t.ctx.store.db.selectFrom('jobs').selectAll().execute());
      assert.ok(!text.includes('New-Root-pass-9'), 'the password is sealed in the job');
    });

    test('the jobs list: a succeeded reinstall reports password_applies now (docs/api.md#jobs), reset_password its own, every other job null', async () => {
      const id = await running('job-results.example.com');
      const steps: [string, Record<string, unknown>, string][] = [
        ['reset-password', { password: 'Reset-pass-42' }, 'running'],
        ['reinstall', { template_id: ubuntu, password: 'Reinstall-pass-42' }, 'running'],
        ['stop', {}, 'stopped'],
        ['reinstall', { template_id: debian }, 'stopped'],
        ['rescue', {}, 'rescue'],
        ['unrescue', {}, 'running'],
      ];
      for (const [op, body, status] of steps) {
        const res = await call(t, token, 'POST', `service/${id}/${op}`, body);
        assert.equal(res.status, 200, `${op}: ${JSON.stringify(res.body)}`);
        await waitForStatus(t, token, id, status);
      }
      const jobs = (await call(t, token, 'GET', `service/${id}/jobs`)).body.data.reverse();
      assert.deepEqual(
        jobs.map((j: any) => [j.action, j.status, j.result]),
        [
          ['create', 'succeeded', null],
          ['reset_password', 'succeeded', { password_applies: 'now' }],
          ['reinstall', 'succeeded', { password_applies: 'now' }],
          ['stop', 'succeeded', null],
          ['reinstall', 'succeeded', { password_applies: 'now' }],
          ['rescue', 'succeeded', null],
          ['unrescue', 'succeeded', null],
        ],
      );
    });

    test('reinstall of a stopped server: stopped again; keys replaced, [] removes them; a generated password', async () => {
      const id = await running('stopped.example.com', { ssh_keys: [edKey()] });
      await call(t, token, 'POST', `service/${id}/stop`);
      await waitForStatus(t, token, id, 'stopped');
      const old = (await details(id)).password;
      const key = edKey('new');
      const res = await call(t, token, 'POST', `service/${id}/reinstall`, {
        template_id: rocky!.toUpperCase(),
        ssh_keys: [key],
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      await waitForStatus(t, token, id, 'stopped');
      const d = await details(id);
      assert.equal(d.template_id, rocky, 'stored in lower case');
      assert.deepEqual(d.ssh_key_fingerprints, [sshKeyFingerprint(key)]);
      assert.notEqual(d.password, old, 'a new, generated password');
      assert.equal(d.password.length, 20);

      await call(t, token, 'POST', `service/${id}/reinstall`, { template_id: debian, ssh_keys: [] });
      await waitForStatus(t, token, id, 'stopped');
      assert.deepEqual((await details(id)).ssh_key_fingerprints, []);
    });

    test('refusals: foreign or unknown template, weak password, bad keys, suspended; nothing queued', async () => {
      const id = await running('refused.example.com');
      const jobsNow = async () => (await call(t, token, 'GET', `service/${id}/jobs`)).body.data.length;
      const jobs = await jobsNow();
      // The product (VPS Starter) offers Debian, Ubuntu and Rocky, not AlmaLinux.
      const cases: [Record<string, unknown>, string, RegExp?][] = [
        [{ template_id: alma }, 'invalid_template', /not an OS template of product "VPS Starter"/],
        [{ template_id: '00000000-0000-4000-8000-000000000000' }, 'invalid_template'],
        [{ template_id: debian, password: 'short' }, 'weak_password'],
        [{ template_id: debian, password: 'alllowercaseletters' }, 'weak_password'],
        [
          { template_id: debian, password: `Aa1-${'x'.repeat(5000)}` },
          'weak_password',
          /8 to 128 characters/,
        ],
        [{ template_id: debian, ssh_keys: [rsaKey(1024)] }, 'invalid_ssh_key', /^ssh_keys\[0\]: an RSA key/],
        [
          { template_id: debian, ssh_keys: [`ssh-rsa ${'A'.repeat(16_385)}`] },
          'invalid_ssh_key',
          /^ssh_keys\[0\]: longer than 16384 characters/,
        ],
        [
          { template_id: debian, ssh_keys: [edKey(), `${edKey()} ${'c'.repeat(20_000)}`] },
          'invalid_ssh_key',
          /^ssh_keys\[1\]: longer than 16384 characters/,
        ],
        [{}, 'validation_failed'],
        [{ template_id: debian, password: 12 }, 'validation_failed'],
      ];
      for (const [body, code, message] of cases) {
        const res = await call(t, token, 'POST', `service/${id}/reinstall`, body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(res.body.error_code, code, JSON.stringify(body));
        if (message) assert.match(res.body.message, message);
      }
      const unknown = await call(t, token, 'POST', 'service/00000000-0000-4000-8000-000000000000/reinstall', {
        template_id: debian,
      });
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.error_code, 'service_not_found');
      const other = await t.token({ reseller: 'other' });
      const foreign = await call(t, other, 'POST', `service/${id}/reinstall`, { template_id: debian });
      assert.equal(foreign.body.error_code, 'service_not_found');

      await call(t, token, 'POST', `service/${id}/suspend`);
      await waitForStatus(t, token, id, 'suspended');
      const suspended = await call(t, token, 'POST', `service/${id}/reinstall`, { template_id: debian });
      assert.equal(suspended.status, 400);
      assert.equal(suspended.body.error_code, 'invalid_state');
      assert.match(suspended.body.message, /suspended/);
      assert.equal(await jobsNow(), jobs + 1, 'only the suspend was queued');
      const audit = await listAuditEntries(t.ctx.store.db, { serviceId: id, limit: 100 });
      assert.ok(audit.some((e) => e.action === 'service.reinstall' && e.outcome === 'invalid_state'));
    });

    test('a template the provider has no image for: 400 template_unavailable', async () => {
      // Under libvirt a template needs an image: Debian has one here, Ubuntu none.
      const lv = await createTestApp({ VRP_DRIVER: 'libvirt' }, { store });
      try {
        const db = lv.ctx.store.db;
        await db
          .updateTable('os_templates')
          .set({ image: '/images/debian-12.qcow2' })
          .where('id', '=', debian!)
          .execute();
        lv.ctx.catalog.invalidate();
        const lvToken = await lv.token();
        const order = await call(lv, lvToken, 'POST', 'service/create-order', smallOrder('lv.example.com'));
        assert.equal(order.status, 200, JSON.stringify(order.body));
        const id = order.body.data[0].service_id;
        // No libvirt host here: the service is made running by hand, as a create would leave it.
        await db
          .updateTable('services')
          .set({ status: 'running', projected_status: 'running' })
          .where('id', '=', id)
          .execute();
        const res = await call(lv, lvToken, 'POST', `service/${id}/reinstall`, { template_id: ubuntu });
        assert.equal(res.status, 400);
        assert.equal(res.body.error_code, 'template_unavailable');
        assert.match(res.body.message, /Ubuntu 24\.04 LTS.*no image/);
        const ok = await call(lv, lvToken, 'POST', `service/${id}/reinstall`, { template_id: debian });
        assert.equal(ok.status, 200, JSON.stringify(ok.body));
      } finally {
        await lv.close();
      }
    });

    test('variant A: the envelope, and service_id in the body', async () => {
      const id = await running('variant-a.example.com');
      const res = await call(t, tokenA, 'POST', `service/${id}/reinstall`, {
        service_id: id,
        template_id: debian,
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.success, 'true');
      assert.equal(res.body.data, '[]');
      assert.ok(res.headers['x-job-id']);
      await waitForStatus(t, token, id, 'running');
      const mismatch = await call(t, tokenA, 'POST', `service/${id}/reinstall`, {
        service_id: '00000000-0000-4000-8000-000000000000',
        template_id: debian,
      });
      assert.equal(mismatch.body.error_code, 'service_id_mismatch');
    });

    test('the operator API door: reinstall any reseller’s service, audited as the operator', async () => {
      const id = await running('ops-reinstall.example.com');
      const key = edKey('ops');
      const res = await opsCall(t, ops, 'POST', `services/${id}/reinstall`, {
        template_id: ubuntu,
        password: 'Operator-set-7',
        ssh_keys: [key],
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.ok(res.headers['x-job-id']);
      await waitForStatus(t, token, id, 'running');
      const d = (await opsCall(t, ops, 'GET', `services/${id}?reveal=true`)).body.data;
      assert.deepEqual(
        [d.template_id, d.password, d.ssh_key_fingerprints],
        [ubuntu, 'Operator-set-7', [sshKeyFingerprint(key)]],
      );
      const bad = await opsCall(t, ops, 'POST', `services/${id}/reinstall`, {
        template_id: debian,
        ssh_keys: ['nope'],
      });
      assert.equal(bad.body.error_code, 'invalid_ssh_key');
      const long = await opsCall(t, ops, 'POST', `services/${id}/reinstall`, {
        template_id: debian,
        ssh_keys: ['y'.repeat(16_385)],
      });
      assert.equal(long.status, 400, JSON.stringify(long.body));
      assert.equal(long.body.error_code, 'invalid_ssh_key');
      assert.match(long.body.message, /^ssh_keys\[0\]: longer than 16384 characters/);
      const audit = await listAuditEntries(t.ctx.store.db, { serviceId: id, limit: 100 });
      assert.ok(audit.some((e) => e.action === 'service.reinstall' && e.actor.type === 'operator'));
    });
  });
}
