/**
 * The real-VM tests run where VRP_TEST_LIBVIRT_TEMPLATE names the tiny guest template
 * (scripts/libvirt/build-test-template.sh; .ci/run builds it and starts libvirtd). Elsewhere
 * they are reported as skipped, with this reason, rather than left out of the count.
 */
export const libvirtTemplate = process.env['VRP_TEST_LIBVIRT_TEMPLATE'] || undefined;

export const noLibvirtTemplate: string | false =
  !libvirtTemplate &&
  'needs real VMs: VRP_TEST_LIBVIRT_TEMPLATE is not set (as root, `bash scripts/libvirt/setup-ci.sh` installs QEMU/libvirt, builds the template and prints its path)';
