"""The pool hands out warm sandboxes; info, stop/resume, reboot, snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest

import pocketdock
from conftest import exists


def test_a_pool_hands_out_and_takes_back() -> None:
    with pocketdock.ContainerPool(size=2, profile="minimal") as pool:
        assert pool.available() == 2
        c = pool.acquire()
        assert c.run("echo pooled").stdout == "pooled\n"
        name = c.name
        pool.release(c)
    assert not exists(name)


@pytest.mark.engine_only  # a pod cannot be stopped and resumed
def test_info_stop_resume_reboot(sb: pocketdock.Container) -> None:
    info = sb.info()
    assert info.status == "running" and info.name == sb.name and info.raw["via"]
    sb.stop()
    assert sb.info().status != "running"
    with_error = None
    try:
        sb.run("true")
    except pocketdock.ContainerNotRunning as e:
        with_error = e
    assert with_error is not None
    sb.resume()
    # The writable layer survives a reboot (/tmp, a tmpfs, does not).
    sb.run("touch /home/sandbox/kept")
    sb.reboot()
    assert sb.run("ls /home/sandbox/kept").ok
    sb.reboot(fresh=True)
    assert not sb.run("ls /home/sandbox/kept").ok


@pytest.mark.engine_only  # a pod cannot be committed to an image
def test_a_snapshot_makes_an_image(sb: pocketdock.Container) -> None:
    # In the home directory: /tmp is a tmpfs, which a snapshot does not keep.
    sb.run("echo saved > /home/sandbox/s")
    tag = f"pocketdock-pytest-snap:{sb.name}"
    assert sb.snapshot(tag)
    try:
        with pocketdock.create_new_container(image=tag) as c:
            assert c.run("cat /home/sandbox/s").stdout == "saved\n"
    finally:
        assert pocketdock.remove_image(tag, force=True)


@pytest.mark.engine_only  # a pod does not outlive its job
def test_a_persistent_container_is_stopped_then_resumed(tmp_path: Path) -> None:
    c = pocketdock.create_new_container(profile="minimal", persist=True, project_dir=str(tmp_path))
    name = c.name
    try:
        c.run("echo kept > /tmp/kept")
        assert c.shutdown() == "stopped"
        assert (tmp_path / ".pocketdock" / "instances" / name).is_dir()
        again = pocketdock.resume_container(name)
        assert again.read_text("/tmp/kept") == "kept\n"
    finally:
        assert pocketdock.attach_container(name).shutdown(remove=True) == "removed"
    assert not exists(name)


@pytest.mark.engine_only  # a pod does not outlive its job
def test_removing_a_persistent_container_removes_its_record(tmp_path: Path) -> None:
    c = pocketdock.create_new_container(profile="minimal", persist=True, project_dir=str(tmp_path))
    record = tmp_path / ".pocketdock" / "instances" / c.name
    assert record.is_dir()
    assert c.shutdown(remove=True) == "removed"
    assert not record.exists()
