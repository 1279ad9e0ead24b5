"""Sessions (a shell whose state carries over) and the Python kernel (sync)."""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any, Callable, List, Optional, Type, Union

from . import _native
from .results import KernelResult, SessionResult, VarInfo, from_dict, from_json


class Session:
    """A persistent shell in a sandbox; ``with c.session() as sh:`` closes it."""

    def __init__(self, native: _native.Session) -> None:
        self._native = native

    def __enter__(self) -> "Session":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    @property
    def pid(self) -> int:
        """The shell's pid inside the sandbox."""
        return self._native.pid

    def is_alive(self) -> bool:
        """The shell is still running."""
        return self._native.is_alive()

    def send(self, command: str) -> None:
        """Write ``command`` and a newline to the shell; returns at once."""
        self._native.send(command)

    def write(self, data: Union[str, bytes]) -> None:
        """Write raw input to the shell (no newline added)."""
        self._native.write(data.encode() if isinstance(data, str) else bytes(data))

    def read(self, timeout: float = 0.0) -> str:
        """Output since the last read, after waiting ``timeout`` seconds for more."""
        return self._native.read(timeout)

    def send_and_wait(self, command: str, timeout: float = 30.0) -> SessionResult:
        """Run ``command`` in the shell, waiting up to ``timeout`` seconds."""
        return from_json(SessionResult, self._native.send_and_wait(command, timeout))

    def interrupt(self) -> None:
        """Ctrl-C to the running command."""
        self._native.interrupt()

    def on_output(self, callback: Callable[[bytes], None]) -> None:
        """Call ``callback(data)`` with every piece of output, on a background thread."""
        self._native.on_output(callback)

    def close(self) -> None:
        """End the shell (the sandbox stays)."""
        self._native.close()


class Kernel:
    """The sandbox's persistent Python kernel: variables live between calls."""

    def __init__(self, native: _native.Kernel) -> None:
        self._native = native

    def __enter__(self) -> "Kernel":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    @property
    def python_version(self) -> str:
        """The kernel's Python version."""
        return self._native.python_version

    def exec(self, code: str, timeout: Optional[float] = None) -> KernelResult:
        """Run ``code``; a traceback is the result's ``error``, not an exception."""
        return from_json(KernelResult, self._native.exec(code, timeout))

    def vars(self) -> List[VarInfo]:
        """The user-defined names, sorted."""
        return [from_dict(VarInfo, v) for v in json.loads(self._native.vars())]

    def var(self, name: str) -> Any:
        """The value of ``name`` (its ``repr`` when it is not JSON)."""
        return json.loads(self._native.var(name))

    def interrupt(self) -> None:
        """Interrupt running code; the namespace stays."""
        self._native.interrupt()

    def close(self) -> None:
        """End the kernel; its state is gone."""
        self._native.close()
