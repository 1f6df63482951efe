import { type Kysely, sql } from 'kysely';
import { dialectOf } from '../dialect-of.ts';

// Released migrations are never edited; add a new numbered file instead.

/**
 * PostgreSQL: a transaction takes its resellers' event-numbering locks in one order, so that two
 * transactions with events of several resellers cannot deadlock at their commits.
 *
 * Migration 014's trigger numbers each event at commit under its reseller's advisory lock,
 * taken as the event's row comes up: in the order the events were recorded. A transaction
 * group's job ends record the events of several resellers in the order the jobs ended, so one
 * group could take reseller a's lock and wait for b's while another held b's and waited for
 * a's: a deadlock, which PostgreSQL breaks after a second by failing one of them
 * (test/store/event-order.test.ts shows it with two transactions).
 *
 * Now a statement trigger keeps the set of the transaction's resellers (their lock keys, in a
 * setting local to the transaction, undone with it and with a savepoint's rollback), and the
 * commit's first numbering takes all their locks at once, in the keys' order. Every
 * transaction takes them in that one order, so none waits for a lock while holding one that
 * the other needs before it. The numbering itself is 014's: nothing else changes.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (dialectOf(db) !== 'postgres') return;
  await sql`
    create function vrp_event_resellers() returns trigger language plpgsql as $$
    begin
      perform set_config('vrp.event_lock_keys', array(
        select k from unnest(coalesce(nullif(current_setting('vrp.event_lock_keys', true), ''), '{}')::int[]) as k
        union
        select hashtext(reseller_id) from added
        order by 1)::text, true);
      return null;
    end
    $$`.execute(db);
  await sql`
    create trigger events_resellers after insert on events
    referencing new table as added for each statement execute function vrp_event_resellers()`.execute(db);
  await sql`
    create or replace function vrp_event_seq_at_commit() returns trigger language plpgsql as $$
    declare
      keys text := coalesce(nullif(current_setting('vrp.event_lock_keys', true), ''), '{}');
      k int;
    begin
      if keys is distinct from current_setting('vrp.event_locks_taken', true) then
        for k in select x from unnest(keys::int[]) as x order by x loop
          perform pg_advisory_xact_lock(1987211365, k);
        end loop;
        perform set_config('vrp.event_locks_taken', keys, true);
      end if;
      -- Its own reseller's, as before: held already unless the event came in some other way.
      perform pg_advisory_xact_lock(1987211365, hashtext(new.reseller_id));
      update events set seq = default where id = new.id;
      return null;
    end
    $$`.execute(db);
}
