/** A text column holding a JSON array of strings, read back (anything else in it reads as none). */
export function stringList(json: string): string[] {
  const value: unknown = JSON.parse(json);
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}
