#!/usr/bin/env bash
# A rootless Podman service for an unprivileged user, for the rootless test
# pass (scripts/test-rootless.sh). Run as root, after scripts/provision.sh.
#
# Usage: scripts/rootless.sh start|stop|status
#
# start: installs uidmap, slirp4netns, fuse-overlayfs and acl when missing;
#   creates the user pdrootless (subuid/subgid ranges, /run/user/UID, 0700);
#   writes its containers.conf (runc, cgroupfs, file events, low ulimits: the
#   same reasons as root Podman's, docs/engines.md); starts
#   `podman system service --time=0` as that user on
#   $XDG_RUNTIME_DIR/podman/podman.sock and waits for `_ping`; loads the test
#   images from root Podman into it (podman save | podman load as the user).
#   Prints the socket path on stdout. Idempotent: a re-run where everything
#   is up takes about a second.
# stop: stops the service this script started.
# status: prints the socket path if it answers, fails otherwise.
#
# Environment (all optional):
#   ROOTLESS_USER  the user (default pdrootless)
#   LOG_DIR        service log directory (default /var/log/pocketdock-ci)
#   WAIT_SECS      bound on the service start-up wait (default 30)
set -euo pipefail

U=${ROOTLESS_USER:-pdrootless}
LOG_DIR=${LOG_DIR:-/var/log/pocketdock-ci}
WAIT_SECS=${WAIT_SECS:-30}
# Images the rootless tests use, by short name: root Podman stores them as
# docker.io/... or localhost/... depending on how they were made.
IMAGES=(
  debian:bookworm-slim
  pocketdock-test/busybox:latest
  pocketdock/minimal:latest
)

unset CONTAINER_HOST CONTAINER_CONNECTION DOCKER_HOST || true
export DEBIAN_FRONTEND=noninteractive
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

log() { printf '[rootless] %s\n' "$*" >&2; }
die() {
  printf 'rootless: ERROR: %s\n' "$1" >&2
  [[ -n ${2:-} && -s $2 ]] && tail -n 30 "$2" >&2
  exit 1
}

[[ $(id -u) -eq 0 ]] || die "must run as root"
# The user's commands start here: the caller's directory may be closed to it.
cd /

pkg_installed() {
  [[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true) == installed ]]
}

install_packages() {
  local missing=() p
  for p in uidmap slirp4netns fuse-overlayfs acl; do
    pkg_installed "$p" || missing+=("$p")
  done
  ((${#missing[@]} == 0)) && return
  log "installing ${missing[*]}"
  mkdir -p "$LOG_DIR"
  { apt-get update -q && apt-get install -y -q "${missing[@]}"; } >"$LOG_DIR/apt-rootless.log" 2>&1 ||
    die "apt-get failed installing ${missing[*]}" "$LOG_DIR/apt-rootless.log"
}

# The first free id range of 65536 above every range already given out.
free_range_start() {
  awk -F: 'BEGIN { m = 100000 } NF >= 3 && $2 + $3 > m { m = $2 + $3 } END { print m }' \
    /etc/subuid /etc/subgid 2>/dev/null
}

ensure_user() {
  if ! id -u "$U" >/dev/null 2>&1; then
    log "creating user $U"
    useradd -m -s /bin/bash "$U"
  fi
  local f start
  for f in /etc/subuid /etc/subgid; do
    touch "$f"
    if ! grep -q "^$U:" "$f"; then
      start=$(free_range_start)
      printf '%s:%s:65536\n' "$U" "$start" >>"$f"
    fi
  done
  UID_N=$(id -u "$U")
  HOME_U=$(getent passwd "$U" | cut -d: -f6)
  RUNTIME=/run/user/$UID_N
  SOCK=$RUNTIME/podman/podman.sock
  mkdir -p "$RUNTIME"
  chown "$U:" "$RUNTIME"
  chmod 700 "$RUNTIME"
}

# The user's containers.conf: crun fails on cgroup v1 hybrid hosts, there is
# no systemd (so no systemd cgroup manager and no journald), and the user
# cannot raise nofile past the host's hard limit.
ensure_conf() {
  local dir=$HOME_U/.config/containers conf want
  conf=$dir/containers.conf
  want='# Written by pocketdock scripts/rootless.sh.
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"'
  [[ -f $conf && $(cat "$conf") == "$want" ]] && return
  as_user mkdir -p "$dir"
  printf '%s\n' "$want" | as_user tee "$conf" >/dev/null
  CONF_CHANGED=1
}

# as_user CMD...: run CMD as the user with a login-like environment.
as_user() {
  runuser -u "$U" -- env -i HOME="$HOME_U" USER="$U" LOGNAME="$U" \
    XDG_RUNTIME_DIR="$RUNTIME" PATH=/usr/local/bin:/usr/bin:/bin "$@"
}

ping_sock() {
  [[ -S $SOCK ]] && curl -sf --max-time 5 --unix-socket "$SOCK" http://d/_ping >/dev/null 2>&1
}

service_pid() {
  local pid
  pid=$(cat "$RUNTIME/podman-service.pid" 2>/dev/null || true)
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && printf '%s\n' "$pid"
}

start_service() {
  if ping_sock && [[ -z ${CONF_CHANGED:-} ]]; then return; fi
  [[ -n ${CONF_CHANGED:-} ]] && stop_service
  local logfile=$LOG_DIR/rootless-podman.log pid i
  mkdir -p "$LOG_DIR"
  : >"$logfile"
  chown "$U:" "$logfile"
  as_user mkdir -p "$RUNTIME/podman"
  rm -f "$SOCK"
  log "starting podman system service as $U on $SOCK"
  # The pid file names podman itself (exec), not a wrapper.
  setsid nohup runuser -u "$U" -- env -i HOME="$HOME_U" USER="$U" LOGNAME="$U" \
    XDG_RUNTIME_DIR="$RUNTIME" PATH=/usr/local/bin:/usr/bin:/bin \
    sh -c 'echo $$ >"$XDG_RUNTIME_DIR/podman-service.pid"; exec podman system service --time=0 "unix://$1"' \
    sh "$SOCK" >>"$logfile" 2>&1 </dev/null &
  for ((i = 0; i < WAIT_SECS * 10; i++)); do
    ping_sock && { log "service answers on $SOCK"; return; }
    sleep 0.1
  done
  die "rootless podman service did not answer on $SOCK within ${WAIT_SECS}s" "$logfile"
}

stop_service() {
  local pid i
  pid=$(service_pid || true)
  if [[ -z $pid ]]; then
    log "service not running"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$SOCK"; log "stopped (pid $pid)"; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$SOCK"
  log "killed pid $pid (did not stop within 10 s)"
}

# image_id IMAGE CLI...: the image's id, empty when CLI's engine lacks it.
image_id() { local img=$1; shift; "$@" image inspect --format '{{.Id}}' "$img" 2>/dev/null || true; }

# Each image the user lacks, or holds under another id, comes from root Podman.
load_images() {
  local img root_id user_id
  for img in "${IMAGES[@]}"; do
    root_id=$(image_id "$img" podman)
    [[ -n $root_id ]] || die "root Podman has no $img (run scripts/provision.sh, and for pocketdock/*: pocketdock build PROFILE against root Podman)"
    user_id=$(image_id "$img" as_user podman)
    [[ $user_id == "$root_id" ]] && continue
    log "loading $img into $U's Podman"
    podman save -q "$img" | as_user podman load -q >/dev/null ||
      die "loading $img as $U failed"
  done
}

case ${1:-} in
  start)
    install_packages
    ensure_user
    ensure_conf
    start_service
    load_images
    printf '%s\n' "$SOCK"
    ;;
  stop)
    id -u "$U" >/dev/null 2>&1 || exit 0
    ensure_user
    stop_service
    ;;
  status)
    id -u "$U" >/dev/null 2>&1 || die "no user $U"
    ensure_user
    ping_sock || die "nothing answers on $SOCK"
    printf '%s\n' "$SOCK"
    ;;
  *) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2 ;;
esac
