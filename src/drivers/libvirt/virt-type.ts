import { stat } from 'node:fs/promises';
import { type Commands, stderrOf } from './commands.ts';
import { isLocalSystem, kvmDeviceClosed } from './local-system.ts';

/** The virtualisation a host's domains are defined with, and why it was chosen. */
export interface VirtChoice {
  readonly type: 'kvm' | 'qemu';
  readonly reason: string;
}

/** What `virsh domcapabilities --virttype kvm` gave: its output, or the error it failed with. */
export type DomcapsOutcome =
  | { readonly ok: true; readonly stdout: string }
  | { readonly ok: false; readonly stderr: string };

/**
 * `auto`'s decision over libvirt's own answer. libvirt builds the domain capabilities for
 * `kvm` only where its QEMU really starts with KVM (it probes QEMU with `-accel kvm`, as the
 * user it runs QEMU as): a missing /dev/kvm, one its QEMU user may not open, or a nested host
 * whose KVM cannot create a VM all make the command fail ("the accel 'kvm' is not supported").
 * Any such failure, or an answer that does not name kvm, means TCG. A /dev/kvm's mode alone
 * is not enough: 0660 root:kvm on a host whose KVM cannot run guests chose KVM before, and the
 * guests never printed a line.
 */
export function decideVirtType(domcaps: DomcapsOutcome): VirtChoice {
  if (domcaps.ok) {
    if (/<domain>\s*kvm\s*<\/domain>/.test(domcaps.stdout))
      return { type: 'kvm', reason: "libvirt's domain capabilities report KVM usable" };
    return { type: 'qemu', reason: "libvirt's domain capabilities for kvm do not name KVM" };
  }
  const why = lastLine(domcaps.stderr, Boolean) ?? 'no answer';
  return { type: 'qemu', reason: `KVM not usable according to libvirt (${why}): TCG emulation` };
}

/** The last line of a command's stderr that `keep` accepts, without virsh's `error:` prefix. */
function lastLine(stderr: string, keep: (line: string) => boolean): string | undefined {
  return stderr
    .split('\n')
    .map((l) => l.replace(/^error:\s*/i, '').trim())
    .filter(keep)
    .at(-1);
}

/**
 * The virtualisation for one host: `kvm` or `qemu` as configured, or for `auto` libvirt's
 * answer on that host's own connection (so it works for remote hosts too), unless this
 * machine's own /dev/kvm may be opened by root only (`kvmDeviceClosed`). A host libvirt
 * cannot be asked about (libvirtd down) gets TCG, which runs everywhere.
 */
export async function detectVirtType(
  wanted: 'auto' | 'kvm' | 'qemu',
  uri: string,
  commands: Pick<Commands, 'virsh'>,
): Promise<VirtChoice> {
  if (wanted !== 'auto') return { type: wanted, reason: `VRP_LIBVIRT_VIRT_TYPE=${wanted}` };
  if (isLocalSystem(uri)) {
    const closed = kvmDeviceClosed(await stat('/dev/kvm').catch(() => undefined));
    if (closed) return { type: 'qemu', reason: closed };
  }
  const outcome: DomcapsOutcome = await commands
    .virsh(uri, ['domcapabilities', '--virttype', 'kvm'], 'Could not read the domain capabilities', 30_000)
    .then(
      ({ stdout }) => ({ ok: true as const, stdout }),
      (err: unknown) => ({ ok: false as const, stderr: stderrOf(err) || String(err) }),
    );
  return decideVirtType(outcome);
}

/**
 * Whether a domain failed to start because its QEMU could not use KVM although libvirt said it
 * could: libvirt may probe KVM as another user than the one it runs QEMU as, and a /dev/kvm only
 * root may open (0600) passes its probe and fails every start ("Could not access KVM kernel
 * module: Permission denied", "failed to initialize kvm").
 */
export function isKvmRefused(stderr: string): boolean {
  return /could not access kvm kernel module|failed to initialize kvm|accel 'kvm' is not supported/i.test(
    stderr,
  );
}

/** `auto`'s second decision, when a domain defined for KVM could not start with it. */
export function kvmRefusedChoice(stderr: string): VirtChoice {
  const why = lastLine(stderr, isKvmRefused) ?? 'KVM refused';
  return { type: 'qemu', reason: `a VM could not start with KVM (${why}): TCG emulation from now on` };
}
