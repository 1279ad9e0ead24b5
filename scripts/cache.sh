#!/usr/bin/env bash
# The build caches the test scripts share across clones: cargo's target
# directories, the fuzz build, and the tool virtualenvs. They live outside
# the clone, in the machine's cache directory, so that a fresh clone on a
# machine that already ran the suite recompiles only pocketdock's own
# crates. A bare machine works too, only slower.
#
#   source scripts/cache.sh          # sets and exports the variables below
#   bash scripts/cache.sh size       # what the cache holds, and its cap
#   bash scripts/cache.sh trim       # clear it when over the cap or the disk is low
#   bash scripts/cache.sh clear      # remove it all
#
# POCKETDOCK_CACHE      the cache's root (default /var/cache/pocketdock-ci for
#                       root, else ${XDG_CACHE_HOME:-~/.cache}/pocketdock-ci)
# POCKETDOCK_CACHE_CAP  its cap in GiB (default 40); `trim` clears the
#                       build caches above it, or when under 10 GiB of disk
#                       is left, since a rebuild beats a full disk
# CARGO_TARGET_DIR      cargo's target directory (default $POCKETDOCK_CACHE/target)
#
# Root filesystems of scripts/provision.sh (rootfs-*) are left alone by trim.

if [[ $(id -u) -eq 0 ]]; then
  POCKETDOCK_CACHE=${POCKETDOCK_CACHE:-/var/cache/pocketdock-ci}
else
  POCKETDOCK_CACHE=${POCKETDOCK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pocketdock-ci}
fi
POCKETDOCK_CACHE_CAP=${POCKETDOCK_CACHE_CAP:-40}
CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$POCKETDOCK_CACHE/target}
# The tests' own tools (junitparser, actionlint, nextest): one venv per machine.
POCKETDOCK_TEST_VENV=${POCKETDOCK_TEST_VENV:-$POCKETDOCK_CACHE/ci-venv}
# The MCP inspector's CLI the MCP tests drive (npm, tests/mcp/package.json).
POCKETDOCK_MCP_INSPECTOR=${POCKETDOCK_MCP_INSPECTOR:-$POCKETDOCK_CACHE/mcp-inspector}
export POCKETDOCK_CACHE POCKETDOCK_CACHE_CAP CARGO_TARGET_DIR POCKETDOCK_TEST_VENV POCKETDOCK_MCP_INSPECTOR

# What trim and clear remove: everything built, nothing provisioned.
_cache_builds() {
  local d
  for d in target target-python target-fuzz py-tools release-tools ci-venv mcp-inspector; do
    [[ -e $POCKETDOCK_CACHE/$d ]] && printf '%s\n' "$POCKETDOCK_CACHE/$d"
  done
  return 0
}

_cache_main() {
  mkdir -p "$POCKETDOCK_CACHE" || { echo "cache: cannot create $POCKETDOCK_CACHE" >&2; return 1; }
  local gib free
  case ${1:-size} in
    size)
      du -sh "$POCKETDOCK_CACHE" 2>/dev/null
      echo "cap: ${POCKETDOCK_CACHE_CAP} GiB (POCKETDOCK_CACHE_CAP); bash scripts/cache.sh clear empties it"
      ;;
    trim)
      gib=$(($(du -sk "$POCKETDOCK_CACHE" 2>/dev/null | cut -f1) / 1048576))
      free=$(($(df -Pk "$POCKETDOCK_CACHE" | awk 'NR == 2 {print $4}') / 1048576))
      if ((gib > POCKETDOCK_CACHE_CAP || free < 10)); then
        echo "cache: ${gib} GiB in $POCKETDOCK_CACHE, ${free} GiB of disk free: clearing the build caches" >&2
        _cache_builds | xargs -r rm -rf
      fi
      ;;
    clear)
      _cache_builds | xargs -r rm -rf
      echo "cache: cleared the build caches in $POCKETDOCK_CACHE" >&2
      ;;
    *) echo "usage: scripts/cache.sh [size | trim | clear] (or source it)" >&2; return 2 ;;
  esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -uo pipefail
  _cache_main "$@"
fi
