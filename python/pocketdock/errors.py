"""Exceptions: one class per kind of library error, all under PocketdockError.

A manifest error (``ManifestError``) and a settings error carry the
diagnostics of the file: ``file``, ``line``, ``column``, ``message``, ``hint``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence


@dataclass(frozen=True)
class Diagnostic:
    """One problem in a manifest, at a line and column (both 1-based)."""

    file: str
    line: int
    column: int
    message: str
    hint: Optional[str] = None
    line_text: str = ""


class PocketdockError(Exception):
    """Base of every pocketdock error."""

    def __init__(self, message: str, diagnostics: Sequence[Diagnostic] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.diagnostics: List[Diagnostic] = list(diagnostics)

    @property
    def line(self) -> Optional[int]:
        """The first diagnostic's line, when there is one."""
        return self.diagnostics[0].line if self.diagnostics else None

    @property
    def column(self) -> Optional[int]:
        """The first diagnostic's column, when there is one."""
        return self.diagnostics[0].column if self.diagnostics else None

    @property
    def file(self) -> Optional[str]:
        """The first diagnostic's file, when there is one."""
        return self.diagnostics[0].file if self.diagnostics else None

    @property
    def hint(self) -> Optional[str]:
        """The first diagnostic's hint, when there is one."""
        return self.diagnostics[0].hint if self.diagnostics else None


class EngineUnreachable(PocketdockError):
    """No engine answered on any candidate socket."""


class EngineError(PocketdockError):
    """The engine answered a request with an error status."""


class TransportError(PocketdockError):
    """The connection to the engine failed mid-operation."""


class EngineStalled(PocketdockError):
    """The engine did not answer within the call's deadline."""


class ProtocolError(PocketdockError):
    """The engine sent something pocketdock could not read."""


class ContainerNotRunning(PocketdockError):
    """The sandbox exists but is not running: ``reboot()`` can fix it."""


class ContainerGone(PocketdockError):
    """The sandbox no longer exists."""


class NameInUse(PocketdockError):
    """A container of that name already exists."""


class ImageMissing(PocketdockError):
    """The image is not in the engine's store (``pocketdock build``)."""


class UnknownProfile(PocketdockError):
    """A profile pocketdock does not know."""


class BadProjectProfile(PocketdockError):
    """A project profile directory that cannot be a profile."""


class BuildError(PocketdockError):
    """An image build failed."""


class InvalidValue(PocketdockError, ValueError):
    """A value pocketdock cannot accept (a size, a port mapping, a language...)."""


class NotFound(PocketdockError, LookupError):
    """A name that is not one of those there are (a step of a job record...)."""


class PrivilegedPort(PocketdockError):
    """A host port a rootless engine may not bind."""


class LocalPathMissing(PocketdockError, FileNotFoundError):
    """A host path that does not exist."""


class SandboxPathMissing(PocketdockError, FileNotFoundError):
    """A path inside the sandbox that does not exist."""


class PathConflict(PocketdockError):
    """A copy would replace a file with a directory or the reverse."""


class UnsafeArchive(PocketdockError):
    """An archive entry would land outside its destination."""


class ShellMissing(PocketdockError):
    """A session needs bash and the image has none."""


class SessionClosed(PocketdockError):
    """The session's shell has ended."""


class KernelError(PocketdockError):
    """The sandbox's Python kernel cannot serve the call."""


class BadArchive(PocketdockError):
    """An image archive that cannot be imported."""


class Cancelled(PocketdockError):
    """The operation was cancelled."""


class SettingsError(PocketdockError):
    """A settings file has mistakes; ``diagnostics`` says where."""


class LocalIoError(PocketdockError, OSError):
    """A local I/O error."""


class ManifestError(PocketdockError):
    """A manifest that cannot be read or has mistakes; ``diagnostics`` says where."""


__all__ = [
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
