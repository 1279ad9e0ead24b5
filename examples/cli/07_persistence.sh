#!/usr/bin/env bash
# 07 — a project and a persistent sandbox: kept (stopped) on shutdown,
# with its record in .pocketdock/instances/<name>/.
set -euo pipefail
cd "$(mktemp -d)"
name=ex07-$$
trap 'pocketdock shutdown "$name" --remove -y >/dev/null 2>&1 || true; rm -rf "$PWD"' EXIT

pocketdock init --name "example-$$"
pocketdock create --persist --name "$name"
pocketdock run "$name" "echo kept > ~/notes"
pocketdock shutdown "$name" -y        # stopped, filesystem kept
pocketdock resume "$name"
pocketdock run "$name" "cat ~/notes"
ls ".pocketdock/instances/$name"
pocketdock status
