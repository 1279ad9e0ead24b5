#!/usr/bin/env bash
# A Debian 13 (trixie) guest under QEMU: systemd, cgroup v2, Podman 5 (crun,
# pasta), Docker 26 (runc), for the host suite (tests/host, docs/vm.md).
#
#   scripts/vm.sh build          the guest image, cached; rebuilt when this
#                                recipe (scripts/vm.sh, scripts/vm/*) changes
#   scripts/vm.sh run CMD...     boot, run CMD (bash) as root in the guest with
#                                the checkout and the build shared at the same
#                                paths, stream its output, power off; exits
#                                with CMD's status (124: the guest timed out)
#   scripts/vm.sh suite [SETUP...] [-- FILTER...]   the host suite on SETUPs
#                                (docker, podman, rootless, undelegated: all
#                                by default; scripts/vm/guest-suite)
#   scripts/vm.sh smoke          the smoke subset on rootful Podman (the gate's;
#                                builds the guest first when it is missing)
#   scripts/vm.sh test           the whole suite on all three (test.sh --all)
#   scripts/vm.sh ready          exit 0 when the guest is built
#   scripts/vm.sh shell          an interactive root shell (Ctrl-a x quits)
#
# /dev/kvm on the project's machines is PVM, which boots only PVM-patched
# kernels: the guest runs under TCG (`-accel tcg,thread=multi -cpu max`),
# 5 to 10 times slower than the host. Runs as root; installs the host
# packages it needs (qemu-system-x86, debootstrap) with apt.
#
# Env: VM_MEM (4G), VM_SMP (2), VM_TIMEOUT seconds for one boot (3600),
#      VM_MIRROR (the machine's Debian mirror), VM_DISK (8G),
#      VM_STAGE where `suite` copies its binaries ($POCKETDOCK_CACHE/vm/stage;
#      one per concurrent user, or another's suite overwrites them mid-run).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd -P)
DIE_AS=vm
# shellcheck source=scripts/die.sh
source scripts/die.sh
# shellcheck source=scripts/cache.sh
source scripts/cache.sh

# Kept outside cache.sh's build caches, so `trim` leaves the guest alone.
VM_DIR=$POCKETDOCK_CACHE/vm
BASE_ROOTFS=$POCKETDOCK_CACHE/rootfs-bookworm
BUSYBOX_ROOTFS=$POCKETDOCK_CACHE/rootfs-busybox
VM_STAGE=${VM_STAGE:-$VM_DIR/stage}
GUEST_PKGS="linux-image-amd64 initramfs-tools systemd-sysv udev dbus kmod libpam-systemd dbus-user-session
  podman crun conmon netavark aardvark-dns passt uidmap catatonit nftables runc criu
  docker.io docker-cli iproute2 iptables ca-certificates procps python3 curl"
T0=$(date +%s)
log() { printf '[vm +%ss] %s\n' "$(($(date +%s) - T0))" "$*" >&2; }

# The recipe's fingerprint names the image: a change of recipe or of the
# images it imports builds a new one.
recipe_id() {
  { declare -f rootfs configure; cat scripts/vm/{initramfs-hook,guest-run,guest-provision,pocketdock-vm.service}
    cat "$BASE_ROOTFS.complete" "$BUSYBOX_ROOTFS.complete" 2>/dev/null; echo "$GUEST_PKGS"; } |
    sha256sum | cut -c1-12
}
image() { printf '%s/trixie-%s\n' "$VM_DIR" "$(recipe_id)"; }
ready() { [[ -s $(image)/disk.img && -s $(image)/vmlinuz && -s $(image)/initrd.img ]]; }

host_packages() {
  local need=()
  command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
  command -v debootstrap >/dev/null || need+=(debootstrap)
  command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
  command -v busybox >/dev/null || need+=(busybox-static)
  ((${#need[@]})) || return 0
  log "installing ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null ||
    die "apt-get install ${need[*]} failed"
}

# The machine's Debian mirror (its apt sources), as scripts/provision.sh finds it.
mirror() {
  [[ -n ${VM_MIRROR:-} ]] && { echo "$VM_MIRROR"; return; }
  local uri
  uri=$(grep -h -m1 '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2; exit}')
  [[ -n $uri ]] || uri=$(awk '$1 == "deb" { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
  [[ -n $uri ]] || die "no Debian mirror in the apt sources (set VM_MIRROR=...)"
  echo "$uri"
}

unmount_under() {
  local m
  while read -r m; do umount -l "$m" 2>/dev/null || true; done < <(awk -v d="$1/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
}

# The images the tests need, as scripts/provision.sh makes them on the host.
base_images() {
  [[ -f $BASE_ROOTFS.complete && -f $BUSYBOX_ROOTFS.complete ]] && return
  log "the faithful base and busybox root filesystems are missing: scripts/provision.sh makes them"
  bash scripts/provision.sh --no-test-tools >&2 || die "scripts/provision.sh failed"
}

rootfs() {
  local r=$1 debs=$VM_DIR/debs
  mkdir -p "$debs/partial"
  log "debootstrap trixie into $r"
  nice -n 19 debootstrap --variant=minbase --cache-dir="$debs" --include=systemd-sysv,udev,dbus,kmod trixie "$r" "$(mirror)" \
    >"$VM_DIR/debootstrap.log" 2>&1 || die "debootstrap failed" "$VM_DIR/debootstrap.log" "$r/debootstrap/debootstrap.log"
  mount -t proc proc "$r/proc"
  mount --bind "$debs" "$r/var/cache/apt/archives"
  printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
  chmod +x "$r/usr/sbin/policy-rc.d"
  echo 'APT::Install-Recommends "false";' >"$r/etc/apt/apt.conf.d/90pocketdock-vm"
  # A small initrd: the modules that find the root disk.
  mkdir -p "$r/etc/initramfs-tools/conf.d" "$r/etc/initramfs-tools/hooks"
  echo MODULES=list >"$r/etc/initramfs-tools/conf.d/pocketdock-vm"
  install -m 755 scripts/vm/initramfs-hook "$r/etc/initramfs-tools/hooks/pocketdock-vm"
  log "apt-get install in the guest (a few minutes)"
  # shellcheck disable=SC2086
  { nice -n 19 chroot "$r" apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive nice -n 19 chroot "$r" apt-get install -y -qq $GUEST_PKGS; } >"$VM_DIR/apt.log" 2>&1 ||
    die "apt-get install in the guest failed" "$VM_DIR/apt.log"
  rm -f "$r/usr/sbin/policy-rc.d"
  umount "$r/var/cache/apt/archives" "$r/proc"
  rm -rf "$r"/var/lib/apt/lists/*
}

configure() {
  local r=$1
  echo pocketdock-vm >"$r/etc/hostname"
  printf '127.0.0.1 localhost\n127.0.1.1 pocketdock-vm\n' >"$r/etc/hosts"
  chroot "$r" passwd -dq root
  # The rootless user: subordinate ids, lingering (its systemd starts at boot
  # and delegates cpu, memory and pids to it), its Podman socket.
  chroot "$r" useradd -m -u 1000 -s /bin/bash pd
  local f
  for f in subuid subgid; do grep -q '^pd:' "$r/etc/$f" || echo pd:100000:65536 >>"$r/etc/$f"; done
  mkdir -p "$r/var/lib/systemd/linger" && touch "$r/var/lib/systemd/linger/pd"
  printf '/dev/vda / ext4 rw,noatime 0 0\nctl /mnt/ctl 9p trans=virtio,version=9p2000.L,msize=1048576,nofail 0 0\n' >"$r/etc/fstab"
  # QEMU's user-mode network with DHCP: a default route, which pasta needs.
  printf '[Match]\nName=en*\n[Network]\nDHCP=ipv4\n' >"$r/etc/systemd/network/10-en.network"
  echo 'nameserver 10.0.2.3' >"$r/etc/resolv.conf"
  mkdir -p "$r/mnt/ctl" "$r/etc/systemd/system/serial-getty@ttyS0.service.d"
  printf '[Service]\nExecStart=\nExecStart=-/sbin/agetty --autologin root --noclear --keep-baud 115200 - $TERM\n' \
    >"$r/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf"
  install -m 755 scripts/vm/guest-run scripts/vm/guest-provision "$r/usr/local/sbin/"
  install -m 644 scripts/vm/pocketdock-vm.service "$r/etc/systemd/system/"
  chroot "$r" systemctl enable -q pocketdock-vm.service podman.socket docker.service systemd-networkd
  chroot "$r" systemctl --global enable -q podman.socket
  chroot "$r" systemctl mask -q apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer fstrim.timer man-db.timer 2>/dev/null || true
  # The images, as tarballs the first boot imports (no registry is reachable).
  mkdir -p "$r/usr/local/share/pocketdock-vm"
  tar -C "$BASE_ROOTFS" --numeric-owner -cf "$r/usr/local/share/pocketdock-vm/bookworm.tar" .
  tar -C "$BUSYBOX_ROOTFS" --numeric-owner -cf "$r/usr/local/share/pocketdock-vm/busybox.tar" .
}

build() {
  [[ $(id -u) -eq 0 ]] || die "must run as root"
  host_packages
  if ready; then log "guest $(image) is built"; return; fi
  base_images
  local dir tmp r
  dir=$(image)
  tmp=$dir.tmp
  r=$tmp/root
  unmount_under "$tmp"
  rm -rf --one-file-system "$tmp"
  mkdir -p "$tmp"
  rootfs "$r"
  configure "$r"
  cp "$r"/boot/vmlinuz-* "$tmp/vmlinuz"
  cp "$r"/boot/initrd.img-* "$tmp/initrd.img"
  log "disk image (${VM_DISK:-8G}, sparse ext4)"
  nice -n 19 mkfs.ext4 -q -F -L pocketdock -d "$r" "$tmp/disk.img" "${VM_DISK:-8G}"
  rm -rf --one-file-system "$r"
  log "first boot: images into both engines and the rootless user's"
  VM_PERSIST=1 boot "$tmp" /usr/local/sbin/guest-provision || die "the first boot's import failed"
  # The previous recipes' images go: one guest per machine.
  find "$VM_DIR" -maxdepth 1 -name 'trixie-*' ! -name "${dir##*/}" ! -name "${tmp##*/}" -exec rm -rf {} +
  mv "$tmp" "$dir"
  log "built $dir: $(du -sh --apparent-size "$dir/disk.img" | cut -f1) apparent, $(du -sh "$dir/disk.img" | cut -f1) used"
}

# boot DIR CMD: run CMD (bash) as root in the guest whose files are in DIR.
boot() {
  local dir=$1 cmd=$2 ctl snap=on qpid="" tpid="" rc
  [[ ${VM_PERSIST:-} == 1 ]] && snap=off
  ctl=$(mktemp -d /tmp/pocketdock-vm.XXXXXX)
  printf '%s\n' "$cmd" >"$ctl/cmd"
  : >"$ctl/out"
  # The checkout and the build, at the paths the test binaries were built with.
  local shares=("$ROOT" "$CARGO_TARGET_DIR" "$VM_STAGE") a=() i=0 s
  for s in "${shares[@]}"; do
    [[ -d $s ]] || continue
    a+=(-virtfs "local,path=$s,mount_tag=share$i,security_model=none,id=share$i")
    printf 'share%s %s\n' "$i" "$s" >>"$ctl/mounts"
    i=$((i + 1))
  done
  env | grep -E '^(POCKETDOCK_|VM_GUEST_)' >"$ctl/env" || true
  local q=(qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp "${VM_SMP:-2}" -m "${VM_MEM:-4G}"
    -no-reboot -nic user,model=virtio-net-pci -device virtio-rng-pci
    -kernel "$dir/vmlinuz" -initrd "$dir/initrd.img"
    -append "root=/dev/vda rootfstype=ext4 rw console=ttyS0 quiet loglevel=3 mitigations=off panic=-1 systemd.mask=serial-getty@ttyS0.service"
    -drive "file=$dir/disk.img,format=raw,if=virtio,snapshot=$snap,cache=unsafe"
    -virtfs "local,path=$ctl,mount_tag=ctl,security_model=none,id=ctl" "${a[@]}"
    -display none -monitor none -serial "file:$ctl/console.log")
  local t0 t1
  t0=$(date +%s.%N)
  timeout -k 10 "${VM_TIMEOUT:-3600}" nice -n 10 "${q[@]}" </dev/null &
  qpid=$!
  # shellcheck disable=SC2064
  trap "kill $qpid 2>/dev/null; wait $qpid 2>/dev/null; rm -rf '$ctl'" EXIT
  trap 'exit 130' INT TERM
  tail -n +1 -F --pid="$qpid" "$ctl/out" 2>/dev/null &
  tpid=$!
  wait "$qpid" && rc=0 || rc=$?
  wait "$tpid" 2>/dev/null || true
  t1=$(date +%s.%N)
  awk -v t0="$t0" -v t1="$t1" -v r="$(stat -c %.3Y "$ctl/ready" 2>/dev/null || echo nan)" -v gr="$(cat "$ctl/ready" 2>/dev/null || echo nan)" \
    -v gd="$(cat "$ctl/done" 2>/dev/null || echo nan)" -v q="$rc" -v l="$(cut -d' ' -f1-3 /proc/loadavg)" \
    'BEGIN { printf "[vm] boot %.1f s (guest uptime %.1f s), command %.1f s, total %.1f s; qemu rc=%d; host load %s\n", r-t0, gr, gd-gr, t1-t0, q, l }' >&2
  if [[ ! -s $ctl/rc ]]; then
    echo "[vm] the command did not finish; the console's last lines:" >&2
    tail -n 30 "$ctl/console.log" >&2 || true
    trap - EXIT
    kill "$qpid" 2>/dev/null || true
    rm -rf "$ctl"
    [[ $rc == 124 ]] && return 124
    return 125
  fi
  rc=$(cat "$ctl/rc")
  trap - EXIT
  rm -rf "$ctl"
  return "$rc"
}

run() {
  (($#)) || die "usage: scripts/vm.sh run CMD..."
  ready || die "no guest built for this recipe: run scripts/vm.sh build"
  boot "$(image)" "$*"
}

# The binaries the suite runs in the guest, built on the host and copied
# where no other build overwrites them: the shipped binary (the release
# tarball's; after the gate's release suite, a rebuild with nothing
# changed) and the host suite's test binary.
build_suite() {
  bash scripts/release.sh >&2 || die "scripts/release.sh failed"
  local t stage=$VM_STAGE tarball
  t=$(cargo test --locked --test host --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "host" and m.get("executable"): print(m["executable"])' |
    tail -1)
  [[ -x $t ]] || die "the host suite's test binary was not built"
  tarball=dist/pocketdock-$(awk -F'"' '/^version = /{print $2; exit}' Cargo.toml)-x86_64-unknown-linux-gnu.tar.gz
  rm -rf "$stage" && mkdir -p "$stage"
  tar -xzf "$tarball" -C "$stage" --strip-components=1 --wildcards '*/pocketdock'
  cp "$t" "$stage/host-suite"
  echo "$stage/host-suite"
}

suite() {
  local setups=() filter=()
  while (($#)); do
    case $1 in --) shift; filter=("$@"); break ;; *) setups+=("$1") ;; esac
    shift
  done
  ((${#setups[@]})) || setups=(docker podman rootless undelegated)
  ready || build
  local bin
  bin=$(build_suite) || exit 1
  export POCKETDOCK_BIN=${POCKETDOCK_BIN:-$VM_STAGE/pocketdock}
  export POCKETDOCK_REPO=$ROOT
  # One command line, quoted: `run` joins its words with spaces.
  run "$(printf '%q ' bash "$ROOT/scripts/vm/guest-suite" "$bin" "${setups[*]}" "${filter[@]}")"
}

# The smoke subset the gate runs, on rootful Podman: the socket-activated
# service's first contact (a create and an apply through it), limits read
# back from cgroup v2, per-run CPU time and peak memory on both exec paths,
# the tmpfs /tmp, `serve`. All on the busybox image: building `minimal`
# under emulation would take two minutes more (the whole suite does it).
SMOKE=(socket::first_contact_waits_for_a_socket_activated_service limits::limits_applied_and_read_back
  usage::per_run_cpu_time_and_peak_memory_on_both_exec_paths containment::tmp_is_a_tmpfs
  journey::serve_answers_an_api_call)

case ${1:-} in
  build) build ;;
  ready) ready ;;
  run) shift; run "$@" ;;
  suite) shift; suite "$@" ;;
  smoke) ready || build; VM_TIMEOUT=${VM_TIMEOUT:-900} suite podman -- --exact "${SMOKE[@]}" ;;
  test) suite docker podman rootless undelegated ;;
  shell) ready || die "not built"; exec qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp "${VM_SMP:-2}" -m "${VM_MEM:-4G}" \
    -nic user,model=virtio-net-pci -kernel "$(image)/vmlinuz" -initrd "$(image)/initrd.img" -nographic \
    -append "root=/dev/vda rw console=ttyS0 quiet" -drive "file=$(image)/disk.img,format=raw,if=virtio,snapshot=on" ;;
  *) sed -n '2,/^set -e/{/^#/p}' "$0" >&2; exit 2 ;;
esac
