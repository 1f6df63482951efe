import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Commands } from './commands.ts';

export interface SeedSpec {
  /** Changes whenever the seed must be applied again (cloud-init runs per instance id). */
  readonly instanceId: string;
  readonly hostname: string;
  readonly username: string;
  /** Undefined keeps the user-data written before (the password is not stored anywhere else). */
  readonly password: string | undefined;
  readonly addresses: readonly string[];
  readonly prefixLength: number;
  readonly gateway: string;
}

const quote = (s: string) => JSON.stringify(s);

/**
 * A cloud-init NoCloud seed (ISO 9660 labelled `cidata`) at `path`: meta-data with the host
 * name, user-data that sets the login password, network-config (v2) with the static addresses.
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
  const userData =
    s.password === undefined && previousUserData !== undefined
      ? previousUserData
      : [
          '#cloud-config',
          `hostname: ${s.hostname.split('.')[0]}`,
          `fqdn: ${s.hostname}`,
          'ssh_pwauth: true',
          'chpasswd:',
          '  expire: false',
          '  users:',
          `    - name: ${s.username}`,
          `      password: ${quote(s.password ?? '')}`,
          '      type: text',
          '',
        ].join('\n');
  await writeFile(join(dir, 'user-data'), userData, { mode: 0o600 });
  await writeFile(
    join(dir, 'network-config'),
    [
      'version: 2',
      'ethernets:',
      '  eth0:',
      '    match: { name: "e*" }',
      '    addresses:',
      ...s.addresses.map((a) => `      - ${a}/${s.prefixLength}`),
      `    gateway4: ${s.gateway}`,
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
