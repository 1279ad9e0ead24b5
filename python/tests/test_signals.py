"""Ctrl-C during a run raises at once and kills the command's process tree."""

from __future__ import annotations

import os
import signal
import threading
import time

from typing import Iterator

import pytest

import pocketdock


@pytest.fixture(autouse=True)
def sigint_raises() -> Iterator[None]:
    # A shell starts background jobs with SIGINT ignored, and Python then
    # installs no handler: put Python's own in place for these tests.
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def test_sigint_during_a_run_raises_within_a_second(sb: pocketdock.Container) -> None:
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        sb.run("sleep 60")
    elapsed = time.monotonic() - start
    assert elapsed < 1.5, f"raised after {elapsed:.2f}s"  # 0.5 s until the signal
    assert "sleep 60" not in sb.run("ps -o args").stdout


def test_sigint_during_a_stream_kills_the_command(sb: pocketdock.Container) -> None:
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        for _ in sb.run("sleep 60", stream=True):
            pass
    time.sleep(0.2)
    assert "sleep 60" not in sb.run("ps -o args").stdout
