"""The sync ``Container``: one sandbox, and what runs in it."""

from __future__ import annotations

import json
import warnings
import weakref
from types import TracebackType
from typing import Any, Callable, Dict, List, Literal, Optional, Sequence, Type, Union, overload

from . import _lifetime, _native, _options
from ._options import Env, Size
from .process import Process, RunStream, decoded
from .results import ContainerInfo, CopyReport, ExecResult, FileEntry, from_dict, from_json
from .session import Kernel, Session


class Container:
    """A sandbox container. Shut it down when done, or use ``with``: leaving
    the block (by an exception too) removes it. A forgotten handle's sandbox
    is removed when the handle is garbage-collected, or at interpreter exit.
    """

    def __init__(self, native: _native.Sandbox, timeout: float = _options.DEFAULT_TIMEOUT) -> None:
        self._native = native
        self._timeout = timeout
        _lifetime.track(self)

    def __enter__(self) -> "Container":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return f"<Container {self.name}>"

    @property
    def name(self) -> str:
        """The container's name."""
        return self._native.name

    @property
    def id(self) -> str:
        """The container's id."""
        return self._native.id

    @property
    def warnings(self) -> List[str]:
        """Limits the engine accepted but will not enforce, one line each."""
        return self._native.warnings

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
        cancel: Optional[_native.CancelToken] = ...,
    ) -> ExecResult: ...

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
    ) -> RunStream: ...

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
    ) -> Process: ...

    def run(
        self,
        command: str,
        *,
        lang: str = "sh",
        timeout: Optional[float] = None,
        env: Env = None,
        user: Optional[str] = None,
        cwd: Optional[str] = None,
        stdin: Union[str, bytes, None] = None,
        max_output: Optional[Size] = None,
        stream: bool = False,
        detach: bool = False,
        buffer_size: int = _options.DEFAULT_BUFFER,
        cancel: Optional[_native.CancelToken] = None,
    ) -> Union[ExecResult, RunStream, Process]:
        """Run ``command`` (``lang``: sh, bash, python, node).

        ``timeout`` in seconds (``None``: the container's, 0: none) kills the
        command and its process tree and sets ``timed_out``; ``max_output``
        caps stdout and stderr together (``"1m"``) and sets ``truncated``.
        ``stream=True`` returns a ``RunStream`` to iterate; ``detach=True`` a
        ``Process``. Ctrl-C kills the command's process tree and raises, as
        does ``cancel.cancel()`` from another thread.
        """
        if stdin is not None:
            path = _options.stdin_file()
            self.write_file(path, stdin)
            command, lang = _options.with_stdin(command, lang, path), "sh"
        pairs = _options.env_pairs(env)
        cap = _options.size(max_output)
        if detach:
            return Process(self._native.run_detached(command, lang, cap, pairs, cwd, user, buffer_size))
        limit = _options.timeout(timeout, self._timeout)
        if stream:
            return RunStream(self._native.run_stream(command, lang, limit, cap, pairs, cwd, user))
        return from_json(ExecResult, self._native.run(command, lang, limit, cap, pairs, cwd, user, cancel))

    def write_file(self, path: str, data: Union[str, bytes]) -> None:
        """Write ``data`` (text as UTF-8) to ``path`` in the sandbox."""
        self._native.write_file(path, _options.as_bytes(data))

    def read_file(self, path: str) -> bytes:
        """The bytes of ``path`` in the sandbox."""
        return self._native.read_file(path)

    def read_text(self, path: str, encoding: str = "utf-8") -> str:
        """``read_file`` decoded."""
        return self.read_file(path).decode(encoding)

    def list_files(self, path: str = ".") -> List[FileEntry]:
        """The entries of directory ``path`` in the sandbox."""
        return [from_dict(FileEntry, e) for e in json.loads(self._native.list_files(path))]

    def push(self, src: str, dst: str) -> CopyReport:
        """Copy a host file or directory into the sandbox."""
        return from_json(CopyReport, self._native.push(src, dst))

    def pull(self, src: str, dst: str) -> CopyReport:
        """Copy a file or directory out of the sandbox."""
        return from_json(CopyReport, self._native.pull(src, dst))

    def info(self) -> ContainerInfo:
        """A fresh picture of the sandbox's state."""
        return ContainerInfo.from_json(self._native.info())

    def snapshot(self, image: str) -> str:
        """Commit the sandbox as image ``image``; returns the image id."""
        return self._native.snapshot(image)

    def fork(
        self,
        n: int = 1,
        names: Optional[Sequence[str]] = None,
        *,
        processes: bool = False,
        fallback: bool = False,
    ) -> List["Container"]:
        """Copy the sandbox into ``n`` new running sandboxes (1 to 64), named
        ``NAME-fork-1`` to ``NAME-fork-N``, or one per name of ``names``.

        Each copy has the sandbox's files as they are now (not those on tmpfs
        mounts such as ``/tmp``), its limits, mounts and environment. Processes
        are not copied: each copy starts afresh, without the original's running
        commands, sessions or kernel state. The copies are removed like created
        sandboxes (``shutdown``, ``with``, or when their handles go); the image
        they were made from goes with the last one. Podman and Docker only; a
        persistent sandbox cannot be forked yet.

        With ``processes=True`` the running processes are copied too (CRIU, on
        rootful Podman with runc as its default runtime): each copy's kernel
        has the original's variables, and files on ``/tmp`` come along; an
        open ``Session``'s shell is not carried. Elsewhere it raises
        ``InvalidValue`` with the reason, or with ``fallback=True`` forks the
        files instead and warns (``RuntimeWarning``) with the reason.
        """
        if names is not None:
            names = list(names)
            if n not in (1, len(names)):
                raise ValueError(f"n={n} but {len(names)} names: one copy per name")
        copies, refused = self._native.fork(n, names, processes, fallback)
        if refused is not None:
            warnings.warn(f"{refused}; processes were not copied", RuntimeWarning, stacklevel=2)
        return [Container(s, self._timeout) for s in copies]

    def stop(self) -> None:
        """Stop the container (its filesystem stays)."""
        self._native.stop()

    def resume(self) -> None:
        """Start a stopped container again."""
        self._native.resume()

    def reboot(self, fresh: bool = False) -> None:
        """Restart; with ``fresh``, recreate from the image (filesystem too)."""
        self._native.reboot(fresh)

    def shutdown(self, force: bool = False, remove: bool = False) -> str:
        """Remove the sandbox (a persistent one is stopped unless ``remove``).

        Returns ``"removed"`` or ``"stopped"``.
        """
        done = self._native.shutdown(force, remove)
        _lifetime.forget(self)
        return done

    def keep(self) -> None:
        """Let the sandbox outlive this handle and the program."""
        self._native.keep()
        _lifetime.forget(self)

    def removed_on_drop(self) -> bool:
        """Whether dropping the last handle removes the sandbox."""
        return self._native.removed_on_drop()

    @overload
    def on_stdout(self, callback: Callable[["Container", str], None], raw: Literal[False] = ...) -> None: ...

    @overload
    def on_stdout(self, callback: Callable[["Container", bytes], None], raw: Literal[True]) -> None: ...

    def on_stdout(self, callback: Callable[["Container", Any], None], raw: bool = False) -> None:
        """Call ``callback(container, data)`` with stdout of streams and detached
        processes: ``data`` is text (UTF-8 decoded across calls), or the bytes
        as they came with ``raw=True``."""
        self._native.on_stdout(_bound(self, callback, raw))

    @overload
    def on_stderr(self, callback: Callable[["Container", str], None], raw: Literal[False] = ...) -> None: ...

    @overload
    def on_stderr(self, callback: Callable[["Container", bytes], None], raw: Literal[True]) -> None: ...

    def on_stderr(self, callback: Callable[["Container", Any], None], raw: bool = False) -> None:
        """As ``on_stdout``, with stderr."""
        self._native.on_stderr(_bound(self, callback, raw))

    def on_exit(self, callback: Callable[["Container", int], None]) -> None:
        """Call ``callback(container, exit_code)`` when a stream or detached process ends."""
        self._native.on_exit(_bound(self, callback))

    def shell(self, command: Optional[str] = "bash", *, user: Optional[str] = None, cwd: Optional[str] = None) -> int:
        """Hand this process's terminal to ``command`` (bash by default; a
        string runs through ``sh -c``) on a TTY with stdin attached, until it
        exits: for a person, not a program. The terminal is in raw mode
        meanwhile and its size is followed. Returns the command's exit code.
        """
        return self._native.shell(None if command in (None, "bash") else command, user, cwd)

    def session(
        self,
        *,
        tty: bool = False,
        user: Optional[str] = None,
        cwd: Optional[str] = None,
        env: Env = None,
        buffer_size: Optional[int] = None,
        name: Optional[str] = None,
    ) -> Session:
        """Open a persistent shell: ``with c.session() as sh: sh.send_and_wait("cd /tmp")``.

        ``name`` attaches to the sandbox's running session of that name, or
        starts it under that name; a process fork's copies hold their
        original's sessions under the same names (``Session.name``). Honoured
        where the sandbox's helper carries sessions (local engines, no TTY).
        """
        return Session(self._native.session(tty, user, cwd, _options.env_pairs(env), buffer_size, name))

    def kernel(self) -> Kernel:
        """The sandbox's persistent Python kernel (started on first use)."""
        return Kernel(self._native.kernel())


def _bound(container: Container, callback: Callable[[Container, Any], None], raw: bool = True) -> Callable[[Any], None]:
    # A weak reference: the callback must not keep its container alive.
    ref = weakref.ref(container)

    def call(data: Any) -> None:
        c = ref()
        if c is not None:
            callback(c, data)

    return call if raw else decoded(call)


def create_new_container(
    profile: str = "minimal",
    *,
    image: Optional[str] = None,
    name: Optional[str] = None,
    project: Optional[str] = None,
    project_dir: Optional[str] = None,
    data_dir: Optional[str] = None,
    mem_limit: Size = "256m",
    cpu_percent: int = 50,
    pids_limit: Optional[int] = None,
    network: Optional[bool] = None,
    ports: Optional[Dict[int, int]] = None,
    timeout: float = _options.DEFAULT_TIMEOUT,
    persist: bool = False,
    volumes: Optional[Dict[str, str]] = None,
    devices: Optional[List[str]] = None,
    env: Env = None,
    workdir: Optional[str] = None,
    tmp: Optional[Size] = None,
    read_only: bool = False,
    disk: Optional[Size] = None,
    backend: Optional[str] = None,
    namespace: Optional[str] = None,
) -> Container:
    """Create and start a sandbox; see the module docs for every argument."""
    req = _options.request(
        profile=profile, image=image, name=name, project=project, project_dir=project_dir,
        data_dir=data_dir, mem_limit=mem_limit, cpu_percent=cpu_percent, pids_limit=pids_limit,
        network=network, ports=ports, persist=persist, volumes=volumes, devices=devices,
        env=env, workdir=workdir, tmp=tmp, read_only=read_only, disk=disk,
        backend=backend, namespace=namespace,
    )
    return Container(_native.Sandbox.create(req), timeout)


def attach_container(
    name: str,
    timeout: float = _options.DEFAULT_TIMEOUT,
    *,
    backend: Optional[str] = None,
    namespace: Optional[str] = None,
) -> Container:
    """A handle on an existing sandbox by name; it removes nothing when dropped."""
    return Container(_native.Sandbox.attach(name, backend, namespace), timeout)


def resume_container(name: str, timeout: float = _options.DEFAULT_TIMEOUT) -> Container:
    """Start a stopped (persistent) sandbox again and return a handle on it."""
    c = attach_container(name, timeout)
    if c.info().status != "running":
        c.resume()
    return c
