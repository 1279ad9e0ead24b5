"""What happens at interpreter exit: every sandbox this process created and
did not shut down or keep is removed, so nothing leaks when the program
ends without closing its handles (garbage collection removes them earlier).
"""

from __future__ import annotations

import atexit
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .container import Container

_live: "weakref.WeakSet[Container]" = weakref.WeakSet()


def track(container: "Container") -> None:
    """Remove ``container`` at exit unless it is shut down or kept first."""
    if container.removed_on_drop():
        _live.add(container)


def forget(container: "Container") -> None:
    """``container`` needs nothing at exit."""
    _live.discard(container)


@atexit.register
def _remove_all() -> None:
    for c in list(_live):
        try:
            c.shutdown(force=True)
        except Exception:  # noqa: BLE001 - exit must go on for the others
            pass
