import { isIP } from 'node:net';
import { refusedAddressKind, refusedPort } from './address-policy.ts';
import type { HostLookup, ResolvedAddress } from './lookup.ts';

/** The longest receiver URL a webhook may have. */
export const MAX_URL_LENGTH = 2048;

/** A receiver URL or a host that may not be used; the message says why (after "url: "), for the reseller. */
export class TargetRefused extends Error {
  override name = 'TargetRefused';
}

/**
 * The receiver URL of a webhook, checked for its form: http or https, a host, no user name or
 * password (the signature authenticates the sender; credentials would show in every listing).
 * The fragment is dropped: it is never sent.
 */
export function parseWebhookUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TargetRefused('not an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new TargetRefused('must start with https:// or http://');
  }
  if (url.username !== '' || url.password !== '') {
    throw new TargetRefused('must not hold a user name or password (the signature authenticates the sender)');
  }
  if (url.hostname === '') throw new TargetRefused('has no host');
  url.hash = '';
  return url;
}

/** The host of a URL as an address or a name: IPv6 literals lose their brackets. */
function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/** The port a URL connects to: its own, or its scheme's. */
function portOf(url: URL): number {
  return url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
}

/**
 * The address to connect to for `url`: its host resolved once, every address it has checked
 * (one refused address refuses the host), and its port one of 80, 443 and 1024-65535, unless
 * private receivers are allowed. The sender then
 * connects to exactly this address, so a name that resolves elsewhere a moment later (DNS
 * rebinding) cannot lead it anywhere unchecked.
 */
export async function resolveTarget(
  url: URL,
  lookup: HostLookup,
  allowPrivate: boolean,
): Promise<ResolvedAddress> {
  if (!allowPrivate && refusedPort(portOf(url)))
    throw new TargetRefused(
      `port ${portOf(url)} is not allowed: webhooks use port 80, 443 or one from 1024 to 65535`,
    );
  const host = hostOf(url);
  const literal = isIP(host);
  let addresses: readonly ResolvedAddress[];
  if (literal !== 0) addresses = [{ address: host, family: literal === 6 ? 6 : 4 }];
  else {
    try {
      addresses = await lookup(host);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      throw new TargetRefused(`${host} could not be resolved${typeof code === 'string' ? ` (${code})` : ''}`);
    }
  }
  const first = addresses[0];
  if (!first) throw new TargetRefused(`${host} has no address`);
  if (!allowPrivate) {
    for (const a of addresses) {
      const kind = refusedAddressKind(a.address);
      if (kind === undefined) continue;
      const what = literal !== 0 ? `${host} is` : `${host} resolves to ${a.address},`;
      const article = /^[aeiou]/.test(kind) ? 'an' : 'a';
      throw new TargetRefused(`${what} ${article} ${kind} address, which webhooks may not reach`);
    }
  }
  return first;
}
