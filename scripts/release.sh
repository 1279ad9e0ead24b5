#!/usr/bin/env bash
# Build the release tarball for x86_64 Linux:
#
#   dist/pocketdock-<version>-x86_64-unknown-linux-gnu.tar.gz
#   dist/pocketdock-<version>-x86_64-unknown-linux-gnu.tar.gz.sha256
#
# The tarball holds one directory of the same name with the stripped binary
# (the in-sandbox helper is embedded in it by build.rs), README.md and
# LICENSE. The binary is linked against glibc 2.17 symbols by cargo-zigbuild,
# so it runs on any glibc from 2.17 up, older than the build machine's.
# ziglang and cargo-zigbuild come from PyPI, pinned, into a virtualenv in
# the machine's cache (scripts/cache.sh), where the build goes too. The
# tarball is reproducible (sorted, fixed owners, mtimes from the last
# commit); a rerun with nothing changed takes seconds.
#
# Usage: scripts/release.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

TRIPLE=x86_64-unknown-linux-gnu
GLIBC=2.17
PINS=(ziglang==0.17.0 cargo-zigbuild==0.24.0)
# shellcheck source=scripts/cache.sh
source scripts/cache.sh
TOOLS=$POCKETDOCK_CACHE/release-tools

log() { printf '[release] %s\n' "$*" >&2; }
die() { printf 'release: ERROR: %s\n' "$*" >&2; exit 1; }

version=$(awk -F'"' '/^version = /{print $2; exit}' Cargo.toml)
[[ -n $version ]] || die "no version in Cargo.toml"
name=pocketdock-$version-$TRIPLE

# The pinned tools; the stamp records what was installed.
if [[ $(cat "$TOOLS/pins" 2>/dev/null) != "${PINS[*]}" ]]; then
  log "installing ${PINS[*]} into $TOOLS"
  rm -rf "$TOOLS"
  /usr/bin/python3 -m venv "$TOOLS" || die "python3 -m venv failed (apt install python3-venv)"
  "$TOOLS/bin/python" -m pip install -q --disable-pip-version-check "${PINS[@]}" ||
    die "pip could not install ${PINS[*]}"
  printf '%s' "${PINS[*]}" >"$TOOLS/pins"
fi

# The venv's python3 first on PATH: cargo-zigbuild finds zig as `python3 -m ziglang`.
log "building $name (cargo zigbuild, glibc $GLIBC)"
PATH="$TOOLS/bin:$PATH" CARGO_PROFILE_RELEASE_DEBUG=false \
  cargo zigbuild --locked --release -p pocketdock --bin pocketdock --target "$TRIPLE.$GLIBC"
built=$CARGO_TARGET_DIR/$TRIPLE/release/pocketdock

stage=target/release-stage/$name
rm -rf "$(dirname "$stage")"
mkdir -p "$stage"
cp README.md LICENSE "$stage/"
strip --strip-all -o "$stage/pocketdock" "$built"
chmod 755 "$stage/pocketdock"

# The binary runs and says its version.
got=$("$stage/pocketdock" --version)
[[ $got == "pocketdock $version" ]] || die "--version says '$got', want 'pocketdock $version'"

# No glibc symbol version newer than $GLIBC.
newest=$(objdump -T "$stage/pocketdock" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n1)
[[ -n $newest ]] || die "no GLIBC symbol versions found: is the binary dynamically linked?"
[[ $(printf '%s\n%s\n' "$newest" "$GLIBC" | sort -V | tail -n1) == "$GLIBC" ]] ||
  die "the binary needs GLIBC_$newest, newer than $GLIBC"
log "newest glibc symbol version: $newest"

mkdir -p dist
mtime=$(git log -1 --format=%ct 2>/dev/null || echo 0)
tarball=dist/$name.tar.gz
tar -C "$(dirname "$stage")" --sort=name --owner=0 --group=0 --numeric-owner \
  --mtime="@$mtime" -c "$name" | gzip -n -9 >"$tarball.tmp"
mv "$tarball.tmp" "$tarball"
(cd dist && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
rm -rf "$(dirname "$stage")"
log "$tarball ($(du -k "$tarball" | cut -f1) KiB), sha256 $(cut -d' ' -f1 "$tarball.sha256")"
