#!/usr/bin/env bash
# A single-node Kubernetes cluster built from upstream, for the Kubernetes
# backend's tests: etcd, kube-apiserver (RBAC, the default admission plugins
# and NodeRestriction), kube-controller-manager, kube-scheduler, and the
# kubelet on containerd's CRI with the bridge CNI, on this machine (root, no
# systemd, cgroup v1, no registry reachable).
#
# Usage: scripts/kube.sh build | start | stop | env | ready | test | status
#
#   build   compile the binaries (scripts/kube/go.mod, from the Go module
#           proxy) into the machine's cache; a no-op when they are there
#   start   build if needed (when running: refresh the test images only), install the Debian packages (containerd, runc,
#           CNI plugins), start every daemon in the background, import the
#           pause image and pocketdock's test images into containerd's
#           k8s.io namespace, wait for the node to be Ready and a pod to run,
#           and make the runner's namespaced service account
#   stop    stop every daemon, remove every pod's containers through the CRI,
#           unmount what the kubelet and containerd mounted, remove the CNI
#           network namespaces and the bridge; nothing is left running
#   env     print `export KUBECONFIG=…`: the runner's kubeconfig, a service
#           account bound to exactly the Role of docs/kubernetes.md in the
#           namespace pocketdock (POCKETDOCK_KUBE_NAMESPACE); `env --tests`
#           prints what the tests read instead
#   ready   exit 0 when the build cache is present (start needs no compile)
#   test    the gate's kube suite alone (scripts/test.sh --only kube): start
#           if needed, run the tests that need a real cluster (via the
#           helper, then via exec alone), stop (if it started it)
#   status  what runs, and the node and pods as the API server sees them
#
# The admin kubeconfig (system:masters, for the tests' eviction and
# inspection) is $STATE_DIR/pki/admin.kubeconfig; `env --admin` prints it.
#
# Versions: Kubernetes v1.35.4 (the last release for containerd 1.x, which
# Debian 12 ships), etcd v3.6.5 (the server module Kubernetes v1.35.4
# requires). docs/kubernetes.md ("A cluster built from upstream") says why.
#
# Where things are:
#   $POCKETDOCK_CACHE/kube/   the Go module and build caches, and bin-<version>/
#   /var/lib/pocketdock-kube  state: PKI, etcd (wiped at each start),
#                             containerd's images (kept), the kubelet's root
#   /run/pocketdock-kube      sockets and pid files
#   /var/log/pocketdock-ci/kube/  one log per daemon
#
# Environment (all optional):
#   POCKETDOCK_KUBE_NAMESPACE  the runner's namespace (default pocketdock)
#   WAIT_SECS                  bound on each start-up wait (default 60)
set -euo pipefail

ROOT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/cache.sh
source "$ROOT_DIR/scripts/cache.sh"

K8S_VERSION=v1.35.4
MOD_DIR=$ROOT_DIR/scripts/kube
KUBE_CACHE=$POCKETDOCK_CACHE/kube
BIN_DIR=$KUBE_CACHE/bin-$K8S_VERSION
STATE_DIR=/var/lib/pocketdock-kube
RUN_DIR=/run/pocketdock-kube
LOG_DIR=/var/log/pocketdock-ci/kube
PKI=$STATE_DIR/pki
WAIT_SECS=${WAIT_SECS:-60}
NAMESPACE=${POCKETDOCK_KUBE_NAMESPACE:-pocketdock}

NODE_NAME=pocketdock-node
CONTAINERD_SOCK=$RUN_DIR/containerd.sock
CRI_ENDPOINT=unix://$CONTAINERD_SOCK
ETCD_CLIENT=http://127.0.0.1:23379
ETCD_PEER=http://127.0.0.1:23380
API_PORT=6443
API_URL=https://127.0.0.1:$API_PORT
SERVICE_CIDR=10.96.0.0/24
SERVICE_IP=10.96.0.1
POD_SUBNET=10.244.0.0/24
BRIDGE=pdkube0
CNI_BIN=/usr/lib/cni
CNI_CONF_DIR=$STATE_DIR/cni/net.d
PAUSE_IMAGE=pocketdock.local/pause:3.10
# What the tests run in pods (see import_test_images).
TEST_IMAGES=(pocketdock-test/busybox:latest pocketdock/minimal:latest library/debian:bookworm-slim)
COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)
# Started in this order, stopped in the reverse.
DAEMONS=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet)

export DEBIAN_FRONTEND=noninteractive
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH

T0=$(date +%s)
log() { printf '[kube +%ss] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }

DIE_AS=kube
# shellcheck source=scripts/die.sh
source "$(dirname "${BASH_SOURCE[0]}")/die.sh"

# ---------------------------------------------------------------- build

# The Go toolchain's caches live in the machine's cache, not in the clone
# or ~/go, so a fresh clone on this machine compiles nothing.
go_env() {
  export GOMODCACHE=$KUBE_CACHE/gomod GOPATH=$KUBE_CACHE/gopath GOCACHE=$KUBE_CACHE/gocache
  export GOFLAGS=-modcacherw GOTOOLCHAIN=local CGO_ENABLED=0
}

# Stripped, and with the version that `make` would stamp in: a binary of
# plain `go build` calls itself v0.0.0-master.
ldflags() {
  local minor=${K8S_VERSION#v1.} p f
  minor=${minor%%.*}
  f="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    f+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  printf '%s' "$f"
}

# What the binaries were built from: a change to the module rebuilds them.
source_stamp() {
  { cat "$MOD_DIR/go.mod" "$MOD_DIR/go.sum" "$MOD_DIR"/*/main.go; ldflags; } | sha256sum | cut -d' ' -f1
}

built() {
  local c
  for c in "${COMMANDS[@]}" etcd pause crirm; do
    [[ -x $BIN_DIR/$c ]] || return 1
  done
  [[ $(cat "$BIN_DIR/.stamp" 2>/dev/null) == "$(source_stamp)" ]]
}

cmd_build() {
  if built; then
    log "build: $BIN_DIR is up to date"
    return
  fi
  [[ -x /usr/local/go/bin/go ]] && PATH=$PATH:/usr/local/go/bin
  command -v go >/dev/null || die "no go on PATH (Go 1.25 or later builds Kubernetes $K8S_VERSION)"
  go_env
  mkdir -p "$BIN_DIR" "$LOG_DIR"
  local blog=$LOG_DIR/build.log t0=$SECONDS pkgs=() c
  for c in "${COMMANDS[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  pkgs+=(./etcd ./pause ./crirm)
  log "build: Kubernetes $K8S_VERSION (${COMMANDS[*]}), etcd, pause, crirm into $BIN_DIR (log $blog)"
  printf '\n===== %s go build %s\n' "$(date -Is)" "${pkgs[*]}" >>"$blog"
  # Nice: the build takes both cores for a long while on a 2-core machine.
  (cd "$MOD_DIR" && nice -n 10 go build -trimpath -ldflags="$(ldflags)" -o "$BIN_DIR/" "${pkgs[@]}") >>"$blog" 2>&1 ||
    die "go build failed" "$blog"
  source_stamp >"$BIN_DIR/.stamp"
  log "build: done in $((SECONDS - t0))s"
}

cmd_ready() {
  built || { echo "kube: not built: run scripts/kube.sh build" >&2; return 1; }
}

# ---------------------------------------------------------------- packages

pkg_installed() {
  [[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true) == installed ]]
}

install_packages() {
  local pkgs=(containerd runc containernetworking-plugins iptables iproute2 openssl util-linux curl) missing=() p
  for p in "${pkgs[@]}"; do pkg_installed "$p" || missing+=("$p"); done
  ((${#missing[@]} == 0)) && return
  log "packages: installing ${missing[*]}"
  # No systemd: keep maintainer scripts from starting containerd themselves.
  local made_policy=0 rc=0
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
  fi
  {
    apt-get update -q &&
      apt-get install -y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${missing[@]}"
  } >"$LOG_DIR/apt.log" 2>&1 || rc=$?
  ((made_policy)) && rm -f /usr/sbin/policy-rc.d
  ((rc == 0)) || die "apt-get failed (exit $rc) installing: ${missing[*]}" "$LOG_DIR/apt.log"
  [[ -x $CNI_BIN/bridge ]] || die "no bridge plugin in $CNI_BIN after installing containernetworking-plugins"
}

# ---------------------------------------------------------------- daemons

pid_of() { cat "$RUN_DIR/$1.pid" 2>/dev/null || true; }
alive() {
  local pid
  pid=$(pid_of "$1")
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null
}

# start_daemon NAME COMMAND...: run COMMAND in its own session, detached from
# our stdio, logging to $LOG_DIR/NAME.log, pid in $RUN_DIR/NAME.pid.
start_daemon() {
  local name=$1 logfile=$LOG_DIR/$1.log
  shift
  printf '\n===== %s starting %s: %s\n' "$(date -Is)" "$name" "$*" >>"$logfile"
  (cd / && exec setsid nohup "$@" </dev/null >>"$logfile" 2>&1) &
  echo $! >"$RUN_DIR/$name.pid"
  log "$name: started (pid $!, log $logfile)"
}

# wait_for SECS NAME COMMAND...: poll COMMAND until it succeeds; fail, naming
# the daemon's log, if SECS pass or the daemon NAME dies.
wait_for() {
  local secs=$1 name=$2
  shift 2
  local deadline=$(($(date +%s) + secs))
  until "$@" >/dev/null 2>&1; do
    alive "$name" || die "$name exited before it was ready (log $LOG_DIR/$name.log)" "$LOG_DIR/$name.log"
    (($(date +%s) < deadline)) || die "$name was not ready within ${secs}s (log $LOG_DIR/$name.log)" "$LOG_DIR/$name.log"
    sleep 0.3
  done
}

stop_daemon() {
  local name=$1 pid i
  pid=$(pid_of "$name")
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name: pid $pid still alive after 10s: SIGKILL"
      kill -9 "$pid" 2>/dev/null || true
    fi
    log "$name: stopped (pid $pid)"
  fi
  rm -f "$RUN_DIR/$name.pid"
}

# ---------------------------------------------------------------- PKI

# The address the kubelet registers and the API server reaches it on: the
# machine's own address on its default route (the kubelet refuses loopback).
node_ip() {
  local dev
  dev=$(ip -4 route show default | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')
  [[ -n $dev ]] || die "no default route: the kubelet needs a non-loopback node address"
  ip -4 -o addr show dev "$dev" | awk '{split($4, a, "/"); print a[1]; exit}'
}

# cert NAME CN O SANS: a key and a certificate signed by the cluster CA.
cert() {
  local name=$1 cn=$2 o=$3 sans=$4 subj="/CN=$2"
  [[ -n $o ]] && subj="/O=$o/CN=$cn"
  openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/$name.key" 2>/dev/null
  local ext
  ext=$(mktemp)
  {
    echo "basicConstraints=CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=clientAuth,serverAuth"
    [[ -n $sans ]] && echo "subjectAltName=$sans"
  } >"$ext"
  openssl req -new -key "$PKI/$name.key" -subj "$subj" -out "$PKI/$name.csr" 2>/dev/null
  openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
    -days 3650 -sha256 -extfile "$ext" -out "$PKI/$name.crt" 2>/dev/null
  rm -f "$ext" "$PKI/$name.csr"
}

# kubeconfig FILE USER: a kubeconfig for the client certificate USER.
kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: pocketdock
  cluster:
    server: $API_URL
    certificate-authority: $PKI/ca.crt
users:
- name: $2
  user:
    client-certificate: $PKI/$2.crt
    client-key: $PKI/$2.key
contexts:
- name: pocketdock
  context: {cluster: pocketdock, user: $2, namespace: $NAMESPACE}
current-context: pocketdock
EOF
}

# The PKI is kept across starts; made anew when the node's address changed.
make_pki() {
  local ip=$1
  if [[ -f $PKI/ca.crt && $(cat "$PKI/node-ip" 2>/dev/null) == "$ip" ]]; then
    return
  fi
  log "pki: CA and certificates for node $NODE_NAME ($ip) in $PKI"
  rm -rf "$PKI"
  mkdir -p "$PKI"
  chmod 700 "$PKI"
  openssl ecparam -name prime256v1 -genkey -noout -out "$PKI/ca.key" 2>/dev/null
  openssl req -x509 -new -key "$PKI/ca.key" -subj "/CN=pocketdock-kube-ca" -days 3650 -sha256 \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
    -out "$PKI/ca.crt" 2>/dev/null
  cert apiserver kube-apiserver "" \
    "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost,IP:127.0.0.1,IP:$SERVICE_IP,IP:$ip"
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters ""
  cert admin pocketdock-admin system:masters ""
  cert controller-manager system:kube-controller-manager "" ""
  cert scheduler system:kube-scheduler "" ""
  cert kubelet "system:node:$NODE_NAME" system:nodes ""
  cert kubelet-serving "$NODE_NAME" "" "DNS:$NODE_NAME,IP:$ip,IP:127.0.0.1"
  openssl genrsa -out "$PKI/sa.key" 2048 2>/dev/null
  openssl rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" 2>/dev/null
  kubeconfig "$PKI/admin.kubeconfig" admin
  kubeconfig "$PKI/controller-manager.kubeconfig" controller-manager
  kubeconfig "$PKI/scheduler.kubeconfig" scheduler
  kubeconfig "$PKI/kubelet.kubeconfig" kubelet
  echo "$ip" >"$PKI/node-ip"
}

# ---------------------------------------------------------------- config

write_configs() {
  mkdir -p "$CNI_CONF_DIR" "$STATE_DIR/cni/ipam" "$STATE_DIR/kubelet"
  # A containerd of its own (socket, root, state): Docker's containerd on
  # /run/containerd is never touched. cgroupfs: there is no systemd.
  cat >"$STATE_DIR/containerd.toml" <<EOF
version = 2
root = "$STATE_DIR/containerd"
state = "$RUN_DIR/containerd-state"
[grpc]
  address = "$CONTAINERD_SOCK"
[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE_DIR/containerd-opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # Root here lacks CAP_SYS_RESOURCE: runc cannot lower oom_score_adj to
  # the kubelet's -998 for a pod sandbox ("Permission denied").
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN"
    conf_dir = "$CNI_CONF_DIR"
EOF
  # The bridge CNI, no masquerading: pods reach this machine, nothing else.
  # It enforces no NetworkPolicy (docs/kubernetes.md).
  cat >"$CNI_CONF_DIR/10-pocketdock.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "pocketdock-kube",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_SUBNET"}]],
        "dataDir": "$STATE_DIR/cni/ipam"
      }
    }
  ]
}
EOF
  # failCgroupV1: false, since 1.35 refuses cgroup v1 without it; eviction
  # thresholds low, so that a busy shared disk does not taint the node.
  cat >"$STATE_DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: $CRI_ENDPOINT
address: $(cat "$PKI/node-ip")
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $PKI/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $PKI/kubelet-serving.crt
tlsPrivateKeyFile: $PKI/kubelet-serving.key
failSwapOn: false
podLogsDir: $LOG_DIR/pods
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
EOF
}

# ---------------------------------------------------------------- start

kubectl_admin() { "$BIN_DIR/kubectl" --kubeconfig "$PKI/admin.kubeconfig" "$@"; }

etcd_up() { curl -sf --max-time 2 "$ETCD_CLIENT/health" | grep -q '"health":"true"'; }
api_up() {
  [[ $(curl -s --max-time 2 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
    "$API_URL/readyz" 2>/dev/null) == ok ]]
}
healthz() { [[ $(curl -sk --max-time 2 "$1" 2>/dev/null) == ok ]]; }
containerd_up() { [[ -S $CONTAINERD_SOCK ]] && timeout 5 ctr --address "$CONTAINERD_SOCK" version; }
node_ready() {
  [[ $(kubectl_admin get node "$NODE_NAME" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]
}
ctr_k8s() { ctr --address "$CONTAINERD_SOCK" -n k8s.io "$@"; }

# The pod sandbox image: the pause binary alone, as a docker-archive
# tarball that `ctr images import` takes (no registry is reachable).
import_pause() {
  ctr_k8s images ls -q | grep -qxF "$PAUSE_IMAGE" && return
  local d layer_sha cfg cfg_sha
  d=$(mktemp -d)
  mkdir "$d/root"
  cp "$BIN_DIR/pause" "$d/root/pause"
  tar -C "$d/root" --owner=0 --group=0 --numeric-owner -cf "$d/layer.tar" pause
  layer_sha=$(sha256sum "$d/layer.tar" | cut -d' ' -f1)
  cfg="{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Entrypoint\":[\"/pause\"]},\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:$layer_sha\"]}}"
  cfg_sha=$(printf '%s' "$cfg" | sha256sum | cut -d' ' -f1)
  printf '%s' "$cfg" >"$d/$cfg_sha.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["layer.tar"]}]' "$cfg_sha" "$PAUSE_IMAGE" >"$d/manifest.json"
  tar -C "$d" -cf "$d/pause.tar" manifest.json "$cfg_sha.json" layer.tar
  ctr_k8s images import "$d/pause.tar" >>"$LOG_DIR/images.log" 2>&1 ||
    die "ctr could not import the pause image" "$LOG_DIR/images.log"
  rm -rf "$d"
  log "images: $PAUSE_IMAGE imported"
}

# pocketdock's images on the local Podman (scripts/provision.sh makes the
# busybox and Debian ones, `pocketdock build minimal` the profile), under
# the names a pod spec gives them: pocketdock/minimal is
# docker.io/pocketdock/minimal:latest on a cluster, whatever Podman calls it.
# Imported again only when Podman's image changed.
import_test_images() {
  if ! command -v podman >/dev/null || ! podman info >/dev/null 2>&1; then
    log "images: no Podman here: only the pause image is imported (scripts/provision.sh starts it)"
    return
  fi
  local want id ref name
  mkdir -p "$STATE_DIR/images"
  for want in "${TEST_IMAGES[@]}"; do
    name=docker.io/$want
    ref=
    for ref in "localhost/$want" "$name" "localhost/${want#library/}"; do
      id=$(podman image inspect --format '{{.Id}}' "$ref" 2>/dev/null) && break
      ref=
    done
    if [[ -z $ref ]]; then
      log "images: WARNING: Podman has no $want: pods of that image will not start"
      continue
    fi
    if ctr_k8s images ls -q | grep -qxF "$name" &&
      [[ $(cat "$STATE_DIR/images/${want//\//_}" 2>/dev/null) == "$id" ]]; then
      continue
    fi
    log "images: $ref from Podman as $name"
    {
      podman save --format docker-archive "$ref" | ctr_k8s images import - &&
        if [[ $ref != "$name" ]]; then ctr_k8s images tag --force "$ref" "$name"; fi
    } >>"$LOG_DIR/images.log" 2>&1 || die "importing $ref into containerd failed" "$LOG_DIR/images.log"
    echo "$id" >"$STATE_DIR/images/${want//\//_}"
  done
}

# The runner's identity: a service account bound to the Role of
# docs/kubernetes.md ("RBAC"), taken from the doc itself so the two cannot
# drift, in its own namespace.
make_runner() {
  local role token
  role=$(awk '/^## RBAC/ {rbac = 1} rbac && /^```yaml/ {on = 1; next} on && /^```/ {exit} on' "$ROOT_DIR/docs/kubernetes.md" |
    sed "s/^\(  namespace:\) .*/\1 $NAMESPACE/")
  grep -q '^kind: Role$' <<<"$role" || die "no Role found under \"## RBAC\" in docs/kubernetes.md"
  {
    kubectl_admin create namespace "$NAMESPACE" --dry-run=client -o yaml | kubectl_admin apply -f -
    kubectl_admin -n "$NAMESPACE" create serviceaccount pocketdock-runner --dry-run=client -o yaml |
      kubectl_admin apply -f -
    kubectl_admin apply -f - <<<"$role"
    kubectl_admin -n "$NAMESPACE" create rolebinding pocketdock-runner --role=pocketdock-runner \
      --serviceaccount="$NAMESPACE:pocketdock-runner" --dry-run=client -o yaml | kubectl_admin apply -f -
  } >>"$LOG_DIR/setup.log" 2>&1 || die "creating the runner's namespace and Role failed" "$LOG_DIR/setup.log"
  # The ServiceAccount admission plugin refuses pods until the namespace's
  # default account exists (the controller manager makes it).
  local deadline=$(($(date +%s) + WAIT_SECS))
  until kubectl_admin -n "$NAMESPACE" get serviceaccount default >/dev/null 2>&1; do
    (($(date +%s) < deadline)) || die "no default service account in $NAMESPACE" "$LOG_DIR/kube-controller-manager.log"
    sleep 0.3
  done
  token=$(kubectl_admin -n "$NAMESPACE" create token pocketdock-runner --duration=24h 2>>"$LOG_DIR/setup.log") ||
    die "no token for the runner" "$LOG_DIR/setup.log"
  cat >"$PKI/runner.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: pocketdock
  cluster:
    server: $API_URL
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: pocketdock-runner
  user:
    token: $token
contexts:
- name: pocketdock
  context: {cluster: pocketdock, user: pocketdock-runner, namespace: $NAMESPACE}
current-context: pocketdock
EOF
  chmod 600 "$PKI/runner.kubeconfig"
}

# A pod of the runner's runs: the node schedules, pulls nothing, starts a
# container through the CRI, and the pod is deleted again.
smoke_pod() {
  local k=("$BIN_DIR/kubectl" --kubeconfig "$PKI/runner.kubeconfig") name=pd-kube-smoke
  "${k[@]}" delete pod "$name" --grace-period=0 --ignore-not-found >/dev/null 2>&1 || true
  "${k[@]}" create -f - >>"$LOG_DIR/setup.log" 2>&1 <<EOF || die "the runner could not create a pod" "$LOG_DIR/setup.log"
apiVersion: v1
kind: Pod
metadata: {name: $name}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  containers:
  - {name: sandbox, image: $PAUSE_IMAGE, imagePullPolicy: Never}
EOF
  "${k[@]}" wait --for=jsonpath='{.status.phase}'=Running "pod/$name" --timeout="${WAIT_SECS}s" >>"$LOG_DIR/setup.log" 2>&1 ||
    die "the smoke pod did not run within ${WAIT_SECS}s: $("${k[@]}" get pod "$name" -o jsonpath='{.status}' 2>&1)" \
      "$LOG_DIR/kubelet.log"
  "${k[@]}" delete pod "$name" --grace-period=0 >>"$LOG_DIR/setup.log" 2>&1 || true
}

cmd_start() {
  [[ $(id -u) -eq 0 ]] || die "must run as root"
  mkdir -p "$STATE_DIR" "$RUN_DIR" "$LOG_DIR"
  if alive kubelet && node_ready; then
    log "start: already running (node $NODE_NAME Ready)"
    import_test_images
    return
  fi
  cmd_build
  install_packages
  local t0=$SECONDS ip d
  # A half-started cluster (a killed run) is stopped first.
  for d in "${DAEMONS[@]}"; do
    if alive "$d"; then
      log "start: $d is running from an earlier start: stopping that first"
      cmd_stop
      break
    fi
  done
  ip=$(node_ip)
  make_pki "$ip"
  write_configs
  # A fresh cluster each start: etcd's data and the kubelet's pods go
  # (a kubelet killed without `stop` may have left its volumes mounted).
  unmount_under "$STATE_DIR/kubelet"
  rm -rf "$STATE_DIR/etcd" "$STATE_DIR/kubelet" "$STATE_DIR/cni/ipam"
  mkdir -p "$STATE_DIR/kubelet" "$STATE_DIR/cni/ipam" "$LOG_DIR/pods"
  start_daemon etcd "$BIN_DIR/etcd" --name pocketdock --data-dir "$STATE_DIR/etcd" \
    --listen-client-urls "$ETCD_CLIENT" --advertise-client-urls "$ETCD_CLIENT" \
    --listen-peer-urls "$ETCD_PEER" --initial-advertise-peer-urls "$ETCD_PEER" \
    --initial-cluster "pocketdock=$ETCD_PEER" --log-level warn
  wait_for "$WAIT_SECS" etcd etcd_up

  start_daemon kube-apiserver "$BIN_DIR/kube-apiserver" \
    --etcd-servers "$ETCD_CLIENT" --bind-address 127.0.0.1 --advertise-address "$ip" \
    --secure-port "$API_PORT" --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
    --client-ca-file "$PKI/ca.crt" --kubelet-certificate-authority "$PKI/ca.crt" \
    --kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$PKI/apiserver-kubelet-client.key" --kubelet-preferred-address-types InternalIP \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
    --profiling=false
  wait_for "$WAIT_SECS" kube-apiserver api_up

  start_daemon kube-controller-manager "$BIN_DIR/kube-controller-manager" \
    --kubeconfig "$PKI/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$PKI/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$PKI/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials \
    --service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
    --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
    --profiling=false
  start_daemon kube-scheduler "$BIN_DIR/kube-scheduler" \
    --kubeconfig "$PKI/scheduler.kubeconfig" \
    --authentication-kubeconfig "$PKI/scheduler.kubeconfig" \
    --authorization-kubeconfig "$PKI/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --profiling=false

  rm -f "$CONTAINERD_SOCK"
  start_daemon containerd containerd --config "$STATE_DIR/containerd.toml"
  wait_for "$WAIT_SECS" containerd containerd_up
  import_pause
  import_test_images

  start_daemon kubelet "$BIN_DIR/kubelet" --config "$STATE_DIR/kubelet.yaml" \
    --kubeconfig "$PKI/kubelet.kubeconfig" --root-dir "$STATE_DIR/kubelet" \
    --hostname-override "$NODE_NAME" --node-ip "$ip"
  wait_for "$WAIT_SECS" kube-controller-manager healthz https://127.0.0.1:10257/healthz
  wait_for "$WAIT_SECS" kube-scheduler healthz https://127.0.0.1:10259/healthz
  wait_for "$WAIT_SECS" kubelet node_ready
  log "start: node $NODE_NAME Ready after $((SECONDS - t0))s"
  make_runner
  smoke_pod
  log "start: a pod ran after $((SECONDS - t0))s; $(cmd_env)"
}

# ---------------------------------------------------------------- stop

# Unmount what is mounted under each DIR, deepest first.
unmount_under() {
  local m
  for m in $(awk -v d="$1" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "WARNING: cannot unmount $m"
  done
}

cmd_stop() {
  [[ $(id -u) -eq 0 ]] || die "must run as root"
  stop_daemon kubelet
  # Every pod's containers, network namespace and address, through the CRI.
  if alive containerd && [[ -x $BIN_DIR/crirm ]]; then
    timeout 90 "$BIN_DIR/crirm" "$CRI_ENDPOINT" >>"$LOG_DIR/stop.log" 2>&1 ||
      log "stop: WARNING: removing the pods through the CRI failed (log $LOG_DIR/stop.log); killing what is left"
  fi
  local d pid ns
  for d in kube-scheduler kube-controller-manager kube-apiserver etcd containerd; do stop_daemon "$d"; done
  # The shims outlive containerd: those of this containerd name its socket.
  for pid in $(pgrep -f -- "-address $CONTAINERD_SOCK" || true); do
    log "stop: killing leftover shim pid $pid"
    kill -9 "$pid" 2>/dev/null || true
  done
  unmount_under "$STATE_DIR"
  unmount_under "$RUN_DIR"
  # The CRI names its network namespaces cni-*; only our containerd makes
  # pods here (Docker's and Podman's do not use these names).
  for ns in $(ip netns list 2>/dev/null | awk '$1 ~ /^cni-/ {print $1}'); do
    ip netns delete "$ns" 2>/dev/null || true
  done
  ip link delete "$BRIDGE" 2>/dev/null || true
  rm -rf "$STATE_DIR/cni/ipam" "$RUN_DIR/containerd-state"
  # The kubelet's cgroups, now empty.
  find /sys/fs/cgroup/*/kubepods -depth -type d -exec rmdir {} + 2>/dev/null || true
  log "stop: nothing of the cluster runs"
}

# ---------------------------------------------------------------- env, status

cmd_env() {
  local f=$PKI/runner.kubeconfig
  [[ ${1:-} == --admin ]] && f=$PKI/admin.kubeconfig
  [[ -f $f ]] || die "no kubeconfig at $f: run scripts/kube.sh start"
  if [[ ${1:-} == --tests ]]; then
    # What tests/integration/kubernetes_cluster*.rs read.
    printf 'export POCKETDOCK_TEST_KUBECONFIG=%s POCKETDOCK_TEST_KUBECONFIG_ADMIN=%s POCKETDOCK_TEST_IMAGE=%s KUBECTL=%s\n' \
      "$f" "$PKI/admin.kubeconfig" "${TEST_IMAGES[0]}" "$BIN_DIR/kubectl"
    return
  fi
  printf 'export KUBECONFIG=%s\n' "$f"
}

cmd_status() {
  local d rc=0
  for d in "${DAEMONS[@]}"; do
    if alive "$d"; then
      printf '%-24s running (pid %s)\n' "$d" "$(pid_of "$d")"
    else
      printf '%-24s stopped\n' "$d"
      rc=3
    fi
  done
  if built; then echo "build: $BIN_DIR (Kubernetes $K8S_VERSION)"; else echo "build: not built"; fi
  if alive kube-apiserver && api_up; then
    kubectl_admin get nodes -o wide 2>&1 || true
    kubectl_admin get pods -A 2>&1 || true
  fi
  return $rc
}

# ---------------------------------------------------------------- test

# The gate's kube suite alone (scripts/test.sh --only kube): the tests that
# need a real cluster, with the runner's and an admin kubeconfig, via the
# helper and then through exec alone.
cmd_test() {
  exec bash "$ROOT_DIR/scripts/test.sh" --only kube --podman-only
}

main() {
  case ${1:-} in
    build) cmd_build ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    env) shift; cmd_env "$@" ;;
    ready) cmd_ready ;;
    test) cmd_test ;;
    status) cmd_status ;;
    -h | --help) usage ;;
    *)
      usage >&2
      exit 2
      ;;
  esac
}

# Sourced (by a test), it only defines the functions.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  main "$@"
fi
