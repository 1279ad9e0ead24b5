#!/usr/bin/env bash
# 01 — the first touch: create a sandbox, run a command in it, remove it.
# Needs an engine and the minimal profile (`pocketdock build minimal`).
set -euo pipefail
name=ex01-$$
trap 'pocketdock shutdown "$name" -y >/dev/null 2>&1 || true' EXIT

pocketdock create --name "$name"          # 256m memory, half a core, no network
pocketdock run "$name" "echo hello from \$(hostname)"
pocketdock run "$name" "uname -sr; id -un"
pocketdock shutdown "$name" -y            # removed
