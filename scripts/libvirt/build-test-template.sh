#!/usr/bin/env bash
# Builds the tiny test template from Debian packages only: Debian's kernel and an initramfs of
# busybox-static, the virtio/iso9660/ext4/virtio-console/virtio-net modules, Debian's qemu-guest-agent with
# the libraries it links, guest-chpasswd.sh and guest-init.sh. It boots in seconds under QEMU's
# TCG emulation. Output: DIR/vmlinuz, DIR/initrd.img, DIR/disk.qcow2 (an empty base disk), and
# DIR/no-agent/, the same guest whose init does not start the agent (as an image without one),
# and DIR/version, TEMPLATE_VERSION below (setup-ci.sh builds again a template of another version).
set -euo pipefail
# Raised whenever the guest changes in a way tests rely on (2: instance id, SSH keys, disks,
# login on the serial console; 4: the seed's IPv6 address, set and reported as ipv6=; 5: a
# password that begins with "-" is hashed, not taken for an option of mkpasswd).
TEMPLATE_VERSION=5
out=${1:?usage: build-test-template.sh OUTPUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
(cd "$work" && apt-get download -qq "$pkg" 2>/dev/null && dpkg-deb -x ./*.deb kernel)
kver=$(ls "$work/kernel/lib/modules")
cp "$work/kernel/boot/vmlinuz-$kver" "$out/vmlinuz"

root=$work/root
mkdir -p "$root"/{bin,dev,proc,sys,seed,data,etc,tmp,usr/sbin,lib/modules/"$kver"}
cp "$(command -v busybox)" "$root/bin/busybox"
file "$root/bin/busybox" | grep -q 'statically linked' || { echo "busybox must be the static build (busybox-static)" >&2; exit 1; }
for m in virtio virtio_ring virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci virtio_blk virtio_console failover net_failover virtio_net cdrom isofs crc16 mbcache jbd2 crc32c_generic ext4; do
  f=$(find "$work/kernel/lib/modules/$kver" -name "$m.ko*" | head -1)
  [ -n "$f" ] && cp "$f" "$root/lib/modules/$kver/"
done
depmod -b "$root" "$kver"

# The QEMU guest agent, as Debian ships it, with the shared libraries and loader it needs.
(cd "$work" && apt-get download -qq qemu-guest-agent 2>/dev/null && dpkg-deb -x ./qemu-guest-agent_*.deb agent)
install -m 0755 "$work/agent/usr/sbin/qemu-ga" "$root/usr/sbin/qemu-ga"
if ldd "$root/usr/sbin/qemu-ga" | grep -q 'not found'; then
  echo "qemu-ga needs libraries this machine lacks:" >&2
  ldd "$root/usr/sbin/qemu-ga" | grep 'not found' >&2
  exit 1
fi
for lib in $(ldd "$root/usr/sbin/qemu-ga" | grep -o '/[^ ]*'); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
# qemu-ga's guest-set-user-password runs the chpasswd it finds first on PATH: this one.
install -m 0755 "$here/guest-chpasswd.sh" "$root/usr/sbin/chpasswd"
install -m 0755 "$here/guest-init.sh" "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$out/initrd.img"
qemu-img create -q -f qcow2 "$out/disk.qcow2" 1G

# The same guest without the agent: its init finds /etc/vrp-no-agent and does not start it.
mkdir -p "$out/no-agent"
touch "$root/etc/vrp-no-agent"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$out/no-agent/initrd.img"
cp "$out/vmlinuz" "$out/no-agent/vmlinuz"
qemu-img create -q -f qcow2 "$out/no-agent/disk.qcow2" 1G
echo "$TEMPLATE_VERSION" > "$out/version"
echo "test template in $out, and without the guest agent in $out/no-agent (kernel $kver)"
