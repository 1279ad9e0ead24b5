#!/usr/bin/env bash
# Remote engines for the remote-engine tests, on a machine of their own as
# far as the network goes: a network namespace (`pd-remote`) joined to
# this one by a veth pair, 172.31.252.1 here and 172.31.252.2 there.
# In it:
#   - a second dockerd, with its own containerd, data, exec root and bridge
#     (pdremote0), on tcp://172.31.252.2:$PORT with --tlsverify;
#   - a Podman service with its own storage, run and lock directories on
#     a Unix socket, behind a TLS terminator (stunnel) on
#     tcp://172.31.252.2:$PODMAN_PORT (Podman's service has no TLS itself);
#   - an sshd on 172.31.252.2:22 (key login as root only, its own host key
#     and authorized_keys), for ssh:// to either socket.
# Certificates are made here with openssl. It never touches the main
# engines.
#
#   scripts/remote-engine.sh start   prints the directory with the client
#                                    files: ca.pem cert.pem key.pem (good),
#                                    wrong/ (a client cert of another CA),
#                                    host, port, podman-port
#   scripts/remote-engine.sh link up|down   the veth pair's state
#   scripts/remote-engine.sh stop
#
# The busybox test image is copied from the main engines
# (scripts/provision.sh imports it there). Root only.
set -euo pipefail

RUN=/run/pd-remote
DATA=/var/lib/pd-remote
CERTS=$RUN/certs
NS=pd-remote
HOST_IP=172.31.252.1
ADDR=172.31.252.2
PORT=${REMOTE_ENGINE_PORT:-23760}
PODMAN_PORT=${REMOTE_PODMAN_PORT:-23761}
LOG_DIR=${LOG_DIR:-/var/log/pocketdock-ci}
IMAGE=pocketdock-test/busybox:latest
SOCK=$RUN/docker.sock
PODMAN_SOCK=$RUN/podman.sock
SSH_DIR=$RUN/ssh

log() { printf 'remote-engine: %s\n' "$*" >&2; }
die() { log "$1"; [[ -n ${2:-} && -f $2 ]] && tail -n 20 "$2" >&2; exit 1; }

# Wait up to $1 seconds for a command to succeed.
wait_for() {
  local secs=$1 i; shift
  for ((i = 0; i < secs * 10; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}

alive() { local pid; pid=$(cat "$1" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; }

# Run a daemon in the namespace, detached, its pid in $1. nsenter, not
# `ip netns exec`: that also remounts /sys, which hides the cgroup mounts
# the engines need.
in_ns() { # pidfile log cmd...
  local pidfile=$1 logfile=$2; shift 2
  setsid nsenter --net="/run/netns/$NS" "$@" >"$logfile" 2>&1 </dev/null &
  echo $! >"$pidfile"
}

# CA, a server certificate for the namespace's address, a client
# certificate; and a client certificate from another CA, which the engines
# must refuse.
make_certs() {
  [[ -f $CERTS/key.pem && -f $CERTS/wrong/key.pem && -f $CERTS/server.pem ]] &&
    openssl x509 -in "$CERTS/server.pem" -noout -text | grep -q "IP Address:$ADDR" && return
  rm -rf "$CERTS"
  mkdir -p "$CERTS/wrong"
  local d=$CERTS
  ca() { # dir
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=pd-remote-ca" \
      -keyout "$1/ca-key.pem" -out "$1/ca.pem" 2>/dev/null
  }
  signed() { # ca-dir name subject extfile-line
    openssl req -newkey rsa:2048 -nodes -subj "$3" -keyout "$d/$2-key.pem" \
      -out "$d/$2.csr" 2>/dev/null
    printf '%s\n' "$4" >"$d/$2.ext"
    openssl x509 -req -in "$d/$2.csr" -CA "$1/ca.pem" -CAkey "$1/ca-key.pem" \
      -CAcreateserial -days 30 -extfile "$d/$2.ext" -out "$d/$2.pem" 2>/dev/null
  }
  ca "$d"
  signed "$d" server "/CN=$ADDR" "subjectAltName=IP:$ADDR
extendedKeyUsage=serverAuth"
  signed "$d" client "/CN=client" "extendedKeyUsage=clientAuth"
  mv "$d/client.pem" "$d/cert.pem"; mv "$d/client-key.pem" "$d/key.pem"
  ca "$d/wrong"
  signed "$d/wrong" wrongclient "/CN=client" "extendedKeyUsage=clientAuth"
  mv "$d/wrongclient.pem" "$d/wrong/cert.pem"; mv "$d/wrongclient-key.pem" "$d/wrong/key.pem"
  cp "$d/ca.pem" "$d/wrong/ca.pem"
  chmod -R go-rwx "$d"
}

ping_tls() { # port
  curl -fsS --max-time 2 --cacert "$CERTS/ca.pem" --cert "$CERTS/cert.pem" \
    --key "$CERTS/key.pem" "https://$ADDR:$1/_ping"
}

# The namespace and the veth pair between it and this machine.
make_ns() {
  ip netns list | grep -qw "$NS" || ip netns add "$NS"
  ip -n "$NS" link set lo up
  if ! ip link show pdr0 >/dev/null 2>&1; then
    ip link add pdr0 type veth peer name pdr1
    ip link set pdr1 netns "$NS"
    ip addr add "$HOST_IP/30" dev pdr0
    ip -n "$NS" addr add "$ADDR/30" dev pdr1
  fi
  link up
  ip -n "$NS" link show pdremote0 >/dev/null 2>&1 || {
    ip -n "$NS" link add pdremote0 type bridge
    ip -n "$NS" addr add 172.31.253.1/24 dev pdremote0
    ip -n "$NS" link set pdremote0 up
  }
}

link() { # up|down
  ip link set pdr0 "$1"
  ip -n "$NS" link set pdr1 "$1"
}

start_docker() {
  if ! alive "$RUN/containerd.pid"; then
    rm -f "$RUN/containerd.sock"
    printf 'version = 2\n' >"$RUN/containerd.toml"
    setsid containerd --config "$RUN/containerd.toml" --address "$RUN/containerd.sock" \
      --root "$DATA/containerd" --state "$RUN/containerd-state" \
      >"$LOG_DIR/remote-containerd.log" 2>&1 </dev/null &
    echo $! >"$RUN/containerd.pid"
    wait_for 30 ctr --address "$RUN/containerd.sock" version ||
      die "containerd did not start" "$LOG_DIR/remote-containerd.log"
  fi
  if ! alive "$RUN/dockerd.pid"; then
    rm -f "$SOCK"
    in_ns "$RUN/dockerd.pid" "$LOG_DIR/remote-docker.log" \
      dockerd --host "unix://$SOCK" --host "tcp://$ADDR:$PORT" \
      --tlsverify --tlscacert "$CERTS/ca.pem" --tlscert "$CERTS/server.pem" \
      --tlskey "$CERTS/server-key.pem" \
      --containerd "$RUN/containerd.sock" --data-root "$DATA/docker" \
      --exec-root "$RUN/docker-exec" --pidfile "$RUN/dockerd-own.pid" \
      --bridge pdremote0 --iptables=false --ip-masq=false --ip-forward=false \
      --exec-opt native.cgroupdriver=cgroupfs --default-ulimit nofile=1024:1024
    wait_for 60 ping_tls "$PORT" ||
      die "dockerd did not answer on tcp://$ADDR:$PORT" "$LOG_DIR/remote-docker.log"
  fi
  if ! docker -H "unix://$SOCK" image inspect "$IMAGE" >/dev/null 2>&1; then
    log "copying $IMAGE from the main Docker engine"
    docker -H unix:///var/run/docker.sock save "$IMAGE" | docker -H "unix://$SOCK" load >/dev/null ||
      die "could not copy $IMAGE (is the main engine provisioned? bash scripts/provision.sh)"
  fi
}

# Podman with storage, run, temporary and lock state of its own (file
# locks: the default shared-memory locks are one segment per machine).
remote_podman() {
  CONTAINERS_CONF=$RUN/podman/containers.conf podman --root "$DATA/podman" \
    --runroot "$RUN/podman/run" --tmpdir "$RUN/podman/tmp" "$@"
}

start_podman() {
  command -v podman >/dev/null || { log "no podman: the remote Podman is not served"; return 0; }
  mkdir -p "$RUN/podman/tmp" "$RUN/podman/networks"
  {
    cat /etc/containers/containers.conf 2>/dev/null
    printf '\n[engine]\nlock_type = "file"\nnetwork_config_dir = "%s"\n' "$RUN/podman/networks"
  } | awk '/^\[engine\]/ { if (seen++) next } { print }' >"$RUN/podman/containers.conf"
  if ! alive "$RUN/podman.pid"; then
    rm -f "$PODMAN_SOCK"
    in_ns "$RUN/podman.pid" "$LOG_DIR/remote-podman.log" \
      env CONTAINERS_CONF="$RUN/podman/containers.conf" podman --root "$DATA/podman" \
      --runroot "$RUN/podman/run" --tmpdir "$RUN/podman/tmp" \
      system service --time 0 "unix://$PODMAN_SOCK"
    wait_for 30 curl -fsS --unix-socket "$PODMAN_SOCK" http://d/_ping ||
      die "the Podman service did not start" "$LOG_DIR/remote-podman.log"
  fi
  if ! alive "$RUN/podman-tls.pid"; then
    printf '%s\n' "foreground = yes" "pid =" "[podman]" "accept = $ADDR:$PODMAN_PORT" \
      "connect = $PODMAN_SOCK" "cert = $CERTS/server.pem" "key = $CERTS/server-key.pem" \
      "CAfile = $CERTS/ca.pem" "verifyChain = yes" "requireCert = yes" >"$RUN/podman/stunnel.conf"
    in_ns "$RUN/podman-tls.pid" "$LOG_DIR/remote-podman-tls.log" stunnel "$RUN/podman/stunnel.conf"
    wait_for 15 ping_tls "$PODMAN_PORT" ||
      die "the Podman service's TLS terminator did not answer" "$LOG_DIR/remote-podman-tls.log"
  fi
  if ! remote_podman image exists "$IMAGE"; then
    log "copying $IMAGE from the main Podman engine"
    podman save "$IMAGE" | remote_podman load >/dev/null ||
      die "could not copy $IMAGE (is the main engine provisioned? bash scripts/provision.sh)"
  fi
}

# sshd in the namespace, key login only, files of its own.
start_sshd() {
  [[ -x /usr/sbin/sshd ]] || { log "no sshd: ssh:// is not served"; return 0; }
  mkdir -p "$SSH_DIR" /run/sshd
  chmod 700 "$SSH_DIR"
  [[ -f $SSH_DIR/host_key ]] || ssh-keygen -q -t ed25519 -N '' -f "$SSH_DIR/host_key"
  [[ -f $SSH_DIR/client_key ]] || ssh-keygen -q -t ed25519 -N '' -f "$SSH_DIR/client_key"
  cp "$SSH_DIR/client_key.pub" "$SSH_DIR/authorized_keys"
  printf '%s %s\n' "$ADDR" "$(cut -d' ' -f1,2 "$SSH_DIR/host_key.pub")" >"$SSH_DIR/known_hosts"
  printf '%s\n' "ListenAddress $ADDR:22" "HostKey $SSH_DIR/host_key" \
    "PidFile $SSH_DIR/sshd-own.pid" "AuthorizedKeysFile $SSH_DIR/authorized_keys" \
    "PermitRootLogin prohibit-password" "PasswordAuthentication no" \
    "KbdInteractiveAuthentication no" "AllowStreamLocalForwarding yes" \
    "StrictModes no" "UsePAM no" >"$SSH_DIR/sshd_config"
  printf '%s\n' "Host *" "  IdentityFile $SSH_DIR/client_key" "  IdentitiesOnly yes" \
    "  UserKnownHostsFile $SSH_DIR/known_hosts" "  StrictHostKeyChecking yes" \
    "  ConnectTimeout 10" \
    "  LogLevel ERROR" >"$SSH_DIR/config"
  alive "$SSH_DIR/sshd.pid" && return 0
  in_ns "$SSH_DIR/sshd.pid" "$LOG_DIR/remote-sshd.log" \
    /usr/sbin/sshd -D -f "$SSH_DIR/sshd_config"
  wait_for 15 ssh -F "$SSH_DIR/config" -o BatchMode=yes "root@$ADDR" true ||
    die "sshd did not answer on $ADDR:22" "$LOG_DIR/remote-sshd.log"
}

start() {
  [[ $(id -u) == 0 ]] || die "needs root (it makes a network namespace and starts engines)"
  command -v openssl >/dev/null || die "openssl is missing: apt-get install openssl"
  command -v stunnel >/dev/null || die "stunnel is missing: apt-get install stunnel4"
  mkdir -p "$RUN" "$DATA" "$LOG_DIR"
  make_certs
  printf '%s\n' "$ADDR" >"$CERTS/host"
  printf '%s\n' "$PORT" >"$CERTS/port"
  printf '%s\n' "$PODMAN_PORT" >"$CERTS/podman-port"
  make_ns
  start_docker
  start_podman
  start_sshd
  printf '%s\n' "$CERTS"
}

stop_pid() {
  local f=$1 pid i
  pid=$(cat "$f" 2>/dev/null) || return 0
  kill -TERM "$pid" 2>/dev/null || { rm -f "$f"; return 0; }
  for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$f"
}

stop() {
  link up 2>/dev/null || true
  if [[ -S $SOCK ]]; then
    local c
    for c in $(docker -H "unix://$SOCK" ps -aq 2>/dev/null); do
      docker -H "unix://$SOCK" rm -f "$c" >/dev/null 2>&1 || true
    done
  fi
  if [[ -S $PODMAN_SOCK ]]; then
    remote_podman rm -af -t 0 >/dev/null 2>&1 || true
  fi
  stop_pid "$SSH_DIR/sshd.pid"
  stop_pid "$RUN/podman-tls.pid"
  stop_pid "$RUN/podman.pid"
  stop_pid "$RUN/dockerd.pid"
  stop_pid "$RUN/containerd.pid"
  # An exec's conmon can outlive its container's forced removal (a relay
  # whose link was cut): nothing of this engine may stay behind.
  pkill -KILL -f "conmon .*$DATA/podman/" 2>/dev/null || true
  rm -f "$SOCK" "$PODMAN_SOCK"
  ip link del pdr0 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  log "stopped"
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  link) [[ ${2:-} == up || ${2:-} == down ]] || { echo "usage: $0 link up|down" >&2; exit 2; }
        link "$2" ;;
  *) echo "usage: $0 start|stop|link up|down" >&2; exit 2 ;;
esac
