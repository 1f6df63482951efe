/**
 * Text every store can hold as given. PostgreSQL refuses U+0000 in text and JSON ("invalid byte
 * sequence"), and a lone UTF-16 surrogate has no UTF-8 form (it would be stored as U+FFFD, a
 * silent change). Input with either is refused where it enters (HTTP, CLI, catalogue import),
 * so that nothing is accepted that cannot be written later.
 */

/** True if `text` can be stored unchanged on every store: no U+0000, no lone surrogate. */
export function isStorableText(text: string): boolean {
  return !text.includes('\u0000') && text.isWellFormed();
}

/**
 * The path of the first string in `value` (keys included) that cannot be stored, as
 * `body.suspend_reason` or `items[2].name`; undefined if all can. Walks objects and arrays.
 */
export function findUnstorableText(value: unknown, path = ''): string | undefined {
  if (typeof value === 'string') return isStorableText(value) ? undefined : path || '(value)';
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnstorableText(value[i], `${path}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (value !== null && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      const here = path ? `${path}.${key}` : key;
      if (!isStorableText(key)) return here;
      const found = findUnstorableText(v, here);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/**
 * The refusal of unstorable text, naming where it was (`body.suspend_reason`, an argument):
 * escaped as JSON escapes it, since the name itself may hold the bad character.
 */
export function unstorableTextMessage(name: string): string {
  return `${JSON.stringify(name).slice(1, -1)} holds text that cannot be stored (U+0000 or an unpaired surrogate)`;
}
