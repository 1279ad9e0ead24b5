"""run(): results, options, streaming, detached processes, callbacks."""

from __future__ import annotations

import threading
import time
from typing import List

import pytest

import pocketdock


def test_a_result_has_the_spec_fields(sb: pocketdock.Container) -> None:
    r = sb.run("echo out; echo err >&2; exit 3")
    assert (r.stdout, r.stderr, r.exit_code, r.ok) == ("out\n", "err\n", 3, False)
    assert r.duration_ms >= 0 and not r.timed_out and not r.truncated


@pytest.mark.engine_only  # a pod's commands run as its own user
def test_options_reach_the_command(sb: pocketdock.Container) -> None:
    r = sb.run("echo $A; pwd; id -un", env={"A": "1"}, cwd="/tmp", user="root")
    assert r.stdout == "1\n/tmp\nroot\n"
    assert sb.run("import sys; print(sys.version_info[0])", lang="python").stdout == "3\n"
    assert sb.run("tr a-z A-Z", stdin="abc").stdout == "ABC"


def test_a_timeout_and_the_output_cap_are_fields(sb: pocketdock.Container) -> None:
    r = sb.run("sleep 5", timeout=0.5)
    assert r.timed_out and r.exit_code == -1 and not r.ok
    big = sb.run("head -c 100000 /dev/zero | tr '\\0' x", max_output="1k")
    assert big.truncated and len(big.stdout) <= 1024


def test_the_gil_is_released_during_a_run(sb: pocketdock.Container) -> None:
    ticks: List[float] = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)

    t = threading.Thread(target=tick)
    t.start()
    start = time.monotonic()
    sb.run("sleep 1")
    stop.set()
    t.join()
    during = [x for x in ticks if start + 0.1 < x < start + 0.9]
    assert len(during) > 40, f"only {len(during)} ticks during the run"


def test_streaming_yields_chunks_then_a_result(sb: pocketdock.Container) -> None:
    s = sb.run("echo a; sleep 0.2; echo b >&2; exit 4", stream=True)
    chunks = [(c.stream, c.data, c.raw) for c in s]
    assert chunks == [("stdout", "a\n", b"a\n"), ("stderr", "b\n", b"b\n")]
    assert s.exit_code == 4


def test_a_detached_process_buffers_and_calls_back(sb: pocketdock.Container) -> None:
    seen: List[str] = []
    raw: List[bytes] = []
    codes: List[int] = []
    sb.on_stdout(lambda c, data: seen.append(data))
    sb.on_stdout(lambda c, data: raw.append(data), raw=True)
    sb.on_exit(lambda c, code: codes.append(code))
    p = sb.run("echo one; sleep 0.3; echo two", detach=True)
    assert p.is_running()
    r = p.wait(timeout=10)
    assert r is not None and r.exit_code == 0
    assert "".join(seen) == "one\ntwo\n"
    assert b"".join(raw) == b"one\ntwo\n"
    assert codes == [0]


def test_kill_ends_a_detached_process_tree(sb: pocketdock.Container) -> None:
    p = sb.run("sh -c 'sleep 300' & sleep 300", detach=True)
    time.sleep(0.3)
    p.kill("KILL")
    assert p.wait(timeout=10) is not None
    assert "sleep 300" not in sb.run("ps -o args").stdout
