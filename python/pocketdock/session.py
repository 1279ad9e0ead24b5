"""Sessions (a shell whose state carries over) and the Python kernel (sync)."""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any, Callable, List, Literal, Optional, Type, Union, overload

from . import _native
from .process import decoded
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

    @property
    def name(self) -> Optional[str]:
        """The name the sandbox holds this session by (a process fork's
        copies hold it under the same name: ``copy.session(name=...)``), or
        ``None`` for a shell the sandbox's helper does not carry (a TTY, a
        sandbox without the helper)."""
        return self._native.name

    def is_alive(self) -> bool:
        """The shell is still running."""
        return self._native.is_alive()

    def send(self, command: str, timeout: float = 30.0) -> str:
        """Run ``command`` in the shell and return its output once it ends:
        stdout and stderr in the order they came, without the trailing
        newlines (as ``$(...)`` gives it), so ``send("cd /tmp && pwd")`` is
        ``"/tmp"``. The exit code and the streams apart: ``send_and_wait``.
        Raises ``TimeoutError`` when it has not ended within ``timeout``
        seconds; it keeps running then (``read()`` gets the rest of its
        output, ``interrupt()`` stops it). Input for a program that reads
        it: ``write()``.
        """
        r = self.send_and_wait(command, timeout)
        if r.timed_out:
            raise TimeoutError(
                f"the command did not end within {timeout:g}s and is still running in the session\n"
                "  hint: read() gets the rest of its output, interrupt() stops it, "
                "or pass a longer timeout"
            )
        return r.output.rstrip("\n")

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

    @overload
    def on_output(self, callback: Callable[[str], None], raw: Literal[False] = ...) -> None: ...

    @overload
    def on_output(self, callback: Callable[[bytes], None], raw: Literal[True]) -> None: ...

    def on_output(self, callback: Callable[[Any], None], raw: bool = False) -> None:
        """Call ``callback(data)`` with every piece of output, on a background
        thread: text (UTF-8 decoded across calls), or bytes with ``raw=True``.
        pocketdock's own sentinel lines are never in it."""
        self._native.on_output(callback if raw else decoded(callback))

    def interactive(self) -> Optional[int]:
        """Hand this process's terminal to the session's shell (its state
        included) until the shell ends or Ctrl-] is pressed: ``None`` when
        handed back with Ctrl-] (the session stays usable), else the shell's
        exit code. Best with ``c.session(tty=True)``.
        """
        return self._native.interactive()

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
