"""Grading through `apply`: the grading example's job, with events as they happen."""

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict

import pocketdock

HERE = Path(__file__).resolve().parent
GRADING = HERE.parent / "grading"


def on_event(event: Dict[str, Any]) -> None:
    kind = event["event"]
    if kind == "step_finished":
        print(f"  {event['step']}: {event['status']}")
    elif kind in ("job_started", "job_finished"):
        print(f"{kind}: {event.get('instance') or event.get('status')}")


with tempfile.TemporaryDirectory() as tmp:
    # A copy, so the job's record and results stay out of the source tree.
    project = Path(tmp) / "grading"
    shutil.copytree(GRADING, project, ignore=shutil.ignore_patterns("results", ".pocketdock"))
    outcome = pocketdock.apply(
        os.fspath(project / "job.yaml"),
        vars={"students": ["alice", "bob"]},
        on_event=on_event,
        project_dir=os.fspath(project),
    )
    print(f"{outcome.job_id}: {outcome.status} ({outcome.succeeded} steps succeeded)")
    assert outcome.ok, outcome
    for student in ("alice", "bob"):
        print((project / "results" / f"{student}.txt").read_text(), end="")
print("grading: ok")
