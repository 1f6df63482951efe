/** RFC 1123 host name: labels of letters, digits and hyphens, 1-63 long, not starting or ending with a hyphen. */
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/i;

/**
 * Whether `value` is a host name (RFC 1123): dot-separated labels of letters, digits and
 * hyphens, at most 253 characters. The one rule for every host name a client gives (an order's
 * `domain_name`, a PTR record's target).
 */
export function isHostname(value: string): boolean {
  if (value.length === 0 || value.length > 253) return false;
  return value.split('.').every((label) => LABEL.test(label));
}
