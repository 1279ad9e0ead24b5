#!/usr/bin/env bash
# 04 — files in and out: push a directory, work on it, pull the results.
set -euo pipefail
name=ex04-$$
work=$(mktemp -d)
trap 'pocketdock shutdown "$name" -y >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
pocketdock create --name "$name" >/dev/null

mkdir -p "$work/in"
printf '3\n1\n2\n' > "$work/in/numbers.txt"
pocketdock push "$name" "$work/in" /home/sandbox/in
pocketdock run "$name" "mkdir -p ~/out && sort -n ~/in/numbers.txt > ~/out/sorted.txt"
pocketdock pull "$name" /home/sandbox/out "$work/out"
cat "$work/out/sorted.txt"
[ "$(tr -d '\n' < "$work/out/sorted.txt")" = 123 ]
