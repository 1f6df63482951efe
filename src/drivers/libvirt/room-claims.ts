/**
 * Room held for copies under way. A copy that will write about `need` bytes to a place (a host's
 * storage pool, this machine's temporary directory) checks the place's free room first
 * (checkRoom); alone, that check lets copies started together each count the room the others
 * are about to take, and together they fill the place: an evacuation moves two stopped VMs at a
 * time, to the one host the placement picks, from any worker process. So the check and a claim
 * of the room are one step in the store (`room_claims`, migration 038): a copy's check counts as
 * taken what the other copies under way hold on the place, and where they leave too little, it
 * waits for them to end, then looks at the place again. Only where the place is too small with no
 * other copy held there is a copy refused for good, as before.
 *
 * What counts, for a check whose free figure was read at time T:
 * - a claim under way, while the job run that made it goes on: its job `running` in that attempt
 *   (`attempts`) under a lease not yet ended (`locked_until` ahead). Once its run is found over
 *   (the process died and its lease ran out, the job's next attempt began, or the same job's
 *   next run holds room) it is marked released, so nothing is held for ever; the run's own
 *   claims under way never count against it;
 * - a claim released (its copy over, or its run) unless the figure was read from the place after
 *   the release (`fresh`, T after `released_at`, in a later millisecond): a figure read before,
 *   or libvirt's last figure of a pool a copy holds, may not show the copy's bytes yet. The run's
 *   own released claims count too (a move's template copy, then its disk's). Released claims go
 *   after an hour.
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
  /** The place's key: `pool:<host id>`, or localPlace() for this machine's temporary directory. */
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

/** How long a released claim is kept for checks whose figure is older than its release (ms). */
const RELEASED_KEPT_MS = 60 * 60_000;

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
}

/**
 * Holds `wants` for the calling job run, waiting while other copies' claims leave too little;
 * refuses for good (checkRoom's error) a place too small with no other claim there. Resolves to
 * the claims' release, which the caller runs once its copies are over, whatever happened (a
 * no-op where nothing is held); a release that does not reach the store leaves claims that end
 * with the run.
 */
export async function holdRoom(
  db: Kysely<Database>,
  wants: readonly RoomWant[],
  options: HoldOptions = {},
): Promise<() => Promise<void>> {
  const run = fenceRun();
  // Two wants on one place (a pool both source and destination) need their sum there.
  const places = new Map<string, RoomWant>();
  for (const w of wants) {
    const same = places.get(w.place);
    places.set(w.place, { ...w, need: (same?.need ?? 0) + w.need });
  }
  for (let waited = false; ; waited = true) {
    checkStop();
    if (waited && (await options.done?.())) return async () => {};
    const room: PlaceRoom[] = [];
    for (const want of places.values()) {
      const readAt = Date.now();
      room.push({ ...want, ...(await want.room()), readAt });
    }
    if (run === undefined) {
      for (const r of room) checkRoom(r.bytes, r.need, r.where);
      return async () => {};
    }
    const ids = await claim(db, run, room);
    if (ids) {
      return async () => {
        await db
          .updateTable('room_claims')
          .set({ released_at: Date.now() })
          .where('id', 'in', ids)
          .execute()
          .catch(() => undefined);
      };
    }
    // A run that must stop (fence.ts) stops waiting at once.
    await sleep(options.waitMs ?? ROOM_WAIT_MS, undefined, { signal: fenceStop() }).catch(() => {});
  }
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
 * In one transaction: ends the claims whose run is over (of an attempt no longer running under
 * its lease, or an earlier run of this job: marked released, so that they count as released
 * ones do), drops those released over an hour ago, and inserts one per place if each place's
 * free room less what the others hold there (see the top) fits what the copy needs; undefined
 * (nothing inserted) if one does not. Throws checkRoom's refusal for a place too small with
 * nothing else held there, and FenceDown if the run's attempt is no longer the job's running one.
 */
async function claim(
  db: Kysely<Database>,
  run: JobRun,
  room: readonly PlaceRoom[],
): Promise<string[] | undefined> {
  return db.transaction().execute(async (tx) => {
    if (dialectOf(tx) === 'postgres') await sql`select pg_advisory_xact_lock(${CLAIMS_LOCK})`.execute(tx);
    const now = Date.now();
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
          eb.and([eb('job_id', '=', run.jobId), eb('run_id', '!=', run.runId)]),
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
    await tx
      .deleteFrom('room_claims')
      .where('released_at', '<', now - RELEASED_KEPT_MS)
      .execute();
    const claims = await tx
      .selectFrom('room_claims')
      .select(['place', 'bytes', 'run_id', 'released_at'])
      .where(
        'place',
        'in',
        room.map((r) => r.place),
      )
      .execute();
    for (const r of room) {
      let held = 0;
      for (const c of claims) {
        if (c.place !== r.place) continue;
        const released = c.released_at === null ? undefined : Number(c.released_at);
        // The run's own claims under way (a hold's release that did not reach the store) never
        // count against it; its released ones count as anyone's (its template's copy, then its move's).
        if (released === undefined && c.run_id === run.runId) continue;
        if (released === undefined || !r.fresh || r.readAt <= released) held += Number(c.bytes);
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
      run_id: run.runId,
      created_at: now,
      released_at: null,
    }));
    await tx.insertInto('room_claims').values(rows).execute();
    return rows.map((r) => r.id);
  });
}
