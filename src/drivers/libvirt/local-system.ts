/**
 * Whether a libvirt URI is this machine's system connection (`qemu:///system`), the one case
 * where the driver can look at the host's own files (/dev/kvm, libvirt's QEMU logs).
 */
export function isLocalSystem(uri: string): boolean {
  return uri === 'qemu:///system';
}
