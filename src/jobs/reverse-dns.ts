import type { Kysely } from 'kysely';
import type { Clock } from '../domain/clock.ts';
import { ApiError } from '../domain/errors.ts';
import {
  canonicalAddress,
  checkPtr,
  defaultPtr,
  ipv4ReverseZone,
  ipv6ReverseZone,
  reverseName,
} from '../domain/reverse-dns-names.ts';
import type { PtrChange, ReverseDns } from '../drivers/reverse-dns/ptr-backend.ts';
import { type AuditContext, recordAudit } from '../store/repos/audit.ts';
import { networkOf } from '../store/repos/service-network.ts';
import {
  deleteServicePtr,
  deleteServicePtrs,
  listServicePtrs,
  putServicePtr,
} from '../store/repos/service-ptrs.ts';
import type { Database } from '../store/schema.ts';

/** What the reverse DNS operations need: the store, the DNS server (none when not configured) and the clock. */
export interface ReverseDnsDeps {
  readonly db: Kysely<Database>;
  readonly reverseDns: ReverseDns | undefined;
  readonly clock: Clock;
}

/** One of a service's addresses as reverse DNS names it. */
interface ReverseAddress {
  /** Canonical (IPv6 compressed). */
  readonly ip: string;
  readonly zone: string;
  readonly name: string;
}

/** The reverse DNS of one address: its PTR record's target, or null when it has none. */
export interface AddressPtr {
  readonly ip: string;
  readonly ptr: string | null;
}

/** The service's addresses now: IPv4 first (primary first), then its IPv6 address if it has one. */
async function reverseAddresses(db: Kysely<Database>, serviceId: string): Promise<ReverseAddress[]> {
  const network = await networkOf(db, serviceId);
  const out: ReverseAddress[] = [];
  for (const lease of network.ipv4) {
    const ip = canonicalAddress(lease.address);
    if (ip) out.push({ ip, zone: ipv4ReverseZone(ip), name: reverseName(ip) });
  }
  const v6 = network.ipv6 && canonicalAddress(network.ipv6.address);
  if (network.ipv6 && v6)
    out.push({ ip: v6, zone: ipv6ReverseZone(network.ipv6.poolNetwork), name: reverseName(v6) });
  return out;
}

function configured(deps: ReverseDnsDeps): ReverseDns {
  if (!deps.reverseDns)
    throw new ApiError(
      'rdns_unavailable',
      'Reverse DNS is not available: the provider has no DNS server configured',
    );
  return deps.reverseDns;
}

/**
 * The PTR of each of the service's addresses: the one set for it, else the default pattern's,
 * else null. Read from the store, which holds what the DNS server was last told.
 */
export async function servicePtrs(deps: ReverseDnsDeps, serviceId: string): Promise<AddressPtr[]> {
  const { defaultPattern } = configured(deps);
  const [addresses, set] = await Promise.all([
    reverseAddresses(deps.db, serviceId),
    listServicePtrs(deps.db, serviceId),
  ]);
  const custom = new Map(set.map((r) => [r.address, r.ptr]));
  return addresses.map((a) => ({
    ip: a.ip,
    ptr: custom.get(a.ip) ?? defaultPtr(defaultPattern, a.ip) ?? null,
  }));
}

/**
 * Sets the PTR of one of the service's addresses (`ptr` null: back to the default, which may be
 * none). The DNS server is written first and the store after it took the record, with the audit
 * entry in the same transaction: a DNS server that fails leaves the store as it was (502
 * `rdns_backend_failed`). If the store then fails, the DNS server is given back the record it
 * had, so the two do not disagree.
 */
export async function setServicePtr(
  deps: ReverseDnsDeps,
  service: { readonly id: string; readonly resellerId: string },
  ip: string,
  ptr: string | null,
  audit: AuditContext,
): Promise<AddressPtr> {
  const { backend, defaultPattern } = configured(deps);
  const wanted = canonicalAddress(ip);
  const address =
    wanted === undefined
      ? undefined
      : (await reverseAddresses(deps.db, service.id)).find((a) => a.ip === wanted);
  if (!address) throw new ApiError('ip_not_of_service', `${ip} is not an address of this service`);
  const custom = ptr === null ? null : checkPtr(ptr);
  const target = custom ?? defaultPtr(defaultPattern, address.ip) ?? null;
  const before = (await listServicePtrs(deps.db, service.id)).find((r) => r.address === address.ip);
  const previous = before?.ptr ?? defaultPtr(defaultPattern, address.ip) ?? null;
  const change = (to: string | null): PtrChange => ({ zone: address.zone, name: address.name, ptr: to });
  try {
    await backend.apply([change(target)]);
  } catch (err) {
    throw new ApiError('rdns_backend_failed', 'The DNS server did not take the record; nothing was changed', {
      cause: err,
    });
  }
  try {
    await deps.db.transaction().execute(async (tx) => {
      const now = deps.clock.now();
      if (custom === null) await deleteServicePtr(tx, service.id, address.ip);
      else await putServicePtr(tx, service.id, { address: address.ip, ptr: custom, zone: address.zone }, now);
      await recordAudit(
        tx,
        audit,
        {
          target: { type: 'service', id: service.id },
          serviceId: service.id,
          resellerId: service.resellerId,
        },
        now,
      );
    });
  } catch (err) {
    await backend.apply([change(previous)]).catch(() => undefined);
    throw err;
  }
  return { ip: address.ip, ptr: target };
}

/**
 * Writes the default PTR of each of the service's addresses that has no record set (a new
 * service's). Nothing without a default pattern or without a DNS server.
 */
export async function writeDefaultPtrs(
  deps: ReverseDnsDeps,
  serviceId: string,
  signal?: AbortSignal,
): Promise<void> {
  const pattern = deps.reverseDns?.defaultPattern;
  if (!deps.reverseDns || pattern === undefined) return;
  const set = new Set((await listServicePtrs(deps.db, serviceId)).map((r) => r.address));
  const changes = (await reverseAddresses(deps.db, serviceId))
    .filter((a) => !set.has(a.ip))
    .map((a) => ({ zone: a.zone, name: a.name, ptr: defaultPtr(pattern, a.ip) ?? null }));
  if (changes.length > 0) await deps.reverseDns.backend.apply(changes, signal);
}

/**
 * Removes every PTR record of the service from the DNS server (those set and the defaults, of
 * the addresses it holds and of those it had a record for), then its rows. Throws the backend's
 * ReverseDnsError when the DNS server fails: the rows stay, so a retry removes the same records.
 */
export async function removeServicePtrs(
  deps: ReverseDnsDeps,
  serviceId: string,
  signal?: AbortSignal,
): Promise<void> {
  const set = await listServicePtrs(deps.db, serviceId);
  if (deps.reverseDns) {
    const changes = new Map<string, PtrChange>();
    for (const a of await reverseAddresses(deps.db, serviceId))
      changes.set(a.name, { zone: a.zone, name: a.name, ptr: null });
    for (const r of set)
      changes.set(reverseName(r.address), { zone: r.zone, name: reverseName(r.address), ptr: null });
    if (changes.size > 0) await deps.reverseDns.backend.apply([...changes.values()], signal);
  }
  // Without a DNS server (reverse DNS turned off since the records were set) there is nothing
  // to remove them from: the rows go, and a termination is not held up by a setting.
  await deleteServicePtrs(deps.db, serviceId);
}
