import { type TSchema, Type } from 'typebox';
import { ApiError } from '../../domain/errors.ts';
import { Nullable } from '../schemas/common.ts';

/**
 * Paging of the operator API's lists (CONTRACT.md section 11): `limit` (1..1000) and an opaque
 * `cursor`, answered as `{items, next_cursor}`. A cursor holds the sort key of the last item of
 * its page, so the next page is "after that key" in the list's order: an index range, and items
 * inserted meanwhile neither shift it (no item is skipped or repeated) nor are lost to a later
 * page if they sort after it.
 */

/** How many items a page holds by default, and at most. */
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;

/** The query parameters every list takes. */
export const PageQuery = {
  limit: Type.Optional(
    Type.String({
      pattern: '^[0-9]{1,4}$',
      description: `How many items, 1 to ${MAX_LIMIT} (default ${DEFAULT_LIMIT})`,
    }),
  ),
  cursor: Type.Optional(
    Type.String({ minLength: 1, maxLength: 512, description: 'The `next_cursor` of the previous page' }),
  ),
};

/** A page of `item`s. */
export function Page<T extends TSchema>(item: T) {
  return Type.Object({
    items: Type.Array(item),
    next_cursor: Nullable(Type.String(), {
      description: 'Pass it as `cursor` for the next page; null on the last page',
    }),
  });
}

/** The page size asked for: 400 `validation_failed` outside 1..1000. */
export function limitOf(query: { readonly limit?: string | undefined }): number {
  const limit = query.limit === undefined ? DEFAULT_LIMIT : Number(query.limit);
  if (!(limit >= 1 && limit <= MAX_LIMIT)) {
    throw new ApiError('validation_failed', `limit must be between 1 and ${MAX_LIMIT}`);
  }
  return limit;
}

type Key = readonly (string | number)[];

/** The cursor after an item whose sort key is `key`, for list `list` (a cursor of one list is refused by another). */
export function encodeCursor(list: string, key: Key): string {
  return Buffer.from(JSON.stringify([list, ...key])).toString('base64url');
}

/**
 * The sort key a cursor of `list` holds, checked against `shape` (one type per part), or 400
 * `validation_failed`: a cursor is only ever one this list gave.
 */
export function decodeCursor<const S extends readonly ('string' | 'number')[]>(
  list: string,
  cursor: string,
  shape: S,
): { [I in keyof S]: S[I] extends 'number' ? number : string } {
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parts = undefined;
  }
  const ok =
    Array.isArray(parts) &&
    parts.length === shape.length + 1 &&
    parts[0] === list &&
    shape.every((type, i) => {
      const v = parts[i + 1];
      return type === 'number' ? Number.isSafeInteger(v) : typeof v === 'string' && v.length <= 200;
    });
  if (!ok) throw new ApiError('validation_failed', 'cursor is not one this list gave');
  return (parts as unknown[]).slice(1) as { [I in keyof S]: S[I] extends 'number' ? number : string };
}

/**
 * The answer of a list read with one row more than `limit`: that extra row only says whether
 * there is a next page, whose cursor is the key of the last item shown.
 */
export function pageOf<R, T>(
  rows: readonly R[],
  limit: number,
  view: (row: R) => T,
  cursorAfter: (row: R) => string,
): { items: T[]; next_cursor: string | null } {
  const shown = rows.slice(0, limit);
  const last = shown[shown.length - 1];
  return {
    items: shown.map(view),
    next_cursor: rows.length > limit && last !== undefined ? cursorAfter(last) : null,
  };
}
