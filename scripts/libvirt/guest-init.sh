#!/bin/busybox sh
# /init of the tiny test template: reads the NoCloud seed (cidata ISO on a virtio disk),
# applies hostname and password, keeps a boot counter on its own disk, and reports what it
# sees on the serial console, so tests can check what the API's settings did to the guest.
# It starts the QEMU guest agent on its virtio-serial port (unless /etc/vrp-no-agent exists);
# a password the agent sets is reported by /usr/sbin/chpasswd (guest-chpasswd.sh). It installs
# the seed's SSH keys for root, reports its disks (and the boot counter of a second ext4 disk:
# the server's disk under the rescue system), sets the seed's IPv6 address, and runs a login on
# the serial console.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in virtio virtio_ring virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci virtio_blk virtio_console failover net_failover virtio_net cdrom isofs crc16 mbcache jbd2 crc32c_generic ext4; do
  modprobe "$m" 2>/dev/null
done
sleep 1
mkdir -p /seed /data
for dev in /dev/vd?; do
  if mount -t iso9660 -o ro "$dev" /seed 2>/dev/null; then
    [ -f /seed/meta-data ] && break
    umount /seed
  fi
done
HOST=$(sed -n 's/^local-hostname: *//p' /seed/meta-data)
INSTANCE=$(sed -n 's/^instance-id: *//p' /seed/meta-data)
PASS=$(sed -n 's/^ *password: *"\(.*\)"$/\1/p' /seed/user-data | head -1)
hostname "$HOST"
# The accounts: root, with the seed's password (the agent's changes go to /usr/sbin/chpasswd).
# `--`: a password may begin with "-" (one generated password in about 60 does), which mkpasswd
# would take for an option, leaving root with no password at all ('*', "bad salt" at the login).
# The boot line's password_sha256 is of the password root's hash was made from: `none` when root
# has no password (no seed password, or one mkpasswd refused), so a test cannot be told a password
# reached the guest when the login would refuse it.
echo 'root:x:0:0:root:/root:/bin/sh' > /etc/passwd
HASH=
[ -n "$PASS" ] && HASH=$(mkpasswd -m sha512 -- "$PASS")
echo "root:${HASH:-*}:19000:0:99999:7:::" > /etc/shadow
PASS_SHA=none
[ -n "$HASH" ] && PASS_SHA=$(printf %s "$PASS" | sha256sum | cut -d' ' -f1)
# Root's SSH keys: the seed's `ssh_authorized_keys` entries (one double-quoted key a line).
mkdir -p /root/.ssh && chmod 700 /root/.ssh
sed -n '/^    ssh_authorized_keys:$/,/^ \{0,5\}[^ ]/s/^      - "\(.*\)"$/\1/p' /seed/user-data > /root/.ssh/authorized_keys
chmod 600 /root/.ssh/authorized_keys
KEYS=
while read -r _ blob _; do
  [ -n "$blob" ] && KEYS="$KEYS$(printf %s "$blob" | base64 -d | sha256sum | cut -d' ' -f1),"
done < /root/.ssh/authorized_keys
# The data disk: the first virtio disk that is not the seed.
DISK=/dev/vda
if ! mount -t ext4 "$DISK" /data 2>/dev/null; then
  mke2fs -q "$DISK" && mount -t ext4 "$DISK" /data
fi
BOOT=$(( $(cat /data/boots 2>/dev/null || echo 0) + 1 ))
echo "$BOOT" > /data/boots
GEN=$(cat /data/generation 2>/dev/null || echo 0)
if [ -f /seed/bump-generation ]; then GEN=$((GEN + 1)); echo "$GEN" > /data/generation; fi
sync
CPUS=$(grep -c ^processor /proc/cpuinfo)
MEMKB=$(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo)
DISKKB=$(( $(cat /sys/block/vda/size) / 2 ))
IPS=$(sed -n 's/^ *- \([0-9.]*\)\/[0-9]*$/\1/p' /seed/network-config | tr '\n' ',')
# The IPv6 address of the seed (a quoted `"ADDRESS/LENGTH"` entry), set on the first Ethernet
# interface (on the loopback one when the domain has none), and reported as the kernel shows it.
IPV6=none
V6=$(sed -n 's/^ *- "\([0-9a-fA-F:]*:[0-9a-fA-F:]*\/[0-9]*\)"$/\1/p' /seed/network-config | head -1)
if [ -n "$V6" ]; then
  IF=lo
  for n in /sys/class/net/e*; do [ -e "$n" ] && IF=$(basename "$n") && break; done
  ip link set "$IF" up
  if ip -6 addr add "$V6" dev "$IF" nodad 2>/dev/null || ip -6 addr add "$V6" dev "$IF"; then
    IPV6=$(ip -6 addr show dev "$IF" | sed -n 's/.*inet6 \([0-9a-f:]*\)\/[0-9]* scope global.*/\1/p' | head -1)
    [ -n "$IPV6" ] || IPV6=none
  fi
fi
# Every virtio disk with its size in KiB; a second disk with an ext4 file system (the server's
# disk under the rescue system) is looked at read-only, for its boot counter.
DISKS=
for d in /sys/block/vd?; do DISKS="$DISKS$(basename "$d"):$(( $(cat "$d/size") / 2 )),"; done
VDB_BOOTS=none
mkdir -p /mnt/vdb
if [ -b /dev/vdb ] && mount -t ext4 -o ro /dev/vdb /mnt/vdb 2>/dev/null; then
  VDB_BOOTS=$(cat /mnt/vdb/boots 2>/dev/null || echo none)
  umount /mnt/vdb
fi
echo "VRP-GUEST hostname=$(hostname) password_sha256=$PASS_SHA cpus=$CPUS mem_kb=$MEMKB disk_kb=$DISKKB boot=$BOOT generation=$GEN ips=$IPS ipv6=$IPV6 instance_id=$INSTANCE disks=$DISKS vdb_boots=$VDB_BOOTS ssh_key_sha256=$KEYS" > /dev/console
# The guest agent on the port named org.qemu.guest_agent.0 (no udev here to name it in /dev).
if [ ! -f /etc/vrp-no-agent ]; then
  for port in /sys/class/virtio-ports/*; do
    if [ "$(cat "$port/name" 2>/dev/null)" = org.qemu.guest_agent.0 ]; then
      PATH=/usr/sbin:/bin /usr/sbin/qemu-ga -m virtio-serial -p "/dev/$(basename "$port")" -t /tmp >/dev/null 2>&1 &
    fi
  done
fi
# A login on the serial console (busybox getty and login, root's password from the seed), again
# after each session ends.
mkdir -p /root
while true; do setsid getty -L 115200 ttyS0 vt100; sleep 1; done &
while true; do sleep 3600; done
