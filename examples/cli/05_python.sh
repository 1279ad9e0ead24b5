#!/usr/bin/env bash
# 05 — the persistent Python kernel: state survives between calls.
set -euo pipefail
name=ex05-$$
trap 'pocketdock shutdown "$name" -y >/dev/null 2>&1 || true' EXIT
pocketdock create --name "$name" >/dev/null

pocketdock python "$name" "x = 41"
answer=$(pocketdock python "$name" "x + 1")
echo "x + 1 = $answer"; [ "$answer" = 42 ]
pocketdock python "$name" --vars
pocketdock python "$name" --reset           # a fresh kernel next time
