"""Sessions keep shell state; the kernel keeps variables."""

from __future__ import annotations

import asyncio
import os

import pytest

import pocketdock
import pocketdock.async_ as pda


def test_a_session_keeps_its_state(sb: pocketdock.Container) -> None:
    with sb.session() as sh:
        sh.send_and_wait("cd /tmp && export X=7")
        r = sh.send_and_wait("echo $X; pwd")
        assert r.stdout == "7\n/tmp\n" and r.ok
    assert not sh.is_alive()


def test_the_kernel_keeps_variables(sb: pocketdock.Container) -> None:
    k = sb.kernel()
    k.exec("x = [1, 2, 3]")
    r = k.exec("sum(x)")
    assert r.result == "6" and r.ok
    assert k.var("x") == [1, 2, 3]
    assert [v.name for v in k.vars()] == ["x"]
    bad = k.exec("1/0")
    assert not bad.ok and "ZeroDivisionError" in (bad.error or "")
    k.close()


# A pod's sessions are the exec's own shells (no helper to carry them).
CARRIED = os.environ.get("POCKETDOCK_BACKEND") != "kubernetes"


def test_a_named_session_is_held_by_the_sandbox_under_its_name(sb: pocketdock.Container) -> None:
    with sb.session(name="work") as sh:
        sh.send_and_wait("export X=7")
        if not CARRIED:
            # No name and no attach: the same name opens a shell of its own.
            assert sh.name is None
            with sb.session(name="work") as other:
                assert other.send_and_wait("echo \"[$X]\"").stdout == "[]\n"
            return
        assert sh.name == "work"
        # Held by one client at a time; a process fork's copy attaches by it.
        with pytest.raises(pocketdock.PocketdockError, match="attached to another client"):
            sb.session(name="work")
    with sb.session() as anon:
        assert anon.name and anon.name != "work"
    # Closed, the name starts a fresh shell.
    with sb.session(name="work") as sh:
        assert sh.send_and_wait("echo \"[$X]\"").stdout == "[]\n"


def test_an_async_session_takes_a_name(sb: pocketdock.Container) -> None:
    async def main() -> None:
        sh = await pda.AsyncContainer(sb).session(name="async-work")
        assert sh.name == ("async-work" if CARRIED else None)
        assert (await sh.send_and_wait("echo hi")).stdout == "hi\n"
        await sh.close()

    asyncio.run(main())
