import { type Kysely, sql } from 'kysely';
import { dialectOf } from '../dialect-of.ts';

// Released migrations are never edited; add a new numbered file instead.

/**
 * A console in the browser (service_console_links) ends for good when what allowed it ends, and
 * never comes back when that returns:
 * - its service leaves `running`/`rescue` (any other status, the transitional ones included:
 *   suspend, stop, restart, reinstall, upgrade, restore, rescue and back, terminate, a server
 *   found off by the power check);
 * - its reseller is disabled;
 * - the client whose request made the link (a reseller's application, or an operator's client)
 *   is disabled, has its tokens revoked or its secret rotated (its token version moves on; an
 *   operator disabled moves its client's).
 *
 * The rule is kept by triggers, in the transaction of the change itself, whoever makes it (a
 * job, the power check, the operator API, the CLI, code written later): no status or flag can
 * change without its links ending, and nothing is written on the console's own requests, which
 * only read their row (`session_until` in the future). Recording at opening a marker of the
 * service (its job sequence) and comparing it on each request would miss what changes a status
 * without a job (the power check) and end sessions on jobs that do not (a backup).
 *
 * A link ended has `open_until` 0 (it never opens; the pruner removes it at its next pass) and,
 * once opened, `session_until` 0 (its session is refused, and an open console closes at its
 * next check, within about a second).
 *
 * `service_console_links.client_id`: that client (null for links made before, which end by their
 * service and reseller only). Links and sessions whose service is not `running`/`rescue`, or
 * whose reseller is disabled, now end here.
 *
 * The statuses are those of CONSOLE_STATUSES (src/http/actions/console.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('service_console_links').addColumn('client_id', 'text').execute();
  const postgres = dialectOf(db) === 'postgres';
  for (const end of ENDS) {
    const name = `${end.table}_console_links_end`;
    if (postgres) {
      await sql
        .raw(`create function vrp_${name}() returns trigger language plpgsql as $$
        begin
          ${endLinks(end.link)};
          return null;
        end
        $$`)
        .execute(db);
      await sql
        .raw(`create trigger ${name} after update of ${end.columns} on ${end.table}
        for each row when (${end.when}) execute function vrp_${name}()`)
        .execute(db);
    } else {
      await sql
        .raw(`create trigger ${name} after update of ${end.columns} on ${end.table}
        for each row when ${end.when}
        begin
          ${endLinks(end.link)};
        end`)
        .execute(db);
    }
  }
  await sql
    .raw(`update service_console_links set ${ENDED}
    where open_until <> 0 and (
      service_id in (select id from services where status not in ${CONSOLE_STATUSES})
      or reseller_id in (select id from resellers where enabled = 0))`)
    .execute(db);
}

const CONSOLE_STATUSES = "('running', 'rescue')";

/** What an ended link holds. */
const ENDED = 'open_until = 0, session_until = case when opened_at is null then null else 0 end';

/** The links whose `column` is the changed row's id end (those that already have are left). */
const endLinks = (column: string) =>
  `update service_console_links set ${ENDED} where ${column} = new.id and open_until <> 0`;

/**
 * Each change that ends links: the table and columns it updates, when it ends them, and the
 * links' column naming the row. Service links are found by their index; a reseller's or a
 * client's are rare changes and read the (pruned) table.
 */
const ENDS = [
  {
    table: 'services',
    columns: 'status',
    when: `new.status not in ${CONSOLE_STATUSES}`,
    link: 'service_id',
  },
  { table: 'resellers', columns: 'enabled', when: 'new.enabled = 0', link: 'reseller_id' },
  {
    table: 'clients',
    columns: 'enabled, token_version',
    when: 'new.enabled = 0 or new.token_version <> old.token_version',
    link: 'client_id',
  },
  {
    table: 'operator_clients',
    columns: 'token_version',
    when: 'new.token_version <> old.token_version',
    link: 'client_id',
  },
] as const;
