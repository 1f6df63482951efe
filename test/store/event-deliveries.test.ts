/**
 * Recording events queues a delivery for each webhook of the same reseller that wants them, in
 * the same transaction (on PostgreSQL in the same statement as the events): the webhooks that
 * take every type, those that name the type, no others, and never another reseller's.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ensureReseller } from '../../src/auth/applications.ts';
import { recordEvents } from '../../src/store/repos/events.ts';
import { createTestApp } from '../helpers/app.ts';
import { changed, finished, webhookOf } from '../helpers/events.ts';
import { testStores } from '../helpers/stores.ts';

for (const store of testStores()) {
  describe(`recording events queues their deliveries (${store})`, () => {
    test('each webhook of the reseller that wants an event gets one delivery of it; nothing else', async () => {
      const t = await createTestApp({}, { store, demo: false });
      try {
        const db = t.ctx.store.db;
        const now = Date.now();
        const acme = (await ensureReseller(db, 'acme', now)).id;
        const globex = (await ensureReseller(db, 'globex', now)).id;
        const hook = webhookOf(db, now);
        await hook('all', acme, null);
        await hook('finished', acme, ['job.finished']);
        await hook('changed', acme, ['service.status_changed']);
        await hook('both', acme, ['service.status_changed', 'job.finished']);
        await hook('other', globex, null);

        const events = await db
          .transaction()
          .execute((tx) => recordEvents(tx, acme, [changed, finished], now));
        const [c, f] = events.map((e) => e.id);
        const rows = await db
          .selectFrom('webhook_deliveries')
          .select(['webhook_id', 'event_id', 'status', 'attempts', 'next_attempt_at', 'created_at'])
          .execute();
        const got = rows.map(
          (r) =>
            `${r.webhook_id} ${r.event_id === c ? 'changed' : r.event_id === f ? 'finished' : r.event_id}`,
        );
        assert.deepEqual(got.sort(), [
          'all changed',
          'all finished',
          'both changed',
          'both finished',
          'changed changed',
          'finished finished',
        ]);
        for (const r of rows) {
          assert.equal(r.status, 'pending');
          assert.equal(r.attempts, 0);
          assert.equal(Number(r.next_attempt_at), now, 'due at once');
          assert.equal(Number(r.created_at), now);
        }

        // A reseller without webhooks: its events are recorded, no delivery is queued.
        const before = rows.length;
        const quiet = (await ensureReseller(db, 'initech', now)).id;
        const recorded = await db.transaction().execute((tx) => recordEvents(tx, quiet, [finished], now));
        assert.equal(recorded.length, 1);
        const stored = await db
          .selectFrom('events')
          .select('reseller_id')
          .where('id', '=', recorded[0]!.id)
          .execute();
        assert.deepEqual(
          stored.map((r) => r.reseller_id),
          [quiet],
        );
        assert.equal((await db.selectFrom('webhook_deliveries').select('event_id').execute()).length, before);

        // A transaction that rolls back leaves neither events nor deliveries.
        const failing = db.transaction().execute(async (tx) => {
          await recordEvents(tx, acme, [finished], now);
          throw new Error('the change failed');
        });
        await assert.rejects(failing, /the change failed/);
        assert.equal((await db.selectFrom('webhook_deliveries').select('event_id').execute()).length, before);
        assert.equal((await db.selectFrom('events').select('id').execute()).length, 3);
      } finally {
        await t.close();
      }
    });
  });
}
