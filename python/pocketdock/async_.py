"""The async API: the same names as ``pocketdock``, awaitable.

    c = await pocketdock.async_.create_new_container(profile="minimal")
    r = await c.run("echo hi")
    async for chunk in c.run("make", stream=True): ...

Each call waits on a thread of pocketdock's own (the GIL released, the
engine driven by the library's tokio runtime), so the event loop never
blocks and many runs proceed at once. Cancelling the task of a ``run``
kills the command's process tree.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import (
    Any,
    Awaitable,
    Callable,
    Dict,
    List,
    Literal,
    Optional,
    Sequence,
    Type,
    Union,
    cast,
    overload,
)

from . import _native, _options
from . import container as _sync
from . import manage as _manage
from . import pool as _sync_pool
from . import process as _sync_process
from ._async_parts import AsyncKernel, AsyncProcess, AsyncRunStream, AsyncSession, call
from ._options import Env, Size
from .apply import Event
from .apply import apply as _apply
from .errors import InvalidValue
from .results import ApplyOutcome, ContainerInfo, ContainerSummary, CopyReport, ExecResult, FileEntry


class AsyncContainer:
    """A sandbox container; ``async with`` removes it at the end of the block."""

    def __init__(self, sync: _sync.Container) -> None:
        self._sync = sync

    async def __aenter__(self) -> "AsyncContainer":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.shutdown()

    @property
    def name(self) -> str:
        """The container's name."""
        return self._sync.name

    @property
    def id(self) -> str:
        """The container's id."""
        return self._sync.id

    @overload
    def run(
        self,
        command: str,
        *,
        lang: str = ...,
        timeout: Optional[float] = ...,
        env: Env = ...,
        user: Optional[str] = ...,
        cwd: Optional[str] = ...,
        stdin: Union[str, bytes, None] = ...,
        max_output: Optional[Size] = ...,
        stream: Literal[False] = ...,
        detach: Literal[False] = ...,
    ) -> Awaitable[ExecResult]: ...

    @overload
    def run(
        self,
        command: str,
        *,
        lang: str = ...,
        timeout: Optional[float] = ...,
        env: Env = ...,
        user: Optional[str] = ...,
        cwd: Optional[str] = ...,
        stdin: Union[str, bytes, None] = ...,
        max_output: Optional[Size] = ...,
        stream: Literal[True],
        detach: Literal[False] = ...,
    ) -> AsyncRunStream: ...

    @overload
    def run(
        self,
        command: str,
        *,
        lang: str = ...,
        timeout: Optional[float] = ...,
        env: Env = ...,
        user: Optional[str] = ...,
        cwd: Optional[str] = ...,
        stdin: Union[str, bytes, None] = ...,
        max_output: Optional[Size] = ...,
        stream: Literal[False] = ...,
        detach: Literal[True],
        buffer_size: int = ...,
    ) -> Awaitable[AsyncProcess]: ...

    def run(
        self,
        command: str,
        *,
        stream: bool = False,
        detach: bool = False,
        buffer_size: int = _options.DEFAULT_BUFFER,
        **opts: Any,
    ) -> Union[Awaitable[ExecResult], AsyncRunStream, Awaitable[AsyncProcess]]:
        """As ``Container.run``: await it, or ``async for`` over ``stream=True``."""
        if stream:
            return AsyncRunStream(lambda: self._sync.run(command, stream=True, **opts))
        if detach:
            return self._detached(command, buffer_size, opts)
        return self._run(command, opts)

    async def _run(self, command: str, opts: Dict[str, Any]) -> ExecResult:
        token = _native.CancelToken()
        try:
            return await call(self._sync.run, command, cancel=token, **opts)
        except asyncio.CancelledError:
            token.cancel()
            raise

    async def _detached(self, command: str, buffer_size: int, opts: Dict[str, Any]) -> AsyncProcess:
        p = await call(self._sync.run, command, detach=True, buffer_size=buffer_size, **opts)
        return AsyncProcess(cast(_sync_process.Process, p))

    async def write_file(self, path: str, data: Union[str, bytes]) -> None:
        """Write ``data`` to ``path`` in the sandbox."""
        await call(self._sync.write_file, path, data)

    async def read_file(self, path: str) -> bytes:
        """The bytes of ``path`` in the sandbox."""
        return await call(self._sync.read_file, path)

    async def list_files(self, path: str = ".") -> List[FileEntry]:
        """The entries of a directory in the sandbox."""
        return await call(self._sync.list_files, path)

    async def push(self, src: str, dst: str) -> CopyReport:
        """Copy host → sandbox."""
        return await call(self._sync.push, src, dst)

    async def pull(self, src: str, dst: str) -> CopyReport:
        """Copy sandbox → host."""
        return await call(self._sync.pull, src, dst)

    async def info(self) -> ContainerInfo:
        """A fresh picture of the sandbox."""
        return await call(self._sync.info)

    async def snapshot(self, image: str) -> str:
        """Commit the sandbox as an image."""
        return await call(self._sync.snapshot, image)

    async def fork(
        self,
        n: int = 1,
        names: Optional[Sequence[str]] = None,
        *,
        processes: bool = False,
        fallback: bool = False,
    ) -> List["AsyncContainer"]:
        """As ``Container.fork``: copies with the files, and with ``processes``
        the running processes too (CRIU, rootful Podman)."""
        copies = await call(self._sync.fork, n, names, processes=processes, fallback=fallback)
        return [AsyncContainer(c) for c in copies]

    async def stop(self) -> None:
        """Stop the container."""
        await call(self._sync.stop)

    async def resume(self) -> None:
        """Start it again."""
        await call(self._sync.resume)

    async def reboot(self, fresh: bool = False) -> None:
        """Restart (``fresh``: from the image)."""
        await call(self._sync.reboot, fresh)

    async def shutdown(self, force: bool = False, remove: bool = False) -> str:
        """Remove the sandbox (stop a persistent one)."""
        return await call(self._sync.shutdown, force, remove)

    def keep(self) -> None:
        """Let the sandbox outlive this handle."""
        self._sync.keep()

    @overload
    def on_stdout(self, callback: Callable[[_sync.Container, str], None], raw: Literal[False] = ...) -> None: ...

    @overload
    def on_stdout(self, callback: Callable[[_sync.Container, bytes], None], raw: Literal[True]) -> None: ...

    def on_stdout(self, callback: Callable[[_sync.Container, Any], None], raw: bool = False) -> None:
        """As ``Container.on_stdout`` (the callback gets the sync handle)."""
        self._sync.on_stdout(callback, raw)  # type: ignore[call-overload]

    @overload
    def on_stderr(self, callback: Callable[[_sync.Container, str], None], raw: Literal[False] = ...) -> None: ...

    @overload
    def on_stderr(self, callback: Callable[[_sync.Container, bytes], None], raw: Literal[True]) -> None: ...

    def on_stderr(self, callback: Callable[[_sync.Container, Any], None], raw: bool = False) -> None:
        """As ``Container.on_stderr``."""
        self._sync.on_stderr(callback, raw)  # type: ignore[call-overload]

    async def shell(self, command: Optional[str] = "bash", *, user: Optional[str] = None, cwd: Optional[str] = None) -> int:
        """As ``Container.shell``: the terminal goes to ``command`` until it exits."""
        return await call(self._sync.shell, command, user=user, cwd=cwd)

    def on_exit(self, callback: Callable[[_sync.Container, int], None]) -> None:
        """As ``Container.on_exit``."""
        self._sync.on_exit(callback)

    async def session(
        self,
        *,
        tty: bool = False,
        user: Optional[str] = None,
        cwd: Optional[str] = None,
        env: Env = None,
        name: Optional[str] = None,
    ) -> AsyncSession:
        """Open a persistent shell (``name``: as ``Container.session``)."""
        return AsyncSession(await call(self._sync.session, tty=tty, user=user, cwd=cwd, env=env, name=name))

    async def kernel(self) -> AsyncKernel:
        """The sandbox's Python kernel."""
        return AsyncKernel(await call(self._sync.kernel))


async def create_new_container(profile: str = "minimal", **params: Any) -> AsyncContainer:
    """As ``pocketdock.create_new_container``."""
    return AsyncContainer(await call(_sync.create_new_container, profile, **params))


async def attach_container(
    name: str, *, backend: Optional[str] = None, namespace: Optional[str] = None
) -> AsyncContainer:
    """As ``pocketdock.attach_container``."""
    return AsyncContainer(
        await call(_sync.attach_container, name, backend=backend, namespace=namespace)
    )


async def resume_container(name: str) -> AsyncContainer:
    """As ``pocketdock.resume_container``."""
    return AsyncContainer(await call(_sync.resume_container, name))


async def list_containers(
    project: Optional[str] = None, *, backend: Optional[str] = None, namespace: Optional[str] = None
) -> List[ContainerSummary]:
    """As ``pocketdock.list_containers``."""
    return await call(_manage.list_containers, project, backend=backend, namespace=namespace)


async def destroy_container(
    name: str, *, force: bool = False, backend: Optional[str] = None, namespace: Optional[str] = None
) -> None:
    """As ``pocketdock.destroy_container`` (never asks: a persistent one needs ``force=True``)."""
    if not force:
        found = [c for c in await list_containers(backend=backend, namespace=namespace) if c.name == name]
        if found and found[0].persist:
            raise InvalidValue(
                f"{name!r} is a persistent sandbox: destroying it removes its files and its record\n"
                "  hint: pass force=True to destroy it"
            )
    await call(_manage.destroy_container, name, force=True, backend=backend, namespace=namespace)


async def prune(
    project: Optional[str] = None, *, backend: Optional[str] = None, namespace: Optional[str] = None
) -> List[str]:
    """As ``pocketdock.prune``: the stopped sandboxes are removed."""
    return await call(_manage.prune, project, backend=backend, namespace=namespace)


class AsyncContainerPool:
    """As ``pocketdock.ContainerPool``; ``async with`` starts and shuts it down."""

    def __init__(self, size: int, profile: str = "minimal", **spec: Any) -> None:
        self._sync = _sync_pool.ContainerPool(size, profile, **spec)

    async def __aenter__(self) -> "AsyncContainerPool":
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.shutdown()

    async def start(self) -> None:
        """Create the missing warm sandboxes."""
        await call(self._sync.start)

    async def acquire(self) -> AsyncContainer:
        """A warm sandbox."""
        return AsyncContainer(await call(self._sync.acquire))

    async def release(self, container: AsyncContainer) -> None:
        """Give it back: removed, a fresh one warmed in its place (as ``ContainerPool.release``)."""
        await call(self._sync.release, container._sync)

    async def shutdown(self) -> None:
        """Remove every sandbox of the pool."""
        await call(self._sync.shutdown)


async def apply(path: str, *, on_event: Optional[Callable[[Event], None]] = None, **kwargs: Any) -> ApplyOutcome:
    """As ``pocketdock.apply``; ``on_event`` runs on a worker thread, in order."""
    return await call(_apply, path, on_event=on_event, **kwargs)


Container = AsyncContainer
ContainerPool = AsyncContainerPool
SandboxPool = AsyncContainerPool
Process = AsyncProcess
RunStream = AsyncRunStream
Session = AsyncSession
Kernel = AsyncKernel

__all__ = [
    "AsyncContainer",
    "AsyncContainerPool",
    "AsyncKernel",
    "AsyncProcess",
    "AsyncRunStream",
    "AsyncSession",
    "Container",
    "ContainerPool",
    "Kernel",
    "Process",
    "RunStream",
    "SandboxPool",
    "Session",
    "apply",
    "attach_container",
    "create_new_container",
    "destroy_container",
    "list_containers",
    "prune",
    "resume_container",
]
