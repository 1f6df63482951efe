import { type NewService, newServiceRow } from '../../src/store/repos/services.ts';

/**
 * A services row as the code wrote it before migration 012 (no `password_applies`), for the
 * tests of migrations that run on a store migrated only up to an older one.
 */
export function serviceRowBefore012(s: NewService) {
  const { password_applies: _, ...row } = newServiceRow(s);
  return row;
}
