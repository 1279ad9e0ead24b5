#!/usr/bin/env bash
# 06 — a job: a manifest of sandboxes and steps, planned, applied, recorded.
set -euo pipefail
cd "$(mktemp -d)"
trap 'rm -rf "$PWD"' EXIT
cat > job.yaml <<'YAML'
version: 1
name: example
sandboxes:
  box: {}
steps:
  make:
    run: echo "answer=42" >> $POCKETDOCK_OUTPUT
  use:
    run: echo "the answer is {{ steps.make.outputs.answer }}"
YAML
pocketdock validate job.yaml
pocketdock plan job.yaml
pocketdock apply job.yaml
pocketdock logs                     # the job records
pocketdock logs last | grep "the answer is 42" >/dev/null
