"""Streamed runs and detached processes (sync)."""

from __future__ import annotations

from typing import Iterator, Optional, Union

from . import _native
from .results import Chunk, ExecResult, Output, from_json


class RunStream:
    """A streamed run: iterate for ``Chunk``s; ``result`` once it has ended.

    Ctrl-C while waiting for a chunk kills the command's process tree.
    """

    def __init__(self, native: _native.Stream) -> None:
        self._native = native
        self._result: Optional[ExecResult] = None

    def __iter__(self) -> Iterator[Chunk]:
        while True:
            got = self._native.next_chunk()
            if got is None:
                break
            yield Chunk(got[0], got[1])
        self._finish()

    def _finish(self) -> ExecResult:
        if self._result is None:
            self._result = from_json(ExecResult, self._native.finish())
        return self._result

    @property
    def result(self) -> ExecResult:
        """The run's result (waits for the end; its output went to the chunks)."""
        return self._finish()

    @property
    def exit_code(self) -> int:
        """The exit code (waits for the end)."""
        return self.result.exit_code

    @property
    def ok(self) -> bool:
        """Exit code 0 (waits for the end)."""
        return self.result.ok

    def cancel(self) -> None:
        """Kill the command and everything it started."""
        self._native.cancel()


class Process:
    """A command running in the background, its output in a ring buffer."""

    def __init__(self, native: _native.Process) -> None:
        self._native = native

    @property
    def id(self) -> str:
        """The engine's exec id (``agent:<pid>`` through the in-sandbox helper)."""
        return self._native.id

    def is_running(self) -> bool:
        """Still running."""
        return self._native.is_running()

    def read(self) -> Output:
        """Drain what has accumulated (non-blocking)."""
        return Output(*self._native.read())

    def peek(self) -> Output:
        """What has accumulated, not drained."""
        return Output(*self._native.peek())

    @property
    def buffer_size(self) -> int:
        """Bytes in the buffer."""
        return self._native.buffer_size

    @property
    def buffer_overflow(self) -> bool:
        """Output was evicted unread."""
        return self._native.buffer_overflow

    def wait(self, timeout: Optional[float] = None) -> Optional[ExecResult]:
        """The result once it ends; ``None`` if still running after ``timeout`` seconds."""
        done = self._native.wait(timeout)
        return None if done is None else from_json(ExecResult, done)

    def kill(self, signal: Union[str, int] = "TERM") -> None:
        """Send ``signal`` to the process and everything it started."""
        self._native.kill(str(signal))
