/**
 * A reseller's external billing id: the key the provider's billing system knows the reseller by
 * (a customer number, an account code). Free text, since billing systems differ, but one line of
 * printable text: it goes into CSV files and onto pages.
 */
import { ApiError } from './errors.ts';

/** The longest external billing id, in characters. */
export const BILLING_ID_MAX = 100;

/**
 * Not printable: control characters (U+0000-U+001F, U+007F-U+009F), format characters (such as
 * bidirectional overrides and zero-width spaces, which make two ids look alike), unpaired
 * surrogates, private-use and unassigned code points.
 */
const NOT_PRINTABLE = /\p{C}/u;

/** Why `value` is not an external billing id, or undefined if it is one. */
export function billingIdProblem(value: string): string | undefined {
  if (value.length === 0) return 'must not be empty (null clears it)';
  if (value.length > BILLING_ID_MAX) return `must be at most ${BILLING_ID_MAX} characters`;
  if (NOT_PRINTABLE.test(value)) return 'must be printable text (no control or format characters)';
  if (value.trim() !== value) return 'must not start or end with a space';
  return undefined;
}

/** `value` if it is an external billing id (or null, none); else 400 `validation_failed` naming the field. */
export function checkBillingId(value: string | null): string | null {
  if (value === null) return null;
  const problem = billingIdProblem(value);
  if (problem !== undefined) throw new ApiError('validation_failed', `external_billing_id ${problem}`);
  return value;
}
