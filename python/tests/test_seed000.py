"""Seed 000's names and behaviour: shell and interactive, the management
functions, info's times, text chunks, a session's send, the pool's release,
and the history of every kind of run; sync and async."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterator, List

import pytest

import pocketdock
import pocketdock.async_ as pda
from conftest import exists

# A child Python whose stdin is a pipe the test writes to, as a person types.
CHILD = [sys.executable, "-u", "-c"]


def _child(code: str, *args: str) -> "subprocess.Popen[str]":
    return subprocess.Popen(
        [*CHILD, code, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _line_with(p: "subprocess.Popen[str]", mark: str) -> str:
    assert p.stdout is not None
    seen = ""
    for line in p.stdout:
        seen += line
        if mark in line:
            return seen
    raise AssertionError(f"no {mark!r} in {seen!r}; stderr: {p.stderr.read() if p.stderr else ''}")


@pytest.mark.engine_only  # Kubernetes' exec has its own terminal tests
def test_shell_runs_on_a_tty_and_leaves_later_input_alone(sb: pocketdock.Container) -> None:
    p = _child(
        "import pocketdock, sys\n"
        "c = pocketdock.attach_container(sys.argv[1])\n"
        "code = c.shell('tty; echo in-$((6*7)); exit 3')\n"
        "print('CODE', code)\n"
        "print('NEXT', sys.stdin.readline().strip())\n",
        sb.name,
    )
    shown = _line_with(p, "CODE")
    assert "/dev/pts/" in shown and "in-42" in shown and "CODE 3" in shown, shown
    # Typed after the shell ended: it reaches Python, not a read left behind.
    out, err = p.communicate("after\n", timeout=30)
    assert "NEXT after" in out, (out, err)


@pytest.mark.engine_only
def test_interactive_hands_the_session_over_and_back(sb: pocketdock.Container) -> None:
    p = _child(
        "import pocketdock, sys\n"
        "c = pocketdock.attach_container(sys.argv[1])\n"
        "s = c.session(tty=True)\n"
        "s.send('cd /tmp')\n"
        "print('HANDBACK', s.interactive())\n"
        "print('AFTER', s.send('echo $X; pwd'))\n",
        sb.name,
    )
    assert p.stdin is not None
    p.stdin.write("export X=in-$((6*7))\n")
    p.stdin.flush()
    time.sleep(1.0)
    p.stdin.write("\x1d")  # Ctrl-]: hand the shell back
    p.stdin.flush()
    out, err = p.communicate(timeout=60)
    assert "HANDBACK None" in out, (out, err)
    assert "AFTER in-42\n/tmp" in out, (out, err)


def test_send_waits_for_the_command_and_returns_its_output(sb: pocketdock.Container) -> None:
    with sb.session() as sh:
        seen: List[str] = []
        raw: List[bytes] = []
        sh.on_output(seen.append)
        sh.on_output(raw.append, raw=True)
        assert sh.send("cd /tmp && pwd") == "/tmp"
        assert sh.send("export X=1") == ""
        assert sh.send("echo $X; pwd") == "1\n/tmp"
        assert sh.send("echo err >&2") == "err"
        with pytest.raises(TimeoutError, match="still running"):
            sh.send("sleep 5", timeout=0.5)
        sh.interrupt()
        assert sh.send("echo after") == "after"
    text = "".join(seen)
    assert "/tmp" in text and "after" in text
    # pocketdock's sentinel lines never reach a callback.
    assert "__PD_" not in text and b"__PD_" not in b"".join(raw), text


def test_chunks_are_text_and_bytes(sb: pocketdock.Container) -> None:
    # A character whose two bytes arrive in two chunks is whole in the text.
    s = sb.run("printf 'caf\\303'; sleep 0.3; printf '\\251\\n'", stream=True)
    chunks = list(s)
    assert "".join(c.data for c in chunks) == "café\n"
    assert b"".join(c.raw for c in chunks) == "café\n".encode()
    assert all(isinstance(c.data, str) for c in chunks)


def test_info_has_uptime_and_created_at_as_times(sb: pocketdock.Container) -> None:
    info = sb.info()
    assert isinstance(info.uptime, timedelta) and info.uptime >= timedelta(0)
    assert isinstance(info.created_at, datetime) and info.created_at.tzinfo is not None
    age = datetime.now(timezone.utc) - info.created_at
    assert timedelta(seconds=-60) < age < timedelta(minutes=10), info.created_at


@pytest.mark.engine_only  # a pod cannot be stopped
def test_info_of_a_stopped_sandbox_has_no_uptime(sb: pocketdock.Container) -> None:
    sb.stop()
    assert sb.info().uptime is None
    sb.resume()


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "pocketdock.yaml").write_text(f"project:\n  name: pytest-{uuid.uuid4().hex[:8]}\n")
    yield tmp_path


def _project_name(project: Path) -> str:
    return (project / "pocketdock.yaml").read_text().split("name: ")[1].strip()


@pytest.mark.engine_only  # persistent sandboxes live on an engine
def test_list_destroy_and_prune_as_the_spec_has_them(project: Path) -> None:
    name = _project_name(project)
    kept = pocketdock.create_new_container(persist=True, project_dir=str(project))
    running = pocketdock.create_new_container(project=name)
    try:
        rows = {c.name: c for c in pocketdock.list_containers(project=name)}
        assert set(rows) == {kept.name, running.name}
        assert rows[kept.name].status == "running" and rows[kept.name].persist
        assert isinstance(rows[kept.name].created_at, datetime)
        assert kept.name in {c.name for c in pocketdock.list_containers()}
        kept.stop()
        assert {c.name: c.status for c in pocketdock.list_containers(project=name)}[kept.name] == "stopped"
        # prune removes the stopped one (and its record), never a running one.
        assert pocketdock.prune(project=name) == [kept.name]
        assert not exists(kept.name)
        assert not (project / ".pocketdock" / "instances" / kept.name).exists()
        assert exists(running.name)
    finally:
        running.shutdown()
    with pytest.raises(pocketdock.NotFound):
        pocketdock.destroy_container(kept.name)


@pytest.mark.engine_only
def test_destroying_a_persistent_sandbox_needs_a_confirmation(project: Path) -> None:
    c = pocketdock.create_new_container(persist=True, project_dir=str(project))
    record = project / ".pocketdock" / "instances" / c.name
    # No terminal here (pytest's stdin): nobody to ask, so force=True must say it.
    with pytest.raises(pocketdock.InvalidValue, match="force=True"):
        pocketdock.destroy_container(c.name)
    assert exists(c.name)
    pocketdock.destroy_container(c.name, force=True)
    assert not exists(c.name) and not record.exists()


def test_release_refills_the_pool_with_a_fresh_sandbox() -> None:
    # The spec gives the same container back; pocketdock gives the pool a
    # fresh one instead: nothing of one user reaches the next.
    with pocketdock.ContainerPool(size=1, profile="minimal") as pool:
        c = pool.acquire()
        c.run("echo secret > /home/sandbox/left-behind")
        used = c.name
        pool.release(c)
        assert not exists(used)
        deadline = time.monotonic() + 60
        while pool.available() < 1:
            assert time.monotonic() < deadline, "the pool was not refilled"
            time.sleep(0.2)
        nxt = pool.acquire()
        assert nxt.name != used
        assert not nxt.run("test -e /home/sandbox/left-behind").ok
        pool.release(nxt)


def _runs(record: Path) -> List[dict]:  # type: ignore[type-arg]
    lines = (record / "history.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["type"] == "run"]


@pytest.mark.engine_only  # persistent sandboxes live on an engine
def test_every_kind_of_run_is_in_the_history(project: Path) -> None:
    c = pocketdock.create_new_container(persist=True, project_dir=str(project))
    record = project / ".pocketdock" / "instances" / c.name
    try:
        p = c.run("echo detached-out; exit 3", detach=True)
        r = p.wait(timeout=30)
        assert r is not None and r.exit_code == 3
        list(c.run("echo streamed-out", stream=True))
        again = pocketdock.attach_container(c.name)
        assert again.run("echo attached-out").ok
        c.shutdown()
        resumed = pocketdock.resume_container(c.name)
        q = resumed.run("echo resumed-out", detach=True)
        assert q.wait(timeout=30) is not None
        runs = _runs(record)
        assert [e["exit"] for e in runs] == [3, 0, 0, 0], runs
        logs = [(record / "logs" / e["log"]).read_text() for e in runs]
        for log, word in zip(logs, ["detached-out", "streamed-out", "attached-out", "resumed-out"]):
            assert f"] {word}\n" in log, log
    finally:
        pocketdock.destroy_container(c.name, force=True)


def test_the_async_names(project: Path) -> None:
    name = _project_name(project)

    async def main() -> None:
        c = await pda.create_new_container(project=name)
        try:
            assert [x.name for x in await pda.list_containers(project=name)] == [c.name]
            info = await c.info()
            assert isinstance(info.created_at, datetime) and isinstance(info.uptime, timedelta)
            sh = await c.session()
            seen: List[str] = []
            sh.on_output(seen.append)
            assert await sh.send("cd /tmp && pwd") == "/tmp"
            await sh.close()
            assert "__PD_" not in "".join(seen)
            got = [ch async for ch in c.run("echo a", stream=True)]
            assert "".join(ch.data for ch in got) == "a\n" and got[0].raw == b"a\n"
            assert await pda.prune(project=name) == []
            await pda.destroy_container(c.name)
            assert not exists(c.name)
        finally:
            if exists(c.name):
                await c.shutdown()

    asyncio.run(main())


@pytest.mark.engine_only
def test_async_destroy_of_a_persistent_sandbox_needs_force(project: Path) -> None:
    async def main() -> None:
        c = await pda.create_new_container(persist=True, project_dir=str(project))
        with pytest.raises(pocketdock.InvalidValue):
            await pda.destroy_container(c.name)
        await pda.destroy_container(c.name, force=True)
        assert not exists(c.name)

    asyncio.run(main())
