import { stat } from 'node:fs/promises';
import { isLocalSystem } from './local-system.ts';

/**
 * `auto`: KVM where libvirt's QEMU can use it, QEMU's TCG emulation otherwise. libvirt runs
 * QEMU as an unprivileged user, which needs /dev/kvm open to its group (`kvm`, mode 0660 on a
 * KVM host); a /dev/kvm that only root may open (as on nested sandboxes) means TCG. Remote
 * hosts cannot be looked at from here: set VRP_LIBVIRT_VIRT_TYPE=kvm for them.
 */
export async function detectVirtType(wanted: 'auto' | 'kvm' | 'qemu', uri: string): Promise<'kvm' | 'qemu'> {
  if (wanted !== 'auto') return wanted;
  if (!isLocalSystem(uri)) return 'qemu';
  const s = await stat('/dev/kvm').catch(() => undefined);
  return s?.isCharacterDevice() && (s.mode & 0o060) === 0o060 ? 'kvm' : 'qemu';
}
