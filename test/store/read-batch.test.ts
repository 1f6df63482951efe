/**
 * Reads of requests that arrive together go to PostgreSQL together (src/store/read-batch.ts):
 * what each request gets is exactly what its own read would have given, its reseller's row or
 * nothing, whatever else is in the batch.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cliAudit } from '../../src/cli/audit.ts';
import { UNLIMITED } from '../../src/domain/quotas.ts';
import { createReadBatch } from '../../src/store/read-batch.ts';
import { setQuota } from '../../src/store/repos/quotas.ts';
import { findResellerByName } from '../../src/store/repos/resellers.ts';
import { call, createTestApp, orderRunning } from '../helpers/app.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { testStores } from '../helpers/stores.ts';

type Key = { owner: string; id: string };
type Row = { id: string; owner: string; n: number };

function recorder(rows: Row[], fail?: Error) {
  const calls: { one: Key[]; many: Key[][] } = { one: [], many: [] };
  const batch = createReadBatch<Key, Row>({
    one: async (k) => {
      calls.one.push(k);
      if (fail) throw fail;
      return rows.find((r) => r.id === k.id && r.owner === k.owner);
    },
    many: async (keys) => {
      calls.many.push([...keys]);
      if (fail) throw fail;
      return rows.filter((r) => keys.some((k) => k.id === r.id));
    },
    matches: (r, k) => r.id === k.id && r.owner === k.owner,
    max: 3,
  });
  return { batch, calls };
}

const ROWS: Row[] = [
  { id: 'a', owner: 'acme', n: 1 },
  { id: 'b', owner: 'acme', n: 2 },
  { id: 'c', owner: 'globex', n: 3 },
];

describe('read batches', () => {
  test('reads asked for in one turn of the event loop are one read; each gets its own row', async () => {
    const { batch, calls } = recorder(ROWS);
    const got = await Promise.all([
      batch.get({ owner: 'acme', id: 'a' }),
      batch.get({ owner: 'globex', id: 'c' }),
      batch.get({ owner: 'acme', id: 'c' }), // another owner's row: nothing
    ]);
    assert.deepEqual(
      got.map((r) => r?.n),
      [1, 3, undefined],
    );
    assert.equal(calls.many.length, 1);
    assert.deepEqual(calls.one, []);
  });

  test('one read alone is the single-row read; reads of later turns are batches of their own', async () => {
    const { batch, calls } = recorder(ROWS);
    assert.equal((await batch.get({ owner: 'acme', id: 'b' }))?.n, 2);
    assert.deepEqual(calls.one, [{ owner: 'acme', id: 'b' }]);
    assert.equal(calls.many.length, 0);
    assert.equal((await batch.get({ owner: 'acme', id: 'zz' }))?.n, undefined);
    assert.equal(calls.one.length, 2);
  });

  test('more than `max` keys: several statements, every key answered', async () => {
    const { batch, calls } = recorder(ROWS);
    const keys = ['a', 'b', 'c', 'a', 'b', 'c', 'a'].map((id) => ({ owner: 'acme', id }));
    const got = await Promise.all(keys.map((k) => batch.get(k)));
    assert.deepEqual(
      got.map((r) => r?.n),
      [1, 2, undefined, 1, 2, undefined, 1],
    );
    assert.deepEqual(
      calls.many.map((m) => m.length),
      [3, 3],
    );
    assert.equal(calls.one.length, 1, 'the seventh alone');
  });

  test('a failed read fails every request of its batch, and the next batch reads again', async () => {
    const { batch } = recorder(ROWS, new Error('connection lost'));
    const got = await Promise.allSettled([
      batch.get({ owner: 'acme', id: 'a' }),
      batch.get({ owner: 'acme', id: 'b' }),
    ]);
    assert.deepEqual(
      got.map((g) => g.status),
      ['rejected', 'rejected'],
    );
    await assert.rejects(batch.get({ owner: 'acme', id: 'a' }), /connection lost/);
  });

  test('a read that throws before it returns a promise (node:sqlite reads are synchronous) fails its requests, not the process', async () => {
    const thrown = new Error('database is locked');
    const batch = createReadBatch<Key, Row>({
      one: () => {
        throw thrown;
      },
      many: () => {
        throw thrown;
      },
      matches: (r, k) => r.id === k.id,
    });
    // Without the guard the error left flush's setImmediate: an uncaught exception ends the
    // process (node:test reports it as this test's failure), and the promises never settle.
    await assert.rejects(batch.get({ owner: 'acme', id: 'a' }), thrown);
    const both = await Promise.allSettled([
      batch.get({ owner: 'acme', id: 'a' }),
      batch.get({ owner: 'acme', id: 'b' }),
    ]);
    assert.deepEqual(
      both.map((g) => (g.status === 'rejected' ? g.reason : g.value)),
      [thrown, thrown],
    );
  });
});

for (const store of testStores()) {
  test(`status and details polled at once by two resellers: each sees its own services, never the other's (${store})`, async () => {
    const t = await createTestApp({}, { worker: true, store });
    try {
      const acme = await t.token();
      const globex = await t.token({ reseller: 'globex' });
      const mine = await Promise.all([1, 2, 3].map((i) => orderRunning(t, acme, `a${i}.example.com`)));
      const theirs = await Promise.all([1, 2].map((i) => orderRunning(t, globex, `g${i}.example.com`)));
      for (const route of ['status', 'details'] as const) {
        // 40 requests at once (read in one batch on PostgreSQL): both resellers' own services and each other's.
        const asks = Array.from({ length: 40 }, (_, i) => {
          const byAcme = i % 2 === 0;
          const own = byAcme ? mine[i % 3]! : theirs[i % 2]!;
          const other = byAcme ? theirs[i % 2]! : mine[i % 3]!;
          const id = i % 4 < 2 ? own : other;
          return { token: byAcme ? acme : globex, id, own: id === own };
        });
        const res = await Promise.all(asks.map((a) => call(t, a.token, 'GET', `service/${a.id}/${route}`)));
        res.forEach((r, i) => {
          if (asks[i]!.own) {
            assert.equal(r.status, 200, JSON.stringify(r.body));
            assert.equal(r.body.data.status, 'running');
            if (route === 'details') assert.equal(r.body.data.service_id, asks[i]!.id);
          } else {
            assert.equal(r.status, 404, `${route} of another reseller's service`);
            assert.equal(r.body.error_code, 'service_not_found');
          }
        });
      }
    } finally {
      await t.close();
    }
  });

  test(`orders of three resellers at once: each order is held to its own reseller's quota (${store})`, async () => {
    const t = await createTestApp({}, { store });
    try {
      const names = ['capped-two', 'capped-none', 'uncapped'];
      const tokens = await Promise.all(names.map((reseller) => t.token({ reseller })));
      const caps = { 'capped-two': 2, 'capped-none': 0 } as Record<string, number>;
      for (const name of Object.keys(caps)) {
        const { id } = (await findResellerByName(t.ctx.store.db, name))!;
        await setQuota(
          t.ctx.store.db,
          id,
          { ...UNLIMITED, services: caps[name]! },
          Date.now(),
          cliAudit('quota'),
        );
      }
      // 30 orders at once (their quota reads one batch on PostgreSQL), interleaved.
      const asks = Array.from({ length: 30 }, (_, i) => i % 3);
      const res = await Promise.all(
        asks.map((r, i) =>
          call(t, tokens[r]!, 'POST', 'service/create-order', smallOrder(`o${i}.example.com`)),
        ),
      );
      const outcome = (r: number) =>
        res
          .filter((_, i) => asks[i] === r)
          .map((x) => (x.status === 200 ? 'ok' : `${x.status} ${x.body.error_code}`))
          .sort();
      assert.deepEqual(outcome(0), [...Array(2).fill('ok'), ...Array(8).fill('400 quota_exceeded')].sort());
      assert.deepEqual(outcome(1), Array(10).fill('400 quota_exceeded'));
      assert.deepEqual(outcome(2), Array(10).fill('ok'));
    } finally {
      await t.close();
    }
  });
}
