import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { isUniqueViolation } from '../../store/errors.ts';
import type { Database } from '../../store/schema.ts';
import { DriverError } from '../driver.ts';

/**
 * A new MAC address: `52:54:` (locally administered, unicast: QEMU's usual prefix) and 32 random
 * bits whose first octet is never 00, so that none is ever one of libvirt's own random
 * `52:54:00:xx:xx:xx` (a VM defined before MACs were stored, or a domain the project does not
 * manage on the same network).
 */
export function randomMac(): string {
  const b = randomBytes(4);
  if (b[0] === 0) b[0] = 1 + ((b[1] ?? 0) % 255);
  return ['52', '54', ...[...b].map((x) => x.toString(16).padStart(2, '0'))].join(':');
}

const MAC = /^[0-9a-f]{2}(?::[0-9a-f]{2}){5}$/;

/** How many MACs are tried before giving up (each taken one is a chance of about n/2³²). */
const TRIES = 8;

/**
 * The VM's MAC address, given once and kept in its row (`libvirt_vms.mac`, unique). A row with
 * none gets `current` (the MAC its domain has now, for a VM stored before MACs were: its guest
 * keeps seeing the same one) unless another VM has it already, else a new random one. Two
 * processes doing this at once agree: the row is written only while it has none, and read back.
 * Not in a transaction (a refused duplicate would end it on PostgreSQL).
 */
export async function macOf(
  db: Kysely<Database>,
  vmId: string,
  current?: string,
  random: () => string = randomMac,
): Promise<string> {
  const kept = current?.toLowerCase();
  for (let i = 0; i < TRIES; i++) {
    const mac = i === 0 && kept !== undefined && MAC.test(kept) ? kept : random();
    try {
      await db
        .updateTable('libvirt_vms')
        .set({ mac })
        .where('id', '=', vmId)
        .where('mac', 'is', null)
        .execute();
    } catch (err) {
      if (isUniqueViolation(err)) continue;
      throw err;
    }
    const row = await db.selectFrom('libvirt_vms').select('mac').where('id', '=', vmId).executeTakeFirst();
    if (row === undefined) throw new DriverError(`VM ${vmId} does not exist`, { transient: false });
    if (row.mac !== null) return row.mac;
  }
  throw new DriverError(`No MAC address free for VM ${vmId} after ${TRIES} tries`, { transient: true });
}

/** A `<mac>` element and its address (any other attributes, either quote). */
const MAC_TAG = /<mac\b[^>]*?\baddress=(['"])([0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5})\1[^>]*\/>/;

/** Where a domain XML's first interface begins, and its `<mac>` element; null: no interface. */
function firstInterfaceMac(xml: string): { at: number; tag: string; mac: string } | null {
  const at = xml.indexOf('<interface');
  if (at < 0) return null;
  const found = MAC_TAG.exec(xml.slice(at));
  // libvirt writes every interface's MAC in a definition it gives.
  if (found === null || found[2] === undefined)
    throw new DriverError("The MAC address of the VM's interface could not be read from its definition", {
      transient: false,
    });
  return { at, tag: found[0], mac: found[2] };
}

/** The MAC of a domain XML's first interface (lower case); undefined if it has no interface. */
export function definitionMac(xml: string): string | undefined {
  return firstInterfaceMac(xml)?.mac.toLowerCase();
}

/** The domain XML with its first interface's MAC changed to `mac` (one without an interface as it is). */
export function withDefinitionMac(xml: string, mac: string): string {
  const first = firstInterfaceMac(xml);
  if (first === null) return xml;
  const rest = xml.slice(first.at);
  return xml.slice(0, first.at) + rest.replace(first.tag, first.tag.replace(first.mac, mac));
}
