"""Arguments shared by the sync and async classes, checked and normalised once."""

from __future__ import annotations

import json
import os
import secrets
import shlex
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

Size = Union[int, str]
Env = Optional[Mapping[str, str]]

#: A run's timeout when neither the call nor the container sets one.
DEFAULT_TIMEOUT = 30.0
#: A detached process's buffer, bytes.
DEFAULT_BUFFER = 1 << 20
LANGS = ("sh", "bash", "python", "python3", "node", "js", "javascript")
_INTERPRETERS = {"sh": "sh -c", "bash": "bash -c", "python": "python3 -c", "python3": "python3 -c"}


def size(value: Optional[Size]) -> Optional[str]:
    """A byte size as the library parses it (``"1m"``, ``"256k"``, or an int)."""
    return None if value is None else str(value)


def env_pairs(env: Env) -> List[Tuple[str, str]]:
    """``env`` as (key, value) pairs."""
    return [(str(k), str(v)) for k, v in (env or {}).items()]


def timeout(value: Optional[float], default: float) -> Optional[float]:
    """The run's timeout in seconds: ``None`` is the container's, 0 is none."""
    if value is None:
        return default
    if value < 0:
        raise ValueError("timeout must be 0 (none) or a number of seconds")
    return None if value == 0 else float(value)


def stdin_file() -> str:
    """A fresh path inside the sandbox for a command's stdin."""
    return f"/tmp/.pocketdock-stdin-{secrets.token_hex(6)}"


def with_stdin(command: str, lang: str, path: str) -> str:
    """``command`` as an ``sh`` script whose stdin is ``path`` (removed once open)."""
    if lang not in _INTERPRETERS:
        raise ValueError(f"stdin is not supported with lang={lang!r}")
    inner = f"exec {_INTERPRETERS[lang]} {shlex.quote(command)}"
    return f"exec <{shlex.quote(path)}; rm -f {shlex.quote(path)}; {inner}"


def as_bytes(data: Union[str, bytes]) -> bytes:
    """Text as UTF-8, bytes as they are."""
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def request(
    *,
    profile: Optional[str] = None,
    image: Optional[str] = None,
    name: Optional[str] = None,
    project: Optional[str] = None,
    project_dir: Optional[str] = None,
    data_dir: Optional[str] = None,
    mem_limit: Optional[Size] = None,
    cpu_percent: Optional[int] = None,
    pids_limit: Optional[int] = None,
    network: Optional[bool] = None,
    ports: Optional[Mapping[int, int]] = None,
    persist: bool = False,
    volumes: Optional[Mapping[str, str]] = None,
    devices: Optional[Sequence[str]] = None,
    env: Env = None,
    workdir: Optional[str] = None,
    tmp: Optional[Size] = None,
    read_only: bool = False,
    disk: Optional[Size] = None,
    backend: Optional[str] = None,
    namespace: Optional[str] = None,
) -> str:
    """A sandbox request as the JSON the native layer reads."""
    req: Dict[str, Any] = {
        "profile": profile,
        "image": image,
        "name": name,
        "project": project,
        "project_dir": project_dir or os.getcwd(),
        "data_dir": os.path.abspath(data_dir) if data_dir else None,
        "mem_limit": size(mem_limit),
        "cpu_percent": cpu_percent,
        "pids_limit": pids_limit,
        "network": network,
        "ports": [f"{h}:{c}" for h, c in (ports or {}).items()],
        "persist": persist,
        "volumes": [f"{os.path.abspath(h) if h.startswith(('.', '/')) else h}:{c}" for h, c in (volumes or {}).items()],
        "devices": list(devices or []),
        "env": {str(k): str(v) for k, v in (env or {}).items()},
        "workdir": workdir,
        "backend": backend,
        "namespace": namespace,
        "tmp": tmp if tmp == "disk" else size(tmp),
        "read_only": read_only,
        "disk": size(disk),
    }
    return json.dumps({k: v for k, v in req.items() if v is not None})
