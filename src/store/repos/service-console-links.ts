import { randomUUID } from 'node:crypto';
import type { ExpressionBuilder, Kysely } from 'kysely';
import type { Database } from '../schema.ts';

/** A console link, as made: its token and secrets are the caller's, already hashed. */
export interface NewConsoleLink {
  readonly tokenHash: string;
  readonly serviceId: string;
  readonly resellerId: string;
  /** Whose request made it: disabled, or its token version moved on, the link ends. */
  readonly asker: ConsoleLinkAsker;
  readonly now: number;
  readonly openUntil: number;
}

/** Who asks for a link: a reseller's application or an operator's client, at its token's version. */
export interface ConsoleLinkAsker {
  readonly kind: 'application' | 'operator';
  readonly clientId: string;
  readonly tokenVersion: number;
}

/** An open console session: the service it shows, and when it ends at the latest. */
export interface ConsoleLinkSession {
  readonly serviceId: string;
  readonly resellerId: string;
  readonly sessionUntil: number;
}

export async function insertConsoleLink(db: Kysely<Database>, link: NewConsoleLink): Promise<void> {
  await db
    .insertInto('service_console_links')
    .values({
      id: randomUUID(),
      token_hash: link.tokenHash,
      service_id: link.serviceId,
      reseller_id: link.resellerId,
      client_kind: link.asker.kind,
      client_id: link.asker.clientId,
      client_version: link.asker.tokenVersion,
      created_at: link.now,
      open_until: link.openUntil,
      opened_at: null,
      session_hash: null,
      session_until: null,
    })
    .execute();
}

/**
 * In the transaction that inserts a link, before it: the service's status now, and whether
 * `asker` may still ask (enabled, and so is its reseller or operator, at `tokenVersion`), both
 * read from the store (the caller's state was read from a cache up to a couple of seconds old).
 * With `lock` (PostgreSQL), the service's row is held to the commit, and first, holding nothing
 * else: a status change waits for the link, and its trigger (migrations/035) then ends it too.
 * The client's state is read again at each use (stillAllowed).
 * A client disabled in the few milliseconds between this read and the commit is not seen.
 */
export async function consoleLinkGrounds(
  tx: Kysely<Database>,
  serviceId: string,
  asker: ConsoleLinkAsker,
  lock: boolean,
): Promise<{ status: string | undefined; askerValid: boolean }> {
  const service = await tx
    .selectFrom('services')
    .select('status')
    .where('id', '=', serviceId)
    .$if(lock, (q) => q.forShare())
    .executeTakeFirst();
  const valid =
    asker.kind === 'application'
      ? tx
          .selectFrom('clients')
          .innerJoin('resellers', 'resellers.id', 'clients.reseller_id')
          .select('clients.id')
          .where('clients.id', '=', asker.clientId)
          .where('clients.enabled', '=', 1)
          .where('resellers.enabled', '=', 1)
          .where('clients.token_version', '=', asker.tokenVersion)
      : tx
          .selectFrom('operator_clients')
          .innerJoin('operators', 'operators.id', 'operator_clients.operator_id')
          .select('operator_clients.id')
          .where('operator_clients.id', '=', asker.clientId)
          .where('operators.enabled', '=', 1)
          .where('operator_clients.token_version', '=', asker.tokenVersion);
  return { status: service?.status, askerValid: (await valid.executeTakeFirst()) !== undefined };
}

/**
 * Whether what made the link still allows it: its reseller enabled, and the client whose request
 * made it still at the token version it had then, enabled (an application), its operator enabled
 * (an operator's client). A disable or a revocation moves the version on, so the link does not
 * come back when they are undone. A link made before migrations/035 names no client: its reseller
 * alone. (Read at each use rather than ended by triggers: see migrations/035.)
 */
function stillAllowed(eb: ExpressionBuilder<Database, 'service_console_links'>) {
  const link = 'service_console_links';
  return eb.and([
    eb.exists(
      eb
        .selectFrom('resellers')
        .select('resellers.id')
        .whereRef('resellers.id', '=', `${link}.reseller_id`)
        .where('resellers.enabled', '=', 1),
    ),
    eb.or([
      eb(`${link}.client_kind`, 'is', null),
      eb.and([
        eb(`${link}.client_kind`, '=', 'application'),
        eb.exists(
          eb
            .selectFrom('clients')
            .select('clients.id')
            .whereRef('clients.id', '=', `${link}.client_id`)
            .whereRef('clients.token_version', '=', `${link}.client_version`)
            .where('clients.enabled', '=', 1),
        ),
      ]),
      eb.and([
        eb(`${link}.client_kind`, '=', 'operator'),
        eb.exists(
          eb
            .selectFrom('operator_clients')
            .innerJoin('operators', 'operators.id', 'operator_clients.operator_id')
            .select('operator_clients.id')
            .whereRef('operator_clients.id', '=', `${link}.client_id`)
            .whereRef('operator_clients.token_version', '=', `${link}.client_version`)
            .where('operators.enabled', '=', 1),
        ),
      ]),
    ]),
  ]);
}

/**
 * Opens the link whose token hashes to `tokenHash`, once: one conditional UPDATE, so of two
 * requests with the same token (two processes, two tabs) only one gets the session. A link
 * already opened, past `open_until` or unknown gives undefined.
 */
export async function openConsoleLink(
  db: Kysely<Database>,
  o: { tokenHash: string; sessionHash: string; now: number; sessionUntil: number },
): Promise<ConsoleLinkSession | undefined> {
  const row = await db
    .updateTable('service_console_links')
    .set({ opened_at: o.now, session_hash: o.sessionHash, session_until: o.sessionUntil })
    .where('token_hash', '=', o.tokenHash)
    .where('opened_at', 'is', null)
    .where('open_until', '>', o.now)
    .where(stillAllowed)
    .returning(['service_id', 'reseller_id', 'session_until'])
    .executeTakeFirst();
  return row && sessionOf(row);
}

/**
 * The session whose secret hashes to `sessionHash`, if it has not ended at `now`: neither
 * reached its `session_until` nor been ended by what ends it (migrations/035 sets it to 0).
 */
export async function findConsoleLinkSession(
  db: Kysely<Database>,
  sessionHash: string,
  now: number,
): Promise<ConsoleLinkSession | undefined> {
  const row = await db
    .selectFrom('service_console_links')
    .select(['service_id', 'reseller_id', 'session_until'])
    .where('session_hash', '=', sessionHash)
    .where('session_until', '>', now)
    .where(stillAllowed)
    .executeTakeFirst();
  return row && sessionOf(row);
}

function sessionOf(row: {
  service_id: string;
  reseller_id: string;
  session_until: number | null;
}): ConsoleLinkSession {
  // PostgreSQL's bigint arrives as text.
  return { serviceId: row.service_id, resellerId: row.reseller_id, sessionUntil: Number(row.session_until) };
}
