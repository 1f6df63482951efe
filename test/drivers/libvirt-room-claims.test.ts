/**
 * Room held for copies under way (src/drivers/libvirt/room-claims.ts), on both stores: a copy's
 * check counts what other job attempts' copies hold on the place and waits for them where the
 * rest is too little (also while their bytes already show in the place's free figure); a place
 * too small with nothing else held there is refused for good; a released claim still counts for
 * a figure read before its release or not read afresh; a claim stops counting when its attempt's
 * lease or run ends or the job's next attempt begins, and an attempt taken over claims nothing;
 * a claim released long ago counts for a figure not read afresh since; a figure read more than 5
 * minutes before its claim is read again; a job's new hold ends its
 * earlier claims; a wait ends when its attempt must stop; two copies claiming at once (from two processes on
 * PostgreSQL) do not both get the last room. A template's first copy to a host is refused for
 * good where the host's pool cannot hold it, holds its room while it is written, and one that
 * waited for another job's copy of it uses that copy.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Kysely } from 'kysely';
import { DriverError } from '../../src/drivers/driver.ts';
import { FenceDown, fenced, type JobRun } from '../../src/drivers/fence.ts';
import { createCommands } from '../../src/drivers/libvirt/commands.ts';
import { createHostImages } from '../../src/drivers/libvirt/host-images.ts';
import { restoreWants } from '../../src/drivers/libvirt/libvirt-driver.ts';
import { holdRoom, type RoomWant } from '../../src/drivers/libvirt/room-claims.ts';
import {
  createPoolStorage,
  localPlace,
  type PoolStorage,
  type Room,
} from '../../src/drivers/libvirt/storage.ts';
import { openStore, type Store } from '../../src/store/database.ts';
import type { Database } from '../../src/store/schema.ts';
import { call, createTestApp } from '../helpers/app.ts';
import { waitUntil } from '../helpers/budget.ts';
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

let seq = 0;
let serviceId = '';
let resellerId = '';

/** A migrate job as a worker runs it: `running` in its attempt `attempt`, its lease ending in a minute (or as given). */
async function runningJob(db: Kysely<Database>, id: string, attempt = 1, lockedUntil = Date.now() + 60_000) {
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
      attempts: attempt,
      seq: ++seq,
      run_at: now,
      created_at: now,
      started_at: now,
      locked_by: 'worker-1',
      locked_until: lockedUntil,
    })
    .execute();
}

/** The job's next attempt began (another worker recovered and claimed it). */
const nextAttempt = (db: Kysely<Database>, id: string, attempt: number) =>
  db
    .updateTable('jobs')
    .set({ attempts: attempt, locked_by: 'worker-2', locked_until: Date.now() + 60_000 })
    .where('id', '=', id)
    .execute();

const ended = (db: Kysely<Database>, id: string) =>
  db.updateTable('jobs').set({ status: 'succeeded', locked_until: null }).where('id', '=', id).execute();

/**
 * Runs `work` as attempt `attempt` (1 unless given) of job `jobId`: its fence (`down` takes it
 * down) and its stop signal (`stop`: its worker stops).
 */
function asJob<R>(
  jobId: string,
  work: () => Promise<R>,
  o: { attempt?: number; down?: AbortController; stop?: AbortController } = {},
): Promise<R> {
  const signal = (o.down ?? new AbortController()).signal;
  const run: JobRun = { jobId, attempt: o.attempt ?? 1 };
  return fenced(
    {
      run,
      signal,
      stop: o.stop ? AbortSignal.any([signal, o.stop.signal]) : signal,
      check() {
        signal.throwIfAborted();
      },
    },
    work,
  );
}

/** Host b's pool wanted for `need` bytes, its room as `room` says (fresh unless said). */
const pool = (need: number, room: number | (() => Room | Promise<Room>)): RoomWant => ({
  place: 'pool:b',
  where: "Host b's storage pool",
  need,
  room: async () => (typeof room === 'number' ? { bytes: room, fresh: true } : room()),
});

/** The claims as [job, attempt, place, bytes, released]. */
const claims = async (db: Kysely<Database>) =>
  (
    await db
      .selectFrom('room_claims')
      .select(['job_id', 'attempt', 'place', 'bytes', 'released_at'])
      .orderBy(['job_id', 'attempt', 'place'])
      .execute()
  ).map((r) => [r.job_id, r.attempt, r.place, Number(r.bytes), r.released_at !== null]);

/** The claims under way, as [job, attempt, place, bytes]. */
const underWay = async (db: Kysely<Database>) =>
  (await claims(db)).filter((c) => c[4] === false).map((c) => c.slice(0, 4));

/** 'held' once `p` resolves; 'waiting' if it has not within `ms` (many of the tests' 10 ms waits). */
async function settlesWithin(p: Promise<unknown>, ms = 300): Promise<'held' | 'waiting'> {
  return Promise.race([
    p.then(() => 'held' as const),
    new Promise<'waiting'>((r) => setTimeout(r, ms, 'waiting')),
  ]);
}

const refusal = (free: string, need: string, kept: string) => (err: unknown) => {
  assert.ok(err instanceof DriverError && !err.transient, String(err));
  assert.equal(
    err.message,
    `Host b's storage pool has ${free} free; the copy needs about ${need} and ${kept} kept free`,
  );
  return true;
};

for (const kind of testStores()) {
  test(`a copy waits for the room other attempts' copies hold, and gets it once they are over (${kind})`, async () => {
    await withStore(kind, async (store) => {
      const db = store.db;
      await runningJob(db, 'job-a');
      await runningJob(db, 'job-b');
      // 10 GiB free: 5 GiB and its 1 GiB margin fit, alone.
      const releaseA = await asJob('job-a', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], { waitMs: 10 }));
      assert.deepEqual(await claims(db), [['job-a', 1, 'pool:b', 5 * GiB, false]]);
      let waits = 0;
      const b = asJob('job-b', () =>
        holdRoom(db, [pool(5 * GiB, 10 * GiB)], {
          waitMs: 10,
          onWait: () => {
            waits++;
          },
        }),
      );
      assert.equal(await settlesWithin(b), 'waiting', "A's 5 GiB leave too little");
      assert.ok(waits > 0, 'the hold says it waits');
      assert.deepEqual(
        await claims(db),
        [['job-a', 1, 'pool:b', 5 * GiB, false]],
        'B holds nothing while it waits',
      );
      // A's copy is over (its bytes went elsewhere: the place has its 10 GiB free, read after).
      await releaseA();
      const releaseB = await b;
      assert.deepEqual(await claims(db), [
        ['job-a', 1, 'pool:b', 5 * GiB, true],
        ['job-b', 1, 'pool:b', 5 * GiB, false],
      ]);
      await releaseB();
    });
  });

  test(`a figure read more than 5 minutes before its claim (a look that took that long) is read again before anything is claimed (${kind})`, async (t) => {
    await withStore(kind, async (store) => {
      const db = store.db;
      // A lease long enough for the clock moved on below.
      await runningJob(db, 'job-a', 1, Date.now() + 3_600_000);
      const realNow = Date.now.bind(Date);
      let later = 0;
      t.mock.method(Date, 'now', () => realNow() + later);
      const reads: number[] = [];
      const release = await asJob('job-a', () =>
        holdRoom(
          db,
          [
            pool(2 * GiB, () => {
              reads.push(Date.now());
              // The first read's answer comes six minutes after it was asked for.
              if (reads.length === 1) later += 6 * 60_000;
              return { bytes: 10 * GiB, fresh: true };
            }),
          ],
          { waitMs: 10 },
        ),
      );
      assert.equal(reads.length, 2, 'the room was read again');
      assert.deepEqual(await underWay(db), [['job-a', 1, 'pool:b', 2 * GiB]]);
      await release();
    });
  });

  test(`a hold lets go of one place while it keeps the other, then of the rest; a release twice changes nothing (${kind})`, async () => {
    await withStore(kind, async (store) => {
      const db = store.db;
      await runningJob(db, 'job-e');
      const tmp: RoomWant = { ...pool(2 * GiB, 10 * GiB), place: 'fs:m:1', where: 'TMPDIR' };
      const release = await asJob('job-e', () => holdRoom(db, [pool(2 * GiB, 10 * GiB), tmp]));
      assert.deepEqual(await underWay(db), [
        ['job-e', 1, 'fs:m:1', 2 * GiB],
        ['job-e', 1, 'pool:b', 2 * GiB],
      ]);
      // An export's volume read out of the pool: its room there goes, the file here stays held.
      await release(['pool:b']);
      assert.deepEqual(await underWay(db), [['job-e', 1, 'fs:m:1', 2 * GiB]]);
      const poolReleasedAt = await db
        .selectFrom('room_claims')
        .select('released_at')
        .where('place', '=', 'pool:b')
        .executeTakeFirstOrThrow();
      // A later millisecond than the first release.
      await new Promise((r) => setTimeout(r, 5));
      await release();
      assert.deepEqual(await underWay(db), []);
      assert.deepEqual(
        await db
          .selectFrom('room_claims')
          .select('released_at')
          .where('place', '=', 'pool:b')
          .executeTakeFirstOrThrow(),
        poolReleasedAt,
        'a claim released already keeps its time',
      );
    });
  });

  test(`wants given as a function are asked again at each look; a pool on this machine's temporary directory's disk is one place with it (${kind})`, async () => {
    await withStore(kind, async (store) => {
      const db = store.db;
      await runningJob(db, 'job-a');
      await runningJob(db, 'job-b');
      const releaseA = await asJob('job-a', () => holdRoom(db, [pool(7 * GiB, 10 * GiB)], { waitMs: 10 }));
      // B's copy grows while it waits (a running guest writes): 3 GiB, then 4 GiB once A is over.
      const asked: number[] = [];
      const b = asJob('job-b', () =>
        holdRoom(
          db,
          async () => {
            const need = (asked.length === 0 ? 3 : 4) * GiB;
            asked.push(need);
            return [pool(need, 10 * GiB)];
          },
          { waitMs: 10 },
        ),
      );
      assert.equal(await settlesWithin(b), 'waiting', "A's 7 GiB leave too little for 3 GiB and 1 kept free");
      await releaseA();
      await (await b)();
      assert.deepEqual(asked.slice(0, 2), [3 * GiB, 4 * GiB]);
      assert.deepEqual(
        (await claims(db)).filter((c) => c[0] === 'job-b').map((c) => c[3]),
        [4 * GiB],
        'the claim holds what was asked last',
      );
      // A pool whose place is this machine's temporary directory's (its keys as PoolStorage.place
      // gives them): one claim of the sum, the refusal naming both.
      const pools = createPoolStorage(createCommands(), tmpdir());
      const here = await localPlace();
      assert.equal(await pools.place('a', 'qemu:///system'), here);
      assert.equal(await pools.place('b', 'qemu+ssh://b.example/system'), 'pool:b');
      assert.equal(
        await createPoolStorage(createCommands(), join(tmpdir(), 'no-such-pool-dir')).place(
          'c',
          'qemu:///system',
        ),
        'pool:c',
      );
      const both = (free: number) => [
        { ...pool(3 * GiB, free), place: here, where: "Host a's storage pool" },
        { ...pool(3 * GiB, free), place: here, where: 'The temporary directory' },
      ];
      await assert.rejects(
        asJob('job-a', () => holdRoom(db, both(6.5 * GiB))),
        (err: unknown) => {
          assert.ok(err instanceof DriverError && !err.transient, String(err));
          assert.equal(
            err.message,
            "Host a's storage pool and the temporary directory, one filesystem, has 6.5 GiB free; the copy needs about 6.0 GiB and 1.0 GiB kept free",
          );
          return true;
        },
      );
      const release = await asJob('job-a', () => holdRoom(db, both(7 * GiB)));
      assert.deepEqual(
        (await underWay(db)).filter((c) => c[0] === 'job-a'),
        [['job-a', 1, here, 6 * GiB]],
      );
      await release();
    });
  });

  test(`a restore's wants: twice its data here, the staged image and the disk's copy less the old disk on the host; twice its data where they are one filesystem (${kind})`, async () => {
    await withStore(kind, async (store) => {
      const db = store.db;
      await runningJob(db, 'job-r');
      const poolRoom = async () => ({ bytes: 100 * GiB, fresh: true });
      const apart = restoreWants({
        here: 'fs:m:1',
        onPool: 'pool:h1',
        hostId: 'h1',
        data: 3 * GiB,
        oldDisk: 2 * GiB,
        poolRoom,
      });
      assert.deepEqual(
        apart.map((w) => [w.place, w.need]),
        [
          ['fs:m:1', 6 * GiB],
          ['pool:h1', 4 * GiB],
        ],
      );
      // An old disk as large as the image frees the copy's room before it is made.
      assert.deepEqual(
        restoreWants({
          here: 'fs:m:1',
          onPool: 'pool:h1',
          hostId: 'h1',
          data: 3 * GiB,
          oldDisk: 5 * GiB,
          poolRoom,
        }).map((w) => w.need),
        [6 * GiB, 3 * GiB],
      );
      const one = restoreWants({
        here: 'fs:m:1',
        onPool: 'fs:m:1',
        hostId: 'h1',
        data: 3 * GiB,
        oldDisk: 0,
        poolRoom,
      });
      assert.deepEqual(
        one.map((w) => [w.place, w.need, w.where]),
        [
          [
            'fs:m:1',
            6 * GiB,
            "Host h1's storage pool (a restore stages the backup's disk there beside the server's) and the temporary directory of the vrp process that copies (TMPDIR), one filesystem,",
          ],
        ],
      );
      // Held as one claim of twice the data, not the 10 GiB the two wants would sum to.
      const release = await asJob('job-r', () =>
        holdRoom(
          db,
          one.map((w) => ({ ...w, room: poolRoom })),
        ),
      );
      assert.deepEqual(await underWay(db), [['job-r', 1, 'fs:m:1', 6 * GiB]]);
      await release();
    });
  });

  test(`a copy is refused for good only where the place is too small with nothing else held there (${kind})`, async () => {
    await withStore(kind, async (store) => {
      const db = store.db;
      await runningJob(db, 'job-a');
      await runningJob(db, 'job-b');
      await assert.rejects(
        asJob('job-a', () => holdRoom(db, [pool(5 * GiB, 6 * GiB - 1)], { waitMs: 10 })),
        refusal('6.0 GiB', '5.0 GiB', '1.0 GiB'),
      );
      assert.deepEqual(await claims(db), []);
      // 3 + 3 GiB (and 1 GiB kept free) do not fit in 6 GiB though each does: refused, not waited for.
      await assert.rejects(
        asJob('job-a', () => holdRoom(db, [pool(3 * GiB, 6 * GiB), pool(3 * GiB, 6 * GiB)], { waitMs: 10 })),
        refusal('6.0 GiB', '6.0 GiB', '1.0 GiB'),
      );
      // 30 GiB free; A holds 20 GiB and writes them (a move's folded copy on its source, which goes
      // when it ends): the free figure drops to 10 GiB. B's 10 GiB wait, never refused for good.
      let free = 30 * GiB;
      const releaseA = await asJob('job-a', () =>
        holdRoom(db, [pool(20 * GiB, () => ({ bytes: free, fresh: true }))], { waitMs: 10 }),
      );
      const b = asJob('job-b', () =>
        holdRoom(db, [pool(10 * GiB, () => ({ bytes: free, fresh: true }))], { waitMs: 10 }),
      );
      assert.equal(await settlesWithin(b), 'waiting');
      free = 10 * GiB;
      assert.equal(await settlesWithin(b), 'waiting', 'not refused while A holds the place');
      // A's copy is over and its file gone: B gets the room.
      free = 30 * GiB;
      await releaseA();
      await b;
      assert.deepEqual(await claims(db), [
        ['job-a', 1, 'pool:b', 20 * GiB, true],
        ['job-b', 1, 'pool:b', 10 * GiB, false],
      ]);
    });
  });

  test(`a released claim counts for a figure read before its release, or not read afresh (${kind})`, async () => {
    await withStore(kind, async (store) => {
      const db = store.db;
      await runningJob(db, 'job-a');
      await runningJob(db, 'job-b');
      await runningJob(db, 'job-c');
      // A holds 5 of 10 GiB; B's read of the pool begins before A's bytes show in it, and A's
      // copy ends (released) while B reads. After it, the pool has 5 GiB free: B must not take
      // the 10 GiB it read, nor wait for ever: too small, with nothing else held, for good.
      const releaseA = await asJob('job-a', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], { waitMs: 10 }));
      let reads = 0;
      let readDone = () => {};
      const released = new Promise<void>((r) => {
        readDone = r;
      });
      // B's first read begins now and ends after A's release: it does not show A's bytes.
      const b = asJob('job-b', () =>
        holdRoom(
          db,
          [
            pool(5 * GiB, async () => {
              reads++;
              if (reads > 1) return { bytes: 5 * GiB, fresh: true };
              await released;
              return { bytes: 10 * GiB, fresh: true };
            }),
          ],
          { waitMs: 10 },
        ),
      );
      assert.equal(reads, 1, 'B is reading');
      await releaseA();
      readDone();
      await assert.rejects(b, refusal('5.0 GiB', '5.0 GiB', '1.0 GiB'));
      assert.ok(reads >= 2, 'B read the pool again');
      // The pool's last figure (a copy holds it: not read afresh) may predate A's bytes: A's
      // released claim counts, and C waits; a fresh read, after A's release, decides.
      let fresh = false;
      const c = asJob('job-c', () =>
        holdRoom(db, [pool(4.5 * GiB, () => ({ bytes: 10 * GiB, fresh }))], { waitMs: 10 }),
      );
      assert.equal(
        await settlesWithin(c),
        'waiting',
        '10 GiB less A’s 5 leave too little for 4.5 and 1 kept',
      );
      fresh = true;
      await c;
      assert.deepEqual(await claims(db), [
        ['job-a', 1, 'pool:b', 5 * GiB, true],
        ['job-c', 1, 'pool:b', 4.5 * GiB, false],
      ]);
    });
  });

  test(`a claim is over when its run is: its lease or job ended, the job's next attempt or run began; a run taken over claims nothing (${kind})`, async () => {
    await withStore(kind, async (store) => {
      const db = store.db;
      for (const id of ['job-a', 'job-b', 'job-c', 'job-d', 'job-e']) await runningJob(db, id);
      await asJob('job-a', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], { waitMs: 10 }));
      // A's process died: its lease ran out un-renewed. B gets the room without A's release, and
      // A's claim is over (released: it still counts for a figure that may not show its bytes).
      await db
        .updateTable('jobs')
        .set({ locked_until: Date.now() - 1 })
        .where('id', '=', 'job-a')
        .execute();
      await asJob('job-b', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], { waitMs: 10 }));
      assert.deepEqual(await claims(db), [
        ['job-a', 1, 'pool:b', 5 * GiB, true],
        ['job-b', 1, 'pool:b', 5 * GiB, false],
      ]);
      // B's job ended without its release: C gets the room.
      await ended(db, 'job-b');
      await asJob('job-c', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], { waitMs: 10 }));
      // C's first attempt died and another worker runs its second, which moves the VM live (it
      // holds nothing): the first attempt's claim is over, and D gets the room.
      await nextAttempt(db, 'job-c', 2);
      await asJob('job-d', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], { waitMs: 10 }));
      assert.deepEqual(await underWay(db), [['job-d', 1, 'pool:b', 5 * GiB]]);
      // D's first attempt, still going after its job went on to a second attempt that holds the
      // room again, claims nothing and leaves the second attempt's claim alone.
      await nextAttempt(db, 'job-d', 2);
      const releaseD2 = await asJob('job-d', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], { waitMs: 10 }), {
        attempt: 2,
      });
      await assert.rejects(
        asJob('job-d', () => holdRoom(db, [pool(1 * GiB, 10 * GiB)], { waitMs: 10 })),
        FenceDown,
      );
      assert.deepEqual(await underWay(db), [['job-d', 2, 'pool:b', 5 * GiB]]);
      // A job's claim under way at its next hold (a release that did not reach the store, or a run
      // given back with its attempt's number) is over: the new hold replaces it.
      await asJob('job-d', () => holdRoom(db, [pool(1 * GiB, 20 * GiB)], { waitMs: 10 }), { attempt: 2 });
      assert.deepEqual(await underWay(db), [['job-d', 2, 'pool:b', 1 * GiB]]);
      await releaseD2();
      // E holds 5 GiB of 10 once D's last claim is over (D's job ended), with figures read afresh.
      await ended(db, 'job-d');
      await asJob('job-e', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], { waitMs: 10 }));
      // Outside a job: checked (refused alone if too small), nothing held.
      const release = await holdRoom(db, [pool(5 * GiB, 6 * GiB)], { waitMs: 10 });
      await release();
      await assert.rejects(holdRoom(db, [pool(5 * GiB, 6 * GiB - 1)], { waitMs: 10 }), /kept free/);
      assert.deepEqual(await underWay(db), [['job-e', 1, 'pool:b', 5 * GiB]]);
    });
  });

  test(`a claim over (released, or its run dead) and the run's own released ones count for a figure not read afresh (${kind})`, async () => {
    await withStore(kind, async (store) => {
      const db = store.db;
      await runningJob(db, 'job-a');
      await runningJob(db, 'job-b');
      // B's run copies a template (3 GiB, released), then its move's disk (6.5 GiB) to the same
      // pool, whose figure is libvirt's last (a copy holds the pool): it may not show the
      // template. 10 GiB less its 3 leave too little for 6.5 and 1 kept free: it waits.
      let fresh = true;
      const figure = () => ({ bytes: 10 * GiB, fresh });
      const template = await asJob('job-b', () => holdRoom(db, [pool(3 * GiB, figure)], { waitMs: 10 }));
      await template();
      fresh = false;
      const disk = asJob('job-b', () => holdRoom(db, [pool(6.5 * GiB, figure)], { waitMs: 10 }));
      assert.equal(await settlesWithin(disk), 'waiting', 'its own template counts');
      fresh = true;
      await (await disk)();
      // On another pool, A holds 2 GiB and dies (its lease ends): its claim is over, but a figure
      // not read afresh may not show what it wrote, so it still counts there.
      const poolC = (need: number): RoomWant => ({ ...pool(need, figure), place: 'pool:c' });
      await asJob('job-a', () => holdRoom(db, [poolC(2 * GiB)], { waitMs: 10 }));
      await db
        .updateTable('jobs')
        .set({ locked_until: Date.now() - 1 })
        .where('id', '=', 'job-a')
        .execute();
      fresh = false;
      const after = asJob('job-b', () => holdRoom(db, [poolC(7.5 * GiB)], { waitMs: 10 }));
      assert.equal(await settlesWithin(after), 'waiting', "A's 2 GiB count against a figure not read afresh");
      fresh = true;
      await after;
    });
  });

  test(`a released claim counts for a figure not read afresh however long ago it ended, and goes once a fresh read shows it (${kind})`, async () => {
    await withStore(kind, async (store) => {
      const db = store.db;
      await runningJob(db, 'job-a');
      await runningJob(db, 'job-b');
      await (await asJob('job-a', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], { waitMs: 10 })))();
      // A's copy ended two hours ago, and the pool's last fresh read was before that: every
      // figure libvirt kept since (a copy holding the pool) may not show A's bytes.
      const hour = 60 * 60_000;
      await db
        .updateTable('room_claims')
        .set({ released_at: Date.now() - 2 * hour })
        .execute();
      await db
        .updateTable('room_places')
        .set({ fresh_at: Date.now() - 3 * hour })
        .where('place', '=', 'pool:b')
        .execute();
      let fresh = false;
      const b = asJob('job-b', () =>
        holdRoom(db, [pool(5 * GiB, () => ({ bytes: 10 * GiB, fresh }))], { waitMs: 10 }),
      );
      assert.equal(await settlesWithin(b), 'waiting', "A's 5 GiB still count");
      // A fresh read, long after A's release, shows its bytes: A's claim goes, B holds the room.
      fresh = true;
      await b;
      assert.deepEqual(await claims(db), [['job-b', 1, 'pool:b', 5 * GiB, false]]);
    });
  });

  test(`two jobs whose releases did not reach the store do not wait on each other for ever (${kind})`, async () => {
    await withStore(kind, async (store) => {
      const db = store.db;
      await runningJob(db, 'job-r');
      await runningJob(db, 'job-s');
      const at = (place: string) => ({ ...pool(5 * GiB, 10 * GiB), place });
      // R holds X and S holds Y, and neither release reaches the store (never called here).
      await asJob('job-r', () => holdRoom(db, [at('pool:x')], { waitMs: 10 }));
      await asJob('job-s', () => holdRoom(db, [at('pool:y')], { waitMs: 10 }));
      // Then R wants Y and S wants X: each new hold ends its own job's earlier claim.
      const both = Promise.all([
        asJob('job-r', () => holdRoom(db, [at('pool:y')], { waitMs: 10 })),
        asJob('job-s', () => holdRoom(db, [at('pool:x')], { waitMs: 10 })),
      ]);
      assert.equal(await settlesWithin(both, 2_000), 'held');
      assert.deepEqual(await underWay(db), [
        ['job-r', 1, 'pool:y', 5 * GiB],
        ['job-s', 1, 'pool:x', 5 * GiB],
      ]);
    });
  });

  test(`a copy waiting for room stops when its attempt's fence goes down or its worker stops (${kind})`, async () => {
    await withStore(kind, async (store) => {
      const db = store.db;
      await runningJob(db, 'job-a');
      await runningJob(db, 'job-b');
      await asJob('job-a', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], { waitMs: 10 }));
      const down = new AbortController();
      const b = asJob('job-b', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], { waitMs: 60_000 }), { down });
      assert.equal(await settlesWithin(b), 'waiting');
      down.abort(new FenceDown());
      await assert.rejects(b, FenceDown);
      const stop = new AbortController();
      const stopping = asJob('job-b', () => holdRoom(db, [pool(5 * GiB, 10 * GiB)], { waitMs: 60_000 }), {
        stop,
      });
      assert.equal(await settlesWithin(stopping), 'waiting');
      stop.abort(new Error('The worker is stopping'));
      await assert.rejects(stopping, (err: unknown) => {
        assert.ok(err instanceof DriverError && err.transient, String(err));
        assert.match(err.message, /worker is stopping/);
        return true;
      });
      assert.deepEqual(await claims(db), [['job-a', 1, 'pool:b', 5 * GiB, false]]);
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
          asJob(a, () => holdRoom(store.db, [pool(5 * GiB, 10 * GiB)], { waitMs: 10 })),
          asJob(b, () => holdRoom(other.db, [pool(5 * GiB, 10 * GiB)], { waitMs: 10 })),
        ];
        const settled = await Promise.all([settlesWithin(first), settlesWithin(second)]);
        assert.deepEqual(settled.toSorted(), ['held', 'waiting'], `round ${round}`);
        assert.equal(
          (await claims(store.db)).filter((c) => c[4] === false).length,
          1,
          `round ${round}: one claim`,
        );
        // The holder's job ends: the other gets the room.
        await ended(store.db, settled[0] === 'held' ? a : b);
        await Promise.all([first, second]);
        await ended(store.db, a);
        await ended(store.db, b);
      }
    });
  });
}

/**
 * A host's pool as the template copy sees it: `free` bytes free; uploads and read-backs are
 * local copies into `volumes` (shared between pools given the same), each upload waits for
 * `gate` if given, and records the claims under way at that moment.
 */
function poolWith(
  free: number,
  db: Kysely<Database>,
  o: { volumes?: Map<string, string>; gate?: Promise<void> } = {},
) {
  const volumes = o.volumes ?? new Map<string, string>();
  const claimsAtUpload: unknown[][][] = [];
  let uploads = 0;
  const storage = {
    async room() {
      return { bytes: free, fresh: true };
    },
    async place(hostId: string) {
      return `pool:${hostId}`;
    },
    async list() {
      return new Set(volumes.keys());
    },
    async uploadNew(_uri: string, name: string, file: string) {
      uploads++;
      claimsAtUpload.push(await underWay(db));
      await o.gate;
      volumes.set(name, file);
    },
    async download(_uri: string, name: string, file: string) {
      copyFileSync(volumes.get(name) ?? assert.fail(`no volume ${name}`), file);
    },
    async remove(_uri: string, name: string) {
      volumes.delete(name);
    },
  } as Partial<PoolStorage> as PoolStorage;
  return { storage, volumes, claimsAtUpload, uploads: () => uploads };
}

const MiB = 2 ** 20;

/** A store of `kind` (withStore) and a template's disk of 3 MiB, for one test. */
async function withTemplate(kind: StoreKind, body: (db: Kysely<Database>, disk: string) => Promise<void>) {
  const dir = mkdtempSync(join(tmpdir(), 'vrp-room-template-'));
  try {
    await withStore(kind, async (store) => {
      const disk = join(dir, 'disk.qcow2');
      writeFileSync(disk, Buffer.alloc(3 * MiB, 7));
      await body(store.db, disk);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const kind of testStores()) {
  test(`a template's first copy to a host is refused for good where the pool cannot hold it, and holds its room while written (${kind})`, () =>
    withTemplate(kind, async (db, disk) => {
      await runningJob(db, 'job-s');
      await runningJob(db, 'job-t');
      // 3 MiB and as much kept free: not in 6 MiB less a byte. Nothing is written, nothing recorded.
      const small = poolWith(6 * MiB - 1, db);
      await assert.rejects(
        asJob('job-s', () =>
          createHostImages(db, small.storage, Date.now).ensure('h1', 'uri-h1', 'tpl-1', { disk }),
        ),
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
      assert.deepEqual(await claims(db), []);
      // Where it fits, a job's copy holds its 3 MiB on the pool, and here (where it is read
      // back), while it is written, and lets go after.
      const roomy = poolWith(6 * MiB, db);
      const onHost = await asJob('job-t', () =>
        createHostImages(db, roomy.storage, Date.now).ensure('h1', 'uri-h1', 'tpl-1', { disk }),
      );
      assert.match(onHost.disk, /^template-tpl-1-[0-9a-f]{12}-[0-9a-f]{8}\.qcow2$/);
      const here = await localPlace();
      assert.match(here, /^fs:.+:\d+$/);
      assert.deepEqual(roomy.claimsAtUpload, [
        [
          ['job-t', 1, here, 3 * MiB],
          ['job-t', 1, 'pool:h1', 3 * MiB],
        ],
      ]);
      assert.deepEqual(await underWay(db), [], 'released');
    }));

  test(`a template copy waiting for another job's copy of it to the same host uses that one (${kind})`, () =>
    withTemplate(kind, async (db, disk) => {
      await runningJob(db, 'job-a');
      await runningJob(db, 'job-b');
      // 8 MiB free: one copy of 3 MiB (and 3 kept free) fits, not two.
      let open = () => {};
      const gate = new Promise<void>((r) => {
        open = r;
      });
      const volumes = new Map<string, string>();
      const a = poolWith(8 * MiB, db, { volumes, gate });
      const b = poolWith(8 * MiB, db, { volumes });
      const images = (p: ReturnType<typeof poolWith>) => createHostImages(db, p.storage, Date.now);
      const first = asJob('job-a', () => images(a).ensure('h1', 'uri-h1', 'tpl-1', { disk }));
      await waitUntil('A uploading', () => a.uploads() === 1, { everyMs: 5 });
      const second = asJob('job-b', () => images(b).ensure('h1', 'uri-h1', 'tpl-1', { disk }));
      assert.equal(await settlesWithin(second), 'waiting', 'B waits for the room A holds');
      open();
      const [fromA, fromB] = await Promise.all([first, second]);
      assert.deepEqual(fromB, fromA, "B uses A's copy");
      assert.equal(b.uploads(), 0, 'B copied nothing');
      assert.deepEqual(await underWay(db), []);
    }));
}
