import { type Static, type TSchema, Type } from 'typebox';
import type { Variant } from './envelope.ts';

/**
 * A body with nothing required. Variant A sends `service_id` on per-service operations;
 * unknown fields are ignored so that billing modules that send extras keep working.
 */
export const EmptyBody = Type.Object({ service_id: Type.Optional(Type.String({ maxLength: 64 })) });

export const ServiceParams = Type.Object({ service_id: Type.String({ maxLength: 64 }) });
export const ProductParams = Type.Object({ product_uuid: Type.String({ maxLength: 64 }) });

/** Path ids are UUIDs; anything else cannot name an object, so it is reported as not found. */
export { isUuid } from '../domain/ids.ts';

// Response schemas are compiled by fast-json-stringify, which serializes `anyOf` only after
// validating the value against each branch; the helpers below say the same with `type` and
// `enum`, which it serializes without validating.

/** "Empty list" of the interface document: `[]`. */
export const EmptyList = Type.Array(Type.Never(), { maxItems: 0 });

/** One of `values`, as a string. */
export function StringEnum<const T extends string>(values: readonly T[]) {
  return Type.Unsafe<T>({ type: 'string', enum: [...values] });
}

/** `schema` or null, for a schema of one `type` (a string, a number, an object). */
export function Nullable<S extends TSchema & { type: string }>(schema: S) {
  return Type.Unsafe<Static<S> | null>({ ...schema, type: [schema.type, 'null'] });
}

/** Marks which envelope variant a payload belongs to, where the two differ (CONTRACT.md section 3). */
export const VARIANT_KEYWORD = 'x-envelope-variant';

/**
 * A payload that differs between the variants: the handler answers the one of `request.variant`.
 * The OpenAPI document shows each under its own envelope. This one is an `anyOf`: fast-json-stringify
 * checks which branch a value is, a fraction of a microsecond on the small answer of an order.
 */
export function ByVariant<A extends TSchema, B extends TSchema>(payloads: { A: A; B: B }) {
  const mark = (variant: Variant, schema: TSchema) => ({ ...schema, [VARIANT_KEYWORD]: variant });
  return Type.Unsafe<Static<A> | Static<B>>({ anyOf: [mark('B', payloads.B), mark('A', payloads.A)] });
}

/**
 * `true` when A and B have the same keys: a compile-time check that a schema declares every field
 * of a view it cannot type itself (the serializer drops undeclared fields without a word).
 */
export type SameKeys<A, B> = [keyof A] extends [keyof B]
  ? [keyof B] extends [keyof A]
    ? true
    : false
  : false;
