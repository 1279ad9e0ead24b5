#!/usr/bin/env bash
# A "remote" Docker engine for the remote-engine tests: a second dockerd,
# with its own containerd, data, exec root, pid file and bridge (pdremote0),
# listening on tcp://127.0.0.1:$PORT with --tlsverify and certificates made
# here with openssl. It never touches the main engines.
#
#   scripts/remote-engine.sh start   prints the directory with the client
#                                    files: ca.pem cert.pem key.pem (good),
#                                    wrong/ (a client cert of another CA),
#                                    port (the TCP port)
#   scripts/remote-engine.sh stop
#
# With sshd installed, also an sshd of its own on 127.0.0.1:$SSH_PORT
# (key login as root only, its own host key and authorized_keys) and a
# client config for it, for ssh:// engines: `ssh -F /run/pd-remote/ssh/config`.
#
# The busybox test image is copied from the main Docker engine
# (scripts/provision.sh imports it there). Root only.
set -euo pipefail

RUN=/run/pd-remote
DATA=/var/lib/pd-remote
CERTS=$RUN/certs
PORT=${REMOTE_ENGINE_PORT:-23760}
LOG_DIR=${LOG_DIR:-/var/log/pocketdock-ci}
IMAGE=pocketdock-test/busybox:latest
SOCK=$RUN/docker.sock
SSH_DIR=$RUN/ssh
SSH_PORT=${REMOTE_ENGINE_SSH_PORT:-23722}

log() { printf 'remote-engine: %s\n' "$*" >&2; }
die() { log "$1"; [[ -n ${2:-} && -f $2 ]] && tail -n 20 "$2" >&2; exit 1; }

# Wait up to $1 seconds for a command to succeed.
wait_for() {
  local secs=$1 i; shift
  for ((i = 0; i < secs * 10; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}

alive() { local pid; pid=$(cat "$1" 2>/dev/null) && kill -0 "$pid" 2>/dev/null; }

# CA, a server certificate for 127.0.0.1, a client certificate; and a
# client certificate from another CA, which the engine must refuse.
make_certs() {
  [[ -f $CERTS/key.pem && -f $CERTS/wrong/key.pem ]] && return
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
  signed "$d" server "/CN=127.0.0.1" "subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth"
  signed "$d" client "/CN=client" "extendedKeyUsage=clientAuth"
  mv "$d/client.pem" "$d/cert.pem"; mv "$d/client-key.pem" "$d/key.pem"
  ca "$d/wrong"
  signed "$d/wrong" wrongclient "/CN=client" "extendedKeyUsage=clientAuth"
  mv "$d/wrongclient.pem" "$d/wrong/cert.pem"; mv "$d/wrongclient-key.pem" "$d/wrong/key.pem"
  cp "$d/ca.pem" "$d/wrong/ca.pem"
  chmod -R go-rwx "$d"
}

ping_tcp() {
  curl -fsS --cacert "$CERTS/ca.pem" --cert "$CERTS/cert.pem" --key "$CERTS/key.pem" \
    "https://127.0.0.1:$PORT/_ping"
}

# sshd on loopback, key login only, files of its own.
start_sshd() {
  [[ -x /usr/sbin/sshd ]] || { log "no sshd: ssh:// is not served"; return 0; }
  mkdir -p "$SSH_DIR" /run/sshd
  chmod 700 "$SSH_DIR"
  [[ -f $SSH_DIR/host_key ]] || ssh-keygen -q -t ed25519 -N '' -f "$SSH_DIR/host_key"
  [[ -f $SSH_DIR/client_key ]] || ssh-keygen -q -t ed25519 -N '' -f "$SSH_DIR/client_key"
  cp "$SSH_DIR/client_key.pub" "$SSH_DIR/authorized_keys"
  printf '[127.0.0.1]:%s %s\n' "$SSH_PORT" "$(cut -d' ' -f1,2 "$SSH_DIR/host_key.pub")" >"$SSH_DIR/known_hosts"
  printf '%s\n' "ListenAddress 127.0.0.1:$SSH_PORT" "HostKey $SSH_DIR/host_key" \
    "PidFile $SSH_DIR/sshd-own.pid" "AuthorizedKeysFile $SSH_DIR/authorized_keys" \
    "PermitRootLogin prohibit-password" "PasswordAuthentication no" \
    "KbdInteractiveAuthentication no" "AllowStreamLocalForwarding yes" \
    "StrictModes no" "UsePAM no" >"$SSH_DIR/sshd_config"
  printf '%s\n' "Host *" "  IdentityFile $SSH_DIR/client_key" "  IdentitiesOnly yes" \
    "  UserKnownHostsFile $SSH_DIR/known_hosts" "  StrictHostKeyChecking yes" \
    "  LogLevel ERROR" >"$SSH_DIR/config"
  alive "$SSH_DIR/sshd.pid" && return 0
  setsid /usr/sbin/sshd -D -f "$SSH_DIR/sshd_config" >"$LOG_DIR/remote-sshd.log" 2>&1 </dev/null &
  echo $! >"$SSH_DIR/sshd.pid"
  wait_for 15 ssh -F "$SSH_DIR/config" -p "$SSH_PORT" -o BatchMode=yes root@127.0.0.1 true ||
    die "sshd did not answer on 127.0.0.1:$SSH_PORT" "$LOG_DIR/remote-sshd.log"
}

start() {
  [[ $(id -u) == 0 ]] || die "needs root (it starts a dockerd)"
  command -v openssl >/dev/null || die "openssl is missing: apt-get install openssl"
  mkdir -p "$RUN" "$DATA" "$LOG_DIR"
  make_certs
  printf '%s\n' "$PORT" >"$CERTS/port"
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
    ip link show pdremote0 >/dev/null 2>&1 || {
      ip link add pdremote0 type bridge
      ip addr add 172.31.253.1/24 dev pdremote0
      ip link set pdremote0 up
    }
    rm -f "$SOCK"
    setsid dockerd --host "unix://$SOCK" --host "tcp://127.0.0.1:$PORT" \
      --tlsverify --tlscacert "$CERTS/ca.pem" --tlscert "$CERTS/server.pem" \
      --tlskey "$CERTS/server-key.pem" \
      --containerd "$RUN/containerd.sock" --data-root "$DATA/docker" \
      --exec-root "$RUN/docker-exec" --pidfile "$RUN/dockerd-own.pid" \
      --bridge pdremote0 --iptables=false --ip-masq=false --ip-forward=false \
      --exec-opt native.cgroupdriver=cgroupfs --default-ulimit nofile=1024:1024 \
      >"$LOG_DIR/remote-docker.log" 2>&1 </dev/null &
    echo $! >"$RUN/dockerd.pid"
    wait_for 60 ping_tcp || die "dockerd did not answer on tcp://127.0.0.1:$PORT" "$LOG_DIR/remote-docker.log"
  fi
  if ! docker -H "unix://$SOCK" image inspect "$IMAGE" >/dev/null 2>&1; then
    log "copying $IMAGE from the main Docker engine"
    docker -H unix:///var/run/docker.sock save "$IMAGE" | docker -H "unix://$SOCK" load >/dev/null ||
      die "could not copy $IMAGE (is the main engine provisioned? bash scripts/provision.sh)"
  fi
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
  if [[ -S $SOCK ]]; then
    local c
    for c in $(docker -H "unix://$SOCK" ps -aq 2>/dev/null); do
      docker -H "unix://$SOCK" rm -f "$c" >/dev/null 2>&1 || true
    done
  fi
  stop_pid "$SSH_DIR/sshd.pid"
  stop_pid "$RUN/dockerd.pid"
  stop_pid "$RUN/containerd.pid"
  rm -f "$SOCK"
  ip link del pdremote0 2>/dev/null || true
  log "stopped"
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
