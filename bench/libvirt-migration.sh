#!/usr/bin/env bash
# Migration between two libvirt hosts on one machine, measured with virsh alone (no product code).
# Run as root where scripts/libvirt/setup-ci.sh has run. Starts test hosts bench-a and bench-b
# (scripts/libvirt/test-host.sh), and, with the test template's kernel and initrd:
#   1. live-migrates a domain with the template's disk (1 GiB, nearly empty) from A to B;
#   2. live-migrates a domain with a 2 GiB disk holding 1 GiB of random data from A to B;
#   3. moves that domain back to A stopped (cold): vol-download from B piped into vol-upload on A.
# Live moves: `virsh migrate --live --persistent --undefinesource --copy-storage-all
# --listen-address 127.0.0.1 --migrateuri tcp://127.0.0.1`; time and downtime from the
# destination's `domjobinfo --completed`. Stops both test hosts at the end (and on failure).
# Usage: bench/libvirt-migration.sh [TEMPLATE_DIR]   (default /tmp/vrp-test-template)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
template=${1:-/tmp/vrp-test-template}
testhost=$here/../scripts/libvirt/test-host.sh
work=$(mktemp -d /tmp/vrp-bench-migration.XXXXXX)
cleanup() {
  bash "$testhost" stop bench-a >/dev/null 2>&1 || true
  bash "$testhost" stop bench-b >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }
since() { echo "$(now) $1" | awk '{printf "%.1f", $1 - $2}'; }

A=$(bash "$testhost" start bench-a | tail -n1)
B=$(bash "$testhost" start bench-b | tail -n1)

domxml() { # NAME VOLUME_PATH
  cat <<EOF
<domain type='qemu'>
  <name>$1</name>
  <memory unit='GiB'>1</memory>
  <vcpu placement='static'>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type><kernel>$template/vmlinuz</kernel><initrd>$template/initrd.img</initrd><cmdline>console=ttyS0 quiet panic=-1</cmdline></os>
  <features><acpi/><apic/></features>
  <on_poweroff>destroy</on_poweroff><on_reboot>restart</on_reboot><on_crash>destroy</on_crash>
  <devices>
    <disk type='file' device='disk'><driver name='qemu' type='qcow2'/><source file='$2'/><target dev='vda' bus='virtio'/></disk>
    <serial type='pty'><target port='0'/></serial>
    <console type='pty'><target type='serial' port='0'/></console>
    <channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel>
  </devices>
</domain>
EOF
}

# Waits until the guest's agent answers on URI (the guest has booted).
agent_up() {
  for _ in $(seq 1 600); do
    virsh -q -c "$1" qemu-agent-command "$2" '{"execute":"guest-ping"}' >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "guest $2 on $1 did not answer" >&2
  return 1
}

# Puts IMAGE (a qcow2 file) into pool vrp on URI as volume NAME.qcow2 of CAPACITY.
upload() {
  virsh -q -c "$1" vol-create-as vrp "$2.qcow2" "$4" --format qcow2 >/dev/null
  virsh -q -c "$1" vol-upload --pool vrp "$2.qcow2" "$3"
}

start_domain() { # URI NAME
  domxml "$2" "/var/lib/vrp/pool/$2.qcow2" >"$work/$2.xml"
  local t
  t=$(now)
  virsh -q -c "$1" define "$work/$2.xml" >/dev/null
  echo "define on $2: $(since "$t") s" >&2
  virsh -q -c "$1" start "$2" >/dev/null
  agent_up "$1" "$2"
}

# Live-migrates NAME from A to B and deletes the source's copy of its disk (libvirt leaves it);
# prints the figures, and the addresses QEMU listened on meanwhile (sampled every 0.2 s).
migrate() {
  local t total info listeners
  rm -f "$work/done"
  (
    until [ -e "$work/done" ]; do
      ss -Hltnp | awk '/qemu-system/ {print $4}'
      sleep 0.2
    done | sort -u >"$work/listen-$1"
  ) &
  t=$(now)
  virsh -q -c "$A" migrate --live --persistent --undefinesource --copy-storage-all \
    --listen-address 127.0.0.1 --migrateuri tcp://127.0.0.1 "$1" "$B"
  total=$(since "$t")
  touch "$work/done"
  wait
  info=$(virsh -q -c "$B" domjobinfo --completed "$1")
  echo "$info" >&2
  agent_up "$B" "$1"
  virsh -q -c "$A" vol-delete --pool vrp "$1.qcow2" >/dev/null
  listeners=$(tr '\n' ' ' <"$work/listen-$1")
  field() { awk -F: -v k="$1" '$1 == k {sub(/^[^:]*: */, ""); print}' <<<"$info"; }
  echo "$1 live A->B: virsh migrate ${total} s; job $(field 'Time elapsed'); downtime $(field 'Total downtime');" \
    "memory $(field 'Memory processed'); disk on B $(du -h "/tmp/vrp-test-hosts/bench-b/storage/$1.qcow2" | cut -f1);" \
    "QEMU listened on: ${listeners:-nothing seen}"
}

echo "machine: $(nproc) cores, $(awk '/MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo)," \
  "domains type='qemu' (TCG, 1 vCPU, 1 GiB; /dev/kvm $(stat -c '%a %U:%G' /dev/kvm 2>/dev/null || echo absent)),"\
  "$(libvirtd --version), $(qemu-system-x86_64 --version | head -1), load $(cut -d' ' -f1-3 /proc/loadavg)"

# 1. The template's disk.
upload "$A" th-small "$template/disk.qcow2" 1G
start_domain "$A" th-small
migrate th-small
virsh -q -c "$B" destroy th-small >/dev/null
virsh -q -c "$B" undefine th-small --remove-all-storage >/dev/null

# 2. 2 GiB with 1 GiB of random data.
truncate -s 2G "$work/big.raw"
dd if=/dev/urandom of="$work/big.raw" bs=1M count=1024 conv=notrunc status=none
qemu-img convert -O qcow2 "$work/big.raw" "$work/big.qcow2"
rm "$work/big.raw"
upload "$A" th-big "$work/big.qcow2" 2G
rm "$work/big.qcow2"
start_domain "$A" th-big
migrate th-big

# 3. Cold: B -> A, stopped.
virsh -q -c "$B" shutdown th-big >/dev/null
for _ in $(seq 1 120); do
  [ "$(virsh -q -c "$B" domstate th-big)" = "shut off" ] && break
  sleep 0.5
done
[ "$(virsh -q -c "$B" domstate th-big)" = "shut off" ] || virsh -q -c "$B" destroy th-big >/dev/null
size=$(virsh -q -c "$B" vol-info --pool vrp th-big.qcow2 --bytes | awk '/^Allocation:/{print $2}')
t=$(now)
virsh -q -c "$B" dumpxml --inactive th-big >"$work/th-big.cold.xml"
virsh -q -c "$A" vol-create-as vrp th-big.qcow2 2G --format qcow2 >/dev/null
virsh -q -c "$B" vol-download --pool vrp th-big.qcow2 /dev/stdout | virsh -q -c "$A" vol-upload --pool vrp th-big.qcow2 /dev/stdin
tcopy=$(since "$t")
virsh -q -c "$A" define "$work/th-big.cold.xml" >/dev/null
virsh -q -c "$B" undefine th-big --remove-all-storage >/dev/null
echo "th-big cold B->A: $(awk -v b="$size" 'BEGIN{printf "%.2f GiB", b/1073741824}') allocated;" \
  "vol-download | vol-upload ${tcopy} s; with define/undefine $(since "$t") s"
virsh -q -c "$A" start th-big >/dev/null
agent_up "$A" th-big
virsh -q -c "$A" destroy th-big >/dev/null
virsh -q -c "$A" undefine th-big --remove-all-storage >/dev/null
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
