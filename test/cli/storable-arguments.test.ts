/**
 * `vrp` refuses arguments a store cannot hold (U+0000, a lone surrogate)
 * before it opens the store, on both stores. A process's argv cannot carry them (the OS
 * passes bytes, Node reads U+FFFD), so this calls `runCli`, the command's one entry, in-process.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runCli } from '../../src/cli/run.ts';
import { createStore } from '../../src/store/database.ts';
import { DEMO_CATALOG } from '../../src/store/demo-catalog.ts';
import { createPgDatabase, testStores } from '../helpers/stores.ts';

for (const store of testStores()) {
  describe(`vrp arguments no store can hold (${store})`, () => {
    test('arguments and catalogue files with U+0000 or a lone surrogate: refused, nothing stored', async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'vrp-cli-text-'));
      const pg = store === 'postgres' ? await createPgDatabase() : undefined;
      const env = {
        VRP_DATA_DIR: dataDir,
        VRP_LOG_LEVEL: 'silent',
        ...(pg ? { VRP_DATABASE_URL: pg.url } : {}),
      };
      try {
        assert.equal(await runCli(['reseller', 'create', 'textco'], env), 0);
        for (const name of ['bad\u0000name', 'bad\ud800name']) {
          assert.equal(await runCli(['client', 'create', '--reseller', 'textco', '--name', name], env), 2);
        }
        assert.equal(await runCli(['reseller', 'create', 'nul\u0000co'], env), 2);
        // A catalogue file may hold them as JSON escapes: refused, the store's catalogue kept.
        const file = join(dataDir, 'catalog.json');
        const bad = structuredClone(DEMO_CATALOG) as { products: { name: string }[] };
        bad.products[0]!.name = 'Lone \ud800';
        writeFileSync(file, JSON.stringify(bad));
        assert.equal(await runCli(['catalog', 'import', file], env), 1);
        const s = createStore({ databaseUrl: pg?.url, dataDir, poolSize: 1 });
        try {
          assert.deepEqual(await s.db.selectFrom('clients').select('id').execute(), []);
          const names = await s.db.selectFrom('resellers').select('name').execute();
          assert.deepEqual(
            names.map((r) => r.name),
            ['textco'],
          );
          assert.deepEqual(await s.db.selectFrom('products').select('id').execute(), []);
        } finally {
          await s.close();
        }
      } finally {
        await pg?.drop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    });
  });
}
