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
import { DriverError } from '../drivers/driver.ts';
import { type PtrChange, type ReverseDns, ReverseDnsError } from '../drivers/reverse-dns/ptr-backend.ts';
import { type AuditContext, recordAudit } from '../store/repos/audit.ts';
import { releasedByShrink } from '../store/repos/ip-addresses.ts';
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
  return (await storedPtrs(deps.db, defaultPattern, serviceId)).map((a) => ({ ip: a.ip, ptr: a.ptr }));
}

/** Each of the service's addresses with its PTR as the store has it (set, else default, else null). */
async function storedPtrs(
  db: Kysely<Database>,
  defaultPattern: string | undefined,
  serviceId: string,
): Promise<(ReverseAddress & AddressPtr)[]> {
  const [addresses, set] = await Promise.all([
    reverseAddresses(db, serviceId),
    listServicePtrs(db, serviceId),
  ]);
  const custom = new Map(set.map((r) => [r.address, r.ptr]));
  return addresses.map((a) => ({ ...a, ptr: custom.get(a.ip) ?? defaultPtr(defaultPattern, a.ip) ?? null }));
}

/** A client's `ip` as an error message repeats it: a long one cut (it is no address anyway). */
const shownAddress = (ip: string) => (ip.length > 64 ? `${ip.slice(0, 64)}…` : ip);

/**
 * Sets the PTR of one of the service's addresses (`ptr` null: back to the default, which may be
 * none). The DNS server is written first and the store after it took the record, with the audit
 * entry in the same transaction: a DNS server that fails leaves the store as it was (502
 * `rdns_backend_failed`). If the store then fails, the DNS server is given back the record it
 * had, so the two do not disagree. An address the service gave back while the DNS server was
 * written (an upgrade) is 400 `ip_not_of_service`, and its record is removed again.
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
  if (!address)
    throw new ApiError('ip_not_of_service', `${shownAddress(ip)} is not an address of this service`);
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
  // Whether the address was still the service's when the row was to be written: an upgrade may
  // have given it back meanwhile (its record removed first), and then it has none.
  let held = true;
  try {
    await deps.db.transaction().execute(async (tx) => {
      held = (await reverseAddresses(tx, service.id)).some((a) => a.ip === address.ip);
      if (!held)
        throw new ApiError('ip_not_of_service', `${shownAddress(ip)} is not an address of this service`);
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
    await backend.apply([change(held ? previous : null)]).catch(() => undefined);
    throw err;
  }
  return { ip: address.ip, ptr: target };
}

/**
 * Writes to the DNS server the PTR the store holds for each of `ips` the service holds now (all
 * of its addresses without `ips`): the one set, else the default, else no record. A gained
 * address (create, an upgrade that adds addresses) so gets its default, and any record an earlier
 * holder left there is replaced. Nothing without a DNS server.
 */
export async function writeServicePtrs(
  deps: ReverseDnsDeps,
  serviceId: string,
  ips?: readonly string[],
  signal?: AbortSignal,
): Promise<void> {
  if (!deps.reverseDns) return;
  const wanted = ips && new Set(ips);
  const changes = (await storedPtrs(deps.db, deps.reverseDns.defaultPattern, serviceId))
    .filter((a) => !wanted || wanted.has(a.ip))
    .map((a) => ({ zone: a.zone, name: a.name, ptr: a.ptr }));
  if (changes.length > 0) await deps.reverseDns.backend.apply(changes, signal);
}

/**
 * Removes from the DNS server the records of the IPv4 addresses the service gives back when it
 * shrinks to `count` addresses (releasedByShrink, as the driver's shrink picks them), before the
 * driver releases them: a released address is never handed out while the DNS server still
 * answers this service's name for it. Their rows go with the release (IpPool.shrink). Answers
 * the addresses removed, for writeServicePtrs if the shrink does not happen. Throws the
 * backend's ReverseDnsError when the DNS server fails.
 */
export async function removeShrunkPtrs(
  deps: ReverseDnsDeps,
  serviceId: string,
  count: number,
  signal?: AbortSignal,
): Promise<string[]> {
  if (!deps.reverseDns) return [];
  const ipv4 = (await reverseAddresses(deps.db, serviceId)).filter((a) => !a.ip.includes(':'));
  const gone = releasedByShrink(ipv4, count);
  if (gone.length > 0)
    await deps.reverseDns.backend.apply(
      gone.map((a) => ({ zone: a.zone, name: a.name, ptr: null })),
      signal,
    );
  return gone.map((a) => a.ip);
}

/**
 * Removes every PTR record of the addresses the service holds from the DNS server (those set
 * and the defaults), then all its rows. Only the addresses it holds: one it gave back may be
 * another service's now, with that one's record. Throws the backend's ReverseDnsError when the
 * DNS server fails: the rows stay, so a retry removes the same records.
 */
export async function removeServicePtrs(
  deps: ReverseDnsDeps,
  serviceId: string,
  signal?: AbortSignal,
): Promise<void> {
  if (deps.reverseDns) {
    const changes = (await reverseAddresses(deps.db, serviceId)).map((a) => ({
      zone: a.zone,
      name: a.name,
      ptr: null,
    }));
    if (changes.length > 0) await deps.reverseDns.backend.apply(changes, signal);
  }
  // Without a DNS server (reverse DNS turned off since the records were set) there is nothing
  // to remove them from: the rows go, and a termination is not held up by a setting.
  await deleteServicePtrs(deps.db, serviceId);
}

/**
 * A job's step on the DNS server (removing records before their addresses are given back): a
 * DNS server that fails is a transient DriverError, so the job is retried and does not go on
 * to release the addresses.
 */
export async function beforeRelease<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (!(err instanceof ReverseDnsError)) throw err;
    throw new DriverError(`The PTR records could not be removed: ${err.message}`, {
      transient: true,
      cause: err,
    });
  }
}

/**
 * writeServicePtrs for the addresses a job gave the service (`ips`; all without), best effort:
 * a DNS server that fails does not fail the job; the warning is logged, and the address's PTR
 * can be written later by setting it.
 */
export async function writeGainedPtrs(
  tc: ReverseDnsDeps & {
    readonly log: { warn(obj: object, msg: string): void };
    readonly signal: AbortSignal;
  },
  serviceId: string,
  ips?: readonly string[],
): Promise<void> {
  try {
    await writeServicePtrs(tc, serviceId, ips, tc.signal);
  } catch (err) {
    tc.log.warn({ err, serviceId }, 'the default PTR records could not be written');
  }
}
