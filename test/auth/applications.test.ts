/**
 * Tests register their applications at a low scrypt cost (TEST_SECRET_COST) to save CPU time;
 * these check that what the server, the CLI and anyone who gives no cost store is the real one.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import { ensureReseller, registerApplication, rotateApplicationSecret } from '../../src/auth/applications.ts';
import { SECRET_COST, verifySecret } from '../../src/auth/secret-hash.ts';
import { loadConfig } from '../../src/config.ts';
import { createContext } from '../../src/context.ts';
import { openStore } from '../../src/store/database.ts';
import type { Database } from '../../src/store/schema.ts';
import { createTestApp, testEnv } from '../helpers/app.ts';
import { ownDataDir, vrpInProcess } from '../helpers/cli.ts';
import { TEST_SECRET_COST } from '../helpers/secret-cost.ts';
import { testStores } from '../helpers/stores.ts';

const REAL = `scrypt$${SECRET_COST.N}$${SECRET_COST.r}$${SECRET_COST.p}$`;

async function storedHash(db: Kysely<Database>, clientId: string): Promise<string> {
  const row = await db
    .selectFrom('clients')
    .select('secret_hash')
    .where('id', '=', clientId)
    .executeTakeFirstOrThrow();
  return row.secret_hash;
}

describe('the real cost', () => {
  test('is N=2^15, r=8, p=1', () => {
    assert.deepEqual({ ...SECRET_COST }, { N: 32768, r: 8, p: 1 });
  });

  test("is a server's: its token endpoint checks unknown ids against a hash of that cost", async (t) => {
    const ctx = await createContext(loadConfig(testEnv(ownDataDir(t))));
    try {
      assert.deepEqual(ctx.secretCost, SECRET_COST);
    } finally {
      await ctx.store.close();
    }
  });
});

for (const store of testStores()) {
  describe(`application secrets are stored at the real scrypt cost unless one is given (${store})`, () => {
    test('registering and rotating without a cost store SECRET_COST hashes, which verify', async () => {
      const t = await createTestApp({}, { store });
      try {
        await ensureReseller(t.ctx.store.db, 'acme', Date.now());
        const app = await registerApplication(t.ctx.store.db, { reseller: 'acme' }, Date.now());
        const registered = await storedHash(t.ctx.store.db, app.client_id);
        assert.ok(registered.startsWith(REAL), registered);
        assert.equal(await verifySecret(app.client_secret, registered), true);

        const secret = await rotateApplicationSecret(t.ctx.store.db, app.client_id, Date.now());
        const rotated = await storedHash(t.ctx.store.db, app.client_id);
        assert.ok(rotated.startsWith(REAL), rotated);
        assert.equal(await verifySecret(secret, rotated), true);
      } finally {
        await t.close();
      }
    });

    test('a given cost is the one stored, and its secret gets a token', async () => {
      const t = await createTestApp({}, { store });
      try {
        const app = await t.client();
        const { N, r, p } = TEST_SECRET_COST;
        assert.ok((await storedHash(t.ctx.store.db, app.client_id)).startsWith(`scrypt$${N}$${r}$${p}$`));
        const rotated = await rotateApplicationSecret(t.ctx.store.db, app.client_id, Date.now(), undefined, {
          secretCost: TEST_SECRET_COST,
        });
        assert.ok((await storedHash(t.ctx.store.db, app.client_id)).startsWith(`scrypt$${N}$${r}$${p}$`));
        assert.match(await t.token({ client: { ...app, client_secret: rotated } }), /\./);
      } finally {
        await t.close();
      }
    });
  });
}

describe('vrp client create and rotate-secret', () => {
  test('store hashes at the real cost', async (t) => {
    const dataDir = ownDataDir(t);
    const vrp = (args: string[]) => vrpInProcess(args, { VRP_DATA_DIR: dataDir, VRP_LOG_LEVEL: 'silent' });
    assert.equal((await vrp(['reseller', 'create', 'acme'])).code, 0);
    const created = await vrp(['client', 'create', '--reseller', 'acme', '--json']);
    assert.equal(created.code, 0, created.err);
    const store = await openStore({ databaseUrl: undefined, dataDir });
    try {
      const { client_id: id, client_secret: secret } = created.json();
      const registered = await storedHash(store.db, id);
      assert.ok(registered.startsWith(REAL), registered);
      assert.equal(await verifySecret(secret, registered), true);
      assert.equal((await vrp(['client', 'rotate-secret', id])).code, 0);
      assert.ok((await storedHash(store.db, id)).startsWith(REAL));
    } finally {
      await store.close();
    }
  });
});
