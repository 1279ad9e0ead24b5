#!/usr/bin/env bash
# Run the hello job on a fresh machine: build pocketdock, start an engine if
# none answers (Podman, via scripts/provision.sh), build the minimal image,
# then `pocketdock apply examples/hello/job.yaml`.
set -euo pipefail
cd "$(dirname "$0")/../.."

cargo build --release --quiet
pd=target/release/pocketdock

if ! $pd list >/dev/null 2>&1; then
  bash scripts/provision.sh --podman-only
fi
$pd build minimal --quiet
exec $pd apply examples/hello/job.yaml "$@"
