import type { ErrorCode } from '../domain/errors.ts';

export type Variant = 'A' | 'B';

export function isVariant(value: unknown): value is Variant {
  return value === 'A' || value === 'B';
}

/**
 * Variant B: `{status: "Success"|"Error", message, data}`.
 * Variant A: `{success: "true"|"false", message, data: "<JSON text>"}` (CONTRACT.md section 2).
 */
export function successEnvelope(variant: Variant, data: unknown, message = '') {
  if (variant === 'A') return { success: 'true', message, data: JSON.stringify(data) };
  return { status: 'Success', message, data };
}

export function errorEnvelope(variant: Variant, message: string, code: ErrorCode) {
  if (variant === 'A') return { success: 'false', message, data: '[]', error_code: code };
  return { status: 'Error', message, data: [], error_code: code };
}
