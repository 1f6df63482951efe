#!/usr/bin/env bash
# A second (third, ...) libvirt "host" on this one machine, for trying and testing migration
# between hosts that share no storage. Run as root.
#
#   test-host.sh start NAME    starts test host NAME (or finds it running); its URI is the last line
#   test-host.sh stop NAME     destroys and undefines its domains, ends its processes, removes its files
#   test-host.sh power-cycle NAME  kills every process of it (a power cut) and starts its libvirtd
#                              again over its files (a boot: it starts its autostart domains)
#   test-host.sh status NAME   its URI and exit 0 when it answers, else "stopped" and exit 3
#
# NAME: [a-z0-9-]{1,20}. Everything the test host has is under /tmp/vrp-test-hosts/NAME/.
#
# A test host is a libvirtd (and its own virtlogd) in a mount namespace of its own, where:
# - /run and /var/lib/libvirt are fresh tmpfs mounts (its own pid files, sockets, domain state,
#   and /run/lock, where libvirt locks the serial consoles it hands out);
# - /etc/libvirt is its own copy of the system's, without the system's domains, networks, pools
#   and secrets, with its own host_uuid (libvirt refuses to migrate to a host with the source's
#   UUID), and its sockets in NAME/run (outside the masked /run, so virsh reaches it from outside);
# - /var/log/libvirt and /var/cache/libvirt are NAME/log and NAME/cache (the cache starts as a
#   copy of the system's, so QEMU's capabilities are not probed again);
# - /var/lib/vrp/pool, the path of the product's storage pool `vrp` on every host, is NAME/storage:
#   the system daemon's domains see the real /var/lib/vrp/pool, each test host's see its own;
#   with VRP_TEST_HOST_STORAGE_MB=N set at its start, a tmpfs of N MiB instead (a small disk that
#   fills up; seen only in the host's namespace, and emptied by a power-cycle);
# - a /dev/kvm only root may open is masked by an empty file (see start_host): its libvirt then
#   agrees with itself that there is no KVM, and does not probe QEMU again on every define/start.
# The script defines and starts the dir pool `vrp` at /var/lib/vrp/pool on the new host.
# Its URI: qemu+unix:///system?socket=/tmp/vrp-test-hosts/NAME/run/libvirt-sock
#
# Migration between hosts must stay on loopback, and libvirt refuses a loopback address in
# qemu.conf's migration_address, so every migration says it: `virsh migrate --live
# --copy-storage-all --listen-address 127.0.0.1 --migrateuri tcp://127.0.0.1 ...` (the
# destination's QEMU and its NBD server for the disks then listen on 127.0.0.1 only).
#
# The host's processes are known by a token file in its private /run (/proc/PID/root/run/...),
# so `stop` finds its QEMUs and virtlogd even when its libvirtd has died.
set -euo pipefail

base=/tmp/vrp-test-hosts
pool_path=/var/lib/vrp/pool

usage() {
  echo "usage: test-host.sh start|stop|power-cycle|status NAME  (NAME: [a-z0-9-]{1,20})" >&2
  exit 2
}
[ $# -eq 2 ] || usage
cmd=$1
name=$2
[[ $name =~ ^[a-z0-9-]{1,20}$ ]] || usage
[ "$(id -u)" = 0 ] || {
  echo "test-host: must run as root (it mounts and starts libvirtd)" >&2
  exit 1
}

dir=$base/$name
uri="qemu+unix:///system?socket=$dir/run/libvirt-sock"

# The pids of the processes that belong to the test host: those that see its token in /run, or
# (before the token exists) whose arguments name its directory.
host_pids() {
  local token='' seen p pid args
  [ -f "$dir/token" ] && token=$(<"$dir/token")
  for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = "$$" ] || [ "$pid" = "$BASHPID" ] && continue
    if [ -n "$token" ]; then
      seen=''
      { IFS= read -r seen <"$p/root/run/vrp-test-host"; } 2>/dev/null || true
      if [ "$seen" = "$token" ]; then
        echo "$pid"
        continue
      fi
    fi
    args=''
    { args=$(tr '\0' ' ' <"$p/cmdline"); } 2>/dev/null || true
    case $args in
      *"$dir/"*) case $args in *test-host.sh*) ;; *) echo "$pid" ;; esac ;;
    esac
  done
}

answers() { timeout 20 virsh -q -c "$uri" version >/dev/null 2>&1; }

running() {
  local pid
  [ -f "$dir/libvirtd.pid" ] || return 1
  pid=$(<"$dir/libvirtd.pid")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && answers
}

# Ends every process of the host: each signal of $@ in turn (TERM KILL; KILL), each followed by up
# to 10 s for them to go; fails if some stay.
end_processes() {
  local sig pids
  for sig in "$@"; do
    pids=$(host_pids)
    [ -z "$pids" ] && return 0
    # shellcheck disable=SC2086 # one pid a word
    kill -"$sig" $pids 2>/dev/null || true
    for _ in $(seq 1 50); do
      pids=$(host_pids)
      [ -z "$pids" ] && return 0
      sleep 0.2
    done
  done
  echo "test-host: processes of $name would not end: $(host_pids)" >&2
  return 1
}

stop_host() {
  [ -d "$dir" ] || return 0
  local dom
  if answers; then
    for dom in $(timeout 60 virsh -q -c "$uri" list --all --name 2>/dev/null); do
      timeout 60 virsh -q -c "$uri" destroy "$dom" >/dev/null 2>&1 || true
      timeout 60 virsh -q -c "$uri" undefine "$dom" --managed-save --snapshots-metadata --checkpoints-metadata \
        >/dev/null 2>&1 || timeout 60 virsh -q -c "$uri" undefine "$dom" >/dev/null 2>&1 || true
    done
  fi
  end_processes TERM KILL || return 1
  # Its mounts were only ever in its namespace, which ended with its last process.
  rm -rf "$dir"
}

start_host() {
  if running; then
    echo "$uri"
    return 0
  fi
  stop_host
  mkdir -p "$dir"/{run,storage,log/qemu,cache,etc}
  chmod 755 "$dir" "$dir/storage"
  od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >"$dir/token"
  local uuid
  uuid=$(cat /proc/sys/kernel/random/uuid)
  echo "$uuid" >"$dir/host-uuid"
  echo "$uri" >"$dir/uri"
  if [ -n "${VRP_TEST_HOST_STORAGE_MB:-}" ]; then
    [[ $VRP_TEST_HOST_STORAGE_MB =~ ^[1-9][0-9]{0,5}$ ]] || usage
    echo "$VRP_TEST_HOST_STORAGE_MB" >"$dir/storage-mb"
  fi

  cp -a /etc/libvirt/. "$dir/etc/"
  # Nothing of the system daemon's own: its domains, networks (a second virbr0 would clash),
  # pools and secrets.
  rm -rf "$dir"/etc/qemu/*.xml "$dir"/etc/qemu/autostart "$dir"/etc/qemu/networks/*.xml \
    "$dir"/etc/qemu/networks/autostart/* "$dir"/etc/storage/*.xml "$dir"/etc/storage/autostart/* \
    "$dir"/etc/secrets/*
  cat >>"$dir/etc/libvirtd.conf" <<EOF

# vrp test host $name (scripts/libvirt/test-host.sh)
unix_sock_dir = "$dir/run"
host_uuid = "$uuid"
listen_tls = 0
listen_tcp = 0
EOF
  # libvirt refuses a loopback migration_address / migration_host in qemu.conf ("must not be the
  # address of the local machine"): each migration says it instead (--listen-address 127.0.0.1
  # --migrateuri tcp://127.0.0.1), or QEMU's incoming side would listen on every address.
  [ -d /var/cache/libvirt ] && cp -a /var/cache/libvirt/. "$dir/cache/"
  # A /dev/kvm only root may open (the driver's rule too: kvmDeviceClosed, src/drivers/libvirt/
  # local-system.ts; docs/libvirt.md, "Provisioning time"): libvirt checks it as
  # its QEMU user (refused) and probes QEMU as root (KVM found), the two never agree, and every
  # define and start probes QEMU again (4-50 s each). In the test host's namespace the device is
  # masked by an empty file root only may open, so both say no KVM and the probe is cached: the
  # host runs TCG, as it did after each probe. QEMU's own /dev namespace is off there, as
  # libvirt cannot carry a file mounted over a device into it.
  local mask_kvm=''
  if [ -c /dev/kvm ] && [ "$(stat -c %u /dev/kvm)" = 0 ] && [ $((0$(stat -c %a /dev/kvm) & 066)) = 0 ]; then
    mask_kvm=1
    : >"$dir/no-kvm"
    chmod 600 "$dir/no-kvm"
    sed -i '/^[[:space:]]*namespaces[[:space:]]*=/d' "$dir/etc/qemu.conf"
    printf '\n# vrp test host: /dev/kvm masked (scripts/libvirt/test-host.sh)\nnamespaces = []\n' >>"$dir/etc/qemu.conf"
  fi
  if [ ! -d "$pool_path" ]; then
    mkdir -p "$pool_path"
    chmod 711 "$pool_path"
  fi

  launch_host "$mask_kvm" || return 1
  virsh -q -c "$uri" pool-define-as vrp dir --target "$pool_path" >/dev/null
  virsh -q -c "$uri" pool-start vrp >/dev/null
  virsh -q -c "$uri" pool-autostart vrp >/dev/null
  echo "$uri"
}
# Starts the host's libvirtd in a namespace of its own over the host's directory, and waits until
# it answers. $1: non-empty to mask /dev/kvm.
launch_host() {
  local mask_kvm=$1
  # The namespace's first process mounts, leaves its token, starts virtlogd and becomes libvirtd.
  # shellcheck disable=SC2016 # expanded by the inner shell
  setsid unshare -m --propagation private bash -c '
    set -e
    dir=$1 name=$2 pool=$3
    mount -t tmpfs -o mode=755 "vrp-test-host-$name" /run
    # /var/lock is /run/lock: where libvirt locks a serial console it hands to `virsh console`.
    mkdir -p -m 1777 /run/lock
    mount -t tmpfs -o mode=755 "vrp-test-host-$name" /var/lib/libvirt
    mount --bind "$dir/etc" /etc/libvirt
    mount --bind "$dir/log" /var/log/libvirt
    mount --bind "$dir/cache" /var/cache/libvirt
    if [ -f "$dir/storage-mb" ]; then
      mount -t tmpfs -o "size=$(<"$dir/storage-mb")m,mode=711" "vrp-test-host-$name-storage" "$pool"
    else
      mount --bind "$dir/storage" "$pool"
    fi
    cp "$dir/token" /run/vrp-test-host
    if [ -n "$4" ]; then mount --bind "$dir/no-kvm" /dev/kvm; fi
    virtlogd -d -p "$dir/virtlogd.pid"
    exec libvirtd -p "$dir/libvirtd.pid"
  ' test-host "$dir" "$name" "$pool_path" "$mask_kvm" </dev/null >"$dir/libvirtd.log" 2>&1 9<&- &
  echo $! >"$dir/namespace.pid"

  local ok=''
  for _ in $(seq 1 300); do
    if answers; then
      ok=1
      break
    fi
    kill -0 "$(<"$dir/namespace.pid")" 2>/dev/null || break
    sleep 0.2
  done
  if [ -z "$ok" ]; then
    echo "test-host: libvirtd of $name did not start; its log:" >&2
    tail -n 20 "$dir/libvirtd.log" >&2 || true
    stop_host || true
    return 1
  fi
}
# A power cut and a boot: every process of the host is killed (its guests die with their QEMU,
# its /run and /var/lib/libvirt go with its namespace), then its libvirtd starts again over what
# stays on its "disk" (its configuration with its domains and their autostart marks, its pool),
# as after a host's boot: libvirt starts the domains marked to start with the host.
power_cycle() {
  [ -f "$dir/token" ] || {
    echo "test-host: $name is not a test host here" >&2
    return 1
  }
  end_processes KILL || return 1
  rm -f "$dir/libvirtd.pid" "$dir/virtlogd.pid" "$dir"/run/*
  launch_host "$([ -f "$dir/no-kvm" ] && echo 1)" || return 1
  echo "$uri"
}

mkdir -p "$base"
# One start or stop at a time (of any name): the same name's start twice at once must not race.
exec 9<"$base"
flock 9

case $cmd in
  start) start_host ;;
  stop) stop_host ;;
  power-cycle) power_cycle ;;
  status)
    if running; then echo "$uri"; else
      echo stopped
      exit 3
    fi
    ;;
  *) usage ;;
esac
