/** Deepest nesting of objects and arrays a request body may have. */
export const MAX_JSON_DEPTH = 64;

/**
 * The nesting depth of JSON text, in one pass over it without parsing (brackets inside strings
 * do not count). A body nested thousands deep is valid JSON, but every recursive walk of it
 * afterwards (validation, the storable-text check, the idempotency hash) would overflow the
 * stack; it is refused before any of them runs. Stops counting past `limit`.
 */
export function jsonDepthExceeds(text: string, limit = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}
