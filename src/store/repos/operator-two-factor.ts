import type { Kysely } from 'kysely';
import type { Database } from '../schema.ts';

/** An operator's TOTP enrolment: the sealed secret, whether confirmed, the last step accepted. */
export interface TwoFactorRow {
  readonly sealedSecret: string;
  readonly enrolledAt: number | null;
  readonly lastStep: number | null;
}

export async function findTwoFactor(
  db: Kysely<Database>,
  operatorId: string,
): Promise<TwoFactorRow | undefined> {
  const row = await db
    .selectFrom('operator_two_factor')
    .select(['secret', 'enrolled_at', 'last_step'])
    .where('operator_id', '=', operatorId)
    .executeTakeFirst();
  return (
    row && {
      sealedSecret: row.secret,
      enrolledAt: row.enrolled_at === null ? null : Number(row.enrolled_at),
      lastStep: row.last_step === null ? null : Number(row.last_step),
    }
  );
}

/** Stores a pending (unconfirmed) secret for an operator who has none; nothing if a row exists. */
export async function insertPendingTwoFactor(
  db: Kysely<Database>,
  operatorId: string,
  sealedSecret: string,
  now: number,
): Promise<void> {
  await db
    .insertInto('operator_two_factor')
    .values({
      operator_id: operatorId,
      secret: sealedSecret,
      created_at: now,
      enrolled_at: null,
      last_step: null,
    })
    .onConflict((oc) => oc.column('operator_id').doNothing())
    .execute();
}

/** Confirms a pending enrolment with the step of the code that confirmed it; false if not pending. */
export async function confirmTwoFactor(
  db: Kysely<Database>,
  operatorId: string,
  step: number,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('operator_two_factor')
    .set({ enrolled_at: now, last_step: step })
    .where('operator_id', '=', operatorId)
    .where('enrolled_at', 'is', null)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/**
 * Records `step` as used, if it is after the last one used (one conditional update: of two
 * logins with the same code at once, one wins); false if it is not.
 */
export async function useTotpStep(db: Kysely<Database>, operatorId: string, step: number): Promise<boolean> {
  const r = await db
    .updateTable('operator_two_factor')
    .set({ last_step: step })
    .where('operator_id', '=', operatorId)
    .where('enrolled_at', 'is not', null)
    .where((eb) => eb.or([eb('last_step', 'is', null), eb('last_step', '<', step)]))
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

/** Replaces the operator's recovery codes. */
export async function replaceRecoveryCodes(
  db: Kysely<Database>,
  operatorId: string,
  codes: readonly { lookup: string; hash: string }[],
  now: number,
): Promise<void> {
  await db.deleteFrom('operator_recovery_codes').where('operator_id', '=', operatorId).execute();
  await db
    .insertInto('operator_recovery_codes')
    .values(
      codes.map((c) => ({
        operator_id: operatorId,
        lookup: c.lookup,
        code_hash: c.hash,
        created_at: now,
        used_at: null,
      })),
    )
    .execute();
}

export async function findRecoveryCode(
  db: Kysely<Database>,
  operatorId: string,
  lookup: string,
): Promise<{ readonly hash: string; readonly used: boolean } | undefined> {
  const row = await db
    .selectFrom('operator_recovery_codes')
    .select(['code_hash', 'used_at'])
    .where('operator_id', '=', operatorId)
    .where('lookup', '=', lookup)
    .executeTakeFirst();
  return row && { hash: row.code_hash, used: row.used_at !== null };
}

/** Marks a recovery code used, if it was not (one conditional update); false if it was. */
export async function useRecoveryCode(
  db: Kysely<Database>,
  operatorId: string,
  lookup: string,
  now: number,
): Promise<boolean> {
  const r = await db
    .updateTable('operator_recovery_codes')
    .set({ used_at: now })
    .where('operator_id', '=', operatorId)
    .where('lookup', '=', lookup)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return r.numUpdatedRows > 0n;
}

export async function countUnusedRecoveryCodes(db: Kysely<Database>, operatorId: string): Promise<number> {
  const row = await db
    .selectFrom('operator_recovery_codes')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('operator_id', '=', operatorId)
    .where('used_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Removes the operator's TOTP secret and recovery codes; false if it had none. */
export async function deleteTwoFactor(db: Kysely<Database>, operatorId: string): Promise<boolean> {
  await db.deleteFrom('operator_recovery_codes').where('operator_id', '=', operatorId).execute();
  const r = await db
    .deleteFrom('operator_two_factor')
    .where('operator_id', '=', operatorId)
    .executeTakeFirst();
  return r.numDeletedRows > 0n;
}
