"""``ContainerPool``: warm sandboxes handed out at once and taken back."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Optional, Type

from . import _lifetime, _native, _options
from .container import Container


class ContainerPool:
    """``size`` warm sandboxes of one spec (``profile`` and the other
    ``create_new_container`` arguments, without volumes, ports, devices or
    persistence). ``acquire`` takes one; ``release`` gives it back: it is
    removed and a fresh one warmed in its place.
    """

    def __init__(self, size: int, profile: str = "minimal", timeout: float = _options.DEFAULT_TIMEOUT, **spec: Any) -> None:
        self._native = _native.Pool(_options.request(profile=profile, **spec), size)
        self._timeout = timeout

    def __enter__(self) -> "ContainerPool":
        self.start()
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.shutdown()

    @property
    def size(self) -> int:
        """How many sandboxes it keeps warm."""
        return self._native.size

    def available(self) -> int:
        """Warm sandboxes ready to hand out."""
        return self._native.available()

    def start(self) -> None:
        """Create the missing warm sandboxes."""
        self._native.start()

    def acquire(self) -> Container:
        """A warm sandbox (a new one when none is warm)."""
        return Container(self._native.acquire(), self._timeout)

    def release(self, container: Container) -> None:
        """Give ``container`` back to the pool. The pool is whole again, but
        with a fresh warm sandbox made in its place: the used one is removed,
        never handed out again (its files and processes could reach the next
        user; the spec returns the same container)."""
        self._native.release(container._native)
        _lifetime.forget(container)

    def shutdown(self) -> None:
        """Remove every sandbox of the pool."""
        self._native.shutdown()


SandboxPool = ContainerPool
