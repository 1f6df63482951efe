export const SCOPES = ['access', 'products', 'service'] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** Parses a space-separated scope list; undefined if any entry is unknown. Duplicates collapse. */
export function parseScopes(value: string): Scope[] | undefined {
  const parts = value.split(/[ ,]+/).filter(Boolean);
  if (!parts.every(isScope)) return undefined;
  return SCOPES.filter((s) => parts.includes(s));
}
