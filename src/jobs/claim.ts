import { type Expression, type ExpressionBuilder, type Kysely, type QueryCreator, sql } from 'kysely';
import type { Store } from '../store/database.ts';
import { prepare, type Slot, slot } from '../store/prepared.ts';
import { type ClaimedJob, toClaimedJob } from '../store/repos/jobs.ts';
import type { Database, JobTable, ServiceTable } from '../store/schema.ts';
import { retryDelayMs, unfinishedError } from './attempts.ts';

/**
 * Claims up to `limit` runnable jobs for `workerId`: queued, due, the first waiting job of its
 * service, and on a service with no job running. Ownership is taken by two updates (the
 * service's active job, then the job), which keeps one job at a time per service across any
 * number of workers and processes.
 *
 * On PostgreSQL the claim is one statement per step of the queue (claimInSteps; one step
 * usually), as graphile-worker's: the candidates are read FOR UPDATE SKIP LOCKED, jobs and
 * services both, so concurrent workers pick different jobs instead of racing for the same ones,
 * and both updates run in the same statement, as compare-and-sets. On SQLite the same steps run
 * as three statements in one transaction, which holds the file's write lock from its start (BEGIN IMMEDIATE): no
 * other writer, of this process or another, can change what it read before its updates.
 */
export async function claimJobs(
  store: Pick<Store, 'db' | 'features'>,
  workerId: string,
  limit: number,
  now: number,
  leaseUntil: number,
): Promise<ClaimedJob[]> {
  const claim = { workerId, limit, now, leaseUntil };
  if (store.features.skipLocked) return claimInSteps(store.db, claim);
  return store.db.transaction().execute((tx) => claimIn(tx, claim));
}

interface Claim {
  readonly workerId: string;
  readonly limit: number;
  readonly now: number;
  readonly leaseUntil: number;
}

/**
 * The jobs to claim, in queue order. The first-waiting-job test reads the service's jobs by the
 * (service_id, seq) index: the status is compared as an expression no index holds, so the
 * planner cannot take a status index there instead (it did on PostgreSQL, whose statistics
 * rarely see a queued job, and read every queued job once per candidate).
 *
 * PostgreSQL's (`window`): only among the jobs of one step of the queue (claimInSteps), found
 * by their keys, and the job's own status compared as an expression too, so that no plan can
 * read the whole queue: the planner's statistics, taken when the queue was empty, put one
 * queued job where a burst of orders has thousands, and it then joined and tested every queued
 * job before sorting them (bench/FINDINGS.md, "A claim's cost and the queue's length").
 */
function candidates(
  db: QueryCreator<Database>,
  c: { readonly now: Slot<number>; readonly limit: Slot<number> },
  window?: Slot<readonly string[]>,
) {
  return db
    .selectFrom('jobs as j')
    .innerJoin('services as s', 's.id', 'j.service_id')
    .select(['j.id', 'j.service_id'])
    .$if(window === undefined, (q) => q.where('j.status', '=', 'queued'))
    .$if(window !== undefined, (q) =>
      q.where(sql<string>`j.status || ''`, '=', 'queued').where('j.id', '=', sql<string>`any(${window})`),
    )
    .where('j.run_at', '<=', c.now)
    .where('s.active_job_id', 'is', null)
    .where((eb) =>
      eb(
        'j.seq',
        '=',
        eb
          .selectFrom('jobs as j2')
          .select((eb2) => eb2.fn.min('j2.seq').as('m'))
          .whereRef('j2.service_id', '=', 'j.service_id')
          .where(sql<string>`j2.status || ''`, '=', 'queued'),
      ),
    )
    .orderBy('j.run_at')
    .orderBy('j.seq')
    .limit(c.limit)
    .$if(window !== undefined, (q) => q.forUpdate(['j', 's']).skipLocked());
}

/**
 * The job's part of the claim: running, one attempt more, owned by the worker until the lease ends.
 *
 * Its start (`startedAt`) is the claim's time, or the time of its service's last write if that is
 * later: a job never starts before what its service last recorded. A worker reads the time before
 * its claim's statement, and the job before (another worker's, or this one's own) can end in
 * between, with an end time taken later than that reading: without this, the job after it would
 * start before it ended. The job's end writes the service's `updated_at` in its transaction, and
 * the claim sees that commit, since it found the service free.
 */
function runningSet(c: {
  readonly startedAt: Expression<number>;
  readonly workerId: Expression<string> | string;
  readonly leaseUntil: Expression<number> | number;
}) {
  return (eb: ExpressionBuilder<Database, 'jobs'>) => ({
    status: 'running' as const,
    attempts: eb('attempts', '+', 1),
    started_at: eb.fn.coalesce('started_at', c.startedAt),
    locked_by: c.workerId,
    locked_until: c.leaseUntil,
  });
}

/**
 * PostgreSQL's claim. Every row read is locked by the statement, so both updates take what was
 * read. Each job comes back with its service as the claim's update left it, as one JSON value
 * (its columns would clash with the job's): the job's run reads it from there.
 */
const claimStatement = prepare(
  {
    workerId: slot<string>(),
    limit: slot<number>(),
    now: slot<number>(),
    leaseUntil: slot<number>(),
    window: slot<readonly string[]>(),
  },
  (db, c) =>
    db
      .with('candidates', (db) => candidates(db, c, c.window))
      .with('taken', (db) =>
        db
          .updateTable('services as s')
          .from('candidates as c')
          .set((eb) => ({ active_job_id: eb.ref('c.id') }))
          .whereRef('s.id', '=', 'c.service_id')
          .where('s.active_job_id', 'is', null)
          .returning(['c.id as job_id', 's.updated_at', sql<ServiceTable>`to_jsonb(s)`.as('service')]),
      )
      .updateTable('jobs')
      .from('taken')
      .set(runningSet({ ...c, startedAt: sql<number>`greatest(${c.now}, taken.updated_at)` }))
      .whereRef('jobs.id', '=', 'taken.job_id')
      // As an expression, so that the jobs are found by key, never by the queue's index.
      .where(sql<string>`jobs.status || ''`, '=', 'queued')
      .returningAll('jobs')
      .returning('taken.service'),
);

/** How many queued jobs, in queue order, one step of PostgreSQL's claim looks among. */
const stepSize = (limit: number) => Math.max(16, 2 * limit);

/**
 * The queued jobs due by `now` from the key (`run_at`, `seq`) given on, in queue order, but for
 * those `seen` (jobs of one service have seqs of their own, so jobs of several services can share
 * a key, and a step can end among them): one step.
 */
const queueStep = prepare(
  {
    now: slot<number>(),
    runAt: slot<number>(),
    seq: slot<number>(),
    seen: slot<readonly string[]>(),
    size: slot<number>(),
  },
  (db, c) =>
    db
      .selectFrom('jobs')
      .select(['id', 'run_at', 'seq'])
      .where('status', '=', 'queued')
      .where('run_at', '<=', c.now)
      .where((eb) => eb(eb.refTuple('run_at', 'seq'), '>=', eb.tuple(c.runAt, c.seq)))
      .where('id', '<>', sql<string>`all(${c.seen})`)
      .orderBy('run_at')
      .orderBy('seq')
      .limit(c.size),
);

/**
 * PostgreSQL's claim, a step of the queue at a time: the next queued jobs in queue order (the
 * queue's index, read no further than the step), then the claim among them. A step whose jobs
 * cannot run now (behind another of their service's, or locked by another claim) is followed by
 * the next, until the claim has its jobs or the queue ends: no job waits behind a front that
 * cannot move. Each step costs its own size, whatever the queue's length.
 */
async function claimInSteps(db: Kysely<Database>, c: Claim): Promise<ClaimedJob[]> {
  const size = stepSize(c.limit);
  const claimed: (JobTable & { service: ServiceTable })[] = [];
  let seen: string[] = [];
  let from = { runAt: -1, seq: -1 };
  for (;;) {
    const { rows: step } = await queueStep.execute(db, { now: c.now, ...from, seen, size });
    if (step.length === 0) break;
    const window = step.map((j) => j.id);
    const { rows } = await claimStatement.execute(db, { ...c, limit: c.limit - claimed.length, window });
    claimed.push(...rows);
    const last = step.at(-1);
    if (claimed.length >= c.limit || step.length < size || last === undefined) break;
    // The next step starts at the last key; of the jobs already looked at, only those at that key
    // could be read again (all of them if the whole step was at the key it started from).
    const atLast = step.filter((j) => j.run_at === last.run_at && j.seq === last.seq).map((j) => j.id);
    seen = last.run_at === from.runAt && last.seq === from.seq ? [...seen, ...atLast] : atLast;
    from = { runAt: last.run_at, seq: last.seq };
  }
  return inQueueOrder(claimed).map(({ service, ...job }) => toClaimedJob(job, service));
}

/** An UPDATE returns its rows in no particular order: in the queue's. */
const inQueueOrder = <R extends { readonly run_at: number; readonly seq: number }>(rows: R[]) =>
  rows.sort((a, b) => a.run_at - b.run_at || a.seq - b.seq);

/** SQLite's candidates, unlocked (the transaction holds the write lock). */
const candidatesStatement = prepare({ now: slot<number>(), limit: slot<number>() }, (db, c) =>
  candidates(db, c),
);

/** SQLite's updates of the claim, for the jobs read (`in` lists: built per claim). */
async function claimIn(db: Kysely<Database>, c: Claim): Promise<ClaimedJob[]> {
  // One job per service: the first queued of its line (its seq is unique to the service).
  const { rows: found } = await candidatesStatement.execute(db, { now: c.now, limit: c.limit });
  if (found.length === 0) return [];
  const jobIds = found.map((f) => f.id);
  // The services as the claim leaves them, for the jobs' runs (returned by the update itself).
  const services = await db
    .updateTable('services')
    .set((eb) => ({
      active_job_id: eb
        .selectFrom('jobs')
        .select('jobs.id')
        .whereRef('jobs.service_id', '=', 'services.id')
        .where('jobs.id', 'in', jobIds),
    }))
    .where(
      'id',
      'in',
      found.map((f) => f.service_id),
    )
    .returningAll()
    .execute();
  const serviceById = new Map(services.map((r) => [r.id, r]));
  const claimed = await db
    .updateTable('jobs')
    .set(
      runningSet({
        ...c,
        startedAt: sql<number>`max(${c.now}, (select s.updated_at from services as s where s.id = jobs.service_id))`,
      }),
    )
    .where('id', 'in', jobIds)
    .returningAll()
    .execute();
  return inQueueOrder(claimed).map((job) => toClaimedJob(job, serviceById.get(job.service_id)));
}

/**
 * Keeps this worker's running jobs owned, and says which rows took the renewal (the others are
 * no longer this worker's, or kept the lease they had: see below). On PostgreSQL it never waits for a row: a job whose
 * row another transaction holds (its own end, or a group of ends, being written) keeps the lease
 * it has until the next extension (a third of a lease later). Waiting would lock the rows it
 * reached first until that transaction ended, and a group of job ends that then wrote one of
 * them would wait for it in turn: a deadlock, which PostgreSQL breaks after a second by failing
 * one side.
 */
export async function extendLeases(
  store: Pick<Store, 'db' | 'features'>,
  workerId: string,
  jobIds: string[],
  until: number,
): Promise<string[]> {
  if (jobIds.length === 0) return [];
  const { db } = store;
  const renewed = await db
    .updateTable('jobs')
    .set({ locked_until: until })
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('jobs as l')
        .select('l.id')
        .where('l.locked_by', '=', workerId)
        .where('l.status', '=', 'running')
        .where('l.id', 'in', jobIds)
        .$if(store.features.skipLocked, (q) => q.forUpdate().skipLocked()),
    )
    .returning('id')
    .execute();
  return renewed.map((r) => r.id);
}

/**
 * Leases are in real time (Date.now()), whatever the server's clock says, so a test clock that
 * runs fast does not expire them.
 *
 * Jobs whose worker stopped renewing its lease (the process died) go back to the queue, at
 * the head of their service's line, after the same backoff as a failed attempt (a job that
 * kills its worker would otherwise take the next one down at once); they run again from the
 * start, and the driver's idempotent operations find and finish the work already done. The
 * claim counts the attempt, so a job whose workers keep dying ends failed (see run-job.ts).
 *
 * On PostgreSQL a recovery never waits for a row: a job whose row, or whose service's row,
 * another transaction holds is being written by a worker that is alive (its end, late), and is
 * left to the next round. Waiting for one while holding the other could deadlock with that end.
 */
export async function recoverExpiredJobs(
  store: Pick<Store, 'db' | 'features'>,
  realNow: number,
  now: number,
  retryBaseMs: number,
): Promise<number> {
  const { db } = store;
  const expired = await db
    .selectFrom('jobs')
    .select(['id', 'service_id', 'attempts'])
    .where('status', '=', 'running')
    .where('locked_until', '<', realNow)
    .execute();
  let n = 0;
  for (const e of expired) {
    await db.transaction().execute(async (tx) => {
      if (store.features.skipLocked && !(await lockedWithoutWaiting(tx, e.service_id, e.id))) return;
      const r = await tx
        .updateTable('jobs')
        .set({
          status: 'queued',
          locked_by: null,
          locked_until: null,
          run_at: now + retryDelayMs(retryBaseMs, e.attempts),
          error: unfinishedError(e.attempts),
        })
        .where('id', '=', e.id)
        .where('status', '=', 'running')
        .where('locked_until', '<', realNow)
        .executeTakeFirst();
      if (r.numUpdatedRows === 0n) return;
      await tx
        .updateTable('services')
        .set({ active_job_id: null })
        .where('id', '=', e.service_id)
        .where('active_job_id', '=', e.id)
        .execute();
      n++;
    });
  }
  return n;
}

/** Locks the service's row and the job's (PostgreSQL), unless another transaction holds one: then false. */
async function lockedWithoutWaiting(
  tx: Kysely<Database>,
  serviceId: string,
  jobId: string,
): Promise<boolean> {
  const both = await tx
    .selectFrom('services as s')
    .innerJoin('jobs as j', 'j.service_id', 's.id')
    .select('j.id')
    .where('s.id', '=', serviceId)
    .where('j.id', '=', jobId)
    .forUpdate(['s', 'j'])
    .skipLocked()
    .executeTakeFirst();
  return both !== undefined;
}
