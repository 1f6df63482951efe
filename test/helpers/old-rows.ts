import { type NewService, newServiceRow } from '../../src/store/repos/services.ts';

/**
 * A services row as the code wrote it before migration 012 (no `password_applies`, nor the
 * later `error_code` and `error_message`), for the tests of migrations that run on a store
 * migrated only up to an older one.
 */
export function serviceRowBefore012(s: NewService) {
  const { password_applies: _, ...row } = serviceRowBefore017(s);
  return row;
}

/** A services row as the code wrote it before migration 017 (no `error_code`, `error_message`). */
export function serviceRowBefore017(s: NewService) {
  const { error_code: _, error_message: __, ...row } = serviceRowBefore020(s);
  return row;
}

/** A services row as the code wrote it before migration 020 (no `ssh_keys`, `rescue_since`). */
export function serviceRowBefore020(s: NewService) {
  const { ssh_keys: _, rescue_since: __, ...row } = newServiceRow(s);
  return row;
}
