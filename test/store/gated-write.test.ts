/**
 * A guarded change and the writes that belong to it (src/store/gated-write.ts), on both stores:
 * when the guard changes its row, every part is written (updates, inserts, events with their
 * webhook deliveries, by the rule of recordEvents), each once however many rows the guard
 * changed; when it changes none, nothing is; a part that fails takes the guard's change with it;
 * in a caller's transaction, all of it rolls back with the transaction. A guarded read answers
 * only if its guard changed a row, and tells a read that found nothing from a guard that matched
 * nothing.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { sql } from 'kysely';
import { ensureReseller } from '../../src/auth/applications.ts';
import { gatedInsert, gatedUpdate, readGated, writeGated } from '../../src/store/gated-write.ts';
import { gatedEvents } from '../../src/store/repos/events.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { changed, finished, webhookOf } from '../helpers/events.ts';
import { statementCounter } from '../helpers/statement-counter.ts';
import { testStores } from '../helpers/stores.ts';

const NOW = 1_700_000_000_000;

const auditEntry = (id: string, resellerId: string) => ({
  id,
  created_at: NOW,
  actor_type: 'system' as const,
  actor_id: 'test',
  action: 'test.gated',
  target_type: null,
  target_id: null,
  service_id: null,
  reseller_id: resellerId,
  outcome: 'ok',
  request_id: null,
  actor_name: null,
  credential_type: null,
  credential_id: null,
  source_address: null,
  reason: null,
});

for (const store of testStores()) {
  describe(`a guarded change and the writes that belong to it (${store})`, () => {
    let t: TestApp;
    let acme: string;
    let globex: string;
    before(async () => {
      t = await createTestApp({}, { demo: false, store });
      const db = t.ctx.store.db;
      acme = (await ensureReseller(db, 'acme', NOW)).id;
      globex = (await ensureReseller(db, 'globex', NOW)).id;
      const hook = webhookOf(db, NOW);
      await hook('all', acme, null);
      await hook('finished', acme, ['job.finished']);
      await hook('other', globex, null);
    });
    after(() => t.close());
    beforeEach(async () => {
      const db = t.ctx.store.db;
      await db.deleteFrom('webhook_deliveries').execute();
      await db.deleteFrom('events').execute();
      await db.deleteFrom('audit_log').execute();
      await db.updateTable('resellers').set({ name: 'acme', enabled: 1 }).where('id', '=', acme).execute();
      await db.updateTable('resellers').set({ name: 'globex' }).where('id', '=', globex).execute();
      await db.updateTable('resellers').set({ created_at: NOW }).execute();
    });

    /** What the writes left: the two resellers' names, the audit entries, the events, the deliveries. */
    const state = async () => {
      const db = t.ctx.store.db;
      const names = await db.selectFrom('resellers').select(['id', 'name']).orderBy('name').execute();
      const audit = await db.selectFrom('audit_log').select(['id', 'reseller_id']).orderBy('id').execute();
      const events = await db
        .selectFrom('events')
        .select(['id', 'type', 'reseller_id', 'data'])
        .orderBy('seq')
        .execute();
      const deliveries = await db
        .selectFrom('webhook_deliveries')
        .select(['webhook_id', 'event_id'])
        .execute();
      const typeOf = new Map(events.map((e) => [e.id, e.type]));
      return {
        names: names.map((r) => `${r.id === acme ? 'acme' : 'globex'}: ${r.name}`),
        audit: audit.map((r) => `${r.id} ${r.reseller_id === acme ? 'acme' : r.reseller_id}`),
        events: events.map((e) => `${e.reseller_id === acme ? 'acme' : e.reseller_id} ${e.type} ${e.data}`),
        deliveries: deliveries.map((d) => `${d.webhook_id} ${typeOf.get(d.event_id)}`).sort(),
      };
    };

    const guard = (enabled: number) =>
      ({ table: 'resellers', set: { name: 'acme, changed' }, where: { id: acme, enabled } }) as const;
    const parts = () => [
      gatedUpdate({ table: 'resellers', set: { name: 'globex, changed with it' }, where: { id: globex } }),
      gatedInsert('audit_log', auditEntry('a-1', acme)),
      gatedEvents(acme, [changed, finished], NOW),
    ];

    test('the guard changes its row: every part is written, the events with their deliveries', async () => {
      assert.equal(await writeGated(t.ctx.store.db, guard(1), parts()), true);
      assert.deepEqual(await state(), {
        names: ['acme: acme, changed', 'globex: globex, changed with it'],
        audit: ['a-1 acme'],
        events: [
          `acme service.status_changed ${JSON.stringify(changed.data)}`,
          `acme job.finished ${JSON.stringify(finished.data)}`,
        ],
        // Each webhook of the reseller that wants an event, none of another reseller's.
        deliveries: ['all job.finished', 'all service.status_changed', 'finished job.finished'],
      });
      // Run again with the same shape: the values are each run's own.
      assert.equal(
        await writeGated(
          t.ctx.store.db,
          { table: 'resellers', set: { name: 'acme, again' }, where: { id: acme, enabled: 1 } },
          [
            gatedUpdate({ table: 'resellers', set: { name: 'globex, again' }, where: { id: globex } }),
            gatedInsert('audit_log', auditEntry('a-2', acme)),
            gatedEvents(acme, [finished, changed], NOW + 1),
          ],
        ),
        true,
      );
      const s = await state();
      assert.deepEqual(s.names, ['acme: acme, again', 'globex: globex, again']);
      assert.deepEqual(s.audit, ['a-1 acme', 'a-2 acme']);
      assert.equal(s.events.length, 4);
      assert.equal(s.deliveries.length, 6);
    });

    test('the guard matches no row: nothing is written, and it says so', async () => {
      assert.equal(await writeGated(t.ctx.store.db, guard(0), parts()), false);
      assert.deepEqual(await state(), {
        names: ['acme: acme', 'globex: globex'],
        audit: [],
        events: [],
        deliveries: [],
      });
    });

    test("two resellers' writes made together: each one's events go to its own reseller's webhooks", async () => {
      const db = t.ctx.store.db;
      const rename = (id: string, name: string, audit: string) =>
        writeGated(db, { table: 'resellers', set: { name }, where: { id, enabled: 1 } }, [
          gatedInsert('audit_log', auditEntry(audit, id)),
          gatedEvents(id, [changed, finished], NOW),
        ]);
      // One turn, one shape: one statement on PostgreSQL (the two writes' rows in its arrays).
      const answers = await Promise.all([
        rename(acme, 'acme, changed', 'a-1'),
        rename(globex, 'globex, changed', 'g-1'),
      ]);
      assert.deepEqual(answers, [true, true]);
      const s = await state();
      assert.deepEqual(s.names, ['acme: acme, changed', 'globex: globex, changed']);
      assert.deepEqual(s.audit, ['a-1 acme', `g-1 ${globex}`]);
      assert.deepEqual(
        s.events.sort(),
        [
          `${globex} job.finished ${JSON.stringify(finished.data)}`,
          `${globex} service.status_changed ${JSON.stringify(changed.data)}`,
          `acme job.finished ${JSON.stringify(finished.data)}`,
          `acme service.status_changed ${JSON.stringify(changed.data)}`,
        ].sort(),
      );
      assert.deepEqual(s.deliveries, [
        'all job.finished',
        'all service.status_changed',
        'finished job.finished',
        'other job.finished',
        'other service.status_changed',
      ]);
      if (store === 'postgres') {
        const { rows } = await sql<{ x: string }>`select distinct xmin::text as x from events`.execute(db);
        assert.equal(rows.length, 1, 'one statement wrote every event');
      }
    });

    test('a guard that changes several rows: each part is still written once', async () => {
      const db = t.ctx.store.db;
      const both = { table: 'resellers', set: { created_at: 5 }, where: { enabled: 1 } } as const;
      const written = await writeGated(db, both, [
        gatedInsert('audit_log', auditEntry('a-1', acme)),
        gatedEvents(acme, [finished], NOW),
      ]);
      assert.equal(written, true);
      const stamps = await db.selectFrom('resellers').select('created_at').execute();
      assert.deepEqual(
        stamps.map((r) => Number(r.created_at)),
        [5, 5],
      );
      const s = await state();
      assert.deepEqual(s.audit, ['a-1 acme']);
      assert.deepEqual(s.events, [`acme job.finished ${JSON.stringify(finished.data)}`]);
      assert.deepEqual(s.deliveries, ['all job.finished', 'finished job.finished']);
    });

    test('a part that fails undoes the guard and every other part', async () => {
      await t.ctx.store.db.insertInto('audit_log').values(auditEntry('taken', globex)).execute();
      await assert.rejects(
        writeGated(t.ctx.store.db, guard(1), [
          ...parts(),
          // The same id again: a duplicate key.
          gatedInsert('audit_log', auditEntry('taken', acme)),
        ]),
      );
      assert.deepEqual(await state(), {
        names: ['acme: acme', 'globex: globex'],
        audit: [`taken ${globex}`],
        events: [],
        deliveries: [],
      });
    });

    test("in a caller's transaction: part of it, and rolled back with it", async () => {
      const db = t.ctx.store.db;
      await assert.rejects(
        db.transaction().execute(async (tx) => {
          assert.equal(await writeGated(tx, guard(1), parts()), true);
          throw new Error('rolled back');
        }),
        /rolled back/,
      );
      assert.deepEqual((await state()).events, []);
      assert.deepEqual((await state()).names, ['acme: acme', 'globex: globex']);
      await db.transaction().execute(async (tx) => {
        assert.equal(await writeGated(tx, guard(1), parts()), true);
      });
      assert.deepEqual((await state()).audit, ['a-1 acme']);
    });

    test('a guard given as a compiled update (values as expressions): the parts only if it changed a row', async () => {
      const db = t.ctx.store.db;
      // acme's enabled flag goes up by one only while it is at most 1: a conditional update by expression.
      const bump = (limit: number) =>
        db
          .updateTable('resellers')
          .set((eb) => ({ enabled: eb('enabled', '+', 1) }))
          .where('id', '=', acme)
          .where('enabled', '<=', limit)
          .compile();
      const audit = (id: string) => [gatedInsert('audit_log', auditEntry(id, acme))];
      assert.equal(await writeGated(db, bump(1), audit('a-bump-1')), true);
      assert.equal(await writeGated(db, bump(1), audit('a-bump-2')), false);
      const enabled = await db
        .selectFrom('resellers')
        .select('enabled')
        .where('id', '=', acme)
        .executeTakeFirst();
      assert.equal(enabled?.enabled, 2);
      assert.deepEqual((await state()).audit, ['a-bump-1 acme']);
    });

    test('no events, and a guard with nothing else: only the guard is written', async () => {
      const db = t.ctx.store.db;
      assert.equal(await writeGated(db, guard(1), [gatedEvents(acme, [], NOW)]), true);
      assert.equal(
        await writeGated(db, { table: 'resellers', set: { name: 'only' }, where: { id: globex } }, []),
        true,
      );
      assert.deepEqual(await state(), {
        names: ['acme: acme, changed', 'globex: only'],
        audit: [],
        events: [],
        deliveries: [],
      });
    });

    test('refuses a guard with nothing to set, nothing to match, or a match on no value', async () => {
      const db = t.ctx.store.db;
      await assert.rejects(
        writeGated(db, { table: 'resellers', set: {}, where: { id: acme } }, []),
        /needs columns/,
      );
      await assert.rejects(
        writeGated(db, { table: 'resellers', set: { name: 'x' }, where: {} }, []),
        /needs columns/,
      );
      await assert.rejects(
        writeGated(db, { table: 'resellers', set: { name: 'x' }, where: { id: undefined } }, []),
        /no value/,
      );
      assert.deepEqual((await state()).names, ['acme: acme', 'globex: globex']);
    });

    /** A read of globex's row by id and name (two values, numbered after the guard's), locking where the store can. */
    const globexRead = (name: string) => {
      const q = t.ctx.store.db
        .selectFrom('resellers')
        .select(['id', 'name', 'enabled'])
        .where('id', '=', globex)
        .where('name', '=', name);
      return (t.ctx.store.features.rowLocks ? q.forUpdate() : q).compile();
    };

    /** readGated in a transaction: acme's name set to `name` where `where` matches, then globex's row read by `named`. */
    const guardedRead = (name: string, where: { id: string; name?: string }, named: string) =>
      t.ctx.store.db
        .transaction()
        .execute((tx) => readGated(tx, { table: 'resellers', set: { name }, where }, globexRead(named)));

    test('a guarded read: the guard changes its row, then the read answers', async () => {
      const r = await guardedRead('acme, read', { id: acme }, 'globex');
      // (SQLite's rows have no prototype: compared as plain objects.)
      assert.deepEqual(
        { ...r, row: { ...r.row } },
        { changed: true, row: { id: globex, name: 'globex', enabled: 1 } },
      );
      assert.deepEqual((await state()).names, ['acme: acme, read', 'globex: globex']);
    });

    test('a guarded read whose guard matches no row reads nothing and changes nothing', async () => {
      const r = await guardedRead('never', { id: acme, name: 'someone else' }, 'globex');
      assert.deepEqual(r, { changed: false, row: undefined });
      assert.deepEqual((await state()).names, ['acme: acme', 'globex: globex']);
    });

    test('a guarded read that finds no row: the guard changed its row, and there is nothing read', async () => {
      const r = await guardedRead('acme, read', { id: acme }, 'nobody');
      assert.deepEqual(r, { changed: true, row: undefined });
      assert.deepEqual((await state()).names, ['acme: acme, read', 'globex: globex']);
    });
  });

  describe(`guarded writes made together, outside a transaction (${store})`, () => {
    let t: TestApp;
    /** Eight resellers, r0 to r7, and one more (`shared`) that several writes' parts update. */
    let ids: string[];
    let shared: string;
    before(async () => {
      t = await createTestApp({}, { demo: false, store });
      ids = [];
      for (let i = 0; i < 8; i++) ids.push((await ensureReseller(t.ctx.store.db, `r${i}`, NOW)).id);
      shared = (await ensureReseller(t.ctx.store.db, 'shared', NOW)).id;
    });
    after(() => t.close());
    beforeEach(async () => {
      const db = t.ctx.store.db;
      await db.deleteFrom('audit_log').execute();
      await db.deleteFrom('events').execute();
      for (const [i, id] of ids.entries())
        await db
          .updateTable('resellers')
          .set({ name: `r${i}`, enabled: 1, created_at: NOW })
          .where('id', '=', id)
          .execute();
      await db
        .updateTable('resellers')
        .set({ name: 'shared', created_at: NOW })
        .where('id', '=', shared)
        .execute();
    });

    /** r{i} renamed while it is enabled `enabled`, with an audit entry `a{i}` and an event. */
    const rename = (i: number, enabled: number, audit = `a${i}`) =>
      writeGated(
        t.ctx.store.db,
        { table: 'resellers', set: { name: `r${i}, changed` }, where: { id: ids[i]!, enabled } },
        [gatedInsert('audit_log', auditEntry(audit, ids[i]!)), gatedEvents(ids[i]!, [finished], NOW)],
      );
    const names = async () =>
      (await t.ctx.store.db.selectFrom('resellers').select('name').orderBy('name').execute()).map(
        (r) => r.name,
      );
    const audits = async () =>
      (await t.ctx.store.db.selectFrom('audit_log').select('id').orderBy('id').execute()).map((r) => r.id);

    test('each answers for itself: its parts written only if its own guard changed its row', async () => {
      // The odd ones' guards match nothing (their resellers are enabled).
      const answers = await Promise.all(ids.map((_, i) => rename(i, i % 2 === 0 ? 1 : 0)));
      assert.deepEqual(answers, [true, false, true, false, true, false, true, false]);
      assert.deepEqual(await names(), [
        'r0, changed',
        'r1',
        'r2, changed',
        'r3',
        'r4, changed',
        'r5',
        'r6, changed',
        'r7',
        'shared',
      ]);
      assert.deepEqual(await audits(), ['a0', 'a2', 'a4', 'a6']);
      const events = await t.ctx.store.db
        .selectFrom('events')
        .select('reseller_id')
        .orderBy('reseller_id')
        .execute();
      assert.deepEqual(
        events.map((e) => e.reseller_id),
        [ids[0], ids[2], ids[4], ids[6]].sort(),
      );
      if (store === 'postgres') {
        // Made in one turn, they were one statement: one transaction wrote every row.
        const { rows } = await sql<{ x: string }>`select distinct xmin::text as x from audit_log`.execute(
          t.ctx.store.db,
        );
        assert.equal(rows.length, 1);
      }
    });

    test('one that cannot be written fails alone; the others are written', async () => {
      await t.ctx.store.db.insertInto('audit_log').values(auditEntry('taken', ids[0]!)).execute();
      const answers = await Promise.allSettled(ids.map((_, i) => rename(i, 1, i === 3 ? 'taken' : `a${i}`)));
      assert.deepEqual(
        answers.map((a) => a.status),
        [
          'fulfilled',
          'fulfilled',
          'fulfilled',
          'rejected',
          'fulfilled',
          'fulfilled',
          'fulfilled',
          'fulfilled',
        ],
      );
      assert.deepEqual(await audits(), ['a0', 'a1', 'a2', 'a4', 'a5', 'a6', 'a7', 'taken']);
      // The one that failed changed nothing, its guard's row included.
      assert.deepEqual(
        (await names()).filter((n) => !n.endsWith('changed')),
        ['r3', 'shared'],
      );
    });

    test('two that update one row are both written; two compare-and-sets of one row, one wins', async () => {
      const db = t.ctx.store.db;
      // One shape: a guard that stamps its reseller while enabled, and a part that renames another.
      const stampAndRename = (stamped: string, stamp: number, renamed: string, name: string) =>
        writeGated(
          db,
          { table: 'resellers', set: { created_at: stamp }, where: { id: stamped, enabled: 1 } },
          [gatedUpdate({ table: 'resellers', set: { name }, where: { id: renamed } })],
        );
      const sameRow = (audit: string) =>
        writeGated(db, { table: 'resellers', set: { name: audit }, where: { id: ids[5]!, name: 'r5' } }, [
          gatedInsert('audit_log', auditEntry(audit, ids[5]!)),
        ]);
      const answers = await Promise.all([
        // The first renames `shared`, the second stamps it: both must land on its row.
        stampAndRename(ids[0]!, 1, shared, 'shared, renamed'),
        stampAndRename(shared, 2, ids[1]!, 'r1, renamed'),
        sameRow('first'),
        sameRow('second'),
      ]);
      assert.deepEqual(answers.slice(0, 2), [true, true]);
      const row = (id: string) =>
        db
          .selectFrom('resellers')
          .select(['name', 'created_at'])
          .where('id', '=', id)
          .executeTakeFirstOrThrow();
      const plain = (r: { name: string; created_at: number }) => ({ name: r.name, at: Number(r.created_at) });
      assert.deepEqual(plain(await row(shared)), { name: 'shared, renamed', at: 2 });
      assert.deepEqual(plain(await row(ids[0]!)), { name: 'r0', at: 1 });
      assert.deepEqual(plain(await row(ids[1]!)), { name: 'r1, renamed', at: NOW });
      // Of the two compare-and-sets on r5's name, exactly one changed it, and only its part is written.
      assert.equal(answers.filter((a, i) => i >= 2 && a).length, 1);
      const winner = answers[2] ? 'first' : 'second';
      assert.deepEqual(await audits(), [winner]);
      assert.equal((await row(ids[5]!)).name, winner);
    });

    test('guarded reads made together in one transaction: each answers for itself (one statement on PostgreSQL)', async () => {
      const counter = statementCounter();
      const { answers, counted } = await t.ctx.store.db.transaction().execute(async (tx) => {
        const db = tx.withPlugin(counter);
        const byName = (name: string) =>
          db.selectFrom('resellers').select(['id', 'name']).where('name', '=', name).compile();
        const stamp = (i: number, enabled: number) =>
          ({ table: 'resellers', set: { created_at: i + 1 }, where: { id: ids[i]!, enabled } }) as const;
        counter.reset();
        const answers = await Promise.all([
          readGated(db, stamp(0, 1), byName('shared')),
          // Its guard matches nothing (r1 is enabled): nothing read.
          readGated(db, stamp(1, 0), byName('shared')),
          // Its guard changes r2; its read finds no one.
          readGated(db, stamp(2, 1), byName('nobody')),
          readGated(db, stamp(3, 1), byName('r7')),
        ]);
        return { answers, counted: counter.count };
      });
      assert.deepEqual(
        answers.map((a) => `${a.changed} ${a.row?.name}`),
        ['true shared', 'false undefined', 'true undefined', 'true r7'],
      );
      assert.equal(answers[3]?.row?.id, ids[7]);
      if (store === 'postgres') assert.equal(counted, 1);
      const stamps = await t.ctx.store.db
        .selectFrom('resellers')
        .select(['name', 'created_at'])
        .where('name', 'in', ['r0', 'r1', 'r2', 'r3'])
        .orderBy('name')
        .execute();
      assert.deepEqual(
        stamps.map((r) => Number(r.created_at)),
        [1, NOW, 3, 4],
      );
    });
  });
}
