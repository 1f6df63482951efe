/** The scopes a reseller application may hold (docs/design/contract.md#scopes). */
export const SCOPES = ['access', 'products', 'service'] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * The operator API's scope (docs/design/contract.md#operator-api). Only operator clients hold it,
 * and they hold nothing else: no application can ask for it, no operator token reaches the reseller
 * API.
 */
export const OPERATOR_SCOPE = 'operator';
export type OperatorScope = typeof OPERATOR_SCOPE;

/** Any scope a token can carry and a route can need. */
export type TokenScope = Scope | OperatorScope;

/** Whether `value` is a scope of reseller applications. */
function isScope(value: string): value is Scope {
  return SCOPES.some((s) => s === value);
}

/** Whether `value` is any scope a token can carry. */
export function isTokenScope(value: string): value is TokenScope {
  return value === OPERATOR_SCOPE || isScope(value);
}

/** Parses a space-separated list of application scopes; undefined if any entry is unknown. Duplicates collapse. */
export function parseScopes(value: string): Scope[] | undefined {
  const parts = value.split(/[ ,]+/).filter(Boolean);
  if (!parts.every(isScope)) return undefined;
  return SCOPES.filter((s) => parts.includes(s));
}

/**
 * Parses the `scope` parameter of a token request (RFC 6749 section 3.3: space-separated) into
 * known scopes of either kind; undefined if any entry is unknown. The token endpoint then checks
 * the list against what the client may hold.
 */
export function parseRequestedScopes(value: string): TokenScope[] | undefined {
  const parts = value.split(/[ ,]+/).filter(Boolean);
  if (!parts.every(isTokenScope)) return undefined;
  const known: readonly TokenScope[] = [...SCOPES, OPERATOR_SCOPE];
  return known.filter((s) => parts.includes(s));
}
