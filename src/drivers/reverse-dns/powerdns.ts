import type { PowerDnsConfig } from '../../config.ts';
import { type PtrBackend, type PtrChange, ReverseDnsError } from './ptr-backend.ts';

/** How long one call of the API may take before it counts as failed. */
const REQUEST_TIMEOUT_MS = 10_000;

export interface PowerDnsOptions extends PowerDnsConfig {
  /** The NS records of the zones it creates (absolute names); none: the zone has only PowerDNS' default SOA. */
  readonly nameservers: readonly string[];
  /** The TTL of the PTR records, in seconds. */
  readonly ttl: number;
}

/**
 * PTR records on PowerDNS Authoritative through its HTTP API (`/api/v1/servers/{server_id}`):
 * each zone's changes are one PATCH of rrsets (REPLACE sets a PTR, DELETE removes it), which
 * PowerDNS applies in one transaction and follows by purging its caches of the zone, so the
 * answer changes at once. A zone that does not exist yet (404 on the PATCH) is created as a
 * Native zone with the NS records of `nameservers`, then the PATCH is sent again; a zone another
 * process created in between (409) is as good. The API key goes in `X-API-Key` and nowhere else.
 */
export function createPowerDns(options: PowerDnsOptions): PtrBackend {
  const server = `${options.apiUrl}/api/v1/servers/${encodeURIComponent(options.serverId)}`;

  async function call(method: string, path: string, body: unknown, signal?: AbortSignal): Promise<Response> {
    const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
    try {
      return await fetch(`${server}${path}`, {
        method,
        headers: {
          'X-API-Key': options.apiKey,
          'Content-Type': 'application/json',
          Accept: 'application/json',
        },
        body: JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (err) {
      throw new ReverseDnsError(`PowerDNS API ${method} ${path} did not answer`, { cause: err });
    }
  }

  /** The reason PowerDNS gives (its JSON `error`), short, for the logs. */
  async function failure(res: Response, what: string): Promise<ReverseDnsError> {
    let text = '';
    try {
      text = await res.text();
    } catch {}
    let reason = text.slice(0, 200);
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed === 'object' && parsed !== null && 'error' in parsed) reason = String(parsed.error);
    } catch {
      // Not JSON (a proxy's error page): its first words are the reason.
    }
    return new ReverseDnsError(`PowerDNS API ${what} answered ${res.status}${reason ? `: ${reason}` : ''}`);
  }

  const rrset = (c: PtrChange) =>
    c.ptr === null
      ? { name: c.name, type: 'PTR', changetype: 'DELETE' }
      : {
          name: c.name,
          type: 'PTR',
          ttl: options.ttl,
          changetype: 'REPLACE',
          records: [{ content: `${c.ptr}.`, disabled: false }],
        };

  async function patch(zone: string, changes: readonly PtrChange[], signal?: AbortSignal): Promise<Response> {
    const res = await call(
      'PATCH',
      `/zones/${encodeURIComponent(zone)}`,
      { rrsets: changes.map(rrset) },
      signal,
    );
    return res;
  }

  async function createZone(zone: string, signal?: AbortSignal): Promise<void> {
    const res = await call(
      'POST',
      '/zones',
      { name: zone, kind: 'Native', nameservers: options.nameservers },
      signal,
    );
    // 409: created meanwhile by another request; PowerDNS before 4.x said so with 422.
    if (res.ok || res.status === 409) {
      await res.body?.cancel();
      return;
    }
    if (res.status === 422) {
      const err = await failure(res, `POST /zones (${zone})`);
      if (/already exists/i.test(err.message)) return;
      throw err;
    }
    throw await failure(res, `POST /zones (${zone})`);
  }

  return {
    async apply(changes, signal) {
      const byZone = new Map<string, PtrChange[]>();
      for (const c of changes) byZone.set(c.zone, [...(byZone.get(c.zone) ?? []), c]);
      for (const [zone, list] of byZone) {
        let res = await patch(zone, list, signal);
        if (res.status === 404) {
          await res.body?.cancel();
          // Nothing to remove from a zone that does not exist.
          if (list.every((c) => c.ptr === null)) continue;
          await createZone(zone, signal);
          res = await patch(zone, list, signal);
        }
        if (!res.ok) throw await failure(res, `PATCH /zones/${zone}`);
        await res.body?.cancel();
      }
    },
  };
}
