import { type Kysely, sql } from 'kysely';
import { dialectOf } from '../dialect-of.ts';

// Released migrations are never edited; add a new numbered file instead.

/**
 * PostgreSQL numbers a reseller's events when their transaction commits.
 *
 * The feed pages by `events.seq`, so seq must follow commit order (migration 006). Until now
 * the transaction that recorded events took the reseller's advisory lock at the insert and held
 * it to its commit: a reseller's job ends took turns for several round trips each, and with one
 * busy reseller that lock was the bound of order -> running (14-20 s of waits in a 3 s run).
 *
 * Now a deferred constraint trigger does it at commit time: it takes the same lock (class
 * "vrpe", the reseller) and renumbers the event from the identity (`seq = default`), as the
 * last work before the commit record. The lock is held for that and the WAL flush only, and a
 * transaction is visible before its locks are released, so the next one numbers its events
 * after. SQLite needs nothing: its writers take turns already.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  await sql`
    create function vrp_event_seq_at_commit() returns trigger language plpgsql as $$
    begin
      perform pg_advisory_xact_lock(1987211365, hashtext(new.reseller_id));
      update events set seq = default where id = new.id;
      return null;
    end
    $$`.execute(db);
  await sql`
    create constraint trigger events_seq_at_commit after insert on events
    deferrable initially deferred for each row execute function vrp_event_seq_at_commit()`.execute(db);
}
