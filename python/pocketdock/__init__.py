"""pocketdock: run code in local Podman or Docker container sandboxes.

    with pocketdock.create_new_container(profile="minimal") as c:
        r = c.run("echo hi")

``pocketdock.async_`` has the same names, awaitable. The engine is the one
``POCKETDOCK_SOCKET`` names, else the first found (Podman, then Docker).
"""

from __future__ import annotations

from typing import Tuple

from . import _native
from ._options import DEFAULT_TIMEOUT
from .apply import apply
from .container import Container, attach_container, create_new_container, resume_container
from .errors import (
    Diagnostic,
    PocketdockError,
    EngineUnreachable,
    EngineError,
    TransportError,
    EngineStalled,
    ProtocolError,
    ContainerNotRunning,
    ContainerGone,
    NameInUse,
    ImageMissing,
    UnknownProfile,
    BadProjectProfile,
    BuildError,
    InvalidValue,
    NotFound,
    PrivilegedPort,
    LocalPathMissing,
    SandboxPathMissing,
    PathConflict,
    UnsafeArchive,
    ShellMissing,
    SessionClosed,
    KernelError,
    BadArchive,
    Cancelled,
    SettingsError,
    LocalIoError,
    ManifestError,
)
from .manage import destroy_container, list_containers, prune
from .pool import ContainerPool, SandboxPool
from .process import Process, RunStream
from .results import (
    ApplyOutcome,
    Chunk,
    ContainerInfo,
    ContainerSummary,
    CopyReport,
    ExecResult,
    FileEntry,
    KernelResult,
    Output,
    SessionResult,
    VarInfo,
)
from .session import Kernel, Session

__version__ = "0.1.0"

CancelToken = _native.CancelToken


def engine_info() -> Tuple[str, str]:
    """The engine in use: its kind (``podman`` or ``docker``) and socket."""
    return _native.engine_info()


def remove_image(reference: str, force: bool = False) -> bool:
    """Remove an image (a snapshot) from the engine; ``False`` when it was not there."""
    return _native.remove_image(reference, force)


__all__ = [
    "ApplyOutcome",
    "CancelToken",
    "Chunk",
    "Container",
    "ContainerInfo",
    "ContainerPool",
    "ContainerSummary",
    "CopyReport",
    "DEFAULT_TIMEOUT",
    "ExecResult",
    "FileEntry",
    "Kernel",
    "KernelResult",
    "Output",
    "Process",
    "RunStream",
    "SandboxPool",
    "Session",
    "SessionResult",
    "VarInfo",
    "apply",
    "attach_container",
    "create_new_container",
    "destroy_container",
    "engine_info",
    "list_containers",
    "prune",
    "remove_image",
    "resume_container",
    "Diagnostic",
    "PocketdockError",
    "EngineUnreachable",
    "EngineError",
    "TransportError",
    "EngineStalled",
    "ProtocolError",
    "ContainerNotRunning",
    "ContainerGone",
    "NameInUse",
    "ImageMissing",
    "UnknownProfile",
    "BadProjectProfile",
    "BuildError",
    "InvalidValue",
    "NotFound",
    "PrivilegedPort",
    "LocalPathMissing",
    "SandboxPathMissing",
    "PathConflict",
    "UnsafeArchive",
    "ShellMissing",
    "SessionClosed",
    "KernelError",
    "BadArchive",
    "Cancelled",
    "SettingsError",
    "LocalIoError",
    "ManifestError",
]
