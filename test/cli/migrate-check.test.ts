/** `vrp migrate --check`: says whether a migration is pending (exit 10) and applies nothing. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { sql } from 'kysely';
import { MIGRATIONS_PENDING_EXIT } from '../../src/cli/migrate.ts';
import { vrpInProcess } from '../helpers/cli.ts';
import { storeAtMigration, testStores } from '../helpers/stores.ts';

const PREVIOUS = '039-sim-disk-pauses';
const LAST = '040-sim-start-with-host';

for (const kind of testStores()) {
  describe(`vrp migrate --check (${kind})`, () => {
    test('a store one migration behind: exit 10 naming it, nothing applied; after vrp migrate, exit 0', async (t) => {
      const at = await storeAtMigration(kind, PREVIOUS);
      t.after(() => at.done());
      const env = { ...at.env, VRP_LOG_LEVEL: 'silent' };
      const done = async () =>
        (await sql<{ name: string }>`select name from schema_migrations`.execute(at.store.db)).rows.map(
          (r) => r.name,
        );

      const check = await vrpInProcess(['migrate', '--check', '--json'], env);
      assert.equal(check.code, MIGRATIONS_PENDING_EXIT, check.err);
      assert.equal(MIGRATIONS_PENDING_EXIT, 10);
      assert.deepEqual(check.json(), { pending: [LAST] });
      assert.ok(!(await done()).includes(LAST), 'the check applied nothing');

      const human = await vrpInProcess(['migrate', '--check'], env);
      assert.equal(human.code, 10);
      assert.equal(human.out, `pending: ${LAST}\n`);

      assert.equal((await vrpInProcess(['migrate'], env)).code, 0);
      const after = await vrpInProcess(['migrate', '--check'], env);
      assert.equal(after.code, 0, after.err);
      assert.equal(after.out, 'the schema is up to date\n');
    });

    test('a store migrated by a newer version: exit 1 naming the unknown migration', async (t) => {
      const at = await storeAtMigration(kind, LAST);
      t.after(() => at.done());
      await sql`insert into schema_migrations (name, timestamp) values ('999-future', '2030-01-01')`.execute(
        at.store.db,
      );
      const check = await vrpInProcess(['migrate', '--check', '--json'], {
        ...at.env,
        VRP_LOG_LEVEL: 'silent',
      });
      assert.equal(check.code, 1);
      assert.equal(check.json().error_code, 'store_newer');
      assert.match(check.err, /newer version of vrp: 999-future/);
    });
  });
}

test('vrp migrate --check on a new store: all migrations listed as pending', async (t) => {
  const at = await storeAtMigration('sqlite', '001-initial');
  t.after(() => at.done());
  await sql`delete from schema_migrations`.execute(at.store.db);
  const check = await vrpInProcess(['migrate', '--check', '--json'], { ...at.env, VRP_LOG_LEVEL: 'silent' });
  assert.equal(check.code, 10);
  assert.equal(check.json().pending[0], '001-initial');
  assert.equal(check.json().pending.at(-1), LAST);
});

test('vrp migrate takes no other argument', async () => {
  const r = await vrpInProcess(['migrate', '--dry-run'], { VRP_LOG_LEVEL: 'silent' });
  assert.equal(r.code, 2);
  assert.match(r.err, /unexpected arguments: --dry-run/);
});
