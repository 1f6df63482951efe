import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { RegisteredApplication } from '../../src/auth/applications.ts';
import { SECRET_COST, verifySecret } from '../../src/auth/secret-hash.ts';
import { createSlowCheckGate } from '../../src/auth/slow-check-gate.ts';
import {
  createTokenEndpoint,
  TOKEN_HASH_LIMITS,
  type TokenEndpoint,
  type TokenResponse,
} from '../../src/auth/token-endpoint.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { heldVerifier } from '../helpers/held-verifier.ts';
import { until } from '../helpers/job-worker.ts';
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

  describe(`token endpoint: attempts sent at once (${store})`, () => {
    let t: TestApp;
    let c: RegisteredApplication;
    before(async () => {
      t = await createTestApp({}, { store });
      c = await t.client();
    });
    after(() => t.close());

    /**
     * Sends `count` requests at once (secrets from `secret(i)`, addresses from `ip(i)`) to an
     * endpoint whose checks wait for the test; once each has reached its check (running or waiting
     * for its turn) or been answered, ends the checks one by one. The statuses in order sent.
     */
    async function burst(count: number, secret: (i: number) => string, ip: (i: number) => string) {
      const held = heldVerifier();
      const gate = createSlowCheckGate(TOKEN_HASH_LIMITS);
      const endpoint = createTokenEndpoint(t.ctx, { verifySecret: held.verify, gate });
      let answered = 0;
      const answers = Promise.all(
        Array.from({ length: count }, async (_, i) => {
          const res = await endpoint.handle({
            authorization: undefined,
            body: { grant_type: 'client_credentials', client_id: c.client_id, client_secret: secret(i) },
            ip: ip(i),
          });
          answered += 1;
          return res;
        }),
      );
      await until(() => answered + gate.waiting + held.inFlight === count, 'every request at its check');
      await held.drain(() => answered === count);
      return { answers: await answers, held };
    }

    const statuses = (answers: TokenResponse[]) => answers.map((a) => a.status);

    test('40 wrong secrets at once from 40 addresses: two hashes at a time, the others wait their turn; all 401', async () => {
      const { answers, held } = await burst(
        40,
        (i) => `wrong-${i}`,
        () => freshIp(),
      );
      assert.deepEqual(statuses(answers), Array(40).fill(401));
      assert.equal(held.started, 40);
      assert.equal(held.peak, TOKEN_HASH_LIMITS.total, 'never more hashes at once than the bound');
    });

    test('20 wrong secrets at once from one address: one hash at a time, five get 401, the rest 429 with Retry-After', async () => {
      const ip = freshIp();
      const { answers, held } = await burst(
        20,
        (i) => `wrong-${i}`,
        () => ip,
      );
      const codes = statuses(answers);
      assert.equal(codes.filter((s) => s === 401).length, 5, codes.join(' '));
      assert.equal(codes.filter((s) => s === 429).length, 15, codes.join(' '));
      for (const a of answers.filter((a) => a.status === 429)) {
        assert.equal(a.body['error'], 'temporarily_unavailable');
        assert.ok(Number(a.headers['retry-after']) >= 1);
      }
      assert.equal(held.started, 5, 'the refused attempts cost no hash');
      assert.equal(held.peak, 1, 'one hash at a time for one address');
    });

    test('the right secret sent at once by many: hashed once, every request gets its token', async () => {
      // A client starting many requests with a secret this process has not checked yet.
      const fresh = await t.client();
      const held = heldVerifier();
      const endpoint = createTokenEndpoint(t.ctx, { verifySecret: held.verify });
      const ip = freshIp();
      const answers = Promise.all(
        Array.from({ length: 10 }, () =>
          endpoint.handle({
            authorization: undefined,
            body: {
              grant_type: 'client_credentials',
              client_id: fresh.client_id,
              client_secret: fresh.client_secret,
            },
            ip,
          }),
        ),
      );
      let done = false;
      void answers.then(() => {
        done = true;
      });
      await held.drain(() => done);
      assert.deepEqual(statuses(await answers), Array(10).fill(200));
      assert.equal(held.started, 1);
    });
  });
}
