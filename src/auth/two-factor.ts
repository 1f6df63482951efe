/**
 * Two-factor login to the console: an operator's TOTP enrolment (auth/totp.ts), its ten
 * single-use recovery codes, and the check of the second step of a login. The TOTP secret is
 * stored sealed with the secret box and never logged; recovery codes are stored as salted
 * scrypt hashes and shown once, at enrolment.
 */
import type { Kysely } from 'kysely';
import type { SecretBox } from '../domain/secret-box.ts';
import { type AuditContext, recordAudit } from '../store/repos/audit.ts';
import { deleteOperatorConsoleSessions } from '../store/repos/console-sessions.ts';
import {
  confirmTwoFactor,
  countUnusedRecoveryCodes,
  deleteTwoFactor,
  findRecoveryCode,
  findTwoFactor,
  insertPendingTwoFactor,
  replaceRecoveryCodes,
  useRecoveryCode,
  useTotpStep,
} from '../store/repos/operator-two-factor.ts';
import { findOperatorByName } from '../store/repos/operators.ts';
import type { Database } from '../store/schema.ts';
import { type SlowCheck, unguarded } from './attempt-guard.ts';
import type { SecretVerifier } from './client-authenticator.ts';
import { OperatorError } from './operators.ts';
import { generateSecret, hashSecret, type SecretCost, verifySecret } from './secret-hash.ts';
import { matchTotp, newTotpSecret, TOTP_CODE } from './totp.ts';

const RECOVERY_CODES = 10;
/** A recovery code: 16 base32 characters (80 bits), shown in groups of four; the first group finds it. */
const RECOVERY_CODE = /^[a-z2-7]{16}$/;
const LOOKUP_LENGTH = 4;

/** Whether the operator has confirmed a TOTP secret, and how many recovery codes are left. */
export interface TwoFactorStatus {
  readonly enrolled: boolean;
  readonly enrolledAt: number | undefined;
  readonly recoveryCodesLeft: number;
}

/** The outcome of a code at the second step of a login (or at enrolment). */
export type CodeCheck =
  | { readonly ok: true; readonly kind: 'totp' | 'recovery' }
  | { readonly ok: false; readonly reason: 'wrong' | 'reused' | 'recovery_used' | 'not_enrolled' };

/** The message a refused code gets, for the person typing it. */
export function codeRefusal(reason: Extract<CodeCheck, { ok: false }>['reason']): string {
  switch (reason) {
    case 'reused':
      return 'This code has been used already. Wait for the next code of your authenticator app.';
    case 'recovery_used':
      return 'This recovery code has been used already. Each recovery code works once.';
    case 'not_enrolled':
      return 'Two-factor login is not set up for this operator.';
    default:
      return 'Wrong code. Type the 6 digits your authenticator app shows now, or a recovery code.';
  }
}

/** A code as typed: spaces and hyphens dropped, letters in lower case. */
function normalise(code: string): string {
  return code.replace(/[\s-]/g, '').toLowerCase();
}

function newRecoveryCodes(): string[] {
  const codes = new Map<string, string>();
  while (codes.size < RECOVERY_CODES) {
    const code = newTotpSecret().slice(0, 16).toLowerCase();
    // The first group finds the row: unique among the operator's ten.
    codes.set(code.slice(0, LOOKUP_LENGTH), code);
  }
  return [...codes.values()];
}

/** `abcdefghijklmnop` as `abcd-efgh-ijkl-mnop`. */
export function formatRecoveryCode(code: string): string {
  return code.match(/.{4}/g)?.join('-') ?? code;
}

export interface TwoFactorOptions {
  readonly db: Kysely<Database>;
  readonly secretBox: SecretBox;
  /** The recovery codes' hash cost (SECRET_COST unless a test gives less). */
  readonly secretCost?: SecretCost;
  /** Checks a recovery code against a stored hash (verifySecret; tests count the calls). */
  readonly verify?: SecretVerifier;
}

export function createTwoFactor(o: TwoFactorOptions) {
  const { db, secretBox } = o;
  const verify = o.verify ?? verifySecret;
  // A recovery code whose first group is no code's is checked against this, made at the first
  // such code: every wrong recovery code costs one hash, so timing does not tell a real group.
  let dummyHash: Promise<string> | undefined;
  return {
    async status(operatorId: string): Promise<TwoFactorStatus> {
      const row = await findTwoFactor(db, operatorId);
      const enrolled = row?.enrolledAt != null;
      return {
        enrolled,
        enrolledAt: row?.enrolledAt ?? undefined,
        recoveryCodesLeft: enrolled ? await countUnusedRecoveryCodes(db, operatorId) : 0,
      };
    },

    /**
     * The secret an operator not yet enrolled is enrolling with (base32), made and stored sealed
     * at the first call, the same at the next (a reload of the page shows the same QR code);
     * undefined if the operator is enrolled already.
     */
    async pendingSecret(operatorId: string, now: number): Promise<string | undefined> {
      let row = await findTwoFactor(db, operatorId);
      if (!row) {
        await insertPendingTwoFactor(db, operatorId, secretBox.seal(newTotpSecret()), now);
        row = await findTwoFactor(db, operatorId);
      }
      if (!row || row.enrolledAt !== null) return undefined;
      return secretBox.open(row.sealedSecret);
    },

    /**
     * Confirms the enrolment with a code of the pending secret; returns the ten recovery codes
     * (to show once), or the refusal. Nothing changes on a refusal.
     */
    async confirm(
      operatorId: string,
      code: string,
      now: number,
    ): Promise<{ readonly ok: true; readonly recoveryCodes: string[] } | Extract<CodeCheck, { ok: false }>> {
      const row = await findTwoFactor(db, operatorId);
      if (!row || row.enrolledAt !== null) return { ok: false, reason: 'not_enrolled' };
      const step = matchTotp(secretBox.open(row.sealedSecret), normalise(code), now, null);
      if (step === undefined) return { ok: false, reason: 'wrong' };
      const codes = newRecoveryCodes();
      // The slow hashes before the transaction (SQLite holds its write lock for the whole of one).
      const hashes = await Promise.all(codes.map((c) => hashSecret(c, o.secretCost)));
      const confirmed = await db.transaction().execute(async (tx) => {
        if (!(await confirmTwoFactor(tx, operatorId, step, now))) return false;
        await replaceRecoveryCodes(
          tx,
          operatorId,
          codes.map((c, i) => ({ lookup: c.slice(0, LOOKUP_LENGTH), hash: hashes[i] ?? '' })),
          now,
        );
        return true;
      });
      // Another tab confirmed first.
      if (!confirmed) return { ok: false, reason: 'not_enrolled' };
      return { ok: true, recoveryCodes: codes.map(formatRecoveryCode) };
    },

    /**
     * Checks the second step of a login: a TOTP code (one step of drift, each step once) or an
     * unused recovery code (its hash runs through `slowCheck`, which throttles it). A code
     * accepted is used up; a refused one changes nothing.
     */
    async verify(
      operatorId: string,
      typed: string,
      now: number,
      slowCheck: SlowCheck = unguarded,
    ): Promise<CodeCheck> {
      const code = normalise(typed);
      const row = await findTwoFactor(db, operatorId);
      if (!row || row.enrolledAt === null) return { ok: false, reason: 'not_enrolled' };
      if (TOTP_CODE.test(code)) {
        const secret = secretBox.open(row.sealedSecret);
        const fresh = await slowCheck(async () => matchTotp(secret, code, now, row.lastStep));
        if (fresh !== undefined) {
          return (await useTotpStep(db, operatorId, fresh))
            ? { ok: true, kind: 'totp' }
            : { ok: false, reason: 'reused' };
        }
        // A right code of a step already used: said so, rather than "wrong".
        const any = matchTotp(secret, code, now, null);
        return { ok: false, reason: any === undefined ? 'wrong' : 'reused' };
      }
      const lookup = code.slice(0, LOOKUP_LENGTH);
      const stored = RECOVERY_CODE.test(code) ? await findRecoveryCode(db, operatorId, lookup) : undefined;
      const ok = await slowCheck(async () => {
        dummyHash ??= hashSecret(generateSecret(), o.secretCost);
        return verify(code, stored?.hash ?? (await dummyHash));
      });
      if (!ok || !stored) return { ok: false, reason: 'wrong' };
      if (stored.used || !(await useRecoveryCode(db, operatorId, lookup, now))) {
        return { ok: false, reason: 'recovery_used' };
      }
      return { ok: true, kind: 'recovery' };
    },
  };
}

/**
 * Removes the named operator's TOTP secret and recovery codes (`vrp operator reset-2fa`), so
 * that it logs in with its password alone, or enrols again (a new phone); its console sessions
 * end. False if it had no second factor (nothing changes then, nothing is audited).
 */
export async function resetTwoFactorByName(
  db: Kysely<Database>,
  name: string,
  now: number,
  audit?: AuditContext,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const operator = await findOperatorByName(tx, name);
    if (!operator) throw new OperatorError(`no operator named "${name}"`);
    if (!(await deleteTwoFactor(tx, operator.id))) return false;
    await deleteOperatorConsoleSessions(tx, operator.id);
    if (audit) await recordAudit(tx, audit, { target: { type: 'operator', id: operator.id } }, now);
    return true;
  });
}

export type TwoFactor = ReturnType<typeof createTwoFactor>;
