/**
 * waitForStatus: follows the events feed to the wanted status, polls where there is no feed,
 * fails fast when the service fails or is gone, and gives up after its time or on an abort.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type VrpClient, VrpError } from '../../client/src/index.ts';
import { API, createTestApp, type TestApp } from '../helpers/app.ts';
import { testStores } from '../helpers/stores.ts';
import { sdkClient, smallOrder, watchedFetch } from './sdk.ts';

async function waitError(promise: Promise<unknown>, errorCode: string): Promise<VrpError> {
  const err = await promise.then(
    () => assert.fail(`expected VrpError ${errorCode}`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof VrpError, String(err));
  assert.equal(err.errorCode, errorCode, err.message);
  assert.equal(err.status, 0);
  return err;
}

for (const store of testStores()) {
  describe(`waitForStatus (${store})`, () => {
    let t: TestApp;
    let vrp: VrpClient;

    before(async () => {
      t = await createTestApp({}, { worker: true, store });
      vrp = await sdkClient(t);
    });
    after(() => t.close());

    async function ordered(): Promise<string> {
      const [o] = await vrp.createOrder(smallOrder());
      return o!.service_id;
    }

    test('follows the events feed: between status reads it reads only the feed', async () => {
      const seen = watchedFetch();
      // Resolves when the watcher has read the status once (the wait has begun).
      let begun!: () => void;
      const statusRead = new Promise<void>((resolve) => {
        begun = resolve;
      });
      const watcher = await sdkClient(t, {
        fetch: async (input, init) => {
          const res = await seen.fetch(input, init);
          if (String(input).endsWith('/status')) begun();
          return res;
        },
      });
      const id = await ordered();
      const waiting = watcher.waitForStatus(id, 'running', { pollMs: 20, timeoutMs: 20_000 });
      await statusRead;
      await vrp.create(id);
      const status = await waiting;
      assert.equal(status.status, 'running');
      assert.equal(status.job, null);
      const paths = seen.requests.map((r) => r.path.slice(API.length + 1));
      const feedReads = paths.filter((p) => p === 'events').length;
      const statusReads = paths.filter((p) => p.endsWith('/status')).length;
      // The status is read to begin with and again only when the feed named the service.
      assert.ok(statusReads >= 2 && statusReads <= 4, paths.join(' '));
      assert.ok(feedReads >= statusReads, paths.join(' '));
    });

    test('answers at once when the service is there already', async () => {
      const id = await ordered();
      assert.equal((await vrp.waitForStatus(id, 'pending')).status, 'pending');
    });

    test('polls status where the server has no feed (an older server: 404)', async () => {
      const seen = watchedFetch();
      // The same server, with the feed's path moved away: a real 404 of an unknown route.
      const noFeed: typeof fetch = (input, init) =>
        seen.fetch(String(input).replace(`${API}/events`, `${API}/no-events`), init);
      const watcher = await sdkClient(t, { fetch: noFeed });
      const id = await ordered();
      await vrp.create(id);
      assert.equal((await watcher.waitForStatus(id, 'running', { pollMs: 20 })).status, 'running');
      await vrp.stop(id);
      assert.equal((await watcher.waitForStatus(id, 'stopped', { pollMs: 20 })).status, 'stopped');
      const feed = seen.requests.filter((r) => r.path === `${API}/no-events`);
      assert.deepEqual(
        feed.map((r) => r.status),
        [404],
        'the feed is asked once per client, then status is polled',
      );
    });

    test('fails fast when the service can never get there: terminated', async () => {
      const id = await ordered();
      await vrp.terminate(id);
      const err = await waitError(vrp.waitForStatus(id, 'running', { pollMs: 20 }), 'unreachable_status');
      assert.match(err.message, /terminated/);
      assert.equal((err.lastStatus as { status: string }).status, 'terminated');
    });

    test('gives up after timeoutMs with wait_timeout and the last status', async () => {
      const id = await ordered();
      const err = await waitError(
        vrp.waitForStatus(id, 'running', { timeoutMs: 200, pollMs: 20 }),
        'wait_timeout',
      );
      assert.match(err.message, /pending/);
      assert.equal((err.lastStatus as { status: string }).status, 'pending');
    });

    test('stops on an abort, with the signal’s reason', async () => {
      const id = await ordered();
      const stop = new AbortController();
      const reason = new Error('the user went away');
      const waiting = vrp.waitForStatus(id, 'running', { signal: stop.signal, pollMs: 20 });
      stop.abort(reason);
      await assert.rejects(waiting, (err) => err === reason);
    });
  });

  describe(`waitForStatus on a failing hypervisor (${store})`, () => {
    let t: TestApp;
    let vrp: VrpClient;

    before(async () => {
      // Every hypervisor operation fails for good: provisioning ends `failed`.
      t = await createTestApp({ VRP_SIM_FAULTS: 'permanent=1' }, { worker: true, store });
      vrp = await sdkClient(t);
    });
    after(() => t.close());

    test('fails fast with unreachable_status once the service is failed', async () => {
      const [o] = await vrp.createOrder(smallOrder());
      const id = o!.service_id;
      await vrp.create(id);
      const err = await waitError(
        vrp.waitForStatus(id, 'running', { pollMs: 20, timeoutMs: 60_000 }),
        'unreachable_status',
      );
      assert.match(err.message, /failed/);
      assert.equal((err.lastStatus as { status: string }).status, 'failed');
      // Waiting for `failed` itself is fine.
      assert.equal((await vrp.waitForStatus(id, 'failed')).status, 'failed');
      const [job] = await vrp.jobs(id);
      assert.equal(job?.status, 'failed');
    });
  });
}
