#!/usr/bin/env bash
# Hello, sandbox: build pocketdock, make sure an engine and the minimal image
# are there, then create a sandbox, run code in it, and remove it.
set -euo pipefail
cd "$(dirname "$0")/../.."

cargo build --release --quiet
pd=target/release/pocketdock

# Use a running engine if there is one; otherwise install and start Podman.
if ! $pd list >/dev/null 2>&1; then
  bash scripts/provision.sh --podman-only
fi
$pd build minimal --quiet

name=$($pd create)
trap '$pd shutdown "$name" -y >/dev/null' EXIT
echo "created sandbox $name"
$pd run "$name" 'echo "hello from $(hostname) as $(id -un)"'
$pd run "$name" --lang python 'import platform; print("python", platform.python_version())'
$pd run "$name" --timeout 2 'sleep 30' || echo "timed out as asked (exit $?)"
$pd run "$name" --json 'echo out; echo err >&2; exit 3' || true
