import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { rotateOperatorSecret, setOperatorEnabledByName } from '../../src/auth/operators.ts';
import { findResellerByName } from '../../src/store/repos/resellers.ts';
import { API, BASE, call, createTestApp, type TestApp } from '../helpers/app.ts';
import { createManualClock, type ManualClock } from '../helpers/manual-clock.ts';
import { createTestOperator, OPS, operatorToken, opsCall } from '../helpers/operator.ts';
import { testStores } from '../helpers/stores.ts';

const TOKEN_URL = `${BASE}/oauth/token`;

// Failures at the token endpoint are throttled per address: each request comes from an address
// of its own (loopback: plain http from elsewhere is refused) unless a test says otherwise.
let addresses = 0;
function freshIp(): string {
  addresses += 1;
  return `127.77.${addresses >> 8}.${addresses & 255}`;
}

type Reply = { status: number; body: any; headers: Record<string, unknown> };

async function tokenRequest(
  t: TestApp,
  fields: Record<string, string>,
  options: { ip?: string; basic?: [string, string] } = {},
): Promise<Reply> {
  const body = { grant_type: 'client_credentials', ...fields };
  const res = await t.app.inject({
    method: 'POST',
    url: TOKEN_URL,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(options.basic && {
        authorization: `Basic ${Buffer.from(options.basic.join(':')).toString('base64')}`,
      }),
    },
    payload: new URLSearchParams(body).toString(),
    remoteAddress: options.ip ?? freshIp(),
  });
  return { status: res.statusCode, body: res.json(), headers: res.headers };
}

function assertOauthError(res: Reply, status: number, error: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.error, error, JSON.stringify(res.body));
}

async function whoami(t: TestApp, token: string, headers: Record<string, string> = {}): Promise<Reply> {
  return opsCall(t, token, 'GET', 'whoami', undefined, headers);
}

/**
 * Steps the clock the app's client-state cache reads past the 5 s in which a revocation must
 * reach every request; then `token` must answer 401 invalid_token.
 */
async function assertRejectedAfterWindow(t: TestApp, stateClock: ManualClock, token: string): Promise<void> {
  stateClock.advance(5000);
  const res = await whoami(t, token);
  assert.equal(res.status, 401, JSON.stringify(res.body));
  assert.equal(res.body.error_code, 'invalid_token');
}

function assertInsufficientScope(res: Reply, scope: string): void {
  assert.equal(res.status, 403, JSON.stringify(res.body));
  assert.equal(res.body.error_code, 'insufficient_scope');
  assert.equal(res.body.status, 'Error');
  assert.match(
    String(res.headers['www-authenticate']),
    new RegExp(`error="insufficient_scope", scope="${scope}"`),
  );
}

for (const store of testStores()) {
  describe(`operator identities (${store})`, () => {
    let t: TestApp;
    // Changes made behind the app's back (the CLI's) reach its requests once its client-state
    // cache (2 s) runs out: the tests of disabling and rotating step this clock past it.
    const stateClock = createManualClock();
    before(async () => {
      t = await createTestApp({}, { store, clientStateClock: stateClock });
    });
    after(() => t.close());

    test('an operator client gets a token of scope operator, by body fields or Basic', async () => {
      const op = await createTestOperator(t, { name: 'Alice Ops' });
      assert.match(op.client_id, /^vrpop_[0-9a-f]{24}$/);
      const byBody = await tokenRequest(t, { client_id: op.client_id, client_secret: op.client_secret });
      assert.equal(byBody.status, 200, JSON.stringify(byBody.body));
      assert.equal(byBody.body.scope, 'operator');
      assert.equal(byBody.headers['cache-control'], 'no-store');
      const asked = await tokenRequest(t, { scope: 'operator' }, { basic: [op.client_id, op.client_secret] });
      assert.equal(asked.status, 200, JSON.stringify(asked.body));
      assert.equal(asked.body.scope, 'operator');

      const res = await whoami(t, asked.body.access_token);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, {
        status: 'Success',
        message: '',
        data: { operator: 'Alice Ops', role: 'admin' },
      });
      assert.ok(res.headers['x-request-id']);
    });

    test('the operator API answers variant B whatever X-Envelope-Variant says', async () => {
      const token = await operatorToken(t);
      for (const variant of ['A', 'B', 'C']) {
        const res = await whoami(t, token, { 'x-envelope-variant': variant });
        assert.equal(res.status, 200, `${variant}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.status, 'Success');
        assert.equal(typeof res.body.data, 'object');
      }
      // Its errors too, even for the token of a variant A application.
      const appToken = await t.token({ variant: 'A' });
      const refused = await whoami(t, appToken, { 'x-envelope-variant': 'A' });
      assertInsufficientScope(refused, 'operator');
      // And on a path under it that names no route.
      const missing = await t.app.inject({
        method: 'GET',
        url: `${OPS}/no-such-thing`,
        headers: { authorization: `Bearer ${appToken}`, 'x-envelope-variant': 'A' },
      });
      assert.equal(missing.statusCode, 404);
      assert.equal(missing.json().status, 'Error');
      assert.equal(typeof missing.json().error_code, 'string');
    });

    test('an operator client asking for a reseller scope gets invalid_scope', async () => {
      const op = await createTestOperator(t);
      for (const scope of ['service', 'access', 'operator service', 'products operator', 'admin']) {
        assertOauthError(
          await tokenRequest(t, { client_id: op.client_id, client_secret: op.client_secret, scope }),
          400,
          'invalid_scope',
        );
      }
    });

    test('a reseller application asking for operator gets invalid_scope', async () => {
      const app = await t.client();
      for (const scope of ['operator', 'service operator', 'access products service operator']) {
        const res = await tokenRequest(t, {
          client_id: app.client_id,
          client_secret: app.client_secret,
          scope,
        });
        assertOauthError(res, 400, 'invalid_scope');
        assert.doesNotMatch(res.body.error_description, /operator/, 'not offered to an application');
      }
    });

    test('a reseller token on an operator route is 403; an operator token on the reseller API is 403', async () => {
      const appToken = await t.token();
      assertInsufficientScope(await whoami(t, appToken), 'operator');

      const opToken = await operatorToken(t);
      assertInsufficientScope(await call(t, opToken, 'GET', 'version'), 'access');
      assertInsufficientScope(await call(t, opToken, 'GET', 'products'), 'products');
      assertInsufficientScope(
        await call(t, opToken, 'POST', 'service/create-order', {
          product_id: '3b0d6a8e-5f4c-4e2a-8b1d-7c9e2f1a0b01',
          domain_name: 'ops.example.com',
          template_id: '6f1c3a52-0d1e-4c1b-9a51-0e2f8d3b7a01',
          cpu: 1,
          ram: 1,
          hdd: 20,
          ip: 1,
          backup: 0,
        }),
        'service',
      );
      assertInsufficientScope(
        await call(t, opToken, 'GET', 'service/00000000-0000-4000-8000-000000000000/details'),
        'service',
      );

      const none = await t.app.inject({ method: 'GET', url: `${OPS}/whoami` });
      assert.equal(none.statusCode, 401);
      assert.equal(none.json().error_code, 'invalid_token');
    });

    test('a well-signed token that mixes the kinds is not accepted', async () => {
      // Never issued by the token endpoint; refused even if signed with the server's key.
      const op = await createTestOperator(t);
      const app = await t.client();
      const reseller = await findResellerByName(t.ctx.store.db, 'acme');
      const exp = Math.floor(Date.now() / 1000) + 600;
      const opWithResellerScope = t.ctx.signer.issue({
        clientId: op.client_id,
        resellerId: '',
        scopes: ['service'],
        version: 1,
        exp,
      });
      assert.equal((await call(t, opWithResellerScope, 'GET', 'version')).status, 401);
      const opInTenant = t.ctx.signer.issue({
        clientId: op.client_id,
        resellerId: reseller!.id,
        scopes: ['operator'],
        version: 1,
        exp,
      });
      assert.equal((await whoami(t, opInTenant)).status, 401);
      const appWithOperator = t.ctx.signer.issue({
        clientId: app.client_id,
        resellerId: reseller!.id,
        scopes: ['operator', 'service'],
        version: 1,
        exp,
      });
      assert.equal((await whoami(t, appWithOperator)).status, 401);
      assert.equal((await call(t, appWithOperator, 'GET', 'version')).status, 401);
      const control = t.ctx.signer.issue({
        clientId: op.client_id,
        resellerId: '',
        scopes: ['operator'],
        version: 1,
        exp,
      });
      assert.equal((await whoami(t, control)).status, 200, 'control');
    });

    test('wrong secrets of operator clients count against the same throttle as applications', async () => {
      const op = await createTestOperator(t);
      const app = await t.client();
      const ip = freshIp();
      for (let i = 0; i < 5; i++) {
        assertOauthError(
          await tokenRequest(t, { client_id: op.client_id, client_secret: 'wrong' }, { ip }),
          401,
          'invalid_client',
        );
      }
      // The address is locked out for every client, application or operator.
      const locked = await tokenRequest(
        t,
        { client_id: app.client_id, client_secret: app.client_secret },
        { ip },
      );
      assert.equal(locked.status, 429, JSON.stringify(locked.body));
      assert.equal(
        (await tokenRequest(t, { client_id: op.client_id, client_secret: op.client_secret }, { ip })).status,
        429,
      );
      // From elsewhere the operator's own secret still works.
      assert.equal(
        (await tokenRequest(t, { client_id: op.client_id, client_secret: op.client_secret })).status,
        200,
      );
    });

    test('disabling an operator revokes its tokens; enabling it again does not bring them back', async () => {
      const op = await createTestOperator(t, { name: 'to-disable' });
      const token = await operatorToken(t, op);
      assert.equal((await whoami(t, token)).status, 200);
      await setOperatorEnabledByName(t.ctx.store.db, 'to-disable', false, Date.now());
      await assertRejectedAfterWindow(t, stateClock, token);
      const refused = await tokenRequest(t, { client_id: op.client_id, client_secret: op.client_secret });
      assertOauthError(refused, 401, 'invalid_client');
      assert.equal(refused.body.error_description, 'This operator is disabled');

      await setOperatorEnabledByName(t.ctx.store.db, 'to-disable', true, Date.now());
      const fresh = await operatorToken(t, op);
      // Processes see the enabling within the same window as the disabling.
      stateClock.advance(5000);
      const enabled = await whoami(t, fresh);
      assert.equal(
        enabled.status,
        200,
        `a new token still failed 5 s after enabling: ${JSON.stringify(enabled.body)}`,
      );
      assert.equal((await whoami(t, token)).status, 401, 'a token of before the disabling stays revoked');
    });

    test('rotating the secret elsewhere: the new secret works at once; the old secret and its tokens stop within the window', async () => {
      const op = await createTestOperator(t, { name: 'to-rotate' });
      const token = await operatorToken(t, op);
      assert.equal((await whoami(t, token)).status, 200);
      // As the CLI does it: in another process, behind this one's back.
      const rotated = await rotateOperatorSecret(t.ctx.store.db, 'to-rotate', Date.now(), undefined, {
        secretCost: t.ctx.secretCost,
      });
      assert.equal(rotated.client_id, op.client_id);
      assert.notEqual(rotated.client_secret, op.client_secret);
      // Within the window this process may still know the old secret: a token it gets with it
      // carries the old token version, and is refused with every token of before the rotation.
      const stale = await tokenRequest(t, { client_id: op.client_id, client_secret: op.client_secret });
      assert.equal(stale.status, 200, JSON.stringify(stale.body));
      const fresh = await operatorToken(t, rotated);
      assert.equal((await whoami(t, fresh)).status, 200, 'a token issued after the rotation works at once');
      await assertRejectedAfterWindow(t, stateClock, token);
      await assertRejectedAfterWindow(t, stateClock, String(stale.body.access_token));
      assertOauthError(
        await tokenRequest(t, { client_id: op.client_id, client_secret: op.client_secret }),
        401,
        'invalid_client',
      );
      assert.equal((await whoami(t, fresh)).status, 200, 'the new secret’s token still works');
    });

    test('an application token still reaches the reseller API as before', async () => {
      const token = await t.token();
      const res = await call(t, token, 'GET', `${API}/version`);
      assert.equal(res.status, 200);
    });
  });
}
