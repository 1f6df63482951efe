#!/usr/bin/env bash
# Sets up libvirt/QEMU on a CI or developer machine for the real-VM tests: Debian packages,
# the daemons (started by hand: no systemd here), and the tiny test template.
# Prints the template directory on the last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/vrp-test-template}
export DEBIAN_FRONTEND=noninteractive
if ! command -v virsh >/dev/null || ! command -v qemu-system-x86_64 >/dev/null || ! command -v genisoimage >/dev/null \
  || ! command -v depmod >/dev/null || ! [ -x /bin/busybox ] || ! file /bin/busybox | grep -q static; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends qemu-system-x86 qemu-utils libvirt-daemon-system libvirt-clients \
    genisoimage busybox-static cpio kmod file >/dev/null
fi
# What the template's qemu-guest-agent links (QEMU's own packages bring them; said here all the same).
if ! ldconfig -p | grep -q libglib-2.0.so.0 || ! ldconfig -p | grep -q liburing.so.2; then
  apt-get install -y -qq --no-install-recommends libglib2.0-0 libnuma1 liburing2 libudev1 >/dev/null
fi
pgrep -x virtlogd >/dev/null || virtlogd -d
if ! virsh -c qemu:///system list >/dev/null 2>&1; then
  rm -f /run/libvirtd.pid /var/run/libvirtd.pid
  libvirtd -d
  for _ in $(seq 1 50); do virsh -c qemu:///system list >/dev/null 2>&1 && break; sleep 0.2; done
fi
virsh -c qemu:///system list >/dev/null
# The driver's storage pool `vrp` lives here (VRP_LIBVIRT_STORAGE's default); the driver defines
# and starts the pool itself on first use.
mkdir -p /var/lib/vrp/pool
# A /dev/kvm that libvirt's QEMU cannot use (mode 0600 root:root, or a nested host without
# nested KVM) made libvirtd probe QEMU again on every define (32-50 s each): say so. `auto`
# chooses TCG there all the same (docs/libvirt.md, "Provisioning time").
if [ -e /dev/kvm ] && ! virsh -c qemu:///system domcapabilities --virttype kvm >/dev/null 2>&1; then
  echo "setup-ci: /dev/kvm exists ($(stat -c '%a %U:%G' /dev/kvm)) but libvirt's QEMU cannot use KVM;" \
    "define/start may be slow: see docs/libvirt.md, 'Provisioning time, and a slow virsh define'" >&2
fi
# A template of another version than build-test-template.sh builds (older ones have no version
# file) is built again: in a directory beside it, then each file renamed into place, so that a
# test reading the template meanwhile sees whole files.
want=$(sed -n 's/^TEMPLATE_VERSION=//p' "$here/build-test-template.sh")
if [ "$(cat "$out/version" 2>/dev/null)" != "$want" ] || ! [ -f "$out/no-agent/initrd.img" ]; then
  next=$(mktemp -d "${out%/}.building.XXXXXX")
  bash "$here/build-test-template.sh" "$next" >/dev/null
  mkdir -p "$out/no-agent"
  for f in vmlinuz initrd.img disk.qcow2 no-agent/vmlinuz no-agent/initrd.img no-agent/disk.qcow2 version; do
    mv -f "$next/$f" "$out/$f"
  done
  rm -rf "$next"
fi
echo "$out"
