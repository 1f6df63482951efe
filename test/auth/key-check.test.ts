import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { createContext } from '../../src/context.ts';
import { openStore } from '../../src/store/database.ts';
import { testEnv } from '../helpers/app.ts';
import { runToExit } from '../helpers/run-to-exit.ts';
import { startServer } from '../helpers/server-process.ts';
import { createPgDatabase, testStores } from '../helpers/stores.ts';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A fresh store of `kind`: its settings, and `drop` for PostgreSQL. */
async function freshStore(kind: string): Promise<{ env: Record<string, string>; drop(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vrp-key-check-'));
  dirs.push(dataDir);
  if (kind === 'sqlite') return { env: testEnv(dataDir), drop: async () => {} };
  const pg = await createPgDatabase();
  return { env: testEnv(dataDir, { VRP_DATABASE_URL: pg.url }), drop: pg.drop };
}

const newKey = () => randomBytes(32).toString('hex');

/** Opens a context as every process does at start-up, then closes it; rejects as start-up would. */
async function startAndClose(env: Record<string, string>): Promise<void> {
  const ctx = await createContext(loadConfig(env));
  await ctx.store.close();
}

/** The one-line refusal: exit 2, names VRP_SECRET_KEY, no stack, never the key itself. */
function assertRefused(r: { code: number | null; stderr: string }, key: string | undefined): void {
  assert.equal(r.code, 2, r.stderr);
  const lines = r.stderr.trim().split('\n');
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0]!, /^vrp: .*VRP_SECRET_KEY.*first used with/);
  if (key) assert.ok(!r.stderr.includes(key), 'the key is never printed');
}

for (const kind of testStores()) {
  describe(`master key check (${kind})`, () => {
    test('a server, a worker and a key-file start with another key are refused; the right key starts', async () => {
      const store = await freshStore(kind);
      try {
        const key = newKey();
        await startAndClose({ ...store.env, VRP_SECRET_KEY: key });

        const wrong = newKey();
        // The processes at once: they are independent, and each spends most of a second starting.
        const [main, worker, fromFile] = await Promise.all([
          runToExit(['src/main.ts'], { ...store.env, VRP_SECRET_KEY: wrong }),
          runToExit(['bin/vrp.js', 'serve', '--worker-only'], { ...store.env, VRP_SECRET_KEY: wrong }),
          // Without VRP_SECRET_KEY the key file (created now, so a new key) is named too.
          runToExit(['src/main.ts'], store.env),
        ]);
        assertRefused(main, wrong);
        assertRefused(worker, wrong);
        // The base64 spelling of the same key is the same key.
        const b64 = Buffer.from(key, 'hex').toString('base64');
        await startAndClose({ ...store.env, VRP_SECRET_KEY: b64 });

        assertRefused(fromFile, undefined);
        assert.ok(fromFile.stderr.includes(join(store.env['VRP_DATA_DIR']!, 'secret.key')), fromFile.stderr);

        const server = await startServer({ ...store.env, VRP_SECRET_KEY: key });
        assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
        assert.equal(await server.stop(), 0);
      } finally {
        await store.drop();
      }
    });

    test('processes starting at once on a store without a key agree on the first key', async () => {
      const store = await freshStore(kind);
      try {
        // Migrated first, never used with a key: a store from before the check, upgraded while
        // several processes start. (This is about the key, not about migrating at once.)
        const config = loadConfig(store.env);
        await (await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir })).close();
        const [a, b] = [newKey(), newKey()];
        const keys = [a, b, a, b, a, b];
        const results = await Promise.allSettled(
          keys.map((k) => startAndClose({ ...store.env, VRP_SECRET_KEY: k })),
        );
        const accepted = new Set(keys.filter((_, i) => results[i]!.status === 'fulfilled'));
        assert.equal(accepted.size, 1, 'exactly one key is the store key');
        for (const [i, r] of results.entries()) {
          if (r.status === 'rejected') {
            assert.ok(r.reason instanceof ConfigError, String(r.reason));
            assert.ok(!accepted.has(keys[i]!), 'only the other key is refused');
          }
        }
        const [winner] = accepted;
        await startAndClose({ ...store.env, VRP_SECRET_KEY: winner! });
        await assert.rejects(
          startAndClose({ ...store.env, VRP_SECRET_KEY: winner === a ? b : a }),
          ConfigError,
        );
      } finally {
        await store.drop();
      }
    });
  });
}
