#!/usr/bin/env bash
# The rootless Podman pass: the core of the integration tests, run as the
# unprivileged user of scripts/rootless.sh against its rootless Podman, with
# a login-like environment and no POCKETDOCK_SOCKET (so socket detection is
# exercised). Run as root from any clone, after scripts/provision.sh and
# after the shipped profiles were built on root Podman (their images are
# loaded from there). Exits non-zero if a test failed.
#
# Usage: scripts/test-rootless.sh [TEST-BINARY [MODULE...]]
#
# TEST-BINARY: the compiled tests/integration binary (`cargo test --no-run
# --test integration`); built here when not given or empty. MODULEs replace
# the core modules below (say, `rootless` alone).
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
# A relative TEST-BINARY is from the clone's root.
[[ -n ${1:-} ]] && { bin=$(realpath -e "$1") || die "no test binary $1"; }
# The user's commands start here: the clone may be closed to it.
cd /

# The tests of the rootless pass, and those it leaves out with the reason,
# are listed in tests/passes.txt (`rootless MODULE`, `rootless -TEST`).
MODULES=() SKIPS=()
while read -r pass entry _; do
  [[ $pass == rootless ]] || continue
  case $entry in -*) SKIPS+=("${entry#-}") ;; *) MODULES+=("$entry") ;; esac
done < <(grep -v '^\s*#' "$ROOT/tests/passes.txt")
((${#MODULES[@]})) || die "tests/passes.txt names no rootless tests"

bin=${bin:-}
(($# > 1)) && MODULES=("${@:2}")
if [[ -z $bin ]]; then
  # The integration target's artifact (the CLI's binary is listed too).
  bin=$(cd "$ROOT" && cargo test --locked --no-run --test integration --message-format=json 2>/dev/null |
    grep '"kind":\["test"\]' | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
  [[ -x $bin ]] || die "could not build the integration test binary (cargo test --no-run --test integration)"
fi

# The tests of those modules (a name with `::` is a prefix), by exact
# name, less the skipped ones.
pattern=$(for m in "${MODULES[@]}"; do [[ $m == *::* ]] && echo "^$m" || echo "^$m::"; done | paste -sd'|')
mapfile -t tests < <("$bin" --list --format terse 2>/dev/null | sed -n 's/: test$//p' |
  grep -E "$pattern" | grep -vxF -f <(printf '%s\n' "${SKIPS[@]}"))
((${#tests[@]} > 0)) || die "no tests found in $bin for: ${MODULES[*]}"
# ROOTLESS_LIST=1: name them, run nothing.
[[ -n ${ROOTLESS_LIST:-} ]] && { printf '%s\n' "${tests[@]}"; exit 0; }

sock=$(bash "$ROOT/scripts/rootless.sh" start) || die "scripts/rootless.sh start failed"
uid=$(id -u "$U")
home=$(getent passwd "$U" | cut -d: -f6)

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
for f in "$bin" "${CARGO_TARGET_DIR:-$ROOT/target}/debug/pocketdock" "$ROOT/Cargo.toml"; do
  [[ -e $f ]] && ! runuser -u "$U" -- test -r "$f" && die "$U cannot read $f"
done

# Two sibling directories of the user's: the working directory must not
# hold the tests' temporary projects, or a .pocketdock/ written there would
# make it their project root.
tmp=$(mktemp -d /tmp/pdrootless.XXXXXX)
mkdir "$tmp/work" "$tmp/tmp"
chown -R "$U:" "$tmp"
chmod 700 "$tmp"


printf 'rootless pass: %s tests (%s skipped) of %s as %s on %s\n' \
  "${#tests[@]}" "${#SKIPS[@]}" "$bin" "$U" "$sock" >&2
# A login-like environment: nothing of root's leaks in (no POCKETDOCK_SOCKET).
# CLI tests that find no project of their own write .pocketdock/ in the
# working directory: the user's, never the clone.
as_user() {
  runuser -u "$U" -- env -i \
    HOME="$home" USER="$U" LOGNAME="$U" SHELL=/bin/bash \
    PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 \
    XDG_RUNTIME_DIR="/run/user/$uid" TMPDIR="$tmp/tmp" \
    CI=true POCKETDOCK_ROOTLESS=1 RUST_BACKTRACE=1 \
    bash -c 'cd "$1" && shift && exec "$@"' sh "$tmp/work" "$@"
}
log=$tmp/pass.log
as_user "$bin" --exact "${tests[@]}" --test-threads="${ROOTLESS_TEST_THREADS:-4}" 2>&1 | tee "$log"
((PIPESTATUS[0] == 0)) && exit 0
# As scripts/test.sh does: a failed test runs once more, alone; passing
# then, it is reported as flaky. A failure naming no test fails the pass.
mapfile -t failures < <(sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$log")
((${#failures[@]} > 0)) || exit 1
rc=0
for t in "${failures[@]}"; do
  printf '\n== rootless: running %s once more, alone\n' "$t" >&2
  if as_user "$bin" --exact "$t" --test-threads=1; then
    printf 'FLAKY (failed, then passed alone): rootless %s\n' "$t" >&2
  else
    rc=1
  fi
done
exit "$rc"
