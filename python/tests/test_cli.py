"""The wheel ships the command line: ``pocketdock`` and ``python -m pocketdock``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import pocketdock


def _cli(*args: str) -> "subprocess.CompletedProcess[str]":
    exe = Path(sys.executable).parent / "pocketdock"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)


def test_the_command_and_the_module_print_the_version() -> None:
    for cmd in ([str(Path(sys.executable).parent / "pocketdock")], [sys.executable, "-m", "pocketdock"]):
        r = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("pocketdock "), r.stdout


@pytest.mark.engine_only  # the command line's default backend is the engine
def test_the_command_reaches_the_engine(sb: pocketdock.Container) -> None:
    r = _cli("list", "--all-projects", "--json")
    assert r.returncode == 0, r.stderr
    assert sb.name in [row["name"] for row in json.loads(r.stdout)]
    r = _cli("run", sb.name, "echo from-the-cli")
    assert r.returncode == 0 and r.stdout == "from-the-cli\n", (r.stdout, r.stderr)
