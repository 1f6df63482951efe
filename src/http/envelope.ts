import type { ErrorCode } from '../domain/errors.ts';

export type Variant = 'A' | 'B';

export function isVariant(value: unknown): value is Variant {
  return value === 'A' || value === 'B';
}

/**
 * Variant B: `{status: "Success"|"Error", message, data}`.
 * Variant A: `{success: "true"|"false", message, data: "<JSON text>"}`
 * (docs/design/contract.md#envelopes).
 *
 * A success envelope is wrapped around its payload already serialized (`data`, JSON text), so
 * that a payload is serialized once, by its route's response schema, whatever the variant.
 */
export function successEnvelope(variant: Variant, data: string, message = ''): string {
  const text = message === '' ? '""' : JSON.stringify(message);
  if (variant === 'A') return `{"success":"true","message":${text},"data":${JSON.stringify(data)}}`;
  return `{"status":"Success","message":${text},"data":${data}}`;
}

/** An error's envelope; `fields` are members beside `error_code` that some errors carry (ApiError.fields). */
export function errorEnvelope(
  variant: Variant,
  message: string,
  code: ErrorCode,
  fields: Readonly<Record<string, string>> = {},
) {
  if (variant === 'A') return { success: 'false', message, data: '[]', error_code: code, ...fields };
  return { status: 'Error', message, data: [], error_code: code, ...fields };
}
