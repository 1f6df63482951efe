import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setOperatorRoleByName } from '../../../src/auth/operators.ts';
import { listAuditEntries } from '../../../src/store/repos/audit.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../../helpers/app.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { createTestOperator, operatorToken, opsCall } from '../../helpers/operator.ts';
import { testStores } from '../../helpers/stores.ts';

const simHost = (name: string) => ({ name, driver: 'simulated', cpu: 8, ram_gb: 16, disk_gb: 200 });

for (const store of testStores()) {
  describe(`operator API: roles (${store})`, () => {
    let t: TestApp;
    let admin: string;
    let support: string;
    let billing: string;
    let acme: string;
    let service: string;

    before(async () => {
      t = await createTestApp({}, { store, worker: true });
      admin = await operatorToken(t, await createTestOperator(t, { name: 'root-ops' }));
      support = await operatorToken(t, await createTestOperator(t, { name: 'helpdesk', role: 'support' }));
      billing = await operatorToken(t, await createTestOperator(t, { name: 'accounts', role: 'billing' }));
      acme = await t.token({ reseller: 'acme' });
      const res = await call(t, acme, 'POST', 'service/create-order', smallOrder('roles.example.com'), {
        'x-envelope-variant': 'B',
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      service = res.body.data[0].service_id;
      assert.equal((await opsCall(t, admin, 'POST', `services/${service}/create`)).status, 200);
      await waitForStatus(t, acme, service, 'running');
    });
    after(() => t.close());

    test('whoami names the role; operators created without one are admins', async () => {
      for (const [token, operator, role] of [
        [admin, 'root-ops', 'admin'],
        [support, 'helpdesk', 'support'],
        [billing, 'accounts', 'billing'],
      ] as const) {
        const res = await opsCall(t, token, 'GET', 'whoami');
        assert.deepEqual(res.body.data, { operator, role });
      }
    });

    test('support: refused a host change, allowed a power action and a job list', async () => {
      const host = await opsCall(t, support, 'POST', 'hosts', simHost('support-host'));
      assert.equal(host.status, 403, JSON.stringify(host.body));
      assert.equal(host.body.error_code, 'insufficient_role');
      assert.match(host.body.message, /admin/);
      const hosts = await opsCall(t, admin, 'GET', 'hosts');
      assert.ok(!hosts.body.data.items.some((h: any) => h.name === 'support-host'), 'nothing added');
      const quota = await opsCall(t, support, 'GET', 'resellers');
      assert.equal(quota.status, 200);
      const restart = await opsCall(t, support, 'POST', `services/${service}/restart`);
      assert.equal(restart.status, 200, JSON.stringify(restart.body));
      await waitForStatus(t, acme, service, 'running');
      assert.equal((await opsCall(t, support, 'GET', 'jobs')).status, 200);
    });

    test('billing: refused a power action, allowed usage and the audit log', async () => {
      const stop = await opsCall(t, billing, 'POST', `services/${service}/stop`);
      assert.equal(stop.status, 403, JSON.stringify(stop.body));
      assert.equal(stop.body.error_code, 'insufficient_role');
      const details = await opsCall(t, billing, 'GET', `services/${service}`);
      assert.equal(details.body.data.status, 'running', 'not stopped');
      const now = Date.now();
      const period = `from=${new Date(now - 3_600_000).toISOString()}&to=${new Date(now + 3_600_000).toISOString()}`;
      const usage = await opsCall(t, billing, 'GET', `usage?${period}`);
      assert.equal(usage.status, 200, JSON.stringify(usage.body));
      const audit = await opsCall(t, billing, 'GET', 'audit');
      assert.equal(audit.status, 200, JSON.stringify(audit.body));
      // A read among a service's operations is a read too (here: no DNS server, so 400 for anyone).
      const rdns = await opsCall(t, billing, 'GET', `services/${service}/rdns`);
      assert.equal(rdns.body.error_code, 'rdns_unavailable', JSON.stringify(rdns.body));
    });

    test('a change of role applies to the tokens the operator holds already', async () => {
      const op = await createTestOperator(t, { name: 'promoted', role: 'billing' });
      const token = await operatorToken(t, op);
      assert.equal((await opsCall(t, token, 'POST', `services/${service}/restart`)).status, 403);
      await setOperatorRoleByName(t.ctx.store.db, 'promoted', 'support', Date.now());
      // The client's state is cached for a couple of seconds: forget it as a later request would.
      t.ctx.clientStates.invalidate(op.client_id);
      assert.equal((await opsCall(t, token, 'GET', 'whoami')).body.data.role, 'support');
      assert.equal((await opsCall(t, token, 'POST', `services/${service}/restart`)).status, 200);
      await waitForStatus(t, acme, service, 'running');
    });

    test('a role that does not exist is refused and changes nothing', async () => {
      await assert.rejects(
        setOperatorRoleByName(t.ctx.store.db, 'helpdesk', 'superuser', Date.now()),
        /no role named "superuser": the roles are admin, support, billing/,
      );
      assert.equal((await opsCall(t, support, 'GET', 'whoami')).body.data.role, 'support');
      await assert.rejects(createTestOperator(t, { name: 'nobody', role: 'root' }), /no role named "root"/);
    });

    test('the password: null without reveal=true; revealed to an admin only, and audited', async () => {
      for (const token of [admin, support, billing]) {
        const plain = await opsCall(t, token, 'GET', `services/${service}`);
        assert.equal(plain.status, 200);
        assert.equal(plain.body.data.password, null);
      }
      for (const token of [support, billing]) {
        const refused = await opsCall(t, token, 'GET', `services/${service}?reveal=true`);
        assert.equal(refused.status, 403);
        assert.equal(refused.body.error_code, 'insufficient_role');
      }
      const shown = await opsCall(t, admin, 'GET', `services/${service}?reveal=true`);
      assert.equal(shown.status, 200);
      assert.ok(shown.body.data.password.length >= 12);
      const entries = await listAuditEntries(t.ctx.store.db, { serviceId: service, limit: 100 });
      const reveals = entries.filter((e) => e.action === 'service.reveal_password');
      assert.deepEqual(
        reveals.map((e) => [e.actor.name, e.outcome]).reverse(),
        [
          ['helpdesk', 'insufficient_role'],
          ['accounts', 'insufficient_role'],
          ['root-ops', 'ok'],
        ],
        'the two refusals and the admin’s reveal, oldest first',
      );
    });
  });
}
