"""fork: the copies have the files, not the processes, and go like created ones.

Backend-neutral: on the engines (a commit, then creates) and on a cluster's
pods (each copy made like the original, its home and /tmp copied in).
"""

from __future__ import annotations

import asyncio

import pytest

import pocketdock
import pocketdock.async_

from conftest import exists


def test_copies_have_the_files_and_start_afresh(sb: pocketdock.Container) -> None:
    sb.write_file("/home/sandbox/kept.txt", "kept\n")
    sb.run("sleep 300", detach=True)
    copies = sb.fork(2)
    try:
        assert [c.name for c in copies] == [f"{sb.name}-fork-1", f"{sb.name}-fork-2"]
        for c in copies:
            assert isinstance(c, pocketdock.Container)
            assert c.read_text("/home/sandbox/kept.txt") == "kept\n"
            assert "sleep 300" not in c.run("ps -eo args").stdout
        # They go their own way.
        copies[0].write_file("/home/sandbox/kept.txt", "changed\n")
        assert sb.read_text("/home/sandbox/kept.txt") == "kept\n"
    finally:
        for c in copies:
            assert c.shutdown() == "removed"
    assert not any(exists(c.name) for c in copies)


def test_named_copies_and_refusals(sb: pocketdock.Container) -> None:
    a, b = f"{sb.name}-a", f"{sb.name}-b"
    copies = sb.fork(names=[a, b])
    try:
        assert [c.name for c in copies] == [a, b]
        with pytest.raises(pocketdock.NameInUse):
            sb.fork(names=[a])
    finally:
        for c in copies:
            c.shutdown()
    with pytest.raises(ValueError, match="one copy per name"):
        sb.fork(3, names=[a])
    with pytest.raises(pocketdock.InvalidValue, match="1 to 64"):
        sb.fork(0)
    assert not exists(a) and not exists(f"{sb.name}-fork-1")


def test_the_async_fork_gives_async_containers() -> None:
    async def main() -> None:
        async with await pocketdock.async_.create_new_container(profile="minimal") as c:
            await c.write_file("/home/sandbox/note", "hi")
            (copy,) = await c.fork()
            async with copy:
                assert isinstance(copy, pocketdock.async_.AsyncContainer)
                assert copy.name == f"{c.name}-fork-1"
                assert await copy.read_file("/home/sandbox/note") == b"hi"
            assert not exists(copy.name)

    asyncio.run(main())


def test_a_process_fork_is_refused_here_or_falls_back_with_a_warning(sb: pocketdock.Container) -> None:
    # No host of the gate can restore copies: Docker cannot, this host's
    # `criu check` fails, a pod's processes cannot be checkpointed.
    with pytest.raises(pocketdock.InvalidValue, match="cannot fork the processes") as refused:
        sb.fork(processes=True)
    assert "hint:" in str(refused.value)
    assert not exists(f"{sb.name}-fork-1")
    sb.write_file("/home/sandbox/kept.txt", "kept\n")
    with pytest.warns(RuntimeWarning, match="processes were not copied"):
        (copy,) = sb.fork(processes=True, fallback=True)
    try:
        assert copy.read_text("/home/sandbox/kept.txt") == "kept\n"
    finally:
        copy.shutdown()

    async def main() -> None:
        with pytest.raises(pocketdock.InvalidValue, match="cannot fork the processes"):
            await pocketdock.async_.AsyncContainer(sb).fork(processes=True)

    asyncio.run(main())
