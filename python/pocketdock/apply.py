"""``apply()``: run a manifest's job, as ``pocketdock apply`` does."""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, Mapping, Optional

from . import _native
from .results import ApplyOutcome, from_json

Event = Dict[str, Any]


def _var(value: Any) -> str:
    # The manifest's parser types a value as the command line's --var does.
    if isinstance(value, str):
        return value
    return json.dumps(value)


def apply(
    path: str,
    *,
    vars: Optional[Mapping[str, Any]] = None,
    on_event: Optional[Callable[[Event], None]] = None,
    project_dir: Optional[str] = None,
    keep: bool = False,
    parallel: int = 16,
    keep_going: bool = False,
) -> ApplyOutcome:
    """Apply the manifest at ``path`` and return how the job ended.

    ``on_event(event)`` gets each event (a dict, as ``apply -o json`` prints
    it) in order, on this thread. A manifest with mistakes raises
    ``ManifestError`` before anything runs, with each problem's line and
    column. Ctrl-C cancels the job, waits for its sandboxes to be removed,
    then raises ``KeyboardInterrupt``.
    """

    def deliver(line: str) -> None:
        if on_event is not None:
            on_event(json.loads(line))

    pairs = [(k, _var(v)) for k, v in (vars or {}).items()]
    done = _native.apply(
        os.fspath(path),
        project_dir or os.getcwd(),
        pairs,
        deliver if on_event is not None else None,
        keep,
        parallel,
        keep_going,
    )
    return from_json(ApplyOutcome, done)
