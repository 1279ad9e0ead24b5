#!/usr/bin/env bash
# 10 — the full lifecycle: build, create (persistent), run, push and pull,
# logs, snapshot, export, and cleanup, in a project of its own.
set -euo pipefail
cd "$(mktemp -d)"
name=ex10-$$ image=pocketdock-example-10:latest
trap 'pocketdock shutdown "$name" --remove -y >/dev/null 2>&1 || true; rm -rf "$PWD"' EXIT

pocketdock init --name "lifecycle-$$"
pocketdock build minimal                       # skipped when up to date
pocketdock create --persist --name "$name"

mkdir src && echo 'print(", ".join(str(n * n) for n in range(1, 6)))' > src/main.py
pocketdock push "$name" src /home/sandbox/src
pocketdock run "$name" "cd ~/src && python3 main.py | tee result.txt"
pocketdock pull "$name" /home/sandbox/src/result.txt result.txt
[ "$(cat result.txt)" = "1, 4, 9, 16, 25" ]

pocketdock logs "$name"                        # what ran in it, from its record
pocketdock snapshot "$name" "$image"
pocketdock export --image "$image" -o image.tar.gz
ls -l image.tar.gz

pocketdock shutdown "$name" -y                 # persistent: stopped, kept
pocketdock list --all | grep "$name"
pocketdock shutdown "$name" --remove -y        # gone for good, record too
