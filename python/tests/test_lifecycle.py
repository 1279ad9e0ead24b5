"""A with block removes its sandbox; create/shutdown cycles leak nothing."""

from __future__ import annotations

import gc
import os

import pytest

import pocketdock
from conftest import exists


def test_a_with_block_removes_its_container() -> None:
    with pocketdock.create_new_container(profile="minimal") as c:
        name = c.name
        assert exists(name)
        assert c.run("echo hi").stdout == "hi\n"
    assert not exists(name)


def test_a_with_block_left_by_an_exception_removes_its_container() -> None:
    with pytest.raises(RuntimeError, match="boom"):
        with pocketdock.create_new_container(profile="minimal") as c:
            name = c.name
            raise RuntimeError("boom")
    assert not exists(name)


def test_a_garbage_collected_handle_removes_its_container() -> None:
    c = pocketdock.create_new_container(profile="minimal")
    name = c.name
    del c
    gc.collect()
    assert not exists(name)


def test_a_kept_container_outlives_its_handle() -> None:
    c = pocketdock.create_new_container(profile="minimal")
    name = c.name
    c.keep()
    del c
    gc.collect()
    try:
        assert exists(name)
    finally:
        pocketdock.attach_container(name).shutdown(force=True)


def _rss_kib() -> int:
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


# What 200 cycles may add to the process's resident memory (allocator
# slack and the engine's connection pool); a leaked handle per cycle
# would pass it.
RSS_BOUND_KIB = 16 * 1024


# A pod takes seconds to start and remove: the cluster's run takes fewer.
CYCLES = int(os.environ.get("POCKETDOCK_TEST_CYCLES", "200"))


def test_200_create_shutdown_cycles_leave_nothing() -> None:
    names = []
    for _ in range(min(20, CYCLES)):  # warm up the runtime and the connection pool
        with pocketdock.create_new_container(profile="minimal") as c:
            names.append(c.name)
    before = _rss_kib()
    for _ in range(CYCLES):
        c = pocketdock.create_new_container(profile="minimal")
        names.append(c.name)
        assert c.shutdown() == "removed"
    gc.collect()
    grown = _rss_kib() - before
    assert grown < RSS_BOUND_KIB, f"resident memory grew by {grown} KiB"
    assert not any(exists(n) for n in names[::10] + names[-3:])


def test_the_backend_is_chosen_by_argument_then_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with pocketdock.create_new_container(profile="minimal", backend="engine") as c:
        assert c.run("echo on the engine").stdout == "on the engine\n"
    with pytest.raises(pocketdock.errors.InvalidValue, match="`engine` .* or `kubernetes`"):
        pocketdock.create_new_container(profile="minimal", backend="nomad")
    monkeypatch.setenv("POCKETDOCK_BACKEND", "nomad")
    with pytest.raises(pocketdock.errors.InvalidValue, match="POCKETDOCK_BACKEND"):
        pocketdock.create_new_container(profile="minimal")
    # The argument wins over the environment.
    with pocketdock.create_new_container(profile="minimal", backend="engine") as c:
        assert c.run("true").exit_code == 0
