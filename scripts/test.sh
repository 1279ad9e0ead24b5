#!/usr/bin/env bash
# The whole test suite: lints (also of the library built alone), the release
# tarball, then unit, integration and CLI tests, once against Podman and once
# against Docker, both real engines that scripts/provision.sh installs and
# starts, with every shipped profile built from the registry-faithful base;
# the core again against rootless Podman as an unprivileged user; then the
# fault suite and the runner rehearsal on second engine instances, and a
# bounded fuzz run of the manifest front end. A test that fails is run once
# more alone: passing then, it is reported as flaky. Exits non-zero if
# anything failed.
#
# Usage: scripts/test.sh [--podman-only | --docker-only]
set -uo pipefail
cd "$(dirname "$0")/.."

engines=(podman docker)
case "${1:-}" in
  --podman-only) engines=(podman) ;;
  --docker-only) engines=(docker) ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--podman-only | --docker-only]" >&2; exit 2 ;;
esac

declare -A socket=([podman]=/run/podman/podman.sock [docker]=/var/run/docker.sock)
failed=()

# Each step says how long the run has taken so far, for the CI log.
start=$SECONDS
step() { printf '\n== [%dm%02ds] %s\n' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) "$*" >&2; }

flaky=()
# Counted skips: each test the harness skips (`skip` in
# tests/integration/common.rs) appends a line `pocketdock-test-skipped:
# TEST: WHY` to this file; the summary at the end counts them, and any
# skip fails the run. A snapshot that differs fails too, never accepted.
POCKETDOCK_SKIP_LOG=$(mktemp)
export POCKETDOCK_SKIP_LOG INSTA_UPDATE=no
# tests LABEL CARGO_TEST_ARGS...: run `cargo test ARGS`; a test that failed
# is run once more, alone. One that passes then is reported as flaky (and
# does not fail the run); one that fails again fails LABEL. A failure that
# names no test (a build error, a crash) fails LABEL at once.
tests() {
  local label=$1; shift
  local log rc=0
  log=$(mktemp)
  cargo test "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  if ((rc == 0)); then rm -f "$log"; return 0; fi
  # "Running <target> (...)" then "test NAME ... FAILED": target|name pairs.
  local -a failures
  mapfile -t failures < <(awk '
    /^ *Running / { target = ($2 == "unittests") ? $2 " " $3 : $2 }
    /^ *Doc-tests / { target = "doc-tests" }
    /^test .* \.\.\. FAILED$/ { print target "|" $2 }' "$log")
  rm -f "$log"
  if ((${#failures[@]} == 0)); then failed+=("$label"); return 1; fi
  local f target name sel again=()
  for f in "${failures[@]}"; do
    target=${f%%|*} name=${f#*|}
    case $target in
      tests/integration/main.rs) sel=(--test integration) ;;
      tests/faults/main.rs) sel=(--test faults) ;;
      tests/hostile/main.rs) sel=(--test hostile) ;;
      tests/rehearsal/main.rs) sel=(--test rehearsal) ;;
      tests/serve.rs) sel=(-p pocketdock-agent --test serve) ;;
      tests/cgroup.rs) sel=(-p pocketdock-agent --test cgroup) ;;
      tests/relay.rs) sel=(-p pocketdock-agent --test relay) ;;
      tests/init.rs) sel=(-p pocketdock-agent --test init) ;;
      tests/measure.rs) sel=(-p pocketdock-agent --test measure) ;;
      "unittests src/lib.rs") sel=(--lib) ;;
      *) failed+=("$label: $name ($target)"); continue ;;
    esac
    printf '\n== %s: running %s once more, alone\n' "$label" "$name" >&2
    if cargo test --locked "${sel[@]}" -- --exact --test-threads=1 "$name"; then
      flaky+=("$label: $name")
    else
      again+=("$name")
    fi
  done
  for name in "${again[@]}"; do failed+=("$label: $name"); done
  ((${#again[@]} == 0))
}

step "provision engines (${engines[*]})"
provision_args=()
[ ${#engines[@]} -eq 1 ] && provision_args=("--${engines[0]}-only")
bash scripts/provision.sh "${provision_args[@]}" || { echo "provisioning failed" >&2; exit 1; }

step "format and lints"
cargo fmt --check || failed+=("cargo fmt --check")
cargo clippy --locked --all-targets -- -D warnings || failed+=("cargo clippy")
# The library alone (default-features = false): no command line, server,
# spinners or Kubernetes client, and none of their crates.
cargo clippy --locked --no-default-features --lib -- -D warnings || failed+=("clippy --no-default-features")
heavy=$(cargo tree --locked --no-default-features -e normal --prefix none | grep -E '^(clap|axum|indicatif|kube|k8s-openapi) ' | sort -u)
[ -z "$heavy" ] || failed+=("the library without default features still pulls: $heavy")

step "build"
cargo build --locked --all-targets || { echo "build failed" >&2; exit 1; }

# The release tarball the action installs by `version:`; the release and
# rehearsal tests read dist/.
step "release tarball (scripts/release.sh)"
bash scripts/release.sh || failed+=("scripts/release.sh")

for engine in "${engines[@]}"; do
  export POCKETDOCK_SOCKET=${socket[$engine]}
  # The other engine, for export here / import there; empty (skip) with one engine.
  export POCKETDOCK_PEER_SOCKET=
  [ ${#engines[@]} -eq 2 ] && POCKETDOCK_PEER_SOCKET=${socket[$([ "$engine" = podman ] && echo docker || echo podman)]}
  # Every shipped profile, each timed: the profile tests need them (under
  # CI=true a missing one fails). Up to date after the first run: ~0.1 s each.
  step "$engine: build the shipped profiles with pocketdock itself"
  built=1
  for profile in minimal dev agent embedded; do
    t0=$(date +%s)
    if ! target/debug/pocketdock build -q "$profile"; then
      failed+=("$engine: pocketdock build $profile")
      built=0
      break
    fi
    printf '%s: %s profile ready in %ss\n' "$engine" "$profile" "$(( $(date +%s) - t0 ))" >&2
  done
  ((built)) || continue
  step "$engine: unit, integration, CLI and doc tests"
  # With CI=true a missing engine fails the tests instead of skipping them.
  CI=true tests "$engine: tests" --locked --no-fail-fast
  # Commands go through the in-sandbox helper by default; the sandbox, run,
  # process, apply, usage and containment tests run again through the
  # engine's exec alone.
  step "$engine: sandbox, run, process and apply tests through the engine's exec"
  POCKETDOCK_EXEC_VIA=exec CI=true tests "$engine: tests with POCKETDOCK_EXEC_VIA=exec" \
    --locked --no-fail-fast --test integration -- agent:: sandbox:: background:: apply:: library:: cli:: usage:: containment::
  step "$engine: python package"
  bash scripts/test-python.sh || failed+=("$engine: python package")
done
unset POCKETDOCK_SOCKET POCKETDOCK_PEER_SOCKET

# The core again against rootless Podman, as the unprivileged user
# scripts/rootless.sh makes, with the images root Podman built above.
if [[ " ${engines[*]} " == *" podman "* ]]; then
  step "rootless podman: the core tests as an unprivileged user"
  bash scripts/test-rootless.sh || failed+=("rootless podman")
fi

# The fault suite runs last, serially, on second engine instances of its
# own (scripts/provision.sh fault-engine): stopping or pausing them never
# touches the engines above. The load test (50 sandboxes x 10 steps,
# about 45 s per engine) runs with it.
step "fault suite and load test on ${engines[*]} (second engine instances)"
fault_engines=$(IFS=,; echo "${engines[*]}")
POCKETDOCK_FAULT_ENGINES=$fault_engines POCKETDOCK_LOAD=1 CI=true \
  tests "fault suite" --locked --test faults -- --test-threads=1

# The example workflow as GitHub's runner runs it, on the second engine
# instances holding only the registry-faithful Debian base.
step "runner rehearsal on ${engines[*]} (second engine instances holding only the Debian base)"
POCKETDOCK_REHEARSAL_ENGINES=$fault_engines CI=true \
  tests "runner rehearsal" --locked --test rehearsal -- --test-threads=1
for engine in "${engines[@]}"; do
  bash scripts/provision.sh fault-engine stop "$engine" >/dev/null 2>&1 || true
done
# The remote engine the remote:: tests started (scripts/remote-engine.sh).
bash scripts/remote-engine.sh stop >/dev/null 2>&1 || true

# A bounded fuzz run of the manifest front end (YAML and KDL).
step "fuzz the manifest front end (${FUZZ_SECONDS:-60} s per target)"
bash scripts/fuzz.sh || failed+=("fuzz")

# The skips counted above: how many, which, and a failure if any.
skipped=$(wc -l <"$POCKETDOCK_SKIP_LOG")
printf '\n%s engine tests skipped\n' "$skipped" >&2
if ((skipped > 0)); then
  sed 's/^/  /' "$POCKETDOCK_SKIP_LOG" >&2
  failed+=("$skipped engine tests skipped")
fi
rm -f "$POCKETDOCK_SKIP_LOG"

if [ ${#flaky[@]} -gt 0 ]; then
  printf '\nFLAKY (failed, then passed alone): %s\n' "${flaky[@]}" >&2
fi
step "summary"
if [ ${#failed[@]} -gt 0 ]; then
  printf '\nFAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
printf '\nall checks passed on: %s\n' "${engines[*]}" >&2
