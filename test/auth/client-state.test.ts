import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ClientCredential } from '../../src/auth/client-lookup.ts';
import { createClientStateCache } from '../../src/auth/client-state.ts';
import type { ClientState } from '../../src/domain/client-state.ts';

function state(tokenVersion: number, enabled = true): ClientState {
  return {
    kind: 'application',
    clientId: 'c1',
    resellerId: 'r1',
    name: 'r / a',
    enabled,
    tokenVersion,
    variant: 'B',
  };
}

/** No client has a credential (the tests of states). */
const none = async () => undefined;

function credential(secretHash: string): ClientCredential {
  return {
    id: 'c1',
    kind: 'application',
    secretHash,
    enabled: true,
    tokenVersion: 1,
    scopes: ['access'],
    resellerId: 'r1',
  };
}

/** A loader over a mutable "store" that counts its calls. */
function fakeStore() {
  const rows = new Map<string, ClientState>([['c1', state(1)]]);
  let calls = 0;
  return {
    rows,
    get calls() {
      return calls;
    },
    load: async (id: string) => {
      calls += 1;
      await new Promise((r) => setTimeout(r, 5));
      return rows.get(id);
    },
  };
}

describe('client state cache', () => {
  test('revocation must reach every process well within 5 s', async () => {
    // The cache as the server builds it (context.ts): its default lifetime.
    const store = fakeStore();
    const cache = createClientStateCache({ state: store.load, credential: none });
    assert.deepEqual(await cache.get('c1', 100_000), state(1));
    store.rows.set('c1', state(1, false));
    assert.deepEqual(
      await cache.get('c1', 100_001),
      state(1),
      'a cache: the next request is served from memory',
    );
    assert.deepEqual(await cache.get('c1', 104_000), state(1, false), 'disabled within 4 s, well inside 5 s');
    assert.equal(store.calls, 2);
  });

  test('serves from memory within the TTL and reads the store again after it', async () => {
    const store = fakeStore();
    const cache = createClientStateCache({ state: store.load, credential: none }, 2000);
    assert.deepEqual(await cache.get('c1', 10_000), state(1));
    assert.equal(store.calls, 1);

    store.rows.set('c1', state(2, false));
    assert.deepEqual(await cache.get('c1', 11_999), state(1), 'still cached');
    assert.equal(store.calls, 1);

    assert.deepEqual(await cache.get('c1', 12_000), state(2, false), 'expired at the TTL');
    assert.equal(store.calls, 2);
  });

  test('an unknown client is undefined', async () => {
    const store = fakeStore();
    const cache = createClientStateCache({ state: store.load, credential: none }, 2000);
    assert.equal(await cache.get('nobody', 0), undefined);
    store.rows.set('nobody', state(1));
    assert.deepEqual(await cache.get('nobody', 2000), state(1));
  });

  test('concurrent misses share one store read', async () => {
    const store = fakeStore();
    const cache = createClientStateCache({ state: store.load, credential: none }, 2000);
    const results = await Promise.all(Array.from({ length: 20 }, () => cache.get('c1', 0)));
    assert.equal(store.calls, 1);
    for (const r of results) assert.deepEqual(r, state(1));
  });

  test('invalidate forces the next get to read the store', async () => {
    const store = fakeStore();
    const cache = createClientStateCache({ state: store.load, credential: none }, 2000);
    await cache.get('c1', 0);
    store.rows.set('c1', state(5));
    cache.invalidate('c1');
    assert.deepEqual(await cache.get('c1', 1), state(5));
    assert.equal(store.calls, 2);
  });

  test('a failed load is not cached and does not block later reads', async () => {
    let fail = true;
    const cache = createClientStateCache(
      {
        state: async () => {
          if (fail) throw new Error('store down');
          return state(1);
        },
        credential: none,
      },
      2000,
    );
    await assert.rejects(cache.get('c1', 0), /store down/);
    fail = false;
    assert.deepEqual(await cache.get('c1', 1), state(1));
  });
  test('credentials: served from memory within the TTL, an unknown id read each time, invalidate forgets both', async () => {
    const credentials = new Map<string, ClientCredential>([['c1', credential('hash-1')]]);
    let reads = 0;
    const store = fakeStore();
    const cache = createClientStateCache(
      {
        state: store.load,
        credential: async (id) => {
          reads += 1;
          return credentials.get(id);
        },
      },
      2000,
    );
    assert.equal((await cache.credential('c1', 0))?.secretHash, 'hash-1');
    credentials.set('c1', credential('hash-2'));
    assert.equal(
      (await cache.credential('c1', 1999))?.secretHash,
      'hash-1',
      'a rotation elsewhere: the TTL bounds it',
    );
    assert.equal(reads, 1);
    assert.equal((await cache.credential('c1', 2000))?.secretHash, 'hash-2', 'read again after the TTL');
    assert.equal(reads, 2);

    // An id that names no client is asked each time: one created meanwhile is found at once.
    assert.equal(await cache.credential('c2', 3000), undefined);
    credentials.set('c2', { ...credential('hash-c2'), id: 'c2' });
    assert.equal((await cache.credential('c2', 3001))?.secretHash, 'hash-c2');
    assert.equal(reads, 4);

    // A fresh read goes to the store whatever is cached, remembers what it found, and leaves
    // the client's state cached.
    credentials.set('c1', credential('hash-fresh'));
    await cache.get('c1', 2500);
    const statesBefore = store.calls;
    assert.equal((await cache.credential('c1', 2500))?.secretHash, 'hash-2', 'cached');
    assert.equal((await cache.credential('c1', 2500, true))?.secretHash, 'hash-fresh');
    assert.equal((await cache.credential('c1', 2501))?.secretHash, 'hash-fresh', 'remembered');
    await cache.get('c1', 2501);
    assert.equal(store.calls, statesBefore, 'the state was not read again');
    credentials.set('c1', credential('hash-2'));
    cache.invalidate('c1');

    // A change made by this process: both the state and the credential are read again.
    await cache.get('c1', 3000);
    const stateReads = store.calls;
    credentials.set('c1', credential('hash-3'));
    cache.invalidate('c1');
    assert.equal((await cache.credential('c1', 3002))?.secretHash, 'hash-3');
    await cache.get('c1', 3002);
    assert.equal(store.calls, stateReads + 1);
  });
  test('a fresh read under way beside a cached one: each reads the store, the later answer stays', async () => {
    let n = 0;
    const cache = createClientStateCache(
      {
        state: none,
        credential: async () => {
          n += 1;
          const hash = `hash-${n}`;
          await new Promise((r) => setTimeout(r, n === 1 ? 20 : 1));
          return credential(hash);
        },
      },
      2000,
    );
    const [first, fresh] = await Promise.all([cache.credential('c1', 0), cache.credential('c1', 0, true)]);
    assert.equal(first?.secretHash, 'hash-1');
    assert.equal(fresh?.secretHash, 'hash-2', 'the fresh read did not wait for the one under way');
    assert.equal(n, 2);
    // The older read, answering last, did not overwrite the fresh one's answer.
    assert.equal((await cache.credential('c1', 1))?.secretHash, 'hash-2');
    assert.equal(n, 2, 'served from the cache');
  });
});
