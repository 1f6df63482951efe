import { SERVICE_CONSOLE } from './base-path.ts';

/** Query parameters whose values are secrets: these names, and any name with "secret" or "token" in it. */
const SECRET_PARAM = /secret|token|password/i;

/**
 * Paths that carry a secret: after `prefix`, the rest of the path is one, unless it is one of
 * the `fixed` names (or under one). The service console's one-time link, SERVICE_CONSOLE/<token>
 * (http/service-console/routes.ts), is the only such route; its files (assets/...) and
 * WebSockets (ws/...) carry none. A route with a secret in its path is added here.
 */
const SECRET_PATHS: readonly { readonly prefix: string; readonly fixed: readonly string[] }[] = [
  { prefix: `${SERVICE_CONSOLE}/`, fixed: ['assets', 'ws'] },
];

const REDACTED = '[redacted]';

function decodedName(raw: string): string {
  try {
    return decodeURIComponent(raw.replaceAll('+', ' '));
  } catch {
    return raw;
  }
}

/** The path (of any form of request target) with the secret of a SECRET_PATHS route replaced. */
function redactPath(path: string): string {
  for (const { prefix, fixed } of SECRET_PATHS) {
    // Anywhere in the path: also in an absolute-form target, or after an extra slash.
    const at = path.indexOf(prefix);
    if (at < 0) continue;
    const start = at + prefix.length;
    const rest = path.slice(start);
    if (rest === '' || fixed.some((name) => rest === name || rest.startsWith(`${name}/`))) continue;
    return `${path.slice(0, start)}${REDACTED}`;
  }
  return path;
}

/**
 * The URL as the logs may show it: a secret in the path (SECRET_PATHS: the service console's
 * link token) and the values of secret query parameters (`access_token`, `client_secret`,
 * `password`, any `*secret*` or `*token*`) replaced by `[redacted]`. The access line and every
 * other line that shows a request's URL take it from here (app.ts, LOG_SERIALIZERS). Clients
 * that put a token in the URL (RFC 6750 section 2.3, which we do not accept) must not leak it
 * into the logs at the default level.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  const path = redactPath(q < 0 ? url : url.slice(0, q));
  if (q < 0) return path;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      return SECRET_PARAM.test(decodedName(name)) ? `${name}=${REDACTED}` : pair;
    })
    .join('&');
  return `${path}?${query}`;
}
