#!/usr/bin/env bash
# A 200-entry matrix on a cluster, side by side with kubectl, for
# docs/benchmarks.md: `pocketdock apply --max-sandboxes 16` of one `true`
# step per entry (wall time, the runner's peak RSS, pods left), against 200
# `kubectl run --rm --attach --restart=Never` of the same image, 16 at a
# time (wall time, one kubectl's peak RSS, pods left).
#
# Usage: benches/kubernetes/matrix.sh [ENTRIES] [AT_ONCE]
# Needs: pocketdock and kubectl on PATH, KUBECONFIG naming a cluster where
# both may create pods and read their logs (scripts/kube.sh env --admin),
# the image on its nodes (IMAGE, default pocketdock/minimal), GNU time.
# Each pod asks for CPU=10 percent of a core, so 16 fit on a 2-CPU node.
set -euo pipefail
ENTRIES=${1:-200}
AT_ONCE=${2:-16}
IMAGE=${IMAGE:-pocketdock/minimal}
CPU=${CPU:-10}
NS=${NAMESPACE:-pocketdock}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

pods_left() { kubectl -n "$NS" get pods -o name 2>/dev/null | grep -c "$1" || true; }
peak_kib() { sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$1"; }
wall() { sed -n 's/^\s*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$1"; }

cd "$work"
cat >job.yaml <<YAML
version: 1
name: kmatrix
sandboxes:
  box:
    image: $IMAGE
    cpu: $CPU
    matrix:
      n: "{{ range($ENTRIES) }}"
steps:
  t:
    sandbox: box
    run: "true"
YAML
/usr/bin/time -v -o pd.time pocketdock apply job.yaml --backend kubernetes --namespace "$NS" \
  --max-sandboxes "$AT_ONCE" --quiet -o plain >pd.out 2>&1 || { cat pd.out; exit 1; }
pd_left=$(pods_left pd-kmatrix-)

seq "$ENTRIES" | /usr/bin/time -v -o k.time xargs -P "$AT_ONCE" -I{} \
  /usr/bin/time -v -a -o kubectl.time kubectl -n "$NS" run "pd-kubectl-{}-$$" --rm --attach \
  --restart=Never --quiet --image="$IMAGE" --image-pull-policy=IfNotPresent \
  --overrides="{\"spec\":{\"containers\":[{\"name\":\"pd-kubectl-{}-$$\",\"image\":\"$IMAGE\",\"imagePullPolicy\":\"IfNotPresent\",\"args\":[\"true\"],\"resources\":{\"requests\":{\"cpu\":\"${CPU}0m\"},\"limits\":{\"cpu\":\"${CPU}0m\"}}}]}}" \
  -- true >k.out 2>&1 || { tail -20 k.out; exit 1; }
k_left=$(pods_left pd-kubectl-)
k_peak=$(peak_kib kubectl.time | sort -n | tail -1)

printf '%s entries, %s at once, image %s, cpu %s%% each\n' "$ENTRIES" "$AT_ONCE" "$IMAGE" "$CPU"
printf '%-56s wall %8s  peak RSS %6s MiB  pods left %s\n' \
  "pocketdock apply --max-sandboxes $AT_ONCE" "$(wall pd.time)" "$(($(peak_kib pd.time) / 1024))" "$pd_left" \
  "kubectl run --rm x $ENTRIES, $AT_ONCE at once (xargs -P)" "$(wall k.time)" "$((k_peak / 1024))" "$k_left"
