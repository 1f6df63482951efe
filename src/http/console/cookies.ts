/** The cookies of a `Cookie` header (RFC 6265 section 5.4); a repeated name keeps its first value. */
export function parseCookies(header: string | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  if (!header) return cookies;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    if (name !== '' && !cookies.has(name)) cookies.set(name, value);
  }
  return cookies;
}

export interface CookieOptions {
  readonly path: string;
  /** Seconds; 0 deletes the cookie. Without it, a session cookie (gone when the browser closes). */
  readonly maxAge?: number;
  readonly secure: boolean;
}

/**
 * A `Set-Cookie` value for the console: always `HttpOnly` (no script reads it) and
 * `SameSite=Strict` (no other site's page sends it), `Secure` when the console is served over
 * https. `value` must be a cookie-octet token (the console's are base64url).
 */
export function serializeCookie(name: string, value: string, o: CookieOptions): string {
  let cookie = `${name}=${value}; Path=${o.path}; HttpOnly; SameSite=Strict`;
  if (o.maxAge !== undefined) cookie += `; Max-Age=${o.maxAge}`;
  if (o.secure) cookie += '; Secure';
  return cookie;
}
