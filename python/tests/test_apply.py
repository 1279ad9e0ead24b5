"""apply(): events in order, the outcome, manifest errors with positions."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import pytest

import pocketdock

JOB = """\
version: 1
name: pyjob
vars:
  greeting: hello
sandboxes:
  box:
    profile: minimal
steps:
  first:
    run: echo {{ vars.greeting }}
  second:
    needs: [first]
    run: echo two
"""


def test_apply_delivers_its_events_in_order(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text(JOB)
    events: List[Dict[str, Any]] = []
    outcome = pocketdock.apply(
        str(tmp_path / "job.yaml"), vars={"greeting": "bonjour"}, on_event=events.append, project_dir=str(tmp_path)
    )
    assert outcome.ok and outcome.succeeded == 2 and outcome.job_id.startswith("pyjob-")
    kinds = [e["event"] for e in events]
    assert kinds[0] == "job_started" and kinds[-1] == "job_finished"
    stamps = [e["ts"] for e in events]
    assert stamps == sorted(stamps)
    started = [e["step"].split("@")[0] for e in events if e["event"] == "step_started"]
    assert started == ["first", "second"]
    out = "".join(e.get("data", "") for e in events if e["event"] == "output")
    assert "bonjour" in out


def test_a_manifest_error_carries_line_and_column(tmp_path: Path) -> None:
    bad = JOB.replace("    run: echo two", "    rnu: echo two")
    (tmp_path / "job.yaml").write_text(bad)
    with pytest.raises(pocketdock.ManifestError) as e:
        pocketdock.apply(str(tmp_path / "job.yaml"), project_dir=str(tmp_path))
    d = e.value.diagnostics[0]
    assert (d.line, d.column) == (13, 5)
    assert d.file.endswith("job.yaml") and e.value.line == 13
