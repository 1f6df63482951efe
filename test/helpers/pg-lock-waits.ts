import type pg from 'pg';

/** How many backends of `client`'s database wait for a lock now (pg_stat_activity). */
export async function lockWaiters(client: pg.Client): Promise<number> {
  const r = await client.query<{ n: string }>(
    `select count(*) as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`,
  );
  return Number(r.rows[0]?.n ?? 0);
}
