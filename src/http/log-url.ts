/** Query parameters whose values are secrets: these names, and any name with "secret" or "token" in it. */
const SECRET_PARAM = /secret|token|password/i;

function decodedName(raw: string): string {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' '));
  } catch {
    return raw;
  }
}

/**
 * The URL as the logs may show it: the values of secret query parameters (`access_token`,
 * `client_secret`, `password`, any `*secret*` or `*token*`) replaced by `[redacted]`. Clients
 * that put a token in the URL (RFC 6750 section 2.3, which we do not accept) must not leak it
 * into the logs at the default level.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      return SECRET_PARAM.test(decodedName(name)) ? `${name}=[redacted]` : pair;
    })
    .join('&');
  return `${url.slice(0, q + 1)}${query}`;
}
