/** A reseller's name: what `vrp reseller create` and `POST OPS/resellers` accept. */
export const RESELLER_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9 ._-]{0,99}$';

/** Whether `name` is a reseller name (1-100 letters, digits, spaces, dots, underscores or hyphens, starting with a letter or digit). */
export function isResellerName(name: string): boolean {
  return new RegExp(RESELLER_NAME_PATTERN).test(name);
}
