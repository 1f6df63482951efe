import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { listAuditEntries } from '../../../src/store/repos/audit.ts';
import { BASE, call, createTestApp, type TestApp } from '../../helpers/app.ts';
import { createTestOperator, operatorToken, opsCall } from '../../helpers/operator.ts';
import { testStores } from '../../helpers/stores.ts';

const B = { 'x-envelope-variant': 'B' };

for (const store of testStores()) {
  describe(`operator API: resellers' applications (${store})`, () => {
    let t: TestApp;
    let ops: string;
    let support: string;
    let acme: string;
    let other: string;

    before(async () => {
      t = await createTestApp({}, { store });
      ops = await operatorToken(t);
      support = await operatorToken(t, await createTestOperator(t, { role: 'support' }));
      acme = (await opsCall(t, ops, 'POST', 'resellers', { name: 'acme-apps' })).body.data.reseller_id;
      other = (await opsCall(t, ops, 'POST', 'resellers', { name: 'other-apps' })).body.data.reseller_id;
    });
    after(() => t.close());

    const tokenOf = async (clientId: string, secret: string) =>
      t.app.inject({
        method: 'POST',
        url: `${BASE}/oauth/token`,
        payload: { grant_type: 'client_credentials', client_id: clientId, client_secret: secret },
      });
    const works = async (token: string) =>
      (await call(t, token, 'POST', 'test-connection', undefined, B)).status === 200;
    const base = (reseller: string) => `resellers/${reseller}/applications`;

    test('create shows the secret once; it gets tokens; lists never show a secret', async () => {
      const res = await opsCall(t, ops, 'POST', base(acme), {
        name: 'Billing portal',
        scopes: ['access', 'products'],
        variant: 'A',
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.headers['cache-control'], 'no-store');
      const app = res.body.data;
      assert.deepEqual(
        { name: app.name, scopes: app.scopes, variant: app.variant, enabled: app.enabled },
        { name: 'Billing portal', scopes: ['access', 'products'], variant: 'A', enabled: true },
      );
      assert.match(app.client_secret, /.{20,}/);
      const token = await tokenOf(app.client_id, app.client_secret);
      assert.equal(token.statusCode, 200, token.body);
      assert.equal(token.json().scope, 'access products');

      const list = await opsCall(t, support, 'GET', base(acme));
      assert.equal(list.status, 200);
      assert.equal(list.body.data.length, 1);
      assert.equal(list.body.data[0].client_id, app.client_id);
      assert.ok(!JSON.stringify(list.body).includes(app.client_secret));
      assert.equal('client_secret' in list.body.data[0], false);

      const defaults = await opsCall(t, ops, 'POST', base(acme), {});
      assert.equal(defaults.status, 200, JSON.stringify(defaults.body));
      assert.equal(defaults.body.data.name, 'acme-apps application');
      assert.deepEqual(defaults.body.data.scopes, ['access', 'products', 'service']);
      assert.equal(defaults.body.data.variant, 'B');
    });

    test('refusals: unknown keys, bad shapes, unknown reseller or application, roles', async () => {
      const before = (await opsCall(t, ops, 'GET', base(acme))).body.data.length;
      for (const body of [
        { name: 'x', colour: 'red' },
        { scopes: ['operator'] },
        { scopes: [] },
        { variant: 'C' },
        { name: '' },
        { name: 'tab\there' },
      ]) {
        const res = await opsCall(t, ops, 'POST', base(acme), body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.equal(res.body.error_code, 'validation_failed');
      }
      const none = '00000000-0000-4000-8000-000000000000';
      assert.equal((await opsCall(t, ops, 'GET', base(none))).body.error_code, 'reseller_not_found');
      assert.equal((await opsCall(t, ops, 'POST', base('x'), {})).body.error_code, 'reseller_not_found');
      const mine = (await opsCall(t, ops, 'GET', base(acme))).body.data[0].client_id;
      for (const path of [`${base(acme)}/vrp_nope/disable`, `${base(other)}/${mine}/rotate-secret`]) {
        const res = await opsCall(t, ops, 'POST', path);
        assert.equal(res.status, 404, path);
        assert.equal(res.body.error_code, 'application_not_found');
      }
      for (const path of [
        base(acme),
        `${base(acme)}/${mine}/disable`,
        `${base(acme)}/${mine}/rotate-secret`,
      ]) {
        const res = await opsCall(t, support, 'POST', path, path === base(acme) ? {} : undefined);
        assert.equal(res.status, 403, path);
        assert.equal(res.body.error_code, 'insufficient_role');
      }
      assert.equal((await opsCall(t, ops, 'GET', base(acme))).body.data.length, before);
      assert.equal((await opsCall(t, ops, 'GET', base(acme))).body.data[0].enabled, true);
    });

    test('disable, then enable: tokens issued before the disable stay refused; new ones work', async () => {
      const created = (await opsCall(t, ops, 'POST', base(acme), { name: 'Switched' })).body.data;
      const path = `${base(acme)}/${created.client_id}`;
      const before = (await tokenOf(created.client_id, created.client_secret)).json().access_token;
      assert.ok(await works(before));
      assert.equal((await opsCall(t, ops, 'POST', `${path}/disable`)).status, 200);
      assert.equal(await works(before), false, 'refused while disabled');
      assert.equal((await opsCall(t, ops, 'POST', `${path}/enable`)).status, 200);
      assert.equal(await works(before), false, 'enabling again does not bring the old token back');
      const fresh = (await tokenOf(created.client_id, created.client_secret)).json().access_token;
      assert.ok(await works(fresh), 'a token issued after the enable works');
      assert.equal(await works(before), false);
    });

    test('rotate, revoke, disable: tokens issued before are refused at once', async () => {
      const created = (await opsCall(t, ops, 'POST', base(acme), { name: 'Rotated' })).body.data;
      const path = `${base(acme)}/${created.client_id}`;
      const first = (await tokenOf(created.client_id, created.client_secret)).json().access_token;
      assert.ok(await works(first));

      const rotated = await opsCall(t, ops, 'POST', `${path}/rotate-secret`);
      assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
      assert.equal(rotated.headers['cache-control'], 'no-store');
      const secret = rotated.body.data.client_secret;
      assert.notEqual(secret, created.client_secret);
      assert.equal(await works(first), false, 'the token from before the rotation is refused');
      assert.equal((await tokenOf(created.client_id, created.client_secret)).statusCode, 401);
      const second = (await tokenOf(created.client_id, secret)).json().access_token;
      assert.ok(await works(second));

      const revoked = await opsCall(t, ops, 'POST', `${path}/revoke-tokens`);
      assert.equal(revoked.status, 200);
      assert.equal(revoked.body.message, 'Every token issued until now is revoked');
      assert.equal(await works(second), false, 'revoked at once');
      const third = (await tokenOf(created.client_id, secret)).json().access_token;
      assert.ok(await works(third));

      const disabled = await opsCall(t, ops, 'POST', `${path}/disable`);
      assert.equal(disabled.body.data.enabled, false);
      assert.equal(await works(third), false, 'disabled at once');
      assert.equal((await tokenOf(created.client_id, secret)).statusCode, 401);
      const enabled = await opsCall(t, ops, 'POST', `${path}/enable`);
      assert.equal(enabled.body.data.enabled, true);
      assert.equal((await tokenOf(created.client_id, secret)).statusCode, 200);

      const entries = await listAuditEntries(t.ctx.store.db, { limit: 1000 });
      const mine = entries.filter((e) => e.target?.id === created.client_id && e.outcome === 'ok');
      assert.deepEqual(mine.map((e) => e.action).sort(), [
        'client.create',
        'client.disable',
        'client.enable',
        'client.revoke_tokens',
        'client.rotate_secret',
      ]);
      assert.ok(mine.every((e) => e.resellerId === acme && e.actor.type === 'operator'));
      const text = JSON.stringify(entries);
      assert.ok(
        !text.includes(secret) && !text.includes(created.client_secret),
        'no secret in the audit log',
      );
    });
  });
}
