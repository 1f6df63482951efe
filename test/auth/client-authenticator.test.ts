/**
 * The client authenticator reads clients through a cache that may be older than a change made
 * by another process: a secret the cached hash does not match, or a client the cache says is
 * disabled, is read again from the store (`fresh`), once.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createClientAuthenticator } from '../../src/auth/client-authenticator.ts';
import type { ClientCredential } from '../../src/auth/client-lookup.ts';
import { TEST_SECRET_COST } from '../helpers/secret-cost.ts';

function client(secret: string, enabled = true): ClientCredential {
  return {
    id: 'vrp_c1',
    kind: 'application',
    secretHash: `hash:${secret}`,
    enabled,
    tokenVersion: 1,
    scopes: ['access'],
    resellerId: 'r1',
  };
}

/** A cache holding `cached` over a store holding `stored`; every read is recorded. */
function finder(cached: ClientCredential | undefined, stored: ClientCredential | undefined) {
  const reads: string[] = [];
  return {
    reads,
    find: async (_id: string, fresh: boolean) => {
      reads.push(fresh ? 'store' : 'cache');
      return fresh ? stored : cached;
    },
  };
}

/** A verifier that knows the fake hashes and counts its runs (each stands for a scrypt run). */
function verifier() {
  const runs: string[] = [];
  return {
    runs,
    verify: async (secret: string, stored: string) => {
      runs.push(stored);
      return stored === `hash:${secret}`;
    },
  };
}

describe('client authenticator over a cache', () => {
  test('the cached hash, when the secret matches it: no store read', async () => {
    const f = finder(client('s1'), client('s1'));
    const v = verifier();
    const auth = createClientAuthenticator(f.find, v.verify, TEST_SECRET_COST);
    assert.equal((await auth.authenticate('vrp_c1', 's1'))?.secretHash, 'hash:s1');
    assert.deepEqual(f.reads, ['cache']);
    // Remembered: the next one runs no hash at all.
    await auth.authenticate('vrp_c1', 's1');
    assert.deepEqual(v.runs, ['hash:s1']);
  });

  test('a secret rotated elsewhere: the store is read once and the new secret works', async () => {
    const f = finder(client('old'), client('new'));
    const v = verifier();
    const auth = createClientAuthenticator(f.find, v.verify, TEST_SECRET_COST);
    assert.equal((await auth.authenticate('vrp_c1', 'new'))?.secretHash, 'hash:new');
    assert.deepEqual(f.reads, ['cache', 'store']);
    assert.deepEqual(v.runs, ['hash:old', 'hash:new']);
  });

  test('a wrong secret: one store read, no second hash when the stored one is the cached one', async () => {
    const f = finder(client('s1'), client('s1'));
    const v = verifier();
    const auth = createClientAuthenticator(f.find, v.verify, TEST_SECRET_COST);
    assert.equal(await auth.authenticate('vrp_c1', 'wrong'), undefined);
    assert.deepEqual(f.reads, ['cache', 'store']);
    assert.deepEqual(v.runs, ['hash:s1']);
  });

  test('a client deleted since it was cached: refused', async () => {
    const f = finder(client('s1'), undefined);
    const v = verifier();
    const auth = createClientAuthenticator(f.find, v.verify, TEST_SECRET_COST);
    assert.equal(await auth.authenticate('vrp_c1', 'other'), undefined);
    assert.deepEqual(f.reads, ['cache', 'store']);
  });

  test('a client the cache says is disabled is read again: enabled elsewhere, it authenticates', async () => {
    const f = finder(client('s1', false), client('s1', true));
    const v = verifier();
    const auth = createClientAuthenticator(f.find, v.verify, TEST_SECRET_COST);
    const found = await auth.authenticate('vrp_c1', 's1');
    assert.equal(found?.enabled, true);
    assert.deepEqual(f.reads, ['cache', 'store']);
  });
});
