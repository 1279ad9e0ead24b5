"""Awaitable streams, processes, sessions and kernels, for ``pocketdock.async_``."""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, AsyncIterator, Callable, List, Literal, Optional, Type, TypeVar, Union, overload

from . import process as _sync_process
from . import session as _sync_session
from .results import Chunk, ExecResult, KernelResult, Output, SessionResult, VarInfo

T = TypeVar("T")

# Threads only wait (the GIL is released): many, so many runs overlap.
_EXECUTOR = ThreadPoolExecutor(max_workers=64, thread_name_prefix="pocketdock")


async def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_EXECUTOR, functools.partial(fn, *args, **kwargs))


class AsyncRunStream:
    """A streamed run: ``async for chunk in stream``; ``await stream.result()``."""

    def __init__(self, start: Callable[[], _sync_process.RunStream]) -> None:
        self._start = start
        self._sync: Optional[_sync_process.RunStream] = None

    async def _stream(self) -> _sync_process.RunStream:
        if self._sync is None:
            self._sync = await call(self._start)
        return self._sync

    def __aiter__(self) -> AsyncIterator[Chunk]:
        return self._chunks()

    async def _chunks(self) -> AsyncIterator[Chunk]:
        s = await self._stream()
        text = _sync_process.Text()
        try:
            while True:
                got = await call(s._native.next_chunk)
                if got is None:
                    for rest in text.rest():
                        yield rest
                    return
                yield text.chunk(*got)
        except asyncio.CancelledError:
            s.cancel()
            raise

    async def result(self) -> ExecResult:
        """The run's result, once it has ended."""
        s = await self._stream()
        return await call(lambda: s.result)

    def cancel(self) -> None:
        """Kill the command and everything it started."""
        if self._sync is not None:
            self._sync.cancel()


class AsyncProcess:
    """A detached command; ``read``/``peek`` return at once."""

    def __init__(self, sync: _sync_process.Process) -> None:
        self._sync = sync

    @property
    def id(self) -> str:
        """The exec id."""
        return self._sync.id

    def is_running(self) -> bool:
        """Still running."""
        return self._sync.is_running()

    def read(self) -> Output:
        """Drain the buffer."""
        return self._sync.read()

    def peek(self) -> Output:
        """The buffer, not drained."""
        return self._sync.peek()

    @property
    def buffer_size(self) -> int:
        """Bytes in the buffer."""
        return self._sync.buffer_size

    @property
    def buffer_overflow(self) -> bool:
        """Output was evicted unread."""
        return self._sync.buffer_overflow

    async def wait(self, timeout: Optional[float] = None) -> Optional[ExecResult]:
        """The result once it ends; ``None`` if still running after ``timeout``."""
        return await call(self._sync.wait, timeout)

    async def kill(self, signal: Union[str, int] = "TERM") -> None:
        """Signal the process and everything it started."""
        await call(self._sync.kill, signal)


class AsyncSession:
    """A persistent shell: ``async with await c.session() as sh``."""

    def __init__(self, sync: _sync_session.Session) -> None:
        self._sync = sync

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.close()

    @property
    def name(self) -> Optional[str]:
        """As ``Session.name``."""
        return self._sync.name

    def is_alive(self) -> bool:
        """The shell is running."""
        return self._sync.is_alive()

    async def send(self, command: str, timeout: float = 30.0) -> str:
        """Run a command in the shell: its output, as ``Session.send``."""
        return await call(self._sync.send, command, timeout)

    async def write(self, data: Union[str, bytes]) -> None:
        """Write raw input to the shell (no newline added)."""
        await call(self._sync.write, data)

    async def interactive(self) -> Optional[int]:
        """As ``Session.interactive``: the terminal goes to the shell."""
        return await call(self._sync.interactive)

    async def read(self, timeout: float = 0.0) -> str:
        """Output since the last read."""
        return await call(self._sync.read, timeout)

    async def send_and_wait(self, command: str, timeout: float = 30.0) -> SessionResult:
        """Run a command in the shell."""
        return await call(self._sync.send_and_wait, command, timeout)

    @overload
    def on_output(self, callback: Callable[[str], None], raw: Literal[False] = ...) -> None: ...

    @overload
    def on_output(self, callback: Callable[[bytes], None], raw: Literal[True]) -> None: ...

    def on_output(self, callback: Callable[[Any], None], raw: bool = False) -> None:
        """As ``Session.on_output``: text, or bytes with ``raw=True``."""
        self._sync.on_output(callback, raw)  # type: ignore[call-overload]

    async def close(self) -> None:
        """End the shell."""
        await call(self._sync.close)


class AsyncKernel:
    """The sandbox's persistent Python kernel."""

    def __init__(self, sync: _sync_session.Kernel) -> None:
        self._sync = sync

    async def exec(self, code: str, timeout: Optional[float] = None) -> KernelResult:
        """Run code in the kernel."""
        return await call(self._sync.exec, code, timeout)

    async def vars(self) -> List[VarInfo]:
        """The user-defined names."""
        return await call(self._sync.vars)

    async def var(self, name: str) -> Any:
        """The value of ``name``."""
        return await call(self._sync.var, name)

    async def close(self) -> None:
        """End the kernel."""
        await call(self._sync.close)
