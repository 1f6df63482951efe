import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../schema.ts';

/** A console link, as made: its token and secrets are the caller's, already hashed. */
export interface NewConsoleLink {
  readonly tokenHash: string;
  readonly serviceId: string;
  readonly resellerId: string;
  readonly now: number;
  readonly openUntil: number;
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
      created_at: link.now,
      open_until: link.openUntil,
      opened_at: null,
      session_hash: null,
      session_until: null,
    })
    .execute();
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
    .returning(['service_id', 'reseller_id', 'session_until'])
    .executeTakeFirst();
  return row && sessionOf(row);
}

/** The session whose secret hashes to `sessionHash`, if it has not ended at `now`. */
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
