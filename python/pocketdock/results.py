"""Small typed results: what runs, files, sessions, kernels and jobs return.

Timeouts and OOM kills are fields of a result, not exceptions, as in the
Rust library.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, List, Optional, Type, TypeVar

T = TypeVar("T")


def from_json(cls: Type[T], text: str) -> T:
    """An instance of the dataclass ``cls`` from the library's JSON."""
    return from_dict(cls, json.loads(text))


def from_dict(cls: Type[T], data: Dict[str, Any]) -> T:
    """An instance of the dataclass ``cls``; keys it does not name are dropped."""
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class ExecResult:
    """The outcome of ``run()``."""

    stdout: str
    stderr: str
    exit_code: int
    ok: bool
    duration_ms: int
    timed_out: bool
    truncated: bool
    oom_killed: bool = False
    via: str = "exec"
    cpu_user_ms: Optional[int] = None
    cpu_system_ms: Optional[int] = None
    peak_memory_bytes: Optional[int] = None


@dataclass(frozen=True)
class Chunk:
    """One piece of streamed output: ``stream`` is ``"stdout"`` or ``"stderr"``.

    ``data`` is text, as the spec has it: UTF-8 decoded across chunks (a
    character split between two chunks is in the second's ``data``; invalid
    bytes become U+FFFD). ``raw`` is the chunk's bytes exactly as they came.
    """

    stream: str
    data: str
    raw: bytes = b""

    @property
    def text(self) -> str:
        """``data`` (kept for code written when ``data`` was bytes)."""
        return self.data


@dataclass(frozen=True)
class Output:
    """Output drained from (or peeked in) a detached process's buffer."""

    stdout: str
    stderr: str


@dataclass(frozen=True)
class FileEntry:
    """One entry of ``list_files()``; ``kind`` is file, dir, symlink or other."""

    name: str
    size: int
    mode: int
    kind: str
    mtime: int


@dataclass(frozen=True)
class CopyReport:
    """What ``push()`` or ``pull()`` copied."""

    files: int
    bytes: int


@dataclass(frozen=True)
class ContainerInfo:
    """A point-in-time picture of a sandbox (each ``info()`` polls the engine).

    ``raw`` holds every field the library reports (cgroup, limits, agent).
    """

    id: str
    name: str
    status: str
    image: str
    exit_code: Optional[int] = None
    oom_killed: bool = False
    profile: Optional[str] = None
    project: Optional[str] = None
    persist: bool = False
    created_at: Optional[datetime] = None
    uptime: Optional[timedelta] = None
    uptime_secs: Optional[int] = None
    memory_usage: Optional[int] = None
    memory_limit: Optional[int] = None
    memory_percent: Optional[float] = None
    cpu_percent: Optional[float] = None
    pids: Optional[int] = None
    network: bool = False
    ip_address: Optional[str] = None
    ports: List[str] = field(default_factory=list)
    disk_usage: Optional[int] = None
    processes: List[Dict[str, str]] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, text: str) -> "ContainerInfo":
        """From the library's JSON, every field kept in ``raw``."""
        data = json.loads(text)
        info = from_dict(cls, data)
        secs = data.get("uptime_secs")
        return ContainerInfo(
            **{
                **info.__dict__,
                "created_at": parse_time(data.get("created_at")),
                "uptime": None if secs is None else timedelta(seconds=secs),
                "raw": data,
            }
        )


@dataclass(frozen=True)
class ContainerSummary:
    """One sandbox of ``list_containers()``, as its labels describe it.

    ``status`` is the spec's ``"running"``, ``"paused"`` or ``"stopped"``;
    ``state`` the engine's own word (``exited``, ``created``, ...).
    """

    name: str
    id: str
    status: str
    state: str
    image: str
    profile: Optional[str]
    project: Optional[str]
    persist: bool
    created_at: Optional[datetime]

    @classmethod
    def from_dict(cls, row: Dict[str, Any]) -> "ContainerSummary":
        """From the library's summary of a sandbox."""
        state = str(row.get("state", ""))
        status = state if state in ("running", "paused") else "stopped"
        if state == "restarting":
            status = "running"
        created = row.get("created")
        return cls(
            name=row["name"],
            id=row["id"],
            status=status,
            state=state,
            image=row.get("image", ""),
            profile=row.get("profile"),
            project=row.get("project"),
            persist=bool(row.get("persist", False)),
            created_at=None if not created else datetime.fromtimestamp(created, timezone.utc),
        )


_RFC3339 = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$")


def parse_time(text: Optional[str]) -> Optional[datetime]:
    """An RFC 3339 time as the engines write it (nanoseconds, ``Z``) as an
    aware ``datetime``; ``None`` when there is none or it does not parse."""
    m = _RFC3339.match(text or "")
    if m is None:
        return None
    whole, frac, zone = m.groups()
    micros = (frac or ".0")[1:7].ljust(6, "0")
    zone = "+00:00" if zone == "Z" else zone
    return datetime.fromisoformat(f"{whole}.{micros}{zone}")


@dataclass(frozen=True)
class SessionResult:
    """What one ``send_and_wait()`` produced; exit code -1 when timed out."""

    output: str
    stdout: str
    stderr: str
    exit_code: int
    timed_out: bool
    truncated: bool

    @property
    def ok(self) -> bool:
        """Exit code 0."""
        return self.exit_code == 0


@dataclass(frozen=True)
class KernelResult:
    """What one kernel ``exec()`` produced; a traceback is ``error``."""

    output: str = ""
    stderr: str = ""
    error: Optional[str] = None
    result: Optional[str] = None
    vars: List[str] = field(default_factory=list)
    timed_out: bool = False
    truncated: bool = False
    duration_ms: int = 0

    @property
    def ok(self) -> bool:
        """No error."""
        return self.error is None


@dataclass(frozen=True)
class VarInfo:
    """One user-defined name in the kernel."""

    name: str
    type: str
    summary: str


@dataclass(frozen=True)
class ApplyOutcome:
    """How a job ended: ``status`` is succeeded, failed or cancelled."""

    status: str
    succeeded: int
    allowed: int
    failed: int
    skipped: int
    job_id: str
    record: str
    duration_s: float
    record_error: Optional[str] = None
    cached: int = 0
    cancelled: int = 0

    @property
    def ok(self) -> bool:
        """The job succeeded."""
        return self.status == "succeeded"
