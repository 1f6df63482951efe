/**
 * `vrp db backup` / `vrp db restore`: a drill (back up a store while a real server takes
 * orders, restore into a fresh store, start a server on it, find every order answered before
 * the backup began) and the refusals (non-empty target, another key, a file that is no backup).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import pg from 'pg';
import { checkKeyAgainstStore } from '../../src/auth/key-check.ts';
import { decodeKey, deriveKeys } from '../../src/auth/keys.ts';
import { openStore } from '../../src/store/database.ts';
import { waitUntil } from '../helpers/budget.ts';
import { ownDataDir, vrpInProcess } from '../helpers/cli.ts';
import { apiClient, fetchToken, prepareStore, smallOrder } from '../helpers/e2e.ts';
import { type ServerProcess, startServer } from '../helpers/server-process.ts';
import { createPgDatabase, type StoreKind, testStores } from '../helpers/stores.ts';

const KEY = randomBytes(32).toString('hex');

/** A fresh, empty store of `kind`: the env that names it to `vrp` and a server. */
async function freshStore(
  t: import('node:test').TestContext,
  kind: StoreKind,
): Promise<Record<string, string>> {
  const dir = ownDataDir(t, 'vrp-dbb-');
  if (kind === 'sqlite') return { VRP_DATA_DIR: dir };
  const db = await createPgDatabase();
  t.after(() => db.drop());
  return { VRP_DATA_DIR: dir, VRP_DATABASE_URL: db.url };
}

async function pgTableCount(url: string): Promise<number> {
  const client = new pg.Client(url);
  await client.connect();
  try {
    const r = await client.query(`select count(*)::int as n from pg_tables where schemaname = 'public'`);
    return r.rows[0].n;
  } finally {
    await client.end();
  }
}

const vrp = (args: string[], env: Record<string, string>, key = KEY) =>
  vrpInProcess(args, { ...env, VRP_SECRET_KEY: key, VRP_LOG_LEVEL: 'silent' });

for (const kind of testStores()) {
  describe(`vrp db backup / restore (${kind})`, () => {
    test('drill: backup under write load, restore into a fresh store, a server there finds every order answered before', async (t) => {
      const source = await freshStore(t, kind);
      const { store, app } = await prepareStore(source['VRP_DATA_DIR']!, source['VRP_DATABASE_URL']);
      await store.close();
      const servers: ServerProcess[] = [];
      t.after(async () => {
        for (const s of servers) await s.kill();
      });
      const serverEnv = { ...source, VRP_SECRET_KEY: KEY, VRP_SIMULATED_SPEED: '0.01' };
      const first = await startServer(serverEnv);
      servers.push(first);
      const api = apiClient(() => first.url, await fetchToken(first.url, app));

      // Orders keep coming from 4 clients until told to stop; each answered one is recorded
      // with whether the backup had begun when its answer came.
      let backupBegun = false;
      let stop = false;
      const answered: { id: string; jobQueued: boolean; beforeBackup: boolean }[] = [];
      let n = 0;
      const client = async () => {
        while (!stop) {
          const [{ service_id: id }] = await api.ok(
            'POST',
            'service/create-order',
            smallOrder(`d${n++}.example.com`),
          );
          const entry = { id: id as string, jobQueued: false, beforeBackup: !backupBegun };
          answered.push(entry);
          await api.ok('POST', `service/${id}/create`);
          // Only a job answered before the backup began must be in it.
          entry.jobQueued = entry.beforeBackup && !backupBegun;
        }
      };
      const clients = Array.from({ length: 4 }, client);
      const file = join(ownDataDir(t, 'vrp-dbb-file-'), 'store.backup');
      await waitUntil(
        '10 orders with their jobs answered',
        () => answered.filter((a) => a.jobQueued).length >= 10,
      );
      const duringBefore = answered.length;
      backupBegun = true;
      const backup = await vrp(['db', 'backup', file], source);
      const duringAfter = answered.length;
      stop = true;
      await Promise.all(clients);
      assert.equal(backup.code, 0, backup.err);
      assert.equal(backup.out, `backed up the store to ${file}\n`);
      assert.equal(statSync(file).mode & 0o777, 0o600, 'only its owner reads the backup');
      await first.stop();
      t.diagnostic(`orders answered while the backup ran: ${duringAfter - duringBefore}`);

      const target = await freshStore(t, kind);
      const restored = await vrp(['db', 'restore', file, '--json'], target);
      assert.equal(restored.code, 0, restored.err);
      assert.deepEqual(restored.json(), { restored: file });

      const second = await startServer({ ...target, VRP_SECRET_KEY: KEY, VRP_SIMULATED_SPEED: '0.01' });
      servers.push(second);
      const api2 = apiClient(() => second.url, await fetchToken(second.url, app));
      const before = answered.filter((a) => a.beforeBackup);
      assert.ok(before.length >= 10);
      for (const a of before) {
        const status = await api2.call('GET', `service/${a.id}/status`);
        assert.equal(
          status.status,
          200,
          `service ${a.id}, ordered before the backup, is in the restored store`,
        );
        if (a.jobQueued) {
          const jobs = await api2.ok('GET', `service/${a.id}/jobs`);
          assert.ok(jobs.length >= 1, `the create job of ${a.id} is in the restored store`);
        }
      }
      // Nothing half-written: every service the restored store holds answers whole.
      const restoredStore = await openStore({
        databaseUrl: target['VRP_DATABASE_URL'],
        dataDir: target['VRP_DATA_DIR']!,
      });
      try {
        const ids = await restoredStore.db.selectFrom('services').select('id').execute();
        assert.ok(ids.length >= before.length);
        for (const { id } of ids) assert.equal((await api2.call('GET', `service/${id}/status`)).status, 200);
      } finally {
        await restoredStore.close();
      }
    });

    test('refusals: a non-empty target, another secret key, a file that is no (intact) backup; nothing changed', async (t) => {
      const source = await freshStore(t, kind);
      const { store } = await prepareStore(source['VRP_DATA_DIR']!, source['VRP_DATABASE_URL']);
      // What a server does at its first start: records the key's check value.
      await checkKeyAgainstStore(
        store.db,
        deriveKeys(decodeKey(KEY)).check,
        'VRP_SECRET_KEY',
        store.location,
      );
      const resellers = async () => (await store.db.selectFrom('resellers').select('id').execute()).length;
      const count = await resellers();
      const file = join(ownDataDir(t, 'vrp-dbb-file-'), 'store.backup');
      assert.equal((await vrp(['db', 'backup', file], source)).code, 0);

      // Into the store it came from: not empty.
      const full = await vrp(['db', 'restore', file, '--json'], source);
      assert.equal(full.code, 1);
      assert.equal(full.json().error_code, 'restore_target_not_empty');
      assert.match(full.err, /is not empty: restore only into a new.*nothing was changed/);
      assert.equal(await resellers(), count);
      await store.close();

      const target = await freshStore(t, kind);
      const targetEmpty = async () =>
        kind === 'sqlite'
          ? !existsSync(join(target['VRP_DATA_DIR']!, 'vrp.sqlite'))
          : (await pgTableCount(target['VRP_DATABASE_URL']!)) === 0;

      const wrongKey = await vrp(['db', 'restore', file, '--json'], target, randomBytes(32).toString('hex'));
      assert.equal(wrongKey.code, 1);
      assert.equal(wrongKey.json().error_code, 'backup_key_mismatch');
      assert.match(wrongKey.err, /another secret key than VRP_SECRET_KEY.*unreadable/);
      assert.ok(await targetEmpty());

      // No VRP_SECRET_KEY and no key file: no key is made up, the restore is refused.
      const noKey = await vrpInProcess(['db', 'restore', file], { ...target, VRP_LOG_LEVEL: 'silent' });
      assert.equal(noKey.code, 1);
      assert.match(noKey.err, /no secret key yet/);
      assert.ok(!existsSync(join(target['VRP_DATA_DIR']!, 'secret.key')));
      assert.ok(await targetEmpty());

      const notBackup = join(target['VRP_DATA_DIR']!, 'notes.txt');
      writeFileSync(notBackup, 'not a backup\n');
      const truncated = join(target['VRP_DATA_DIR']!, 'truncated.backup');
      const whole = readFileSync(file);
      writeFileSync(truncated, whole.subarray(0, Math.floor(whole.length / 2)));
      for (const bad of [notBackup, truncated, join(target['VRP_DATA_DIR']!, 'missing.backup')]) {
        const r = await vrp(['db', 'restore', bad, '--json'], target);
        assert.equal(r.code, 1, `${bad}: ${r.err}`);
        assert.equal(r.json().error_code, 'backup_unreadable', bad);
        assert.doesNotMatch(r.err, /unexpected/);
        assert.ok(await targetEmpty());
      }
    });
  });
}

test('vrp db: usage errors', async () => {
  for (const args of [['db'], ['db', 'copy', 'x'], ['db', 'backup'], ['db', 'backup', 'a', 'b']]) {
    const r = await vrpInProcess(args, { VRP_LOG_LEVEL: 'silent' });
    assert.equal(r.code, 2, args.join(' '));
  }
});
