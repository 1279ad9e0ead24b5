#!/usr/bin/env bash
# The rootless Podman pass: the core of the integration tests, run as the
# unprivileged user of scripts/rootless.sh against its rootless Podman, with
# a login-like environment and no POCKETDOCK_SOCKET (so socket detection is
# exercised). Run as root from any clone, after scripts/provision.sh and
# after the shipped profiles were built on root Podman (their images are
# loaded from there). Exits non-zero if a test failed.
#
# Usage: scripts/test-rootless.sh [TEST-BINARY [FILTER...]]
#
# TEST-BINARY: the compiled tests/integration binary (`cargo test --no-run
# --test integration`); built here when not given or empty. FILTERs replace
# the core modules below (say, `rootless::` alone).
#
# The clone may sit where the user cannot reach it (a `mktemp -d` folder,
# /root): directories on the way get a traverse-only ACL for the user, taken
# away again on exit. The tests write only under the user's HOME and a
# TMPDIR of the user's, outside the clone.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd -P)
U=${ROOTLESS_USER:-pdrootless}

die() { printf 'test-rootless: ERROR: %s\n' "$*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || die "must run as root"

# The core modules; `snapshot` selects the snapshot tests wherever they are.
FILTERS=(cli:: sandbox:: background:: files:: session:: kernel:: agent:: apply::
  snapshot doctor:: pool:: library:: rootless::)
# Tests that cannot pass rootless, each for a documented reason
# (docs/engines.md, "Rootless Podman"):
SKIPS=(
  # Exec OOM detection needs the memory limit that rootless cgroup v1
  # cannot apply: nothing is ever OOM-killed.
  oom
  # Reads the limits back from the container's cgroup (none rootless v1).
  limits_are_applied
)

sock=$(bash scripts/rootless.sh start) || die "scripts/rootless.sh start failed"
uid=$(id -u "$U")
home=$(getent passwd "$U" | cut -d: -f6)

bin=${1:-}
(($# > 1)) && FILTERS=("${@:2}")
if [[ -z $bin ]]; then
  bin=$(cargo test --locked --no-run --test integration --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
  [[ -x $bin ]] || die "could not build the integration test binary (cargo test --no-run --test integration)"
fi
bin=$(realpath "$bin")

granted=()
tmp=
cleanup() {
  local d
  for d in "${granted[@]}"; do setfacl -x "u:$U" "$d" 2>/dev/null || true; done
  [[ -n $tmp ]] && rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Give the user traverse (x) on each directory from / down to $1 that it
# cannot pass yet, top down (each check needs the ones above it).
reach() {
  local path=$1 d="" part
  local -a parts
  IFS=/ read -ra parts <<<"${path#/}"
  for part in "${parts[@]}"; do
    d=$d/$part
    [[ -d $d ]] || break
    runuser -u "$U" -- test -x "$d" && continue
    if getfacl -cp "$d" 2>/dev/null | grep -q "^user:$U:"; then
      die "$d has an ACL entry for $U without x; not touching it"
    fi
    setfacl -m "u:$U:x" "$d" || die "setfacl on $d failed (is acl installed and the filesystem ACL-capable?)"
    granted+=("$d")
  done
}
reach "$ROOT"
reach "$(dirname "$bin")"
for f in "$bin" "$ROOT/target/debug/pocketdock" "$ROOT/Cargo.toml"; do
  [[ -e $f ]] && ! runuser -u "$U" -- test -r "$f" && die "$U cannot read $f"
done

tmp=$(mktemp -d /tmp/pdrootless.XXXXXX)
chown "$U:" "$tmp"
chmod 700 "$tmp"

skip_args=()
for s in "${SKIPS[@]}"; do skip_args+=(--skip "$s"); done

printf 'rootless pass: %s as %s on %s\n' "$bin" "$U" "$sock" >&2
# A login-like environment: nothing of root's leaks in (no POCKETDOCK_SOCKET).
# The working directory is the clone's root, as under `cargo test`.
runuser -u "$U" -- env -i \
  HOME="$home" USER="$U" LOGNAME="$U" SHELL=/bin/bash \
  PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 \
  XDG_RUNTIME_DIR="/run/user/$uid" TMPDIR="$tmp" \
  CI=true POCKETDOCK_ROOTLESS=1 RUST_BACKTRACE=1 \
  bash -c 'cd "$1" && shift && exec "$@"' sh "$ROOT" \
  "$bin" "${FILTERS[@]}" "${skip_args[@]}" --test-threads="${ROOTLESS_TEST_THREADS:-4}"
