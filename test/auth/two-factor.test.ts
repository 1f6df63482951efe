import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { OperatorError } from '../../src/auth/operators.ts';
import { verifySecret } from '../../src/auth/secret-hash.ts';
import { totpCode } from '../../src/auth/totp.ts';
import { createTwoFactor, resetTwoFactorByName, type TwoFactor } from '../../src/auth/two-factor.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { createTestOperator } from '../helpers/operator.ts';
import { testStores } from '../helpers/stores.ts';

const T0 = 1_800_000_000_000;

for (const store of testStores()) {
  describe(`two-factor login: enrolment, codes, recovery codes, reset (${store})`, () => {
    let t: TestApp;
    let twoFactor: TwoFactor;
    before(async () => {
      t = await createTestApp({}, { store, demo: false });
      twoFactor = createTwoFactor({
        db: t.ctx.store.db,
        secretBox: t.ctx.secretBox,
        secretCost: t.ctx.secretCost,
      });
    });
    after(() => t.close());

    const operatorId = async (name: string) =>
      (
        await t.ctx.store.db
          .selectFrom('operators')
          .select('id')
          .where('name', '=', name)
          .executeTakeFirstOrThrow()
      ).id;

    async function enrolled(name: string) {
      await createTestOperator(t, { name });
      const id = await operatorId(name);
      const secret = await twoFactor.pendingSecret(id, T0);
      assert.ok(secret);
      const confirmed = await twoFactor.confirm(id, totpCode(secret, T0), T0);
      assert.ok(confirmed.ok);
      return { id, secret, recoveryCodes: confirmed.recoveryCodes };
    }

    test('the pending secret is stored sealed and stays the same until confirmed; a wrong code changes nothing', async () => {
      await createTestOperator(t, { name: 'pending' });
      const id = await operatorId('pending');
      const secret = await twoFactor.pendingSecret(id, T0);
      assert.ok(secret);
      assert.equal(await twoFactor.pendingSecret(id, T0 + 60_000), secret);
      const row = await t.ctx.store.db
        .selectFrom('operator_two_factor')
        .selectAll()
        .where('operator_id', '=', id)
        .executeTakeFirstOrThrow();
      assert.ok(!row.secret.includes(secret), 'not in clear');
      assert.equal(t.ctx.secretBox.open(row.secret), secret);

      const wrong = totpCode(secret, T0 + 5 * 60_000);
      assert.deepEqual(await twoFactor.confirm(id, wrong, T0), { ok: false, reason: 'wrong' });
      assert.equal((await twoFactor.status(id)).enrolled, false);
      assert.equal(await twoFactor.pendingSecret(id, T0), secret);
    });

    test('enrolment gives ten distinct recovery codes, stored hashed', async () => {
      const { id, recoveryCodes } = await enrolled('ten');
      assert.equal(recoveryCodes.length, 10);
      assert.equal(new Set(recoveryCodes).size, 10);
      for (const c of recoveryCodes) assert.match(c, /^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/);
      const rows = await t.ctx.store.db
        .selectFrom('operator_recovery_codes')
        .selectAll()
        .where('operator_id', '=', id)
        .execute();
      assert.equal(rows.length, 10);
      for (const r of rows) assert.match(r.code_hash, /^scrypt\$/);
      assert.deepEqual(await twoFactor.status(id), { enrolled: true, enrolledAt: T0, recoveryCodesLeft: 10 });
      // Enrolled: no pending secret any more.
      assert.equal(await twoFactor.pendingSecret(id, T0), undefined);
    });

    test('a code works once: the code that confirmed the enrolment, and each later one', async () => {
      const { id, secret } = await enrolled('once');
      assert.deepEqual(await twoFactor.verify(id, totpCode(secret, T0), T0), { ok: false, reason: 'reused' });
      const later = T0 + 60_000;
      assert.deepEqual(await twoFactor.verify(id, totpCode(secret, later), later), {
        ok: true,
        kind: 'totp',
      });
      assert.deepEqual(await twoFactor.verify(id, totpCode(secret, later), later), {
        ok: false,
        reason: 'reused',
      });
      // A code of the step before the last used one (within the drift) is refused too.
      assert.deepEqual(await twoFactor.verify(id, totpCode(secret, later - 30_000), later), {
        ok: false,
        reason: 'reused',
      });
      assert.deepEqual(await twoFactor.verify(id, '000000', later + 60_000), { ok: false, reason: 'wrong' });
    });

    test('the same code sent twice at once logs in once', async () => {
      const { id, secret } = await enrolled('race');
      const at = T0 + 90_000;
      const results = await Promise.all([1, 2, 3].map(() => twoFactor.verify(id, totpCode(secret, at), at)));
      assert.equal(results.filter((r) => r.ok).length, 1, JSON.stringify(results));
    });

    test('a recovery code works once, in any case and spacing; a wrong one is refused', async () => {
      const { id, recoveryCodes } = await enrolled('recovery');
      const [first = '', second = ''] = recoveryCodes;
      assert.deepEqual(await twoFactor.verify(id, first, T0), { ok: true, kind: 'recovery' });
      assert.deepEqual(await twoFactor.verify(id, first, T0), { ok: false, reason: 'recovery_used' });
      assert.deepEqual(await twoFactor.verify(id, ` ${second.replaceAll('-', ' ').toUpperCase()} `, T0), {
        ok: true,
        kind: 'recovery',
      });
      // Right first group, wrong rest: wrong (and says nothing of whether it was used).
      assert.deepEqual(await twoFactor.verify(id, `${first.slice(0, 4)}-aaaa-aaaa-aaaa`, T0), {
        ok: false,
        reason: 'wrong',
      });
      assert.equal((await twoFactor.status(id)).recoveryCodesLeft, 8);
    });

    test('every wrong recovery code costs one hash, whether its first group is a real one or not', async () => {
      const { id, recoveryCodes } = await enrolled('timing');
      const checked: string[] = [];
      const counting = createTwoFactor({
        db: t.ctx.store.db,
        secretBox: t.ctx.secretBox,
        secretCost: t.ctx.secretCost,
        verify: (secret, stored) => {
          checked.push(secret);
          return verifySecret(secret, stored);
        },
      });
      const real = recoveryCodes[0] ?? '';
      const unknownGroup = real.startsWith('aaaa') ? 'bbbb-aaaa-aaaa-aaaa' : 'aaaa-aaaa-aaaa-aaaa';
      for (const code of [`${real.slice(0, 4)}-aaaa-aaaa-aaaa`, unknownGroup]) {
        assert.deepEqual(await counting.verify(id, code, T0), { ok: false, reason: 'wrong' });
      }
      assert.equal(checked.length, 2);
    });

    test('reset removes the secret and the recovery codes, and ends the console sessions', async () => {
      const { id, recoveryCodes } = await enrolled('reset');
      await t.ctx.store.db
        .insertInto('console_sessions')
        .values({
          id: 'x'.repeat(64),
          operator_id: id,
          created_at: T0,
          last_seen_at: T0,
          expires_at: T0 + 1e9,
          stage: 'ok',
        })
        .execute();
      assert.equal(await resetTwoFactorByName(t.ctx.store.db, 'reset', T0), true);
      assert.deepEqual(await twoFactor.status(id), {
        enrolled: false,
        enrolledAt: undefined,
        recoveryCodesLeft: 0,
      });
      assert.deepEqual(await twoFactor.verify(id, recoveryCodes[0] ?? '', T0), {
        ok: false,
        reason: 'not_enrolled',
      });
      const sessions = await t.ctx.store.db
        .selectFrom('console_sessions')
        .select('id')
        .where('operator_id', '=', id)
        .execute();
      assert.deepEqual(sessions, []);
      // Again: nothing to remove.
      assert.equal(await resetTwoFactorByName(t.ctx.store.db, 'reset', T0), false);
      await assert.rejects(resetTwoFactorByName(t.ctx.store.db, 'nobody', T0), OperatorError);
    });
  });
}
