import { randomInt } from 'node:crypto';
import { ApiError } from './errors.ts';

const LOWER = 'abcdefghijkmnopqrstuvwxyz';
const UPPER = 'ABCDEFGHJKLMNPQRSTUVWXYZ';
const DIGIT = '23456789';
const SYMBOL = '-_.+=@%';

/** A strong random server password: 20 characters, every class present, no look-alikes. */
export function generatePassword(length = 20): string {
  const all = LOWER + UPPER + DIGIT + SYMBOL;
  const chars = [LOWER, UPPER, DIGIT, SYMBOL].map((set) => set[randomInt(set.length)]!);
  while (chars.length < length) chars.push(all[randomInt(all.length)]!);
  for (let i = chars.length - 1; i > 0; i--) {
    const j = randomInt(i + 1);
    [chars[i], chars[j]] = [chars[j]!, chars[i]!];
  }
  return chars.join('');
}

/** CONTRACT.md section 8: 8 to 128 characters, at least three of lower, upper, digit, symbol. */
export function checkPasswordStrength(password: string): void {
  // Control characters cannot be typed at a console or carried by cloud-init safely.
  if (/\p{Cc}/u.test(password))
    throw new ApiError('weak_password', 'password must not contain control characters');
  const length = [...password].length;
  if (length < 8 || length > 128) {
    throw new ApiError('weak_password', `password must be 8 to 128 characters long, got ${length}`);
  }
  const classes = [/\p{Ll}/u, /\p{Lu}/u, /\p{Nd}/u, /[^\p{Ll}\p{Lu}\p{Nd}]/u].filter((re) =>
    re.test(password),
  ).length;
  if (classes < 3) {
    throw new ApiError(
      'weak_password',
      'password must contain at least three of: lower-case letters, upper-case letters, digits, symbols',
    );
  }
}
