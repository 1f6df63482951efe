/**
 * Room held for copies under way. A copy that will write about `need` bytes to a place (a host's
 * storage pool, this machine's temporary directory) checks the place's free room first
 * (checkRoom); alone, that check lets copies started together each count the room the others
 * are about to take, and together they fill the place: an evacuation moves two stopped VMs at a
 * time, to the one host the placement picks, from any worker process. So the check and a claim
 * of the room are one step in the store (`room_claims`, migration 038): a copy's check counts as
 * taken what the other copies under way hold on the place, and where they leave too little, it
 * waits for them to end, then looks at the place again. Only where the place is too small with no
 * other copy held there is a copy refused for good, as before. The copies that hold room: a
 * stopped VM's move, a template's first copy to a host, a backup's export, a restore's image.
 *
 * What counts, for a check whose free figure was read at time T:
 * - a claim under way, while the job attempt that made it runs under a lease not yet ended (its
 *   job `running` in that attempt, `attempts`, with `locked_until` ahead). Once it is found over
 *   (the process died and its lease ran out, the job's next attempt began, the job ended) it is
 *   marked released, so nothing is held for ever. A job's new hold marks all its earlier claims
 *   released: holds are never nested, so those are over (a release that did not reach the store);
 * - a claim released (its copy over, or its run) unless the figure shows its bytes: read afresh
 *   from the place (`fresh`) after the release, in a later millisecond. libvirt's last figure of
 *   a pool a copy holds (not fresh) is at least as new as the place's last fresh read recorded
 *   (`room_places`), so for it the claims released since that read count. A released claim goes
 *   once the place's last fresh read began READ_MAX_AGE_MS after its release: no check counts it
 *   any more, since a read older than that is read again before it is used.
 * Times are each worker's clock: their differences must stay well below the margin kept free and
 * the lease's (as the lease already needs).
 * A claim counts its copy's whole size while the copy has written part of it: a check may wait
 * longer than it must, never fill a place. Copies wait in no order: a large one may wait while
 * smaller ones keep taking what frees up.
 *
 * A copy made outside a job (none in the server; tools, tests) is checked and holds nothing.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Kysely, sql } from 'kysely';
import { dialectOf } from '../../store/dialect-of.ts';
import type { Database } from '../../store/schema.ts';
import { DriverError } from '../driver.ts';
import { checkFence, FenceDown, fenceRun, fenceStop, type JobRun } from '../fence.ts';
import { checkRoom, type Room, roomLeft } from './storage.ts';

/** A place a copy is about to write to, and how much. */
export interface RoomWant {
  /** The place's key: a host's pool's (PoolStorage.place), or localPlace() for this machine's temporary directory. */
  readonly place: string;
  /** The place as the refusal names it (with what to do). */
  readonly where: string;
  readonly need: number;
  /** Its free room now (read again after each wait). */
  room(): Promise<Room>;
}

/** A place's free room as last read (from `readAt`), and what the copy needs there. */
interface PlaceRoom extends Room {
  readonly place: string;
  readonly where: string;
  readonly need: number;
  readonly readAt: number;
}

/** How long a copy waits for other copies' room before it looks again (ms). */
export const ROOM_WAIT_MS = 5_000;

/**
 * How old a free figure may be when its claim is made (ms): one older is read again. A released
 * claim goes once a fresh read of its place began this long after its release.
 */
const READ_MAX_AGE_MS = 5 * 60_000;

/** One key for every claim's transaction on PostgreSQL (pg_advisory_xact_lock): claims are few. */
const CLAIMS_LOCK = 0x76_72_70_72; // 'vrpr'

/** What a hold waits with. */
export interface HoldOptions {
  /** How long it waits before it looks again (ROOM_WAIT_MS unless given). */
  readonly waitMs?: number;
  /**
   * Asked before each look after a wait: true if what the copy was for is there now (another
   * job made it meanwhile); the hold then ends holding nothing.
   */
  readonly done?: () => Promise<boolean>;
  /** Told each time the hold waits for other copies' room (a caller whose world may change meanwhile). */
  readonly onWait?: () => void;
}

/**
 * Lets go of a hold's room: on the places given (a copy done with one of them while another goes
 * on), or on all of them.
 */
export type RoomRelease = (places?: readonly string[]) => Promise<void>;

/**
 * Holds `wants` for the calling job run, waiting while other copies' claims leave too little;
 * refuses for good (checkRoom's error) a place too small with no other claim there. `wants` as a
 * function is asked again at each look (sizes that grow while the copy waits: a running VM's
 * disk). Resolves to the claims' release, which the caller runs once its copies are over,
 * whatever happened (a no-op where nothing is held); a release that does not reach the store
 * leaves claims that end with the run.
 */
export async function holdRoom(
  db: Kysely<Database>,
  wants: readonly RoomWant[] | (() => Promise<readonly RoomWant[]>),
  options: HoldOptions = {},
): Promise<RoomRelease> {
  const run = fenceRun();
  for (let waited = false; ; waited = true) {
    checkStop();
    if (waited && (await options.done?.())) return async () => {};
    const places = byPlace(typeof wants === 'function' ? await wants() : wants);
    if (places.length === 0) return async () => {};
    const room: PlaceRoom[] = [];
    for (const want of places) {
      const readAt = Date.now();
      room.push({ ...want, ...(await want.room()), readAt });
    }
    if (run === undefined) {
      for (const r of room) checkRoom(r.bytes, r.need, r.where);
      return async () => {};
    }
    const claimed = await claim(db, run, room);
    if (claimed) {
      return async (only) => {
        const which = claimed.filter((c) => only === undefined || only.includes(c.place)).map((c) => c.id);
        if (which.length === 0) return;
        await db
          .transaction()
          .execute(async (tx) => {
            // Under the claims' lock: a claim marking these released too would otherwise lock
            // them in another order (PostgreSQL).
            await lockClaims(tx);
            await tx
              .updateTable('room_claims')
              .set({ released_at: Date.now() })
              .where('id', 'in', which)
              .where('released_at', 'is', null)
              .execute();
          })
          .catch(() => undefined);
      };
    }
    options.onWait?.();
    // A run that must stop (fence.ts) stops waiting at once.
    await sleep(options.waitMs ?? ROOM_WAIT_MS, undefined, { signal: fenceStop() }).catch(() => {});
  }
}

/**
 * One want per place: two on one place (a pool on the disk of this machine's temporary
 * directory) need their sum there.
 */
function byPlace(wants: readonly RoomWant[]): RoomWant[] {
  const places = new Map<string, RoomWant>();
  for (const w of wants) {
    const same = places.get(w.place);
    places.set(
      w.place,
      same
        ? {
            ...w,
            need: same.need + w.need,
            where: oneFilesystem(same.where, w.where),
          }
        : w,
    );
  }
  return [...places.values()];
}

/** Two places a refusal names that are one filesystem, as it names them (one if they are the same). */
export const oneFilesystem = (first: string, second: string): string =>
  first === second
    ? first
    : `${first} and ${second.charAt(0).toLowerCase()}${second.slice(1)}, one filesystem,`;

/** Takes the claims' lock for the rest of the transaction (PostgreSQL; SQLite's transactions take turns). */
async function lockClaims(tx: Kysely<Database>): Promise<void> {
  if (dialectOf(tx) === 'postgres') await sql`select pg_advisory_xact_lock(${CLAIMS_LOCK})`.execute(tx);
}

/** Throws if the calling attempt must stop: its fence is down (FenceDown), or its worker stops. */
function checkStop(): void {
  checkFence();
  if (fenceStop()?.aborted)
    throw new DriverError('The worker is stopping: this attempt stopped before its copy', {
      transient: true,
    });
}

/**
 * In one transaction: marks released the claims that are over (of an attempt no longer running
 * under its lease, and this job's earlier ones), records the places read afresh, drops the
 * released claims every figure shows, and inserts one claim per place if each place's free room
 * less what the others hold there (see the top) fits what the copy needs, and resolves to them;
 * undefined (nothing inserted: wait, and look again) if one does not, or a figure is too old. Throws checkRoom's
 * refusal for a place too small with nothing else held there, and FenceDown if the run's attempt
 * is no longer the job's running one.
 */
async function claim(
  db: Kysely<Database>,
  run: JobRun,
  room: readonly PlaceRoom[],
): Promise<{ id: string; place: string }[] | undefined> {
  return db.transaction().execute(async (tx) => {
    await lockClaims(tx);
    const now = Date.now();
    // A figure read long ago: read again (the claims it must count may be gone).
    if (room.some((r) => now - r.readAt > READ_MAX_AGE_MS)) return undefined;
    const current = await tx
      .selectFrom('jobs')
      .select('id')
      .where('id', '=', run.jobId)
      .where('status', '=', 'running')
      .where('attempts', '=', run.attempt)
      .where('locked_until', '>=', now)
      .executeTakeFirst();
    if (!current) throw new FenceDown();
    await tx
      .updateTable('room_claims')
      .set({ released_at: now })
      .where('released_at', 'is', null)
      .where((eb) =>
        eb.or([
          eb('job_id', '=', run.jobId),
          eb.not(
            eb.exists(
              eb
                .selectFrom('jobs')
                .select('jobs.id')
                .whereRef('jobs.id', '=', 'room_claims.job_id')
                .whereRef('jobs.attempts', '=', 'room_claims.attempt')
                .where('jobs.status', '=', 'running')
                .where('jobs.locked_until', '>=', now),
            ),
          ),
        ]),
      )
      .execute();
    for (const r of room.filter((x) => x.fresh)) {
      await tx
        .insertInto('room_places')
        .values({ place: r.place, fresh_at: r.readAt })
        .onConflict((oc) =>
          oc.column('place').doUpdateSet({
            fresh_at: sql<number>`case when excluded.fresh_at > room_places.fresh_at then excluded.fresh_at else room_places.fresh_at end`,
          }),
        )
        .execute();
    }
    await tx
      .deleteFrom('room_claims')
      .where('released_at', 'is not', null)
      .where((eb) =>
        eb.exists(
          eb
            .selectFrom('room_places')
            .select('room_places.place')
            .whereRef('room_places.place', '=', 'room_claims.place')
            .where(sql<boolean>`room_claims.released_at < room_places.fresh_at - ${READ_MAX_AGE_MS}`),
        ),
      )
      .execute();
    const places = room.map((r) => r.place);
    const freshAt = new Map(
      (await tx.selectFrom('room_places').selectAll().where('place', 'in', places).execute()).map((p) => [
        p.place,
        Number(p.fresh_at),
      ]),
    );
    const claims = await tx
      .selectFrom('room_claims')
      .select(['place', 'bytes', 'released_at'])
      .where('place', 'in', places)
      .execute();
    for (const r of room) {
      // A released claim counts for this figure if it may not show its bytes (see the top).
      const shownBefore = r.fresh ? r.readAt : (freshAt.get(r.place) ?? Number.NEGATIVE_INFINITY);
      let held = 0;
      for (const c of claims) {
        if (c.place !== r.place) continue;
        if (c.released_at === null || Number(c.released_at) >= shownBefore) held += Number(c.bytes);
      }
      if (held === 0) checkRoom(r.bytes, r.need, r.where);
      else if (!roomLeft(r.bytes - held, r.need)) return undefined;
    }
    const rows = room.map((r) => ({
      id: randomUUID(),
      place: r.place,
      bytes: r.need,
      job_id: run.jobId,
      attempt: run.attempt,
      created_at: now,
      released_at: null,
    }));
    await tx.insertInto('room_claims').values(rows).execute();
    return rows.map((r) => ({ id: r.id, place: r.place }));
  });
}
