import type { Kysely } from 'kysely';
import { checkHostChange, checkNewHost, type HostChange, type NewHost } from '../domain/host-input.ts';
import { DriverError } from '../drivers/driver.ts';
import { createCommands } from '../drivers/libvirt/commands.ts';
import type { AuditContext } from '../store/repos/audit.ts';
import { createHost, type HostDriver, type HostView, updateHost } from '../store/repos/hosts.ts';
import type { Database } from '../store/schema.ts';

/** Whether a libvirt connection answered, and if not why. */
export type ProbeResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** How long a host added or changed by an operator gets to answer before it is recorded unreachable. */
export const ADD_PROBE_TIMEOUT_MS = 5000;

/**
 * Asks libvirt at `uri` whether it answers (`virsh -c URI uri`), within `timeoutMs`. Never
 * throws: a connection that fails (refused, no socket, a timeout) is `ok: false` with virsh's
 * reason.
 */
export async function probeHostUri(uri: string, timeoutMs: number): Promise<ProbeResult> {
  const commands = createCommands();
  try {
    await commands.virsh(uri, ['uri'], `Connecting to ${uri}`, timeoutMs);
    return { ok: true };
  } catch (err) {
    const reason =
      err instanceof DriverError
        ? (err.details?.stderr ?? err.message)
        : err instanceof Error
          ? err.message
          : String(err);
    return { ok: false, reason: reason.split('\n')[0] ?? reason };
  } finally {
    await commands.close();
  }
}

/** How a host's uri is probed: probeHostUri, or a test's stand-in. */
export type HostProbe = (uri: string, timeoutMs: number) => Promise<ProbeResult>;

/**
 * Adds a host, as the operator API and the CLI both do: the checks first (so no malformed URI
 * reaches virsh), then a libvirt host's connection is probed, then the host is stored, marked
 * unreachable if it did not answer (it is recorded still: it may be set up afterwards).
 */
export async function addHost(
  db: Kysely<Database>,
  processDriver: HostDriver,
  host: NewHost,
  now: () => number,
  audit: AuditContext,
  probe: HostProbe = probeHostUri,
): Promise<HostView> {
  checkNewHost(processDriver, host);
  const reachable = host.uri === undefined || (await probe(host.uri, ADD_PROBE_TIMEOUT_MS)).ok;
  return createHost(db, processDriver, host, { reachable }, now(), audit);
}

/** Changes a host, as the operator API and the CLI both do: a new uri is probed as addHost's is. */
export async function changeHost(
  db: Kysely<Database>,
  processDriver: HostDriver,
  id: string,
  change: HostChange,
  now: () => number,
  audit: AuditContext,
  probe: HostProbe = probeHostUri,
): Promise<HostView> {
  checkHostChange(processDriver, change);
  const reach =
    change.uri === undefined ? undefined : { reachable: (await probe(change.uri, ADD_PROBE_TIMEOUT_MS)).ok };
  return updateHost(db, processDriver, id, change, reach, now(), audit);
}
