#!/usr/bin/env bash
# The step cache's figures, both engines interleaved in one run:
#
#   1. examples/stm32: a run without the cache, the first `--cache` run
#      (commits and entries), a second one with nothing changed (every
#      step `cached`, the artifacts byte-identical to the first run's), and
#      one after a change to one board's source (only its chain reruns,
#      checked from NDJSON);
#   2. `--resume last` after a failure injected at the last step of a
#      six-step chain (five steps of 2 s each), against a full rerun of the
#      fixed job without the cache.
#
#   scripts/bench-cache.sh [ROUNDS=3] [PD=target/release/pocketdock]
#
# Prints each wall time (the median of ROUNDS) and its share of the
# uncached run. ENGINES=podman or docker runs one engine only.
set -euo pipefail

rounds=${1:-3}
pd=$(realpath "${2:-target/release/pocketdock}")
root=$(realpath "$(dirname "$0")/..")
read -r -a engines <<<"${ENGINES:-podman docker}"
declare -A socket=([podman]=unix:///run/podman/podman.sock [docker]=unix:///var/run/docker.sock)

work=$(mktemp -d /tmp/pd-bench-cache-XXXXXX)
trap 'rm -rf "$work"' EXIT

# Wall time of a command, in seconds, its output discarded; `want` is the
# exit code it must end with.
timed() {
  local want=$1 t0 t1 rc=0; shift
  t0=$(date +%s.%N)
  "$@" >"$work/out" 2>&1 || rc=$?
  t1=$(date +%s.%N)
  if ((rc != want)); then
    echo "bench-cache: '$*' exited $rc (expected $want):" >&2
    tail -n 20 "$work/out" >&2
    exit 1
  fi
  echo "$t1 - $t0" | bc
}

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
share() { echo "scale=1; 100 * $1 / $2" | bc; }

# The number of steps of an NDJSON stream that ended with `status`.
count() { grep '"event":"step_finished"' "$1" | grep -c "\"status\":\"$2\"" || true; }

chain() {
  cat >"$1/job.yaml" <<'YAML'
version: 1
sandboxes:
  s: { image: pocketdock/minimal }
steps:
  a: { run: "sleep 2; echo a > a.txt" }
  b: { needs: a, run: "sleep 2; echo b > b.txt" }
  c: { needs: b, run: "sleep 2; echo c > c.txt" }
  d: { needs: c, run: "sleep 2; echo d > d.txt" }
  e: { needs: d, run: "sleep 2; echo e > e.txt" }
  f: { needs: e, run: "cat a.txt b.txt c.txt d.txt e.txt && LAST" }
YAML
}

declare -A fig
for ((r = 0; r < rounds; r++)); do
  for engine in "${engines[@]}"; do
    export POCKETDOCK_SOCKET=${socket[$engine]}
    # 1. examples/stm32, in a copy of its own.
    d=$work/stm32-$engine-$r
    cp -r "$root/examples/stm32" "$d"
    fig[$engine.plain]+=" $(cd "$d" && timed 0 "$pd" apply job.yaml --no-cache -q)"
    mv "$d/out" "$d/out.plain"
    fig[$engine.cold]+=" $(cd "$d" && timed 0 "$pd" apply job.yaml --cache -q)"
    fig[$engine.warm]+=" $(cd "$d" && timed 0 "$pd" apply job.yaml --cache -q)"
    (cd "$d" && "$pd" apply job.yaml --cache --output ndjson >"$work/warm.ndjson")
    steps=$(grep -c '"event":"step_finished"' "$work/warm.ndjson")
    cached=$(count "$work/warm.ndjson" cached)
    ((steps == cached)) || { echo "bench-cache: $engine: $cached of $steps steps cached" >&2; exit 1; }
    diff -r "$d/out.plain" "$d/out" >/dev/null \
      || { echo "bench-cache: $engine: the cached artifacts differ" >&2; exit 1; }
    # One source file of one board changed: only that board's chain reruns.
    printf '\n/* changed */\n' >>"$d/boards/blinky/main.c"
    fig[$engine.one]+=" $(cd "$d" && timed 0 "$pd" apply job.yaml --cache --output ndjson)"
    # `timed` leaves the command's output in $work/out.
    hits=$(grep '"event":"step_finished"' "$work/out" | grep '"status":"cached"' | grep -c 'board=hello' || true)
    runs=$(grep '"event":"step_finished"' "$work/out" | grep '"status":"succeeded"' | grep -c 'board=blinky' || true)
    others=$(grep '"event":"step_finished"' "$work/out" | grep -c 'board=' || true)
    ((hits + runs == others && hits > 0 && runs > 0)) \
      || { echo "bench-cache: $engine: a changed blinky source: $hits hello hits, $runs blinky runs of $others" >&2; exit 1; }
    (cd "$d" && "$pd" cache prune -q >/dev/null 2>&1 || true)

    # 2. resume after a failure at the chain's last step.
    d=$work/chain-$engine-$r
    mkdir -p "$d"
    chain "$d"
    sed -i 's/LAST/false/' "$d/job.yaml"
    (cd "$d" && timed 1 "$pd" apply job.yaml --cache -q >/dev/null)
    sed -i 's/&& false/\&\& true/' "$d/job.yaml"
    fig[$engine.resume]+=" $(cd "$d" && timed 0 "$pd" apply --resume last -q)"
    fig[$engine.full]+=" $(cd "$d" && timed 0 "$pd" apply job.yaml --no-cache -q)"
    (cd "$d" && "$pd" apply job.yaml --cache --output ndjson >"$work/after.ndjson")
    cached=$(count "$work/after.ndjson" cached)
    ((cached == 6)) || { echo "bench-cache: $engine: $cached of 6 steps cached after the resume" >&2; exit 1; }
    (cd "$d" && "$pd" cache prune -q >/dev/null 2>&1 || true)
  done
done

printf '%s (median of %s, %s)\n' "$(basename "$pd")" "$rounds" "$(uptime | sed 's/.*load/load/')"
for engine in "${engines[@]}"; do
  # shellcheck disable=SC2086
  {
    plain=$(median ${fig[$engine.plain]}) cold=$(median ${fig[$engine.cold]})
    warm=$(median ${fig[$engine.warm]}) resume=$(median ${fig[$engine.resume]})
    full=$(median ${fig[$engine.full]}) one=$(median ${fig[$engine.one]})
  }
  printf '%s: stm32 without the cache %.2f s, first --cache %.2f s (+%s%%), second %.2f s (%s%%), one board changed %.2f s (%s%%)\n' \
    "$engine" "$plain" "$cold" "$(share "$(echo "$cold - $plain" | bc)" "$plain")" "$warm" "$(share "$warm" "$plain")" \
    "$one" "$(share "$one" "$plain")"
  printf '%s: chain full rerun %.2f s, --resume last %.2f s (%s%%)\n' \
    "$engine" "$full" "$resume" "$(share "$resume" "$full")"
done
