import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { RegisteredApplication } from '../../src/auth/applications.ts';
import { SECRET_COST, verifySecret } from '../../src/auth/secret-hash.ts';
import { createTokenEndpoint, type TokenEndpoint } from '../../src/auth/token-endpoint.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { TEST_SECRET_COST } from '../helpers/secret-cost.ts';
import { testStores } from '../helpers/stores.ts';

let addresses = 0;
function freshIp(): string {
  addresses += 1;
  return `10.7.${addresses >> 8}.${addresses & 255}`;
}

/** `scrypt$N$r$p` and the byte lengths of salt and hash: what decides the cost of a check. */
function costShape(stored: string): string {
  const [kind, n, r, p, salt, hash] = stored.split('$');
  return [
    kind,
    n,
    r,
    p,
    Buffer.from(salt ?? '', 'base64url').length,
    Buffer.from(hash ?? '', 'base64url').length,
  ].join('$');
}

// The server-side cost of a failed authentication is its scrypt runs: counted here through the
// real verifier, so that the comparison is exact instead of a timing that could flake.
for (const store of testStores()) {
  describe(`token endpoint: every failing credential costs one scrypt (${store})`, () => {
    let t: TestApp;
    let c: RegisteredApplication;
    let atRealCost: RegisteredApplication;
    let endpoint: TokenEndpoint;
    const checked: string[] = [];

    before(async () => {
      // At the real cost: the dummy hash is compared with the hash of an application registered
      // as the CLI does. The other tests count scrypt runs, whatever their cost.
      t = await createTestApp({}, { store, secretCost: SECRET_COST });
      c = await t.client({ secretCost: TEST_SECRET_COST });
      atRealCost = await t.client();
      endpoint = createTokenEndpoint(t.ctx, {
        verifySecret: (secret, stored) => {
          checked.push(stored);
          return verifySecret(secret, stored);
        },
      });
    });
    after(() => t.close());

    /** The answer's status and the stored hashes scrypt was run against. */
    async function attempt(clientId: string, secret: string, ip = freshIp()) {
      checked.length = 0;
      const res = await endpoint.handle({
        authorization: undefined,
        body: { grant_type: 'client_credentials', client_id: clientId, client_secret: secret },
        ip,
      });
      return { status: res.status, error: res.body['error'], hashes: [...checked] };
    }

    test('a correct secret is checked once, then remembered', async () => {
      const first = await attempt(c.client_id, c.client_secret);
      assert.equal(first.status, 200);
      assert.equal(first.hashes.length, 1);
      const again = await attempt(c.client_id, c.client_secret);
      assert.equal(again.status, 200);
      assert.equal(again.hashes.length, 0, 'a correct secret may take the fast path');
    });

    test('a wrong secret for a known id costs one scrypt, even after the right one was remembered', async () => {
      assert.equal((await attempt(c.client_id, c.client_secret)).status, 200);
      const wrong = await attempt(c.client_id, `${c.client_secret.slice(0, -1)}x`);
      assert.equal(wrong.status, 401);
      assert.equal(wrong.error, 'invalid_client');
      assert.equal(wrong.hashes.length, 1);
    });

    test('ids that name no client cost one scrypt, against a hash as costly as a real one', async () => {
      const [real] = (await attempt(atRealCost.client_id, 'wrong')).hashes;
      assert.ok(real);
      for (const id of ['vrp_000000000000000000000000', 'vrp_\u0000', 'x'.repeat(201), 'vrp_\ud800']) {
        const res = await attempt(id, c.client_secret);
        assert.equal(res.status, 401, JSON.stringify(id.slice(0, 10)));
        assert.equal(res.error, 'invalid_client');
        assert.equal(res.hashes.length, 1, `scrypt runs for ${JSON.stringify(id.slice(0, 10))}`);
        assert.equal(costShape(res.hashes[0]!), costShape(real));
      }
      // The dummy hash is a real one (its parameters are accepted by scrypt), not a constant.
      assert.equal(costShape(real), 'scrypt$32768$8$1$16$32');
    });

    test('an over-long secret costs one scrypt too', async () => {
      const res = await attempt(c.client_id, 's'.repeat(501));
      assert.equal(res.status, 401);
      assert.equal(res.hashes.length, 1);
    });

    test('a locked address is refused without any check', async () => {
      const ip = freshIp();
      for (let i = 0; i < 5; i++) assert.equal((await attempt(c.client_id, 'wrong', ip)).status, 401);
      const locked = await attempt(c.client_id, c.client_secret, ip);
      assert.equal(locked.status, 429);
      assert.equal(locked.error, 'temporarily_unavailable');
      assert.equal(locked.hashes.length, 0);
    });
  });
}
