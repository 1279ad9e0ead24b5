#!/usr/bin/env bash
# The test suite in three tiers, one script (docs/testing.md):
#
#   scripts/test.sh --quick    lints, then the unit and integration tests on
#                              one engine: the inner loop
#   scripts/test.sh            the gate, what .ci/run runs: lints (also of the
#                              library built alone), the release tarball, every
#                              test on Podman and on Docker, the exec path,
#                              the Python package, rootless Podman, the fault
#                              suite, the runner rehearsal, the Kubernetes
#                              backend on a real cluster (when its build is
#                              here), the fuzz corpus and 30 s of fuzzing per
#                              target
#   scripts/test.sh --all      the gate plus the long suites
#   scripts/test.sh --only SUITE[,SUITE...]   those suites alone
#   scripts/test.sh --list     the suites, by tier
#   scripts/test.sh --inventory [...]   every check the tier would run (each
#                              test by binary, pass and engine), run nothing
#
# --podman-only / --docker-only narrow the engines. The engines are real:
# scripts/provision.sh installs and starts them. Tests run under
# cargo-nextest, each in its own process; one that fails is retried once,
# and one that passes then is listed as FLAKY at the end rather than failing
# the run. An engine test that was skipped fails the run. A long suite whose
# prerequisite is missing is reported as not run, by name, and does not
# fail. Builds go to the machine's cache (scripts/cache.sh), outside the
# clone. Exits non-zero if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
# shellcheck source=scripts/cache.sh
source scripts/cache.sh

GATE=(release lint build podman docker python rootless guest-smoke faults kube rehearsal fuzz)
QUICK=(lint build podman)
LONG=(fuzz-long guest)
usage() {
  echo "usage: scripts/test.sh [--quick | --all | --only SUITE[,SUITE...] | --list] [--podman-only | --docker-only] [--inventory]" >&2
  echo "suites: ${GATE[*]} ${LONG[*]}" >&2
  exit 2
}

suites=("${GATE[@]}")
engines=(podman docker)
quick=0 inventory=0
while (($#)); do
  case $1 in
    --quick) suites=("${QUICK[@]}") quick=1 ;;
    --all) suites=("${GATE[@]}" "${LONG[@]}") ;;
    --only)
      [[ -n ${2:-} ]] || usage
      IFS=, read -ra suites <<<"$2"
      shift ;;
    --podman-only) engines=(podman) ;;
    --docker-only) engines=(docker) ;;
    --inventory) inventory=1 ;;
    --list)
      printf 'quick: %s\ngate:  %s\nall:   the gate and %s\n' "${QUICK[*]}" "${GATE[*]}" "${LONG[*]}"
      exit 0 ;;
    *) usage ;;
  esac
  shift
done
for s in "${suites[@]}"; do
  [[ " ${GATE[*]} ${LONG[*]} " == *" $s "* ]] || { echo "no suite '$s'" >&2; usage; }
done
# --quick: the integration suite on the first engine alone.
((quick)) && engines=("${engines[0]}")

declare -A socket=([podman]=/run/podman/podman.sock [docker]=/var/run/docker.sock)
failed=() flaky=() not_run=()
LOGS=$ROOT/target/gate
mkdir -p "$LOGS"
rm -f "$LOGS"/*.xml "$LOGS"/*.log
NEXTEST=$POCKETDOCK_TEST_VENV/bin/cargo-nextest
PD=$CARGO_TARGET_DIR/debug/pocketdock

# Each step says how long the run has taken so far, for the CI log.
start=$SECONDS
step() { printf '\n== [%dm%02ds] %s\n' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)) "$*" >&2; }

# Counted skips: each test the harness skips (`skip` in
# tests/integration/common.rs) appends a line `pocketdock-test-skipped:
# TEST: WHY` to this file; the summary counts them, and any skip fails the
# run. A snapshot that differs fails too, never accepted.
POCKETDOCK_SKIP_LOG=$(mktemp)
export POCKETDOCK_SKIP_LOG INSTA_UPDATE=no

# nextest NAME LABEL [NEXTEST-ARGS...]: run the tests ARGS select (the ci
# profile of .config/nextest.toml: one retry, JUnit), log them to
# target/gate/NAME.log (and to the terminal, unless QUIET=1), keep the
# JUnit file as NAME.xml, and count a failure under LABEL. Under
# --inventory, list them as `NAME TEST-BINARY TEST` instead. The flaky
# tests are read from all the logs at the end.
nextest() {
  local name=$1 label=$2 rc
  shift 2
  if ((inventory)); then
    local a args=() skip=0
    for a in "$@"; do  # -j N is the run's alone
      ((skip)) && { skip=0; continue; }
      [[ $a == -j ]] && { skip=1; continue; }
      args+=("$a")
    done
    "$NEXTEST" nextest list --locked "${args[@]}" --message-format oneline 2>/dev/null |
      sed "s|^|$name |" || failed+=("$label: nextest list")
    return
  fi
  if [[ ${QUIET:-0} == 1 ]]; then
    "$NEXTEST" nextest run --locked --profile ci --no-fail-fast "$@" >"$LOGS/$name.log" 2>&1
    rc=$?
  else
    "$NEXTEST" nextest run --locked --profile ci --no-fail-fast "$@" 2>&1 | tee "$LOGS/$name.log"
    rc=${PIPESTATUS[0]}
    cp "$ROOT/target/nextest/ci/junit.xml" "$LOGS/$name.xml" 2>/dev/null
  fi
  ((rc == 0)) || failed+=("$label")
  return "$rc"
}

# A filterset of the integration tests a pass of tests/passes.txt names.
pass_filter() {
  local pass=$1 p entry incl=() excl=()
  while read -r p entry _; do
    [[ $p == "$pass" ]] || continue
    case $entry in
      -*) excl+=("test(=${entry#-})") ;;
      *::*) incl+=("test(/^${entry}/)") ;;
      *) incl+=("test(/^${entry}::/)") ;;
    esac
  done < <(grep -v '^\s*#' tests/passes.txt)
  local f
  f="binary(integration) & ($(IFS='|'; echo "${incl[*]}" | sed 's/|/ | /g'))"
  ((${#excl[@]})) && f+=" & !($(IFS='|'; echo "${excl[*]}" | sed 's/|/ | /g'))"
  printf '%s' "$f"
}

# ------------------------------------------------------------------ suites

suite_lint() {
  if ((inventory)); then
    printf 'lint %s\n' "cargo fmt --check" "cargo clippy --all-targets -D warnings" \
      "cargo clippy --no-default-features --lib -D warnings" "no heavy crate without default features"
    return
  fi
  cargo fmt --check || failed+=("cargo fmt --check")
  cargo clippy --locked --all-targets -- -D warnings || failed+=("cargo clippy")
  # The library alone (default-features = false): no command line, server,
  # MCP server, spinners or Kubernetes client, and none of their crates.
  cargo clippy --locked --no-default-features --lib -- -D warnings || failed+=("clippy --no-default-features")
  local heavy
  heavy=$(cargo tree --locked --no-default-features -e normal --prefix none | grep -E '^(clap|axum|indicatif|kube|k8s-openapi|rmcp|schemars) ' | sort -u)
  [[ -z $heavy ]] || failed+=("the library without default features still pulls: $heavy")
}

# Everything the engine suites run, compiled once; the doc tests, which
# need no engine.
suite_build() {
  if ((inventory)); then
    cargo test --locked --doc -- --list --format terse 2>/dev/null | sed -n 's/: test$//p' | sed 's/^/doc-tests /'
    return
  fi
  "$NEXTEST" nextest run --locked --no-run --workspace || { failed+=("build"); return 1; }
  cargo build --locked --all-targets || { failed+=("build"); return 1; }
  cargo test --locked --doc || failed+=("doc tests")
}

# The release tarball the action installs by `version:` (the release and
# rehearsal tests read dist/), then the Python wheel, which carries its
# binary, when a suite runs pytest. Both build in the background while
# `lint` and `build` run: they use the cache's release directories and
# those the debug ones, which cargo locks apart, and a big crate's
# compile keeps one core busy for long stretches. Any other suite waits
# for them first (finish_release).
release_pid=
suite_release() {
  ((inventory)) && { echo "release scripts/release.sh"; return; }
  local wheel=0
  [[ " ${suites[*]} " =~ \ (podman|docker|python)\  ]] && wheel=1
  {
    bash scripts/release.sh || { echo "FAILED: scripts/release.sh"; exit 1; }
    if ((wheel)); then bash scripts/test-python.sh build || { echo "FAILED: the Python wheel (scripts/test-python.sh build)"; exit 1; }; fi
  } >"$LOGS/release.log" 2>&1 &
  release_pid=$!
}
finish_release() {
  [[ -n $release_pid ]] || return 0
  local why
  wait "$release_pid" || { why=$(sed -n 's/^FAILED: //p' "$LOGS/release.log" | tail -1); failed+=("${why:-scripts/release.sh}"); }
  release_pid=
  step "release: the tarball and the wheel, built beside lint and build"
  cat "$LOGS/release.log" >&2
}

suite_engine() {
  local engine=$1 peer=
  export POCKETDOCK_SOCKET=${socket[$engine]}
  # The other engine, for export here / import there; empty (skip) with one engine.
  ((${#engines[@]} == 2)) && peer=${socket[$([[ $engine == podman ]] && echo docker || echo podman)]}
  export POCKETDOCK_PEER_SOCKET=$peer
  if ((!inventory)); then
    # Every shipped profile, each timed: the profile tests need them (under
    # CI=true a missing one fails). Up to date after the first run: ~0.1 s each.
    step "$engine: build the shipped profiles with pocketdock itself"
    local profile t0
    for profile in minimal dev agent embedded; do
      t0=$SECONDS
      if ! "$PD" build -q "$profile"; then
        failed+=("$engine: pocketdock build $profile")
        return
      fi
      printf '%s: %s profile ready in %ss\n' "$engine" "$profile" "$((SECONDS - t0))" >&2
    done
  fi
  step "$engine: unit, integration and CLI tests"
  # With CI=true a missing engine fails the tests instead of skipping them.
  # --quick builds no release tarball, so its install tests are not its own.
  local tier=() exec_filter
  exec_filter=$(pass_filter exec)
  ((quick)) && tier=(-E 'not test(/^release::/)')
  # The `first` pass's tests run on the first engine's pass alone.
  if [[ $engine != "${engines[0]}" ]]; then
    tier=(-E "not ($(pass_filter first))")
    exec_filter+=" & not ($(pass_filter first))"
  fi
  CI=true nextest "$engine" "$engine: tests" --workspace "${tier[@]}"
  ((quick)) && return
  # Commands go through the in-sandbox helper by default; the tests whose
  # behaviour differs run again through the engine's exec alone.
  step "$engine: the exec pass (tests/passes.txt) through the engine's exec"
  POCKETDOCK_EXEC_VIA=exec CI=true nextest "$engine-exec" "$engine: exec pass" -E "$exec_filter"
  step "$engine: python package's pytest"
  if ((inventory)); then
    echo "$engine-python python/tests (pytest)"
  else
    bash scripts/test-python.sh pytest || failed+=("$engine: python package")
  fi
  unset POCKETDOCK_SOCKET POCKETDOCK_PEER_SOCKET
}

# The wheel's checks that hold whatever the engine, once; its examples and
# smoke tests on the first engine.
suite_python() {
  ((inventory)) && { echo "python auditwheel, mypy --strict, stubtest, examples/python, CPython smoke"; return; }
  POCKETDOCK_SOCKET=${socket[${engines[0]}]} bash scripts/test-python.sh checks || failed+=("python package checks")
}

# The core again against rootless Podman, as the unprivileged user
# scripts/rootless.sh makes, with the images root Podman built above.
suite_rootless() {
  [[ " ${engines[*]} " == *" podman "* ]] || return 0
  if ((inventory)); then
    ROOTLESS_LIST=1 bash scripts/test-rootless.sh | sed "s/^/rootless pocketdock::integration /"
    return
  fi
  bash scripts/test-rootless.sh || failed+=("rootless podman")
}

# The fault suite on second engine instances of their own
# (scripts/provision.sh fault-engine): stopping or pausing them never
# touches the engines above. Its tests run one at a time on each engine,
# the engines side by side, in the background: they mostly wait on paused
# and restarted engines, so the next suite (the cluster's) runs meanwhile,
# and any other waits for them first (finish_faults). Each run's log is
# shown when both are done. The load test (50 sandboxes x 10 steps) runs
# with it.
declare -A faults_pid=()
suite_faults() {
  local e
  start_fuzz_build
  for e in "${engines[@]}"; do
    if ((inventory)); then
      POCKETDOCK_FAULT_ENGINES=$e nextest "faults-$e" "fault suite on $e" --test faults -j 1
      continue
    fi
    POCKETDOCK_FAULT_ENGINES=$e POCKETDOCK_LOAD=1 CI=true QUIET=1 \
      nextest "faults-$e" "fault suite on $e" --test faults -j 1 &
    faults_pid[$e]=$!
  done
}
finish_faults() {
  local e
  for e in "${engines[@]}"; do
    [[ -n ${faults_pid[$e]:-} ]] || continue
    wait "${faults_pid[$e]}" || failed+=("fault suite on $e")
    unset "faults_pid[$e]"
    step "fault suite on $e"
    cat "$LOGS/faults-$e.log" >&2
  done
}

# The example workflow as GitHub's runner runs it, on the second engine
# instances holding only the registry-faithful Debian base.
suite_rehearsal() {
  local fe e
  fe=$(IFS=,; echo "${engines[*]}")
  POCKETDOCK_REHEARSAL_ENGINES=$fe CI=true nextest rehearsal "runner rehearsal" --test rehearsal -j 1
  ((inventory)) && return
  for e in "${engines[@]}"; do
    bash scripts/provision.sh fault-engine stop "$e" >/dev/null 2>&1 || true
  done
}

# The manifest front end (YAML and KDL): the committed corpus, the seeds
# and the examples replay in the integration tests; here, 30 s of new
# fuzzing per target.
suite_fuzz() {
  ((inventory)) && { printf 'fuzz %s 30s\n' validate_yaml validate_kdl; return; }
  finish_fuzz_build || { failed+=("fuzz (its build: $LOGS/fuzz-build.log)"); return; }
  bash scripts/fuzz.sh 30 || failed+=("fuzz")
}

# The fuzz targets' instrumented build (about 1:30 warm, in a target
# directory of its own) runs beside the fault suite, which mostly waits;
# the fuzz suite then only fuzzes.
fuzz_build_pid=
start_fuzz_build() {
  ((inventory)) && return
  [[ " ${suites[*]} " == *" fuzz "* ]] || return
  bash scripts/fuzz.sh build >"$LOGS/fuzz-build.log" 2>&1 &
  fuzz_build_pid=$!
}
finish_fuzz_build() {
  [[ -n $fuzz_build_pid ]] || return 0
  local pid=$fuzz_build_pid
  fuzz_build_pid=
  wait "$pid" || { tail -30 "$LOGS/fuzz-build.log" >&2; return 1; }
}

suite_fuzz-long() {
  ((inventory)) && { printf 'fuzz-long %s 300s\n' validate_yaml validate_kdl; return; }
  bash scripts/fuzz.sh 300 || failed+=("fuzz-long")
}

# Long suites that need a machine of their own: a guest with cgroup v2 and
# current engines, and a Kubernetes cluster built from upstream. Each runs
# when its script and its built prerequisite are here, else it is named
# as not run.
long_suite() {
  local name=$1 script=$2 why
  if [[ ! -f $script ]]; then
    why="$script does not exist yet"
  elif ! bash "$script" ready >/dev/null 2>&1; then
    why="not built on this machine ($script build)"
  fi
  if [[ -n ${why:-} ]]; then
    not_run+=("$name: $why")
    return
  fi
  ((inventory)) && { echo "$name $script test"; return; }
  bash "$script" test || failed+=("$name")
}
suite_guest() { long_suite guest scripts/vm.sh; }

# The guest's smoke part (scripts/vm.sh smoke, its checks named there):
# rootful Podman 5 on cgroup v2 with systemd. A machine without the guest
# builds it first (about 3 minutes).
suite_guest-smoke() {
  ((inventory)) && { sed -n '/^SMOKE=(/,/)/p' scripts/vm.sh | tr -s ' ()' '\n' | grep '::' | sed 's/^/guest-smoke podman /'; return; }
  local rc=0
  bash scripts/vm.sh smoke || rc=$?
  # 125: the guest stopped without answering (an emulated kernel's panic
  # at boot was seen once): one more boot, and the run is flaky.
  if ((rc == 125)); then
    echo "guest-smoke: the guest stopped without an answer; booting it once more" >&2
    rc=0
    bash scripts/vm.sh smoke || rc=$?
    ((rc == 0)) && flaky+=("guest-smoke: the guest stopped without an answer, then passed")
  fi
  ((rc == 0)) || failed+=("guest smoke (scripts/vm.sh smoke)")
}

# The Kubernetes backend on a cluster built from upstream (scripts/kube.sh,
# docs/kubernetes.md): when the cluster's build cache is on this machine
# (a start compiles nothing), the tests that need a real cluster run
# against it, via the helper and then through exec alone; without it,
# each is named as not run. A cluster this suite started, it stops.
KUBE_FILTER='binary(integration) & (test(/^kubernetes_cluster/) | test(=contract::kubernetes_real_cluster_when_asked))'
# Again through exec alone: the library's tests, where the path matters
# (the CLI's verbs and the dashboard take the same paths through them).
KUBE_EXEC_FILTER='binary(integration) & (test(/^kubernetes_cluster::/) | test(=contract::kubernetes_real_cluster_when_asked))'
suite_kube() {
  if ((inventory)); then
    nextest kube "kube: cluster tests" -E "$KUBE_FILTER"
    nextest kube-exec "kube: cluster tests via exec" -E "$KUBE_EXEC_FILTER"
    echo "kube-python python/tests -m 'not engine_only' (pytest)"
    return
  fi
  if ! bash scripts/kube.sh ready >/dev/null 2>&1; then
    local t
    while read -r _ t; do
      not_run+=("kube: $t (the cluster is not built here: scripts/kube.sh build, about 15 min)")
    done < <("$NEXTEST" nextest list --locked -E "$KUBE_FILTER" --message-format oneline 2>/dev/null)
    return
  fi
  local was_up=0 env
  bash scripts/kube.sh status >/dev/null 2>&1 && was_up=1
  # The profile the cluster's pods run, built on Podman and imported from it.
  if ! { cargo build --locked --bin pocketdock && POCKETDOCK_SOCKET=${socket[podman]} "$PD" build -q minimal; } >"$LOGS/kube-start.log" 2>&1 ||
    ! bash scripts/kube.sh start >>"$LOGS/kube-start.log" 2>&1 || ! env=$(bash scripts/kube.sh env --tests); then
    failed+=("kube: the cluster did not start ($LOGS/kube-start.log)")
    tail -20 "$LOGS/kube-start.log" >&2
    return
  fi
  eval "$env"
  export POCKETDOCK_SOCKET=${socket[podman]}
  CI=true nextest kube "kube: cluster tests" -E "$KUBE_FILTER"
  POCKETDOCK_EXEC_VIA=exec CI=true nextest kube-exec "kube: cluster tests via exec" -E "$KUBE_EXEC_FILTER"
  step "kube: python package's backend-neutral pytest on the cluster"
  POCKETDOCK_BACKEND=kubernetes KUBECONFIG=$POCKETDOCK_TEST_KUBECONFIG PYTEST_MARK="not engine_only" \
    POCKETDOCK_TEST_CYCLES=20 bash scripts/test-python.sh pytest || failed+=("kube: python package")
  unset POCKETDOCK_SOCKET POCKETDOCK_TEST_KUBECONFIG POCKETDOCK_TEST_KUBECONFIG_ADMIN POCKETDOCK_TEST_IMAGE KUBECTL
  ((was_up)) || bash scripts/kube.sh stop >/dev/null 2>&1 || failed+=("kube: scripts/kube.sh stop")
}

# -------------------------------------------------------------------- run

if ((!inventory)); then
  bash scripts/cache.sh trim
  step "provision engines (${engines[*]}) and the tests' tools"
  provision_args=()
  ((${#engines[@]} == 1)) && provision_args=("--${engines[0]}-only")
  bash scripts/provision.sh "${provision_args[@]}" || { echo "provisioning failed" >&2; exit 1; }
  [[ -x $NEXTEST ]] || { echo "no cargo-nextest at $NEXTEST (scripts/provision.sh installs it)" >&2; exit 1; }
  # The second engines and the remote ones start fresh: a run that was
  # killed can leave them paused, or with the link down.
  for e in "${engines[@]}"; do
    bash scripts/provision.sh fault-engine stop "$e" >/dev/null 2>&1 || true
  done
  bash scripts/remote-engine.sh stop >/dev/null 2>&1 || true
fi

for suite in "${suites[@]}"; do
  [[ $suite == kube ]] || finish_faults
  [[ $suite == lint || $suite == build ]] || finish_release
  case $suite in
    podman | docker)
      [[ " ${engines[*]} " == *" $suite "* ]] || continue
      suite_engine "$suite" ;;
    build)
      step "suite: build"
      suite_build || { ((inventory)) || break; } ;;
    *)
      step "suite: $suite"
      "suite_$suite" ;;
  esac
done
finish_release
finish_faults
finish_fuzz_build || true
((inventory)) && { ((${#failed[@]} == 0)) || { printf 'FAILED: %s\n' "${failed[@]}" >&2; exit 1; }; exit 0; }

# The remote engine the remote:: tests started (scripts/remote-engine.sh).
bash scripts/remote-engine.sh stop >/dev/null 2>&1 || true

# The skips counted above: how many, which, and a failure if any.
skipped=$(wc -l <"$POCKETDOCK_SKIP_LOG")
printf '\n%s engine tests skipped\n' "$skipped" >&2
if ((skipped > 0)); then
  sed 's/^/  /' "$POCKETDOCK_SKIP_LOG" >&2
  failed+=("$skipped engine tests skipped")
fi
rm -f "$POCKETDOCK_SKIP_LOG"

# The 20 slowest tests of this run, and the flaky ones, from the logs.
if compgen -G "$LOGS/*.log" >/dev/null; then
  python3 scripts/slowest.py 20 "$LOGS"/*.log >&2 || true
  while read -r t; do flaky+=("$t"); done < <(
    for log in "$LOGS"/*.log; do
      sed -n 's/^ *FLAKY [0-9]*\/[0-9]* *\[ *[0-9.]*s\] *\(([0-9/]*) \)\{0,1\}//p' "$log" |
        sed "s|^|$(basename "$log" .log): |"
    done | sort -u)
fi
if ((${#not_run[@]})); then
  printf '\nNOT RUN (prerequisite missing):\n' >&2
  printf '  %s\n' "${not_run[@]}" >&2
fi
if ((${#flaky[@]})); then
  printf '\nFLAKY (failed, then passed on retry):\n' >&2
  printf '  %s\n' "${flaky[@]}" >&2
fi
step "summary (${suites[*]})"
if ((${#failed[@]})); then
  printf '\nFAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
printf '\nall checks passed (%s) on: %s\n' "${suites[*]}" "${engines[*]}" >&2
