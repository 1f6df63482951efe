import { ApiError } from './errors.ts';

/** Where random bytes come from: `n` fresh cryptographically strong bytes per call. */
export type RandomBytes = (n: number) => Uint8Array;

const LOWER = 'abcdefghijkmnopqrstuvwxyz';
const UPPER = 'ABCDEFGHJKLMNPQRSTUVWXYZ';
const DIGIT = '23456789';
const SYMBOL = '-_.+=@%';

/**
 * Uniform random integers below `n` (n <= 256) from one buffer of random bytes: a byte at or
 * above the largest multiple of n is discarded (rejection sampling), so no value is favoured.
 * A few pooled random bytes per password instead of one `randomInt` call per character.
 */
function randomIndexes(random: RandomBytes): (n: number) => number {
  let pool = random(64);
  let at = 0;
  return (n) => {
    const limit = 256 - (256 % n);
    for (;;) {
      const b = pool[at++];
      if (b === undefined) {
        pool = random(64);
        at = 0;
      } else if (b < limit) return b % n;
    }
  };
}

/** A strong random server password: 20 characters, every class present, no look-alikes. */
export function generatePassword(random: RandomBytes, length = 20): string {
  const below = randomIndexes(random);
  const all = LOWER + UPPER + DIGIT + SYMBOL;
  const chars = [LOWER, UPPER, DIGIT, SYMBOL].map((set) => set.charAt(below(set.length)));
  while (chars.length < length) chars.push(all.charAt(below(all.length)));
  for (let i = chars.length - 1; i > 0; i--) {
    const j = below(i + 1);
    [chars[i], chars[j]] = [chars[j] ?? '', chars[i] ?? ''];
  }
  return chars.join('');
}

/**
 * 8 to 128 characters, at least three of lower, upper, digit, symbol
 * (docs/design/contract.md#server-passwords).
 */
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

/** When a new password reaches the guest: `now` (its guest agent set it), or at its `next_boot`. */
export const PASSWORD_APPLIES = ['now', 'next_boot'] as const;
export type PasswordApplies = (typeof PASSWORD_APPLIES)[number];
