/**
 * Whether `value` is an object of named values: what Fastify makes of a query, a path or a form
 * that no schema typed (the console's pages, the token endpoint), to be read field by field.
 */
export function isFields(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
