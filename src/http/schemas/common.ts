import { type Static, type TSchema, Type } from 'typebox';
import type { Variant } from '../envelope.ts';

/**
 * Keywords only the OpenAPI document shows, not the server's validation: under this keyword a
 * request schema holds keywords merged into its copy in the document (`{ format: 'uuid' }`).
 * The openapi-routes plugin takes them out before Fastify compiles the schema.
 */
export const DOCUMENT_ONLY = 'x-document-only';

/**
 * An id sent in a path or a body: documented as a UUID, but anything else is accepted by the schema
 * and answered as an id that names nothing (404 `..._not_found`,
 * docs/design/contract.md#status-codes-and-error-codes), not as a malformed request.
 */
export function InputId(description: string) {
  return Type.String({ maxLength: 64, description, [DOCUMENT_ONLY]: { format: 'uuid' } });
}

/** An id in an answer: always a UUID, in lower case. */
export function Id(description?: string) {
  return Type.String({ format: 'uuid', ...(description ? { description } : {}) });
}

/**
 * `service_id` in a body: variant A sends it on per-service operations; when present it must be
 * the one of the path (400 `service_id_mismatch`).
 */
export const BodyServiceId = Type.Optional(
  InputId('Variant A sends the service id in the body too; it must equal the one in the path'),
);

/**
 * A body with nothing required. Variant A sends `service_id` on per-service operations;
 * unknown fields are ignored so that billing modules that send extras keep working.
 */
export const EmptyBody = Type.Object({ service_id: BodyServiceId });

export const ServiceParams = Type.Object({ service_id: InputId('The service') });
export const ProductParams = Type.Object({ product_uuid: InputId('The product') });

/**
 * OpenSSH public keys for root, one per entry (create-order, reinstall). The count and each key,
 * its length included, are checked by domain/ssh-keys.ts, so every refusal is 400
 * `invalid_ssh_key` naming the entry: the schema says only that they are strings (the body limit
 * bounds them).
 */
export function SshKeys(description: string) {
  return Type.Array(Type.String(), {
    description: `${description}. Each entry one OpenSSH public key, \`type base64 [comment]\` (a .pub file's line): ssh-ed25519, ssh-rsa of at least 2048 bits, ecdsa-sha2-nistp256/384/521; at most 10, no key twice (400 \`invalid_ssh_key\` naming the entry otherwise). Details show their fingerprints.`,
    examples: [
      ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@laptop'],
    ],
  });
}

/** Path ids are UUIDs; anything else cannot name an object, so it is reported as not found. */
export { isUuid } from '../../domain/ids.ts';

// Response schemas are compiled by fast-json-stringify, which serializes `anyOf` only after
// validating the value against each branch; the helpers below say the same with `type` and
// `enum`, which it serializes without validating.

/** "Empty list" of the interface document: `[]`. */
/** A time in an answer: ISO 8601, UTC. */
export const Timestamp = Type.String({ format: 'date-time' });

export const EmptyList = Type.Array(Type.Never(), { maxItems: 0 });

/** One of `values`, as a string. */
export function StringEnum<const T extends string>(
  values: readonly T[],
  options: { description?: string } = {},
) {
  return Type.Unsafe<T>({ type: 'string', enum: [...values], ...options });
}

/** `schema` or null, for a schema of one `type` (a string, a number, an object). */
export function Nullable<S extends TSchema & { type: string }>(
  schema: S,
  options: { description?: string } = {},
) {
  return Type.Unsafe<Static<S> | null>({ ...schema, ...options, type: [schema.type, 'null'] });
}

/**
 * Marks which envelope variant a payload belongs to, where the two differ
 * (docs/design/contract.md#payloads-that-differ-by-variant).
 */
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
