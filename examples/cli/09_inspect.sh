#!/usr/bin/env bash
# 09 — looking around: list, info, JSON for scripts, reboot.
set -euo pipefail
name=ex09-$$
trap 'pocketdock shutdown "$name" -y >/dev/null 2>&1 || true' EXIT
pocketdock create --name "$name" --mem 128m --cpu 25 >/dev/null

pocketdock list
pocketdock info "$name"
pocketdock list --json | grep "\"$name\"" >/dev/null
pocketdock run "$name" "echo before > f"
pocketdock reboot "$name"                    # processes end, files stay
pocketdock run "$name" "cat f"
