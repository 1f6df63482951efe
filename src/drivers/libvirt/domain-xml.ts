/** What a domain definition needs; the XML is the whole truth libvirt keeps about the VM. */
export interface DomainSpec {
  readonly name: string;
  readonly virtType: 'kvm' | 'qemu';
  readonly cpu: number;
  readonly ramGb: number;
  readonly disk: string;
  readonly seed: string;
  readonly consoleLog: string;
  /** Direct kernel boot (the tiny test template); otherwise the disk's own boot loader. */
  readonly kernel?: { readonly kernel: string; readonly initrd: string; readonly cmdline: string };
  readonly bridge?: string;
}

const esc = (s: string) => s.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);

export function domainXml(d: DomainSpec): string {
  const boot = d.kernel
    ? `<kernel>${esc(d.kernel.kernel)}</kernel><initrd>${esc(d.kernel.initrd)}</initrd><cmdline>${esc(d.kernel.cmdline)}</cmdline>`
    : `<boot dev='hd'/>`;
  const nic = d.bridge
    ? `<interface type='bridge'><source bridge='${esc(d.bridge)}'/><model type='virtio'/></interface>`
    : '';
  return `<domain type='${d.virtType}'>
  <name>${esc(d.name)}</name>
  <memory unit='GiB'>${d.ramGb}</memory>
  <vcpu placement='static'>${d.cpu}</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type>${boot}</os>
  <features><acpi/><apic/></features>
  <on_poweroff>destroy</on_poweroff><on_reboot>restart</on_reboot><on_crash>destroy</on_crash>
  <devices>
    <disk type='file' device='disk'><driver name='qemu' type='qcow2'/><source file='${esc(d.disk)}'/><target dev='vda' bus='virtio'/></disk>
    <disk type='file' device='disk'><driver name='qemu' type='raw'/><source file='${esc(d.seed)}'/><target dev='vdb' bus='virtio'/><readonly/></disk>
    ${nic}
    <serial type='pty'><log file='${esc(d.consoleLog)}' append='on'/><target port='0'/></serial>
    <console type='pty'><target type='serial' port='0'/></console>
    <channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel>
  </devices>
</domain>
`;
}
