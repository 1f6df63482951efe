import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { guardAttempt } from '../../src/auth/attempt-guard.ts';
import { createFailureThrottle } from '../../src/auth/failure-throttle.ts';
import {
  createOperator,
  createOperatorLogin,
  OperatorError,
  setOperatorEnabledByName,
  setOperatorPassword,
} from '../../src/auth/operators.ts';
import { verifySecret } from '../../src/auth/secret-hash.ts';
import { AttemptRefused, createSlowCheckGate } from '../../src/auth/slow-check-gate.ts';
import { LOGIN_HASH_LIMITS } from '../../src/http/console/pages/login.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { heldVerifier } from '../helpers/held-verifier.ts';
import { until } from '../helpers/job-worker.ts';
import { TEST_PASSWORD_COST, TEST_SECRET_COST } from '../helpers/secret-cost.ts';
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

/**
 * What these tests hash their passwords at: each hash at the production cost (PASSWORD_COST)
 * costs about a second of CPU. test/cli/operator-cli.test.ts checks that `vrp operator` stores
 * PASSWORD_COST hashes and that a login's dummy hash has that cost when none is given.
 */
const LOW = { secretCost: TEST_SECRET_COST, passwordCost: TEST_PASSWORD_COST } as const;
/** How a hash at the tests' password cost begins. */
const TEST_COST = `scrypt$${TEST_PASSWORD_COST.N}$${TEST_PASSWORD_COST.r}$${TEST_PASSWORD_COST.p}`;

for (const store of testStores()) {
  describe(`operator console passwords (${store})`, () => {
    let t: TestApp;
    // One login checker for the file, its dummy hash at the tests' password cost.
    const counter = countingVerifier();
    let login: ReturnType<typeof createOperatorLogin>;
    before(async () => {
      t = await createTestApp({}, { store, demo: false });
      login = createOperatorLogin(t.ctx.store.db, counter.verify, TEST_PASSWORD_COST);
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
      await createOperator(t.ctx.store.db, { name: 'carol', password, ...LOW }, Date.now());
      const hash = String(await storedHash('carol'));
      assert.ok(hash.startsWith(`${TEST_COST}$`), hash);
      assert.ok(!hash.includes(password));

      const found = await login.verify('carol', password);
      assert.equal(found?.name, 'carol');
      assert.equal(found?.enabled, true);
      assert.ok(!('passwordHash' in (found ?? {})), 'the hash stays inside');
      assert.equal(await login.verify('carol', `${password}!`), undefined);

      // A new password replaces the old one.
      await setOperatorPassword(
        t.ctx.store.db,
        'carol',
        'another long passphrase',
        Date.now(),
        undefined,
        LOW,
      );
      assert.equal(await login.verify('carol', password), undefined);
      assert.equal((await login.verify('carol', 'another long passphrase'))?.name, 'carol');
      assert.notEqual(await storedHash('carol'), hash);
    });

    test('every refusal costs one password hash: unknown name, no password, disabled, wrong password', async () => {
      await createOperator(t.ctx.store.db, { name: 'dave', ...LOW }, Date.now());
      await createOperator(
        t.ctx.store.db,
        { name: 'erin', password: 'erin has a passphrase', ...LOW },
        Date.now(),
      );
      await createOperator(
        t.ctx.store.db,
        { name: 'frank', password: 'frank has a passphrase', ...LOW },
        Date.now(),
      );
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
        assert.deepEqual(counter.costs, [TEST_COST], `${name.slice(0, 20)}: one check at the password cost`);
      }
    });

    test('logins at once, as the console guards them: two password hashes at a time, 16 waiting, the rest refused 503', async () => {
      await createOperator(
        t.ctx.store.db,
        { name: 'judy', password: 'judy has a passphrase', ...LOW },
        Date.now(),
      );
      const held = heldVerifier();
      const guarded = createOperatorLogin(t.ctx.store.db, held.verify, TEST_PASSWORD_COST);
      const throttle = createFailureThrottle();
      const gate = createSlowCheckGate(LOGIN_HASH_LIMITS);
      let answered = 0;
      // From 20 addresses, so that the bound overall is what limits them, not each address's.
      const results = Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const attempt = guardAttempt(throttle, gate, `10.6.0.${i}`, Date.now);
          try {
            return await guarded.verify(
              i % 2 ? 'judy' : 'nobody-here',
              `wrong passphrase ${i}`,
              attempt.slowCheck,
            );
          } catch (err) {
            return err;
          } finally {
            answered += 1;
          }
        }),
      );
      // Answered, waiting for a place, or hashing (the first hash in a place makes the dummy first).
      await until(() => answered + gate.waiting + held.inFlight === 20, 'every login at its check');
      assert.equal(gate.running, LOGIN_HASH_LIMITS.total);
      await held.drain(() => answered === 20);
      const outcomes = await results;
      const refused = outcomes.filter((o) => o instanceof AttemptRefused);
      assert.equal(refused.length, 20 - LOGIN_HASH_LIMITS.total - LOGIN_HASH_LIMITS.queue);
      for (const r of refused) {
        assert.equal(r.status, 503);
        assert.equal(r.retryAfter, 1);
      }
      assert.equal(outcomes.filter((o) => o === undefined).length, 18, 'the others were checked and refused');
      assert.equal(held.started, 18);
      assert.equal(held.peak, LOGIN_HASH_LIMITS.total);
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
          createOperator(t.ctx.store.db, { name: 'weak', password, ...LOW }, Date.now()),
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
      await createOperator(t.ctx.store.db, { name: 'grace', ...LOW }, Date.now());
      await assert.rejects(
        setOperatorPassword(t.ctx.store.db, 'grace', 'short', Date.now(), undefined, LOW),
        OperatorError,
      );
      assert.equal(await storedHash('grace'), null);
      await assert.rejects(
        setOperatorPassword(t.ctx.store.db, 'nobody', 'a long enough passphrase', Date.now(), undefined, LOW),
        /no operator named "nobody"/,
      );
      // Twelve characters of any script are enough.
      await setOperatorPassword(t.ctx.store.db, 'grace', 'пароль-пароль', Date.now(), undefined, LOW);
      assert.equal(
        (
          await createOperatorLogin(t.ctx.store.db, undefined, TEST_PASSWORD_COST).verify(
            'grace',
            'пароль-пароль',
          )
        )?.name,
        'grace',
      );
    });

    test('names: unique, and what a reseller name may be', async () => {
      await createOperator(t.ctx.store.db, { name: 'heidi', ...LOW }, Date.now());
      await assert.rejects(
        createOperator(t.ctx.store.db, { name: 'heidi', ...LOW }, Date.now()),
        /an operator named "heidi" exists already/,
      );
      const concurrent = await Promise.allSettled(
        [1, 2, 3].map(() => createOperator(t.ctx.store.db, { name: 'ivan', ...LOW }, Date.now())),
      );
      assert.equal(concurrent.filter((r) => r.status === 'fulfilled').length, 1);
      for (const name of ['', '-dash', 'with/slash', 'x'.repeat(101)]) {
        await assert.rejects(
          createOperator(t.ctx.store.db, { name, ...LOW }, Date.now()),
          OperatorError,
          name,
        );
      }
    });
  });
}
