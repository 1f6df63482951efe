import type pg from 'pg';

/** How many backends of `client`'s database wait for a lock now (pg_stat_activity). */
export async function lockWaiters(client: pg.Client): Promise<number> {
  const r = await client.query<{ n: string }>(
    `select count(*) as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'`,
  );
  return Number(r.rows[0]?.n ?? 0);
}

/** How many sessions wait for a lock that the session with backend pid `pid` holds. */
export async function blockedBy(client: pg.Client, pid: number): Promise<number> {
  const r = await client.query<{ n: string }>(
    `select count(*) as n from pg_stat_activity
      where datname = current_database() and $1 = any(pg_blocking_pids(pid))`,
    [pid],
  );
  return Number(r.rows[0]?.n ?? 0);
}

/**
 * Whether the row `id` of `table` can be locked from `client` without waiting (false: another
 * transaction holds it); the lock is let go again at once.
 */
export async function rowFree(client: pg.Client, table: string, id: string): Promise<boolean> {
  await client.query('begin');
  try {
    await client.query(`select 1 from "${table}" where id = $1 for update nowait`, [id]);
    return true;
  } catch (err) {
    if ((err as { code?: string }).code !== '55P03') throw err;
    return false;
  } finally {
    await client.query('rollback');
  }
}
