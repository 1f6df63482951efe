/**
 * Room held for copies under way. A copy that will write about `need` bytes to a place (a host's
 * storage pool, this machine's temporary directory) checks the place's free room first
 * (checkRoom); alone, that check lets copies started together each count the room the others
 * are about to take, and together they fill the place: an evacuation moves two stopped VMs at a
 * time, to the one host the placement picks, from any worker process. So the check and a claim
 * of the room are one step in the store (`room_claims`, migration 038): a copy's check counts as
 * taken what the other copies under way hold on the place, and where they leave too little, it
 * waits for them to end, then looks at the place again (what they wrote is then in its free
 * figure). Where the place is too small even with no other copy, it is refused for good, as
 * before.
 *
 * A claim is the job's whose attempt takes it (the attempt's fence, fence.ts) and counts only
 * while that job runs under a lease not yet ended: one whose process died stops counting when its
 * lease runs out (the job's next attempt then claims again), so nothing is held for ever. A copy
 * made outside a job (none in the server; tools, tests) is checked and holds nothing.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Kysely, sql } from 'kysely';
import { dialectOf } from '../../store/dialect-of.ts';
import type { Database } from '../../store/schema.ts';
import { checkFence, fenceJob, fenceSignal } from '../fence.ts';
import { checkRoom, roomLeft } from './storage.ts';

/** A place a copy is about to write to, and how much. */
export interface RoomWant {
  /** The place's key: `pool:<host id>`, or localPlace() for this machine's temporary directory. */
  readonly place: string;
  /** The place as the refusal names it (with what to do). */
  readonly where: string;
  readonly need: number;
  /** Its free bytes now (read again after each wait). */
  free(): Promise<number>;
}

/** A place's free room as last read, and what the copy needs there. */
interface PlaceRoom {
  readonly place: string;
  readonly need: number;
  readonly free: number;
}

/** How long a copy waits for other copies' room before it looks again (ms). */
export const ROOM_WAIT_MS = 5_000;

/** The key of a worker machine's temporary directory `dir`. */
export const localPlace = (dir: string) => `tmpdir:${hostname()}:${dir}`;

/** One key for every claim's transaction on PostgreSQL (pg_advisory_xact_lock): claims are few. */
const CLAIMS_LOCK = 0x76_72_70_72; // 'vrpr'

/**
 * Holds `wants` for the calling job's attempt, waiting (every `waitMs`) while other copies' claims
 * leave too little; refuses for good (checkRoom's error) a place too small with none. Resolves
 * to the claims' release, which the caller runs once its copies are over, whatever happened;
 * a release that does not reach the store leaves claims that end with the job's run.
 */
export async function holdRoom(
  db: Kysely<Database>,
  wants: readonly RoomWant[],
  waitMs = ROOM_WAIT_MS,
): Promise<() => Promise<void>> {
  const jobId = fenceJob();
  // Two wants on one place (a pool both source and destination) need their sum there.
  const places = new Map<string, RoomWant & { need: number }>();
  for (const w of wants) {
    const same = places.get(w.place);
    places.set(w.place, { ...w, need: (same?.need ?? 0) + w.need });
  }
  for (;;) {
    checkFence();
    const room: PlaceRoom[] = [];
    for (const want of places.values()) {
      const free = await want.free();
      checkRoom(free, want.need, want.where);
      room.push({ place: want.place, need: want.need, free });
    }
    if (jobId === undefined) return async () => {};
    const ids = await claim(db, jobId, room);
    if (ids) {
      return async () => {
        await db
          .deleteFrom('room_claims')
          .where('id', 'in', ids)
          .execute()
          .catch(() => undefined);
      };
    }
    // A run whose fence went down (fence.ts) stops waiting at once.
    await sleep(waitMs, undefined, { signal: fenceSignal() }).catch(() => {});
  }
}

/**
 * In one transaction: drops the claims that no longer count (their job's run ended, or its lease
 * did, and this job's own from an earlier attempt), and inserts one per place if each place's
 * free room less what the others hold there fits what the copy needs; undefined (nothing
 * inserted) if one does not.
 */
async function claim(
  db: Kysely<Database>,
  jobId: string,
  room: readonly PlaceRoom[],
): Promise<string[] | undefined> {
  return db.transaction().execute(async (tx) => {
    if (dialectOf(tx) === 'postgres') await sql`select pg_advisory_xact_lock(${CLAIMS_LOCK})`.execute(tx);
    const now = Date.now();
    await tx
      .deleteFrom('room_claims')
      .where((eb) =>
        eb.or([
          eb('job_id', '=', jobId),
          eb.not(
            eb.exists(
              eb
                .selectFrom('jobs')
                .select('jobs.id')
                .whereRef('jobs.id', '=', 'room_claims.job_id')
                .where('jobs.status', '=', 'running')
                .where('jobs.locked_until', '>=', now),
            ),
          ),
        ]),
      )
      .execute();
    const held = new Map(
      (
        await tx
          .selectFrom('room_claims')
          .select(['place', (eb) => eb.fn.sum<number | string>('bytes').as('bytes')])
          .where(
            'place',
            'in',
            room.map((r) => r.place),
          )
          .groupBy('place')
          .execute()
      ).map((r) => [r.place, Number(r.bytes)]),
    );
    for (const { place, free, need } of room)
      if (!roomLeft(free - (held.get(place) ?? 0), need)) return undefined;
    const rows = room.map((r) => ({
      id: randomUUID(),
      place: r.place,
      bytes: r.need,
      job_id: jobId,
      created_at: now,
    }));
    await tx.insertInto('room_claims').values(rows).execute();
    return rows.map((r) => r.id);
  });
}
