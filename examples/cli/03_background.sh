#!/usr/bin/env bash
# 03 — streaming and background commands: --stream, --detach, kill.
set -euo pipefail
name=ex03-$$
trap 'pocketdock shutdown "$name" -y >/dev/null 2>&1 || true' EXIT
pocketdock create --name "$name" >/dev/null

pocketdock run "$name" --stream "for i in 1 2 3; do echo step \$i; sleep 0.2; done"

# --detach prints the process id and returns at once.
id=$(pocketdock run "$name" --detach "sleep 300")
echo "started $id"
pocketdock info "$name" | grep "sleep 300" >/dev/null
pocketdock kill "$name" "$id"               # the process and its children
echo "killed $id"
