import { type Kysely, sql } from 'kysely';
import { dialectOf } from '../dialect-of.ts';

// Released migrations are never edited; add a new numbered file instead.

/**
 * A console in the browser (service_console_links) ends for good when what allowed it ends, and
 * never comes back when that returns:
 * - its service leaves `running`/`rescue` (any other status, the transitional ones included:
 *   suspend, stop, restart, reinstall, upgrade, restore, rescue and back, terminate, a server
 *   found off by the power check): a trigger ends its links in the transaction of the change
 *   itself, whoever makes it (a job, the power check, the operator API, the CLI);
 * - the client whose request made the link (a reseller's application, or an operator's client)
 *   is disabled, has its tokens revoked or its secret rotated, or its reseller (or operator) is
 *   disabled: the link records the client and its token version (`client_kind`, `client_id`,
 *   `client_version`), and a link or session is good only while that client's version is still
 *   the same, the client, its reseller and its operator enabled (src/store/repos/
 *   service-console-links.ts). A disable moves the version on (src/store/repos/clients.ts
 *   revokeTokensOf), so enabling again does not bring the link back. Read, not written: triggers
 *   that ended a client's or a reseller's many links would lock them in another order than a
 *   group of job ends locks its services' links, a deadlock.
 *
 * A link ended by its service has `open_until` 0 (it never opens; the pruner removes it at its
 * next pass) and, once opened, `session_until` 0 (its session is refused, and an open console
 * closes at its next check, within about a second). Links stored before this name no client:
 * they hold while their reseller is enabled. Links and sessions whose service is not
 * `running`/`rescue`, or whose reseller is disabled, end here.
 *
 * The statuses are those of CONSOLE_STATUSES (src/http/actions/console.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [column, type] of [
    ['client_kind', 'text'],
    ['client_id', 'text'],
    ['client_version', 'integer'],
  ] as const)
    await db.schema.alterTable('service_console_links').addColumn(column, type).execute();
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

/** The change that ends links: the table and column it updates, when it ends them, and the links' column naming the row. */
const ENDS = [
  {
    table: 'services',
    columns: 'status',
    when: `new.status not in ${CONSOLE_STATUSES}`,
    link: 'service_id',
  },
] as const;
