import type { Kysely } from 'kysely';

// Released migrations are never edited; add a new numbered file instead.

/**
 * Two-factor login to the console (TOTP, RFC 6238).
 *
 * `operator_two_factor`: one row per operator who has begun enrolling. `secret` is the TOTP
 * secret sealed with the secret box (AES-256-GCM, as server passwords), never in clear;
 * `enrolled_at` is null until the operator confirmed a code (the secret is then only pending);
 * `last_step` is the last 30 s time step whose code was accepted: a code of that step or an
 * earlier one is refused, so each code is used once.
 *
 * `operator_recovery_codes`: the ten single-use recovery codes of an enrolled operator. `lookup`
 * is the code's first group (not secret: it finds the row), `code_hash` a salted scrypt hash of
 * the whole code (auth/secret-hash.ts); `used_at` marks it used.
 *
 * `console_sessions.stage`: `ok` a full login; `code` the password was right and the second
 * factor is awaited; `enrol` the password was right, two-factor login is compulsory and the
 * operator has not enrolled yet (only the enrolment page opens). Existing sessions are `ok`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('operator_two_factor')
    .addColumn('operator_id', 'text', (c) => c.primaryKey().references('operators.id'))
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('enrolled_at', 'bigint')
    .addColumn('last_step', 'bigint')
    .execute();
  await db.schema
    .createTable('operator_recovery_codes')
    .addColumn('operator_id', 'text', (c) => c.notNull().references('operators.id'))
    .addColumn('lookup', 'text', (c) => c.notNull())
    .addColumn('code_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .addPrimaryKeyConstraint('operator_recovery_codes_pk', ['operator_id', 'lookup'])
    .execute();
  await db.schema
    .alterTable('console_sessions')
    .addColumn('stage', 'text', (c) => c.notNull().defaultTo('ok'))
    .execute();
}
