#!/usr/bin/env bash
# 02 — run options: languages, environment, exit codes, timeouts, JSON.
set -euo pipefail
name=ex02-$$
trap 'pocketdock shutdown "$name" -y >/dev/null 2>&1 || true' EXIT
pocketdock create --name "$name" >/dev/null

pocketdock run "$name" --lang python "print(sum(range(10)))"
pocketdock run "$name" -e GREETING=hi -w /tmp 'echo "$GREETING from $(pwd)"'

# The command's exit code is pocketdock's.
code=0; pocketdock run "$name" "exit 3" || code=$?
echo "exit code: $code"; [ "$code" -eq 3 ]

# A timeout kills the command and everything it started (exit 124).
code=0; pocketdock run "$name" --timeout 1 "sleep 60 & sleep 60" || code=$?
echo "timed out with: $code"; [ "$code" -eq 124 ]

# One JSON object, for scripts.
pocketdock run "$name" --json "echo out; echo err >&2"
