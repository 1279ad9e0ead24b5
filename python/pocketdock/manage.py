"""The spec's persistence management: list, destroy and prune sandboxes by
their labels, from any directory (sync; ``pocketdock.async_`` has them awaitable)."""

from __future__ import annotations

import json
import sys
from typing import List, Optional

from . import _native
from .errors import EngineError, InvalidValue, NotFound
from .results import ContainerSummary


def list_containers(
    project: Optional[str] = None,
    *,
    backend: Optional[str] = None,
    namespace: Optional[str] = None,
) -> List[ContainerSummary]:
    """pocketdock's sandboxes on this machine, in every state, sorted by
    name: those of ``project``, or of every project without one."""
    rows = json.loads(_native.list_sandboxes(project, backend, namespace))
    return [ContainerSummary.from_dict(r) for r in rows]


def destroy_container(
    name: str,
    *,
    force: bool = False,
    backend: Optional[str] = None,
    namespace: Optional[str] = None,
) -> None:
    """Remove sandbox ``name`` (running or not) with its record directory
    (``.pocketdock/instances/NAME/``; a ``data_dir`` given at creation stays).

    A persistent sandbox is destroyed only when confirmed: on a terminal the
    question is asked, as the spec says; without one (an agent, a script)
    nobody can answer, so ``force=True`` must say it, else ``InvalidValue``.
    """
    found = [c for c in list_containers(backend=backend, namespace=namespace) if c.name == name]
    if not found:
        raise NotFound(
            f"no pocketdock sandbox named {name!r}\n"
            "  hint: list_containers() (or `pocketdock list --all-projects`) shows them"
        )
    if found[0].persist and not force and not _confirmed(name):
        raise InvalidValue(
            f"{name!r} is a persistent sandbox: destroying it removes its files and its record\n"
            "  hint: pass force=True to destroy it without asking"
        )
    _native.destroy(name, backend, namespace)


def _confirmed(name: str) -> bool:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return False
    answer = input(f"Destroy the persistent sandbox {name!r} and its record? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def prune(
    project: Optional[str] = None,
    *,
    backend: Optional[str] = None,
    namespace: Optional[str] = None,
) -> List[str]:
    """Remove every stopped pocketdock sandbox (persistent ones too, with
    their records) of ``project``, or of all projects without one, as the
    spec says; running and paused ones stay. The names removed.

    Narrower than the command line's ``pocketdock prune``, which also
    removes abandoned running sandboxes and the warm sandboxes of pools
    whose project is gone.
    """
    removed, failures = _native.prune(project, backend, namespace)
    if failures:
        went = ", ".join(removed) or "none"
        raise EngineError(f"prune: {'; '.join(failures)} (removed: {went})")
    return removed
