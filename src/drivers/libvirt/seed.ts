import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { VmNetwork } from '../../store/repos/service-network.ts';
import type { Commands } from './commands.ts';

export interface SeedSpec {
  /** Changes whenever the seed must be applied again (cloud-init runs per instance id). */
  readonly instanceId: string;
  readonly hostname: string;
  readonly username: string;
  /** Undefined keeps the user-data written before (the password is not stored anywhere else). */
  readonly password: string | undefined;
  /** IPv4 addresses, primary first, each with its pool's prefix length. */
  readonly addresses: readonly SeedAddress[];
  /** The IPv4 default route: the primary address's pool's gateway. */
  readonly gateway: string | undefined;
  /** The service's IPv6 address in its prefix, and its pool's gateway; none: no IPv6. */
  readonly ipv6?: (SeedAddress & { readonly gateway: string }) | undefined;
  /** OpenSSH public keys installed for root; none: no `users` entry (root keeps what it has). */
  readonly sshKeys?: readonly string[];
}

/** An address of the guest and the length of the network it is on (`192.0.2.5` on a /24). */
export interface SeedAddress {
  readonly address: string;
  readonly prefixLength: number;
}

const lengthOf = (cidr: string | null, whole: number) => Number(cidr?.split('/')[1] ?? whole);

/**
 * What the seed's network-config says of a VM's addresses: each IPv4 address with its own
 * pool's prefix length, the primary's pool's gateway as the default route, the IPv6 address with
 * the length of the service's prefix and its pool's gateway.
 */
export function seedNetwork(net: VmNetwork): Pick<SeedSpec, 'addresses' | 'gateway' | 'ipv6'> {
  return {
    addresses: net.ipv4.map((a) => ({ address: a.address, prefixLength: lengthOf(a.network, 32) })),
    gateway: net.ipv4[0]?.gateway ?? undefined,
    ipv6: net.ipv6
      ? { address: net.ipv6.address, prefixLength: lengthOf(net.ipv6.prefix, 128), gateway: net.ipv6.gateway }
      : undefined,
  };
}

/**
 * A YAML double-quoted scalar: JSON's escapes are YAML's, and every character outside printable
 * ASCII is escaped too (YAML reads some, such as U+2028 or U+0085, as line breaks).
 */
export const quote = (s: string) =>
  JSON.stringify(s).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** The user-data of a seed: the host name, the login's password, root's SSH keys. */
export function userData(s: Pick<SeedSpec, 'hostname' | 'username' | 'password' | 'sshKeys'>): string {
  const keys = s.sshKeys ?? [];
  return [
    '#cloud-config',
    `hostname: ${quote(s.hostname.split('.')[0] ?? '')}`,
    `fqdn: ${quote(s.hostname)}`,
    'ssh_pwauth: true',
    // Root may log in with its keys (cloud-init's default forbids root's keys): the distribution's
    // default user as before, and root with the keys, its password not locked (chpasswd sets it).
    ...(keys.length > 0
      ? [
          'disable_root: false',
          'users:',
          '  - default',
          '  - name: root',
          '    lock_passwd: false',
          '    ssh_authorized_keys:',
          ...keys.map((k) => `      - ${quote(k)}`),
        ]
      : []),
    'chpasswd:',
    '  expire: false',
    '  users:',
    `    - name: ${quote(s.username)}`,
    `      password: ${quote(s.password ?? '')}`,
    '      type: text',
    '',
  ].join('\n');
}

/** The SSH keys a user-data written by `userData` installs for root. */
export function userDataSshKeys(text: string): string[] {
  const lines = text.split('\n');
  const at = lines.indexOf('    ssh_authorized_keys:');
  if (at < 0) return [];
  const keys: string[] = [];
  for (const line of lines.slice(at + 1)) {
    const m = /^ {6}- (".*")$/.exec(line);
    if (!m) break;
    const key: unknown = JSON.parse(m[1] ?? '""');
    if (typeof key === 'string') keys.push(key);
  }
  return keys;
}

/**
 * A cloud-init NoCloud seed (ISO 9660 labelled `cidata`) at `path`: meta-data with the host
 * name, user-data that sets the login password and root's SSH keys, network-config (v2) with the static addresses
 * (each with its pool's prefix length) and the routes through the pools' gateways.
 * Its sources are written in `dir`, which the caller makes private and removes right after
 * (they hold the password). With no password, `previousUserData` (read back from the host's
 * seed) is kept, so the addresses can change without knowing the password.
 */
export async function writeSeed(
  { run }: Pick<Commands, 'run'>,
  path: string,
  dir: string,
  s: SeedSpec,
  previousUserData?: string,
): Promise<void> {
  await writeFile(join(dir, 'meta-data'), `instance-id: ${s.instanceId}\nlocal-hostname: ${s.hostname}\n`);
  const text = s.password === undefined && previousUserData !== undefined ? previousUserData : userData(s);
  await writeFile(join(dir, 'user-data'), text, { mode: 0o600 });
  await writeFile(
    join(dir, 'network-config'),
    [
      'version: 2',
      'ethernets:',
      '  eth0:',
      '    match: { name: "e*" }',
      '    addresses:',
      ...s.addresses.map((a) => `      - ${a.address}/${a.prefixLength}`),
      ...(s.ipv6 ? [`      - ${quote(`${s.ipv6.address}/${s.ipv6.prefixLength}`)}`] : []),
      ...(s.gateway !== undefined ? [`    gateway4: ${s.gateway}`] : []),
      // The IPv6 gateway is on the link (fe80::1 by default) or elsewhere in the pool's prefix,
      // outside the service's: reached on the link either way.
      ...(s.ipv6
        ? [
            '    routes:',
            `      - to: ${quote('::/0')}`,
            `        via: ${quote(s.ipv6.gateway)}`,
            '        on-link: true',
          ]
        : []),
      '',
    ].join('\n'),
  );
  await run(
    'genisoimage',
    [
      '-quiet',
      '-output',
      path,
      '-volid',
      'cidata',
      '-joliet',
      '-rock',
      join(dir, 'user-data'),
      join(dir, 'meta-data'),
      join(dir, 'network-config'),
    ],
    'Could not write the VM configuration seed',
  );
}

/** The user-data of a seed ISO (isoinfo, from genisoimage's package). */
export async function readSeedUserData({ run }: Pick<Commands, 'run'>, iso: string): Promise<string> {
  const { stdout } = await run(
    'isoinfo',
    ['-i', iso, '-R', '-x', '/user-data'],
    'Could not read the VM configuration seed',
  );
  return stdout;
}
