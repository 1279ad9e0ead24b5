#!/usr/bin/env bash
# Run the hello job on a fresh machine: build pocketdock, start an engine if
# none answers (Podman, via scripts/provision.sh), build the minimal image,
# then `pocketdock apply examples/hello/job.yaml`.
set -euo pipefail
cd "$(dirname "$0")/../.."

say() { printf '==> %s\n' "$*" >&2; }

if [[ -x target/release/pocketdock ]]; then
  say "building pocketdock (release; up to date in seconds)"
else
  say "building pocketdock (release: about 3 minutes the first time on 2 cores)"
fi
cargo build --release --quiet
pd=target/release/pocketdock

if ! $pd list >/dev/null 2>&1; then
  say "no container engine answers: installing and starting Podman (scripts/provision.sh, a few minutes)"
  bash scripts/provision.sh --podman-only --no-test-tools
fi
say "building the minimal profile image (first time: about 20 s, installs python3 and procps)"
$pd build minimal
say "pocketdock apply examples/hello/job.yaml"
exec $pd apply examples/hello/job.yaml "$@"
