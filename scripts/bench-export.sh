#!/usr/bin/env bash
# `pocketdock export` and `import` beside the engine's own save/load, fed as
# a user would (`ENGINE save IMG | gzip > f`, `gunzip -c f | ENGINE load`),
# RUNS rounds each, alternating the two sides (docs/benchmarks.md, "export /
# import").
#
#   scripts/bench-export.sh podman|docker [RUNS] [POCKETDOCK_BINARY]
#
# Needs the `minimal` profile built. Makes and removes a snapshot with a
# fresh 175 MB layer (the minimal sandbox's /usr copied into its home).
set -euo pipefail
engine=${1:?usage: scripts/bench-export.sh podman|docker [RUNS] [BINARY]}
runs=${2:-3}
pd=${3:-pocketdock}
case $engine in
  podman) sock=/run/podman/podman.sock ;;
  docker) sock=/var/run/docker.sock ;;
  *) echo "bench-export: engine is podman or docker, not $engine" >&2; exit 2 ;;
esac
pd() { command "$pd" --socket "$sock" -q "$@"; }
dir=$(mktemp -d /var/tmp/pd-bench-export.XXXXXX)
name=pd-bench-export-$$
snap=pd-bench-export-snap-$$
cleanup() {
  pd shutdown -y "$name" >/dev/null 2>&1 || true
  "$engine" rmi -f "$snap" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

secs() { local t=$EPOCHREALTIME; "$@" >/dev/null 2>&1 || { echo "bench-export: failed: $*" >&2; exit 1; }; awk -v a="$t" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.2f", b - a}'; }
row() { printf '%-58s %s\n' "$1" "$2"; }
image=pocketdock/minimal:latest

declare -A t
for ((i = 1; i <= runs; i++)); do
  t[export]+="$(secs "$pd" --socket "$sock" -q export --profile minimal -o "$dir/pd.tar.gz") "
  t[save6]+="$(secs sh -c "$engine save $image | gzip > $dir/save6.tar.gz") "
  t[save1]+="$(secs sh -c "$engine save $image | gzip -1 > $dir/save1.tar.gz") "
done
row "pocketdock export --profile minimal ($(du -m "$dir/pd.tar.gz" | cut -f1) MiB)" "${t[export]}"
row "$engine save | gzip ($(du -m "$dir/save6.tar.gz" | cut -f1) MiB)" "${t[save6]}"
row "$engine save | gzip -1 ($(du -m "$dir/save1.tar.gz" | cut -f1) MiB)" "${t[save1]}"

for ((i = 1; i <= runs; i++)); do
  t[imp_warm]+="$(secs "$pd" --socket "$sock" -q import "$dir/pd.tar.gz") "
  t[load_warm]+="$(secs sh -c "gunzip -c $dir/pd.tar.gz | $engine load") "
done
row "pocketdock import minimal, layers present" "${t[imp_warm]}"
row "gunzip -c | $engine load, same file" "${t[load_warm]}"

pd create --name "$name" --profile minimal >/dev/null
pd run "$name" 'cp -a /usr "$HOME/usr-copy"' >/dev/null
pd snapshot "$name" "$snap" >/dev/null
pd shutdown -y "$name" >/dev/null
pd export --image "$snap" -o "$dir/snap.tar.gz" >/dev/null
layer=$(du -m "$dir/snap.tar.gz" | cut -f1)
for ((i = 1; i <= runs; i++)); do
  "$engine" rmi -f "$snap" >/dev/null 2>&1
  t[imp_cold]+="$(POCKETDOCK_REPORT_PEAK_RSS=1 secs "$pd" --socket "$sock" -q import "$dir/snap.tar.gz") "
  "$engine" rmi -f "$snap" >/dev/null 2>&1
  t[load_cold]+="$(secs sh -c "gunzip -c $dir/snap.tar.gz | $engine load") "
done
row "pocketdock import, a snapshot with a new layer ($layer MiB)" "${t[imp_cold]}"
row "gunzip -c | $engine load, same file" "${t[load_cold]}"

rss() { /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1; }
"$engine" rmi -f "$snap" >/dev/null 2>&1
row "peak RSS (KiB): export / import" "$(rss "$pd" --socket "$sock" -q export --profile minimal -o "$dir/pd2.tar.gz") / $(rss "$pd" --socket "$sock" -q import "$dir/snap.tar.gz")"
