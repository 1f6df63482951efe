/**
 * Whether a libvirt URI is this machine's system connection (`qemu:///system`), the one case
 * where the driver can look at the host's own files (/dev/kvm, libvirt's QEMU logs).
 */
export function isLocalSystem(uri: string): boolean {
  return uri === 'qemu:///system';
}

/**
 * Why this machine's QEMU cannot use KVM although /dev/kvm exists, where its mode says so: a
 * device only root may open (0600 root) cannot be opened by libvirt's QEMU user (libvirt-qemu
 * on Debian), although libvirt's own probe was seen to report KVM usable on such a host.
 * Undefined where the mode lets others in (or there is no device): libvirt's answer decides.
 */
export function kvmDeviceClosed(
  stat: { readonly mode: number; readonly uid: number } | undefined,
): string | undefined {
  if (!stat) return undefined;
  if (stat.uid === 0 && (stat.mode & 0o066) === 0)
    return `/dev/kvm may be opened by root only (mode ${(stat.mode & 0o777).toString(8).padStart(4, '0')}), not by libvirt's QEMU user: TCG emulation`;
  return undefined;
}
