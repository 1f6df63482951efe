#!/usr/bin/env bash
# scripts/image.sh base|build|test: the provider's container image, from Containerfile
# (docs/deploy.md, "The container image").
#
#   base   makes only the base image below, if this machine has none yet (CI makes it in a stage
#          of its own, before the tests: debootstrap's writes then slow down no other test).
#   build  builds the image (VRP_IMAGE, default localhost/vrp-provider:dev) with Debian's buildah.
#          Its base (Containerfile's NODE_IMAGE) is VRP_NODE_IMAGE when set (the official
#          docker.io/library/node:24-bookworm-slim where a registry of images can be reached);
#          else one made here, once, from Debian's packages (debootstrap) and the project's own
#          Node 24 from node_modules: this machine reaches Debian and npm, not a registry of images.
#   test   builds it, checks its configuration (non-root user, HEALTHCHECK, volume, command, Node
#          24), starts it with a fresh data volume, waits until its own HEALTHCHECK passes, runs the
#          README's walk-through against it (scripts/walkthrough.ts: the operator's commands inside
#          the image, the reseller's calls over HTTP), stops it with SIGTERM and checks it exits 0.
#
# How the image is started: with podman where podman can run a container here; where it cannot
# (it is not installed, or it fails as Debian's podman 4.3 does on hosts with hybrid cgroups:
# "crun: setrlimit RLIMIT_NOFILE: Operation not permitted"), the script says so and starts the
# image with `buildah run --isolation chroot`: the image's own filesystem, user, working
# directory, environment and command, on the host's network (the server listens on 127.0.0.1
# only) and without a container's limits.
#
# Needs root (debootstrap, buildah's chroot isolation); installs buildah and debootstrap with
# apt-get when they are missing. Prints each stage's time. VRP_IMAGE_WALKTHROUGH names another
# walk-through script (its own test gives one that fails).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${VRP_IMAGE:-localhost/vrp-provider:dev}
NODE_IMAGE=${VRP_NODE_IMAGE:-}
SUITE=bookworm
MIRROR=${VRP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
NODE=node_modules/node/bin/node # the project's Node 24 (npm ci)
ISOLATION=(--isolation chroot)  # buildah's default isolation fails on hosts with hybrid cgroups

say() { echo "image: $*"; }
die() {
  echo "image: $*" >&2
  exit 1
}
# Runs a command, says how long it took, and returns its status (also where the caller tests it,
# which turns `set -e` off inside).
timed() {
  local what=$1 start=$SECONDS rc=0
  shift
  "$@" || rc=$?
  say "$what: $((SECONDS - start)) s"
  return "$rc"
}

tools() {
  [ "$(id -u)" = 0 ] || die "must run as root: debootstrap and buildah's chroot isolation need it (this is uid $(id -u))"
  [ -x "$NODE" ] || die "no Node 24 in node_modules (run npm ci first)"
  local missing=()
  command -v buildah >/dev/null || missing+=(buildah)
  [ -n "$NODE_IMAGE" ] || command -v debootstrap >/dev/null || missing+=(debootstrap)
  [ ${#missing[@]} -eq 0 ] && return
  command -v apt-get >/dev/null || die "needs ${missing[*]}, and there is no apt-get to install them"
  say "installing ${missing[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } ||
    die "apt-get could not install ${missing[*]}"
}

image_exists() { buildah images --quiet "$1" >/dev/null 2>&1; }

# A Debian bookworm image with the project's Node 24 as /usr/local/bin/node and this machine's
# npm beside it, laid out as the official node image is; made once and kept under its versions.
make_base() {
  local node_version npm_dir npm_version
  node_version=$("$NODE" --version)
  # The npm on PATH, found by its own file: `npm root -g` answers by the node that runs npm, and
  # under `npm test` (node_modules/.bin first on PATH) that is the project's Node 24, which has
  # no npm beside it.
  local npm_cli
  npm_cli=$(command -v npm) || die "no npm on PATH to put in the base image"
  npm_dir=$(dirname "$(dirname "$(readlink -f "$npm_cli")")")
  [ -f "$npm_dir/package.json" ] || die "no npm at $npm_dir (from $npm_cli) to put in the base image"
  npm_version=$("$NODE" -p "require('$npm_dir/package.json').version")
  NODE_IMAGE="localhost/vrp-node-base:${node_version#v}-npm${npm_version}-$SUITE"
  if image_exists "$NODE_IMAGE"; then
    say "base $NODE_IMAGE: already made"
    return
  fi
  local work
  work=$(mktemp -d /var/tmp/vrp-image-base.XXXXXX)
  # shellcheck disable=SC2064 # expand now: the directory of this call
  trap "rm -rf '$work'" RETURN
  say "base $NODE_IMAGE: debootstrap --variant=minbase $SUITE from $MIRROR"
  debootstrap --variant=minbase "$SUITE" "$work/rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
  local r=$work/rootfs
  cat >"$r/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb http://deb.debian.org/debian-security $SUITE-security main
EOF
  rm -rf "$r"/var/cache/apt/archives/*.deb "$r"/var/lib/apt/lists/*
  install -m 0755 "$(readlink -f "$NODE")" "$r/usr/local/bin/node"
  mkdir -p "$r/usr/local/lib/node_modules"
  cp -a "$npm_dir" "$r/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$r/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$r/usr/local/bin/npx"
  tar -C "$r" --numeric-owner -cf "$work/rootfs.tar" .
  cat >"$work/Containerfile" <<'EOF'
FROM scratch
ADD rootfs.tar /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CMD ["node"]
EOF
  buildah build "${ISOLATION[@]}" --quiet -t "$NODE_IMAGE" -f "$work/Containerfile" "$work" >/dev/null
}

# The base image: the one VRP_NODE_IMAGE names, else the one make_base makes (once).
base() {
  tools
  if [ -n "$NODE_IMAGE" ]; then say "base $NODE_IMAGE: given (VRP_NODE_IMAGE)"; else timed "base image" make_base; fi
}

build() {
  base
  # The npm registry may be reached through a TLS proxy with its own authority (as here): the
  # machine's certificate bundle goes to npm as a build secret, which the image does not keep.
  local ca=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt} secret=()
  [ -s "$ca" ] && secret=(--secret "id=ca_bundle,src=$ca")
  say "building $IMAGE on $NODE_IMAGE"
  local log
  log=$(mktemp)
  if ! buildah build "${ISOLATION[@]}" --format docker --layers "${secret[@]}" \
    --build-arg "NODE_IMAGE=$NODE_IMAGE" -t "$IMAGE" -f Containerfile . >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    rm -f "$log"
    die "the build failed"
  fi
  rm -f "$log"
  say "built $IMAGE: $(buildah images --format '{{.Size}}' "$IMAGE" | head -n 1)"
}

# One field of the image's configuration, as JSON (buildah inspect).
config() {
  buildah inspect --type image "$IMAGE" | "$NODE" -e '
    const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const v = process.argv[1] === "Healthcheck" ? j.Docker.config.Healthcheck : j.OCIv1.config[process.argv[1]];
    process.stdout.write(JSON.stringify(v ?? null));' "$1"
}
# A JSON array of strings as one argument per line.
lines() { "$NODE" -e 'for (const a of JSON.parse(process.argv[1])) console.log(a)' "$1"; }

check_config() {
  local user health volumes cmd ports env
  user=$(config User)
  health=$(config Healthcheck)
  volumes=$(config Volumes)
  cmd=$(config Cmd)
  ports=$(config ExposedPorts)
  env=$(config Env)
  [[ $user != '""' && $user != null && $user != '"root"' && $user != '"0"' ]] || die "the image runs as root ($user)"
  [[ $health == *'"bin/healthcheck.js"'* ]] || die "no HEALTHCHECK on /readyz ($health)"
  [[ $volumes == *'"/var/lib/vrp-provider"'* ]] || die "no data volume ($volumes)"
  [[ $cmd == '["node","--max-semi-space-size=16","--heap-growing-percent=50","dist/main.js"]' ]] || die "unexpected command $cmd"
  [[ $env == *'"MALLOC_ARENA_MAX=2"'* ]] || die "the image's environment lacks MALLOC_ARENA_MAX=2 ($env)"
  [[ $ports == *'"8080/tcp"'* ]] || die "port 8080 not exposed ($ports)"
  say "configuration: user $user, volume /var/lib/vrp-provider, port 8080, command $cmd, healthcheck $health"
}

CTR=""
DATA=""
SERVER=""
# Ends `pid` and everything under it, the deepest first: ending buildah run alone leaves the
# process it started in the chroot running.
kill_tree() {
  local pid=$1 child
  for child in $(ps -o pid= --ppid "$pid"); do kill_tree "$child"; done
  kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
  if [ -n "$SERVER" ] && kill -0 "$SERVER" 2>/dev/null; then kill_tree "$SERVER"; fi
  if [ -n "$CTR" ]; then buildah rm "$CTR" >/dev/null 2>&1 || true; fi
  if [ -n "$DATA" ]; then rm -rf "$DATA" "$DATA.log"; fi
}

# The process running the program `name` among the descendants of `pid` (by its command line:
# Node names its main thread, so its comm is not "node").
descendant() {
  local pid=$1 name=$2 child program
  for child in $(ps -o pid= --ppid "$pid"); do
    program=$(ps -o args= -p "$child" | awk '{print $1}')
    if [ "${program##*/}" = "$name" ]; then
      echo "$child"
      return
    fi
    descendant "$child" "$name"
  done
}

run_in() { buildah run "${ISOLATION[@]}" -v "$DATA:/var/lib/vrp-provider" "$@"; }

start_with() {
  if ! command -v podman >/dev/null; then
    say "podman is not installed: the image is started with buildah run --isolation chroot (see the script's header)"
  else
    local out
    if out=$(podman run --rm "$IMAGE" node --version 2>&1); then
      say "podman can run containers here ($out), but this script starts the image with buildah run, as on every machine it is tested on"
    else
      say "podman cannot run a container here: ${out//$'\n'/ }; the image is started with buildah run --isolation chroot"
    fi
  fi
}

test_image() {
  build
  check_config
  CTR=$(buildah from --quiet "$IMAGE")
  trap cleanup EXIT
  local version
  version=$(buildah run "${ISOLATION[@]}" "$CTR" -- node --version)
  [[ $version == v24.* ]] || die "the image's node is $version, not Node 24"
  say "node in the image: $version"
  start_with
  local uid port log
  uid=$(buildah run "${ISOLATION[@]}" "$CTR" -- id -u)
  DATA=$(mktemp -d /var/tmp/vrp-image-data.XXXXXX)
  chown "$uid:$uid" "$DATA"
  port=$("$NODE" -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
  log=$DATA.log
  mapfile -t cmd < <(lines "$(config Cmd)")
  # The healthcheck's command, after its "CMD".
  mapfile -t health < <(lines "$(config Healthcheck | "$NODE" -e 'process.stdout.write(JSON.stringify(JSON.parse(require("fs").readFileSync(0, "utf8")).Test.slice(1)))')")
  local env=(-e VRP_HOST=127.0.0.1 -e "VRP_PORT=$port" -e VRP_SIMULATED_SPEED=0 -e VRP_LOG_LEVEL=warn)

  local started=$SECONDS
  run_in "${env[@]}" "$CTR" -- "${cmd[@]}" >"$log" 2>&1 &
  SERVER=$!
  say "started: ${cmd[*]} as uid $uid, listening on 127.0.0.1:$port, data in a fresh volume"
  until run_in "${env[@]}" "$CTR" -- "${health[@]}" >/dev/null 2>&1; do
    kill -0 "$SERVER" 2>/dev/null || { cat "$log" >&2; die "the server exited before it was healthy"; }
    [ $((SECONDS - started)) -lt 120 ] || { cat "$log" >&2; die "not healthy after 120 s"; }
    sleep 1
  done
  say "healthy (its own HEALTHCHECK, ${health[*]}) after $((SECONDS - started)) s"

  timed "walk-through" "$NODE" "${VRP_IMAGE_WALKTHROUGH:-scripts/walkthrough.ts}" "http://127.0.0.1:$port" -- \
    buildah run "${ISOLATION[@]}" -v "$DATA:/var/lib/vrp-provider" "$CTR" -- node bin/vrp.js ||
    { cat "$log" >&2; die "the walk-through failed against the image"; }

  # What a container runtime's stop does: SIGTERM to the container's process, then wait.
  local main rc=0 stopping=$SECONDS
  main=$(descendant "$SERVER" node)
  [ -n "$main" ] || die "could not find the server's process"
  kill -TERM "$main"
  wait "$SERVER" || rc=$?
  SERVER=""
  [ "$rc" = 0 ] || { cat "$log" >&2; die "the server exited with $rc on SIGTERM"; }
  say "stopped by SIGTERM: exit 0 after $((SECONDS - stopping)) s"
  [ -s "$DATA/vrp.sqlite" ] && [ "$(stat -c %u "$DATA/vrp.sqlite")" = "$uid" ] ||
    die "the store is not in the volume, owned by uid $uid"
  say "the store is in the volume, owned by uid $uid"
  say "test passed"
}

case "${1:-}" in
base) base ;;
build) timed "build" build ;;
test) timed "test" test_image ;;
*)
  echo "usage: scripts/image.sh base|build|test" >&2
  exit 2
  ;;
esac
