import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { OPS } from '../../../src/http/base-path.ts';
import { findOperatorByName } from '../../../src/store/repos/operators.ts';
import { call, createTestApp, type TestApp, waitForStatus } from '../../helpers/app.ts';
import { smallOrder } from '../../helpers/e2e.ts';
import { createTestOperator, operatorToken, opsCall } from '../../helpers/operator.ts';
import { testStores } from '../../helpers/stores.ts';

const B = { 'x-envelope-variant': 'B' };

for (const store of testStores()) {
  describe(`operator API: an audit log that names people, suspension history (${store})`, () => {
    let t: TestApp;
    let acme: string;
    let alice: { token: string; id: string; clientId: string };
    let bob: { token: string; id: string };
    let service: string;

    /** An operator API call from `remoteAddress`, with an X-Forwarded-For a proxy would add and a claimed console session. */
    async function from(
      remoteAddress: string,
      token: string,
      path: string,
      body: unknown,
    ): Promise<{ status: number; body: any }> {
      const res = await t.app.inject({
        method: 'POST',
        url: `${OPS}/${path}`,
        remoteAddress,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'x-forwarded-for': '203.0.113.9',
          // Only the console can name a session: one claimed from outside is ignored.
          'x-vrp-console-session': `${'a'.repeat(64)}.forged`,
        },
        payload: JSON.stringify(body),
      });
      return { status: res.statusCode, body: res.json() };
    }

    before(async () => {
      // Only the proxy at 127.0.0.1 is believed.
      t = await createTestApp({ VRP_TRUST_PROXY: '127.0.0.1' }, { store, worker: true });
      const a = await createTestOperator(t, { name: 'Alice Admin' });
      alice = {
        token: await operatorToken(t, a),
        id: (await findOperatorByName(t.ctx.store.db, 'Alice Admin'))!.id,
        clientId: a.client_id,
      };
      const b = await createTestOperator(t, { name: 'bob' });
      bob = { token: await operatorToken(t, b), id: (await findOperatorByName(t.ctx.store.db, 'bob'))!.id };
      acme = await t.token({ reseller: 'acme' });
      const order = await call(t, acme, 'POST', 'service/create-order', smallOrder('named.example.com'), B);
      service = order.body.data[0].service_id;
      await opsCall(t, alice.token, 'POST', `services/${service}/create`);
      await waitForStatus(t, acme, service, 'running');
    });
    after(() => t.close());

    test('an operator’s suspend with a reason: the entry names the operator, the client, the address and the reason; X-Forwarded-For only from the trusted proxy', async () => {
      // Through the trusted proxy: the address it forwards.
      const viaProxy = await from('127.0.0.1', alice.token, `services/${service}/suspend`, {
        suspend_reason: 'spam complaints',
      });
      assert.equal(viaProxy.status, 200, JSON.stringify(viaProxy.body));
      await waitForStatus(t, acme, service, 'suspended');
      // From an address that is no trusted proxy: its own address, whatever it forwards.
      const direct = await from('127.0.0.2', bob.token, `services/${service}/unsuspend`, {});
      assert.equal(direct.status, 200, JSON.stringify(direct.body));
      await waitForStatus(t, acme, service, 'running');

      const res = await opsCall(t, alice.token, 'GET', `audit?service_id=${service}&limit=10`);
      assert.equal(res.status, 200);
      const [unsuspend, suspend] = res.body.data.items;
      assert.deepEqual(
        {
          action: suspend.action,
          actor: suspend.actor,
          credential: suspend.credential,
          source_address: suspend.source_address,
          reason: suspend.reason,
          service_domain: suspend.service_domain,
        },
        {
          action: 'service.suspend',
          actor: { type: 'operator', id: alice.id, name: 'Alice Admin' },
          credential: { type: 'operator_client', id: alice.clientId },
          source_address: '203.0.113.9',
          reason: 'spam complaints',
          service_domain: 'named.example.com',
        },
      );
      assert.equal(unsuspend.action, 'service.unsuspend');
      assert.deepEqual(unsuspend.actor, { type: 'operator', id: bob.id, name: 'bob' });
      assert.equal(unsuspend.source_address, '127.0.0.2');
      assert.equal(unsuspend.reason, null);
      // The application's order: named by its reseller and its own name.
      const order = res.body.data.items.find((e: any) => e.action === 'service.order');
      assert.equal(order.actor.type, 'application');
      assert.match(order.actor.name, /^acme \/ /);
      assert.deepEqual(order.credential, { type: 'application', id: order.actor.id });
    });

    test('filters by action and by actor name; an unknown one lists nothing', async () => {
      const suspends = (await opsCall(t, bob.token, 'GET', 'audit?action=service.suspend')).body.data.items;
      assert.ok(suspends.length >= 1);
      assert.ok(suspends.every((e: any) => e.action === 'service.suspend'));
      const byName = (await opsCall(t, bob.token, 'GET', 'audit?actor_name=Alice%20Admin')).body.data.items;
      assert.ok(byName.length >= 2);
      assert.ok(byName.every((e: any) => e.actor.name === 'Alice Admin'));
      const both = await opsCall(t, bob.token, 'GET', 'audit?actor_name=bob&action=service.suspend');
      assert.equal(both.status, 200);
      assert.ok(
        both.body.data.items.every((e: any) => e.actor.name === 'bob' && e.action === 'service.suspend'),
      );
      for (const q of ['action=service.explode', 'actor_name=nobody']) {
        const none = await opsCall(t, bob.token, 'GET', `audit?${q}`);
        assert.equal(none.status, 200, q);
        assert.deepEqual(none.body.data.items, [], q);
      }
      const empty = await opsCall(t, bob.token, 'GET', 'audit?actor_name=');
      assert.equal(empty.status, 400);
      assert.equal(empty.body.error_code, 'validation_failed');
    });

    test('suspension history: suspend, unsuspend, suspend again, newest first, with who, why and when lifted', async () => {
      // The first suspension and its lift come from the test before; now a second one.
      const again = await opsCall(t, bob.token, 'POST', `services/${service}/suspend`, {
        suspend_reason: 'unpaid invoice',
      });
      assert.equal(again.status, 200, JSON.stringify(again.body));
      await waitForStatus(t, acme, service, 'suspended');
      const res = await opsCall(t, alice.token, 'GET', `services/${service}`);
      assert.equal(res.status, 200);
      const history = res.body.data.suspensions;
      assert.equal(history.length, 2);
      const [second, first] = history;
      assert.deepEqual(second.suspended_by, { type: 'operator', id: bob.id, name: 'bob' });
      assert.equal(second.reason, 'unpaid invoice');
      assert.equal(second.lifted_at, null);
      assert.equal(second.lifted_by, null);
      assert.deepEqual(first.suspended_by, { type: 'operator', id: alice.id, name: 'Alice Admin' });
      assert.equal(first.reason, 'spam complaints');
      assert.deepEqual(first.lifted_by, { type: 'operator', id: bob.id, name: 'bob' });
      assert.ok(Date.parse(first.suspended_at) <= Date.parse(first.lifted_at));
      assert.ok(Date.parse(first.lifted_at) <= Date.parse(second.suspended_at));
      // Suspending a suspended service does nothing, and adds no suspension.
      await opsCall(t, alice.token, 'POST', `services/${service}/suspend`, { suspend_reason: 'twice' });
      const still = await opsCall(t, alice.token, 'GET', `services/${service}`);
      assert.equal(still.body.data.suspensions.length, 2);
    });
  });
}
