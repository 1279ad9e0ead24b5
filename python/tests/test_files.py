"""Files: bytes stay bytes; push, pull, list."""

from __future__ import annotations

from pathlib import Path

import pytest

import pocketdock


def test_non_utf8_bytes_survive_a_round_trip(sb: pocketdock.Container, tmp_path: Path) -> None:
    data = bytes(range(256)) * 4 + b"\xff\xfe\xc3\x28"
    sb.write_file("/tmp/blob", data)
    assert sb.read_file("/tmp/blob") == data
    src = tmp_path / "in.bin"
    src.write_bytes(data)
    sb.push(str(src), "/tmp/pushed.bin")
    report = sb.pull("/tmp/pushed.bin", str(tmp_path / "out.bin"))
    assert report.files == 1 and report.bytes == len(data)
    assert (tmp_path / "out.bin").read_bytes() == data


def test_list_files_names_kinds(sb: pocketdock.Container) -> None:
    sb.run("mkdir -p /tmp/d/sub && echo hi > /tmp/d/f")
    kinds = {e.name: e.kind for e in sb.list_files("/tmp/d")}
    assert kinds == {"sub": "dir", "f": "file"}


def test_a_missing_path_is_its_own_exception(sb: pocketdock.Container) -> None:
    with pytest.raises(pocketdock.SandboxPathMissing):
        sb.read_file("/nope/none")


def test_a_read_only_container_writes_its_home_and_tmp_only() -> None:
    with pocketdock.create_new_container(read_only=True, tmp="16m") as c:
        mounts = c.run("awk '$2 == \"/tmp\" {print $3, $4}' /proc/mounts").stdout
        assert mounts.startswith("tmpfs") and "size=16384k" in mounts, mounts
        assert not c.run("touch /etc/x").ok
        c.write_file("/home/sandbox/note.txt", "kept")
        assert c.read_file("/home/sandbox/note.txt") == b"kept"
