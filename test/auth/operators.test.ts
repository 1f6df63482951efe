import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  createOperator,
  createOperatorLogin,
  OperatorError,
  setOperatorEnabledByName,
  setOperatorPassword,
} from '../../src/auth/operators.ts';
import { verifySecret } from '../../src/auth/secret-hash.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

/** verifySecret, with the cost parameters of every stored hash it was asked to check. */
function countingVerifier() {
  const costs: string[] = [];
  return {
    costs,
    verify: (secret: string, stored: string) => {
      costs.push(stored.split('$').slice(0, 4).join('$'));
      return verifySecret(secret, stored);
    },
  };
}

/** scrypt at the password cost (N=2^17, r=8, p=1). */
const PASSWORD_COST = 'scrypt$131072$8$1';

for (const store of testStores()) {
  describe(`operator console passwords (${store})`, () => {
    let t: TestApp;
    // One login checker for the file: its dummy hash costs a password hash to make.
    const counter = countingVerifier();
    let login: ReturnType<typeof createOperatorLogin>;
    before(async () => {
      t = await createTestApp({}, { store, demo: false });
      login = createOperatorLogin(t.ctx.store.db, counter.verify);
    });
    after(() => t.close());

    const storedHash = async (name: string) =>
      (
        await t.ctx.store.db
          .selectFrom('operators')
          .select('password_hash')
          .where('name', '=', name)
          .executeTakeFirstOrThrow()
      ).password_hash;

    test('set and verified; stored only as a salted hash at the password cost', async () => {
      const password = 'correct horse battery staple';
      await createOperator(t.ctx.store.db, { name: 'carol', password }, Date.now());
      const hash = String(await storedHash('carol'));
      assert.ok(hash.startsWith(`${PASSWORD_COST}$`), hash);
      assert.ok(!hash.includes(password));

      const found = await login.verify('carol', password);
      assert.equal(found?.name, 'carol');
      assert.equal(found?.enabled, true);
      assert.ok(!('passwordHash' in (found ?? {})), 'the hash stays inside');
      assert.equal(await login.verify('carol', `${password}!`), undefined);

      // A new password replaces the old one.
      await setOperatorPassword(t.ctx.store.db, 'carol', 'another long passphrase', Date.now());
      assert.equal(await login.verify('carol', password), undefined);
      assert.equal((await login.verify('carol', 'another long passphrase'))?.name, 'carol');
      assert.notEqual(await storedHash('carol'), hash);
    });

    test('every refusal costs one password hash: unknown name, no password, disabled, wrong password', async () => {
      await createOperator(t.ctx.store.db, { name: 'dave' }, Date.now());
      await createOperator(t.ctx.store.db, { name: 'erin', password: 'erin has a passphrase' }, Date.now());
      await createOperator(t.ctx.store.db, { name: 'frank', password: 'frank has a passphrase' }, Date.now());
      await setOperatorEnabledByName(t.ctx.store.db, 'frank', false, Date.now());
      const cases: [string, string][] = [
        ['Erin', 'erin has a passphrase'],
        ['dave', 'some password here'],
        ['frank', 'frank has a passphrase'],
        ['erin', 'not erin passphrase'],
        ['bad\u0000name'.repeat(50), 'y'.repeat(100_000)],
      ];
      for (const [name, password] of cases) {
        counter.costs.length = 0;
        assert.equal(await login.verify(name, password), undefined, name.slice(0, 20));
        assert.deepEqual(
          counter.costs,
          [PASSWORD_COST],
          `${name.slice(0, 20)}: one check at the password cost`,
        );
      }
    });

    test('weak or unusable passwords are refused and nothing is stored', async () => {
      for (const password of [
        '',
        'short',
        '11 chars..!',
        'a'.repeat(1025),
        'line\nbreak in it',
        'tab\there and more',
      ]) {
        await assert.rejects(
          createOperator(t.ctx.store.db, { name: 'weak', password }, Date.now()),
          OperatorError,
          JSON.stringify(password.slice(0, 20)),
        );
      }
      assert.equal(
        await t.ctx.store.db
          .selectFrom('operators')
          .select('id')
          .where('name', '=', 'weak')
          .executeTakeFirst(),
        undefined,
      );
      await createOperator(t.ctx.store.db, { name: 'grace' }, Date.now());
      await assert.rejects(setOperatorPassword(t.ctx.store.db, 'grace', 'short', Date.now()), OperatorError);
      assert.equal(await storedHash('grace'), null);
      await assert.rejects(
        setOperatorPassword(t.ctx.store.db, 'nobody', 'a long enough passphrase', Date.now()),
        /no operator named "nobody"/,
      );
      // Twelve characters of any script are enough.
      await setOperatorPassword(t.ctx.store.db, 'grace', 'пароль-пароль', Date.now());
      assert.equal(
        (await createOperatorLogin(t.ctx.store.db).verify('grace', 'пароль-пароль'))?.name,
        'grace',
      );
    });

    test('names: unique, and what a reseller name may be', async () => {
      await createOperator(t.ctx.store.db, { name: 'heidi' }, Date.now());
      await assert.rejects(
        createOperator(t.ctx.store.db, { name: 'heidi' }, Date.now()),
        /an operator named "heidi" exists already/,
      );
      const concurrent = await Promise.allSettled(
        [1, 2, 3].map(() => createOperator(t.ctx.store.db, { name: 'ivan' }, Date.now())),
      );
      assert.equal(concurrent.filter((r) => r.status === 'fulfilled').length, 1);
      for (const name of ['', '-dash', 'with/slash', 'x'.repeat(101)]) {
        await assert.rejects(createOperator(t.ctx.store.db, { name }, Date.now()), OperatorError, name);
      }
    });
  });
}
