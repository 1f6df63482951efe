/**
 * The webhook sender's first look (anyDue, src/store/repos/webhook-deliveries.ts): whether any
 * attempt is due and free. It agrees with the fair pick (dueCandidates) on every state a
 * delivery can be in, on both stores: nothing queued, due, not yet due, held by a live lease,
 * held by a lease that ran out, delivered.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ensureReseller } from '../../src/auth/applications.ts';
import type { NewEvent } from '../../src/domain/events.ts';
import { recordEvents } from '../../src/store/repos/events.ts';
import { anyDue, dueCandidates } from '../../src/store/repos/webhook-deliveries.ts';
import { insertWebhook } from '../../src/store/repos/webhooks.ts';
import { createTestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';

const finished: NewEvent = {
  type: 'job.finished',
  data: { job_id: 'j', service_id: 's', action: 'stop', status: 'succeeded', error: null },
};

for (const store of testStores()) {
  describe(`the sender's look for due attempts (${store})`, () => {
    test('is true exactly when the fair pick finds an attempt', async () => {
      const t = await createTestApp({}, { store, demo: false });
      try {
        const db = t.ctx.store.db;
        const now = 1_800_000_000_000;
        const look = async (at: number, realNow: number) => {
          const q = { now: at, realNow, exceptWebhooks: [], exceptResellers: [], limit: 32 };
          const due = await anyDue(db, q);
          const picked = await dueCandidates(db, q);
          assert.equal(due, picked.length > 0, `anyDue says ${due}, the pick found ${picked.length}`);
          return due;
        };

        assert.equal(await look(now, now), false, 'nothing queued');

        const acme = (await ensureReseller(db, 'acme', now)).id;
        await insertWebhook(db, {
          id: 'hook',
          resellerId: acme,
          url: 'https://hook.example.com/',
          eventTypes: null,
          secretEnc: 'x',
          now,
        });
        await db.transaction().execute((tx) => recordEvents(tx, acme, [finished], now));
        assert.equal(await look(now, now), true, 'queued, due at once');
        assert.equal(await look(now - 1, now), false, 'not yet due on the server clock');

        const set = (values: {
          next_attempt_at?: number;
          locked_until?: number | null;
          status?: 'succeeded';
        }) => db.updateTable('webhook_deliveries').set(values).where('webhook_id', '=', 'hook').execute();
        await set({ next_attempt_at: now + 5_000 });
        assert.equal(await look(now, now), false, 'a retry not yet due');
        assert.equal(await look(now + 5_000, now), true, 'the retry due');

        await set({ next_attempt_at: now, locked_until: now + 1_000 });
        assert.equal(await look(now, now), false, 'held by a live lease');
        assert.equal(await look(now, now + 1_001), true, 'its lease ran out (real time)');

        await set({ locked_until: null, status: 'succeeded' });
        assert.equal(await look(now, now), false, 'sent');
      } finally {
        await t.close();
      }
    });
  });
}
