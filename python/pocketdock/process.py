"""Streamed runs and detached processes (sync)."""

from __future__ import annotations

import codecs
from typing import Callable, Dict, Iterator, List, Optional, Union

from . import _native
from .results import Chunk, ExecResult, Output, from_json


class Text:
    """Streamed bytes as text: UTF-8 decoded across chunks, per stream, so a
    character split between two chunks is whole in the second."""

    def __init__(self) -> None:
        self._decoders: Dict[str, "codecs.IncrementalDecoder"] = {}

    def _decoder(self, stream: str) -> "codecs.IncrementalDecoder":
        d = self._decoders.get(stream)
        if d is None:
            d = self._decoders[stream] = codecs.getincrementaldecoder("utf-8")("replace")
        return d

    def chunk(self, stream: str, raw: bytes) -> Chunk:
        """The chunk of ``raw`` bytes, its text decoded so far."""
        return Chunk(stream, self._decoder(stream).decode(raw), raw)

    def rest(self) -> List[Chunk]:
        """What is left at the end: bytes of an unfinished character, as U+FFFD."""
        ends = ((s, d.decode(b"", final=True)) for s, d in self._decoders.items())
        return [Chunk(s, t, b"") for s, t in ends if t]


def decoded(callback: Callable[[str], None]) -> Callable[[bytes], None]:
    """``callback`` given text instead of bytes, decoded across calls."""
    d = codecs.getincrementaldecoder("utf-8")("replace")

    def call(data: bytes) -> None:
        text = d.decode(data)
        if text:
            callback(text)

    return call


class RunStream:
    """A streamed run: iterate for ``Chunk``s; ``result`` once it has ended.

    Ctrl-C while waiting for a chunk kills the command's process tree.
    """

    def __init__(self, native: _native.Stream) -> None:
        self._native = native
        self._result: Optional[ExecResult] = None

    def __iter__(self) -> Iterator[Chunk]:
        text = Text()
        while True:
            got = self._native.next_chunk()
            if got is None:
                break
            yield text.chunk(*got)
        yield from text.rest()
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
