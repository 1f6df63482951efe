import { createHmac, timingSafeEqual } from 'node:crypto';
import { type TSchema, Type } from 'typebox';
import { ApiError } from '../../domain/errors.ts';
import { Nullable } from '../schemas/common.ts';

/**
 * Paging of the operator API's lists (docs/design/contract.md#paging): `limit` (1..1000) and an
 * opaque `cursor`, answered as `{items, next_cursor}`. A cursor holds the sort key of the last item
 * of its page, so the next page is "after that key" in the list's order: an index range, and items
 * inserted meanwhile neither shift it (no item is skipped or repeated) nor are lost to a later page
 * if they sort after it.
 */

/** How many items a page holds by default, and at most. */
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;

/** The query parameters every list takes. */
export const PageQuery = {
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_LIMIT,
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
export function limitOf(query: { readonly limit?: number | undefined }): number {
  const limit = query.limit ?? DEFAULT_LIMIT;
  if (!(limit >= 1 && limit <= MAX_LIMIT)) {
    throw new ApiError('validation_failed', `limit must be between 1 and ${MAX_LIMIT}`);
  }
  return limit;
}

type Key = readonly (string | number)[];

const PART = /^[A-Za-z0-9_-]+$/;

function macOf(signingKey: Buffer, payload: string): Buffer {
  return createHmac('sha256', signingKey).update(payload).digest();
}

/**
 * The cursor after an item whose sort key is `key`, for list `list`: the list's name and the key
 * as JSON, and an HMAC of them under the server's cursor key (`Keys.cursorKey`), so a cursor no
 * list of this server gave, or that another list gave, is refused whole, never read.
 */
export function encodeCursor(signingKey: Buffer, list: string, key: Key): string {
  const payload = Buffer.from(JSON.stringify([list, ...key])).toString('base64url');
  return `${payload}.${macOf(signingKey, payload).toString('base64url')}`;
}

/**
 * The sort key a cursor of `list` holds, or 400 `invalid_cursor` for anything else: a cursor is
 * only ever one this list gave. Every list that takes a cursor reads it here, so what reaches a
 * query is a key this server wrote (its signature checked, then its shape: one type per part).
 */
export function decodeCursor<const S extends readonly ('string' | 'number')[]>(
  signingKey: Buffer,
  list: string,
  cursor: string,
  shape: S,
): { [I in keyof S]: S[I] extends 'number' ? number : string } {
  const refuse = () => new ApiError('invalid_cursor', 'cursor is not one this list gave');
  const [payload, mac, ...rest] = cursor.split('.');
  if (payload === undefined || mac === undefined || rest.length > 0 || !PART.test(payload) || !PART.test(mac))
    throw refuse();
  const given = Buffer.from(mac, 'base64url');
  const expected = macOf(signingKey, payload);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw refuse();
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw refuse();
  }
  if (!Array.isArray(parts)) throw refuse();
  const ok =
    parts.length === shape.length + 1 &&
    parts[0] === list &&
    shape.every((type, i) => {
      const v = parts[i + 1];
      return type === 'number' ? Number.isSafeInteger(v) : typeof v === 'string' && v.length <= 200;
    });
  if (!ok) throw refuse();
  return parts.slice(1) as { [I in keyof S]: S[I] extends 'number' ? number : string };
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
