#!/usr/bin/env bash
# 08 — snapshots: save a sandbox's filesystem as an image, start from it.
# The tag is fixed, so a second run replaces the image (`prune --images`
# removes the untagged one it supersedes).
set -euo pipefail
name=ex08-$$ copy=ex08-copy-$$ image=pocketdock-example-08:latest
trap 'pocketdock shutdown "$name" -y >/dev/null 2>&1 || true
      pocketdock shutdown "$copy" -y >/dev/null 2>&1 || true' EXIT
pocketdock create --name "$name" >/dev/null
pocketdock run "$name" "echo configured > ~/state"
pocketdock snapshot "$name" "$image"
pocketdock create --image "$image" --name "$copy" >/dev/null
pocketdock run "$copy" "cat ~/state"
