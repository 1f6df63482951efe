/**
 * Room held for copies under way (src/drivers/libvirt/room-claims.ts), on both stores: a copy's
 * check counts what other jobs' copies hold on the place and waits for them where the rest is too
 * little; a place too small alone is refused for good; a claim stops counting when its job's run
 * or lease ends, or when its holder releases it; two copies claiming at once (from two processes
 * on PostgreSQL) do not both get the last room. A template's first copy to a host is refused for
 * good where the host's pool cannot hold it, and holds its room while it is written.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Kysely } from 'kysely';
import { DriverError } from '../../src/drivers/driver.ts';
import { FenceDown, fenced } from '../../src/drivers/fence.ts';
import { createHostImages } from '../../src/drivers/libvirt/host-images.ts';
import { holdRoom, type RoomWant } from '../../src/drivers/libvirt/room-claims.ts';
import type { PoolStorage } from '../../src/drivers/libvirt/storage.ts';
import { openStore, type Store } from '../../src/store/database.ts';
import type { Database } from '../../src/store/schema.ts';
import { call, createTestApp } from '../helpers/app.ts';
import { smallOrder } from '../helpers/e2e.ts';
import { type StoreKind, testStores } from '../helpers/stores.ts';

const GiB = 2 ** 30;

/**
 * An app's store of `kind` for one test, with a service the test's jobs are of, and a second
 * process's connection to the store; removed after.
 */
async function withStore(
  kind: StoreKind,
  body: (store: Store, another: () => Promise<Store>) => Promise<void>,
): Promise<void> {
  const t = await createTestApp({}, { store: kind });
  const others: Store[] = [];
  try {
    const token = await t.token();
    const res = await call(t, token, 'POST', 'service/create-order', smallOrder('room.example.com'));
    serviceId = res.body.data[0].service_id;
    const jobs = await t.ctx.store.db
      .selectFrom('jobs')
      .select('seq')
      .where('service_id', '=', serviceId)
      .execute();
    seq = Math.max(0, ...jobs.map((j) => j.seq));
    resellerId = (
      await t.ctx.store.db
        .selectFrom('services')
        .select('reseller_id')
        .where('id', '=', serviceId)
        .executeTakeFirstOrThrow()
    ).reseller_id;
    await body(t.ctx.store, async () => {
      const other = await openStore({ databaseUrl: t.ctx.config.databaseUrl, dataDir: t.dataDir });
      others.push(other);
      return other;
    });
  } finally {
    for (const other of others) await other.close();
    await t.close();
  }
}

let serviceId = '';
let resellerId = '';
let seq = 0;
/** A migrate job as a worker runs it: `running`, its lease ending in a minute (or as given). */
async function runningJob(db: Kysely<Database>, id: string, lockedUntil = Date.now() + 60_000) {
  const now = Date.now();
  await db
    .insertInto('jobs')
    .values({
      id,
      service_id: serviceId,
      reseller_id: resellerId,
      action: 'migrate',
      params: '{}',
      status: 'running',
      attempts: 1,
      seq: ++seq,
      run_at: now,
      created_at: now,
      started_at: now,
      locked_by: 'worker-1',
      locked_until: lockedUntil,
    })
    .execute();
}

/** Runs `work` as an attempt of job `jobId` (its fence; `down` takes it down). */
function asJob<R>(jobId: string, work: () => Promise<R>, down?: AbortController): Promise<R> {
  const signal = (down ?? new AbortController()).signal;
  return fenced(
    {
      jobId,
      signal,
      check() {
        signal.throwIfAborted();
      },
    },
    work,
  );
}

const pool = (need: number, free: number): RoomWant => ({
  place: 'pool:b',
  where: "Host b's storage pool",
  need,
  free: async () => free,
});

const claims = async (db: Kysely<Database>) =>
  (
    await db
      .selectFrom('room_claims')
      .select(['job_id', 'place', 'bytes'])
      .orderBy(['job_id', 'place'])
      .execute()
  ).map((r) => [r.job_id, r.place, Number(r.bytes)]);

/** Settles with 'held' once `p` resolves; 'waiting' if it has not within a few of its waits. */
async function settlesWithin(p: Promise<unknown>, ms = 300): Promise<'held' | 'waiting'> {
  return Promise.race([
    p.then(() => 'held' as const),
    new Promise<'waiting'>((r) => setTimeout(r, ms, 'waiting')),
  ]);
}

for (const kind of testStores()) {
  test(`a copy waits for the room other jobs' copies hold, and gets it once they release it (${kind})`, async () => {
    await withStore(kind, async (store) => {
      const db = store.db;
      await runningJob(db, 'job-a');
      await runningJob(db, 'job-b');
      // 10 GiB free: 5 GiB and its 1 GiB margin fit, alone.
      const releaseA = await asJob('job-a', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], 10));
      assert.deepEqual(await claims(db), [['job-a', 'pool:b', 5 * GiB]]);
      const b = asJob('job-b', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], 10));
      assert.equal(await settlesWithin(b), 'waiting', "A's 5 GiB leave too little");
      assert.deepEqual(await claims(db), [['job-a', 'pool:b', 5 * GiB]], 'B holds nothing while it waits');
      await releaseA();
      const releaseB = await b;
      assert.deepEqual(await claims(db), [['job-b', 'pool:b', 5 * GiB]]);
      await releaseB();
      assert.deepEqual(await claims(db), []);
    });
  });

  test(`a place too small with no other copy is refused for good; one copy's two wants on a place hold their sum (${kind})`, async () => {
    await withStore(kind, async (store) => {
      const db = store.db;
      await runningJob(db, 'job-a');
      await assert.rejects(
        asJob('job-a', () => holdRoom(db, [pool(5 * GiB, 6 * GiB - 1)], 10)),
        (err: unknown) => {
          assert.ok(err instanceof DriverError && !err.transient, String(err));
          assert.equal(
            err.message,
            "Host b's storage pool has 6.0 GiB free; the copy needs about 5.0 GiB and 1.0 GiB kept free",
          );
          return true;
        },
      );
      assert.deepEqual(await claims(db), []);
      // 3 + 3 GiB (and 1 GiB kept free) do not fit in 6 GiB though each does: refused, not waited for.
      await assert.rejects(
        asJob('job-a', () => holdRoom(db, [pool(3 * GiB, 6 * GiB), pool(3 * GiB, 6 * GiB)], 10)),
        {
          message:
            "Host b's storage pool has 6.0 GiB free; the copy needs about 6.0 GiB and 1.0 GiB kept free",
        },
      );
      assert.deepEqual(await claims(db), []);
      // With 7 GiB free they are held together, as one claim of their sum.
      await asJob('job-a', () => holdRoom(db, [pool(3 * GiB, 7 * GiB), pool(3 * GiB, 7 * GiB)], 10));
      assert.deepEqual(await claims(db), [['job-a', 'pool:b', 6 * GiB]]);
    });
  });

  test(`a claim stops counting when its job's lease or run ends; a job's next attempt replaces its own; outside a job nothing is held (${kind})`, async () => {
    await withStore(kind, async (store) => {
      const db = store.db;
      await runningJob(db, 'job-a');
      await runningJob(db, 'job-b');
      await runningJob(db, 'job-c');
      await asJob('job-a', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], 10));
      // A's process died: its lease ran out un-renewed. B gets the room without A's release.
      await db
        .updateTable('jobs')
        .set({ locked_until: Date.now() - 1 })
        .where('id', '=', 'job-a')
        .execute();
      await asJob('job-b', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], 10));
      assert.deepEqual(await claims(db), [['job-b', 'pool:b', 5 * GiB]], "A's claim went");
      // B's job ended (failed) without its release: C gets the room.
      await db.updateTable('jobs').set({ status: 'failed' }).where('id', '=', 'job-b').execute();
      await asJob('job-c', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], 10));
      // C's next attempt (the first died, its lease taken over) holds what C needs once, not twice.
      await asJob('job-c', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], 10));
      assert.deepEqual(await claims(db), [['job-c', 'pool:b', 5 * GiB]]);
      // Outside a job: checked (refused alone if too small), nothing held.
      const release = await holdRoom(db, [pool(5 * GiB, 6 * GiB)], 10);
      await release();
      await assert.rejects(holdRoom(db, [pool(5 * GiB, 6 * GiB - 1)], 10), /kept free/);
      assert.deepEqual(await claims(db), [['job-c', 'pool:b', 5 * GiB]]);
    });
  });

  test(`a copy waiting for room stops when its attempt's fence goes down (${kind})`, async () => {
    await withStore(kind, async (store) => {
      const db = store.db;
      await runningJob(db, 'job-a');
      await runningJob(db, 'job-b');
      await asJob('job-a', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], 10));
      const down = new AbortController();
      const b = asJob('job-b', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], 60_000), down);
      assert.equal(await settlesWithin(b), 'waiting');
      down.abort(new FenceDown());
      await assert.rejects(b, FenceDown);
      assert.deepEqual(await claims(db), [['job-a', 'pool:b', 5 * GiB]]);
    });
  });

  test(`two copies claiming the last room at once (two processes on PostgreSQL): one holds it, the other waits (${kind})`, async () => {
    await withStore(kind, async (store, another) => {
      // SQLite: one process's transactions take its connection in turn (and another process's
      // wait for BEGIN IMMEDIATE, which two stores in this one thread would deadlock on): the
      // second copy is the same process's. PostgreSQL: another process's connection.
      const other = kind === 'postgres' ? await another() : store;
      for (let round = 0; round < 5; round++) {
        const [a, b] = [`job-a${round}`, `job-b${round}`];
        await runningJob(store.db, a);
        await runningJob(store.db, b);
        const [first, second] = [
          asJob(a, () => holdRoom(store.db, [pool(5 * GiB, 10 * GiB)], 10)),
          asJob(b, () => holdRoom(other.db, [pool(5 * GiB, 10 * GiB)], 10)),
        ];
        const settled = await Promise.all([settlesWithin(first), settlesWithin(second)]);
        assert.deepEqual(settled.toSorted(), ['held', 'waiting'], `round ${round}`);
        assert.equal((await claims(store.db)).length, 1, `round ${round}: one claim`);
        // The holder's job ends: the other gets the room.
        const holder = settled[0] === 'held' ? a : b;
        await store.db.updateTable('jobs').set({ status: 'succeeded' }).where('id', '=', holder).execute();
        await Promise.all([first, second]);
        await store.db.updateTable('jobs').set({ status: 'succeeded' }).where('id', 'in', [a, b]).execute();
      }
    });
  });
}

/**
 * A host's pool as the template copy sees it: `free` bytes free; uploads and read-backs are
 * local copies, and each upload records the claims the store holds at that moment.
 */
function poolWith(free: number, db: Kysely<Database>) {
  const volumes = new Map<string, string>();
  const claimsAtUpload: unknown[][][] = [];
  const storage = {
    async free() {
      return free;
    },
    async list() {
      return new Set(volumes.keys());
    },
    async uploadNew(_uri: string, name: string, file: string) {
      claimsAtUpload.push(await claims(db));
      volumes.set(name, file);
    },
    async download(_uri: string, name: string, file: string) {
      copyFileSync(volumes.get(name) ?? assert.fail(`no volume ${name}`), file);
    },
    async remove(_uri: string, name: string) {
      volumes.delete(name);
    },
  } as Partial<PoolStorage> as PoolStorage;
  return { storage, volumes, claimsAtUpload };
}

for (const kind of testStores()) {
  test(`a template's first copy to a host is refused for good where the pool cannot hold it, and holds its room while written (${kind})`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vrp-room-template-'));
    try {
      await withStore(kind, async (store) => {
        const db = store.db;
        const MiB = 2 ** 20;
        const disk = join(dir, 'disk.qcow2');
        writeFileSync(disk, Buffer.alloc(3 * MiB, 7));
        // 3 MiB and as much kept free: not in 6 MiB less a byte. Nothing is written, nothing recorded.
        const small = poolWith(6 * MiB - 1, db);
        await assert.rejects(
          createHostImages(db, small.storage, Date.now).ensure('h1', 'uri-h1', 'tpl-1', { disk }),
          (err: unknown) => {
            assert.ok(err instanceof DriverError && !err.transient, String(err));
            assert.equal(
              err.message,
              "Host h1's storage pool (a template's first copy there) has 6.0 MiB free; the copy needs about 3.0 MiB and 3.0 MiB kept free",
            );
            return true;
          },
        );
        assert.deepEqual([...small.volumes.keys()], [], 'nothing uploaded');
        assert.equal(
          await db.selectFrom('host_images').select('volume').where('host_id', '=', 'h1').executeTakeFirst(),
          undefined,
        );
        // Where it fits, a job's copy holds its 3 MiB on the pool while it is written, and lets go after.
        await runningJob(db, 'job-t');
        const roomy = poolWith(6 * MiB, db);
        const onHost = await asJob('job-t', () =>
          createHostImages(db, roomy.storage, Date.now).ensure('h1', 'uri-h1', 'tpl-1', { disk }),
        );
        assert.match(onHost.disk, /^template-tpl-1-[0-9a-f]{12}-[0-9a-f]{8}\.qcow2$/);
        assert.deepEqual(roomy.claimsAtUpload, [
          [
            ['job-t', 'pool:h1', 3 * MiB],
            ['job-t', `tmpdir:${hostname()}:${tmpdir()}`, 3 * MiB],
          ],
        ]);
        assert.deepEqual(await claims(db), [], 'released');
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
