/** What a domain definition needs; the XML is the whole truth libvirt keeps about the VM. */
export interface DomainSpec {
  readonly name: string;
  /** The domain's UUID: given when the XML replaces or runs over an existing domain of that name. */
  readonly uuid?: string;
  readonly virtType: 'kvm' | 'qemu';
  readonly cpu: number;
  readonly ramGb: number;
  readonly disk: string;
  /** A second qcow2 disk, `vdb` (the server's own disk under the rescue system); the seed follows it. */
  readonly secondDisk?: string;
  readonly seed: string;
  readonly consoleLog: string;
  /** Direct kernel boot (the tiny test template); otherwise the disk's own boot loader. */
  readonly kernel?: { readonly kernel: string; readonly initrd: string; readonly cmdline: string };
  readonly bridge?: string;
  /** The interface's MAC address (with `bridge`); libvirt makes a random one if none. */
  readonly mac?: string;
  /** XML put in the domain's `<metadata>` (elements in a namespace of their own). */
  readonly metadata?: string;
}

/**
 * The guest may not suspend itself to memory or to disk (ACPI S3 and S4 off, as Proxmox sets its
 * guests): a guest's own `systemctl suspend` would leave its domain `pmsuspended` (holding its
 * memory, answering no ACPI shutdown, refusing a start), woken only by `virsh dompmwakeup`.
 */
const GUEST_SUSPEND_OFF = "<pm><suspend-to-mem enabled='no'/><suspend-to-disk enabled='no'/></pm>";

/**
 * A domain XML (its own definition, as `virsh dumpxml --inactive` gives it) with the guest's
 * suspend off (GUEST_SUSPEND_OFF): the same text where it is so already, its `<pm>` replaced where
 * it allows either, or one added (a domain defined before this rule was).
 */
export function withGuestSuspendOff(xml: string): string {
  const pm = /<pm(?=[\s/>])[^>]*\/>|<pm(?=[\s/>])[^>]*>[\s\S]*?<\/pm>/.exec(xml);
  const off = (kind: string) => new RegExp(`<suspend-to-${kind}\\s+enabled=(['"])no\\1`).test(pm?.[0] ?? '');
  if (pm && off('mem') && off('disk')) return xml;
  if (pm) return xml.replace(pm[0], GUEST_SUSPEND_OFF);
  const devices = xml.indexOf('<devices>');
  if (devices < 0) return xml;
  return `${xml.slice(0, devices)}${GUEST_SUSPEND_OFF}\n  ${xml.slice(devices)}`;
}

const esc = (s: string) => s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The domain's XML. Its graphical console is VNC on a UNIX socket that libvirt makes in the
 * domain's own private directory on the host (`<listen type='socket'/>`, the path in the live
 * XML): never a TCP port.
 */
export function domainXml(d: DomainSpec): string {
  const boot = d.kernel
    ? `<kernel>${esc(d.kernel.kernel)}</kernel><initrd>${esc(d.kernel.initrd)}</initrd><cmdline>${esc(d.kernel.cmdline)}</cmdline>`
    : `<boot dev='hd'/>`;
  const nic = d.bridge
    ? `<interface type='bridge'>${d.mac ? `<mac address='${esc(d.mac)}'/>` : ''}<source bridge='${esc(d.bridge)}'/><model type='virtio'/></interface>`
    : '';
  const qcow2 = (file: string, dev: string) =>
    `<disk type='file' device='disk'><driver name='qemu' type='qcow2'/><source file='${esc(file)}'/><target dev='${dev}' bus='virtio'/></disk>`;
  return `<domain type='${d.virtType}'>
  <name>${esc(d.name)}</name>${d.uuid ? `\n  <uuid>${esc(d.uuid)}</uuid>` : ''}${d.metadata ? `\n  <metadata>${d.metadata}</metadata>` : ''}
  <memory unit='GiB'>${d.ramGb}</memory>
  <vcpu placement='static'>${d.cpu}</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type>${boot}</os>
  <features><acpi/><apic/></features>
  <on_poweroff>destroy</on_poweroff><on_reboot>restart</on_reboot><on_crash>destroy</on_crash>
  ${GUEST_SUSPEND_OFF}
  <devices>
    ${qcow2(d.disk, 'vda')}${d.secondDisk ? `\n    ${qcow2(d.secondDisk, 'vdb')}` : ''}
    <disk type='file' device='disk'><driver name='qemu' type='raw'/><source file='${esc(d.seed)}'/><target dev='${d.secondDisk ? 'vdc' : 'vdb'}' bus='virtio'/><readonly/></disk>
    ${nic}
    <serial type='pty'><log file='${esc(d.consoleLog)}' append='on'/><target port='0'/></serial>
    <console type='pty'><target type='serial' port='0'/></console>
    <channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel>
    <graphics type='vnc'><listen type='socket'/></graphics>
  </devices>
</domain>
`;
}
