"""``python -m pocketdock`` and the ``pocketdock`` command a ``pip install``
gives: the pocketdock command line, shipped in the wheel as
``pocketdock/_bin/pocketdock`` and run in place of this process."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def binary() -> Path:
    """Where the wheel put the command line."""
    return Path(__file__).resolve().parent / "_bin" / "pocketdock"


def main() -> None:
    """Run the command line with this process's arguments; it does not return."""
    exe = binary()
    if not os.access(exe, os.X_OK):
        sys.exit(
            f"pocketdock: this installation has no command line ({exe} is missing)\n"
            "  hint: install a wheel built by scripts/test-python.sh, "
            "or the release tarball"
        )
    os.execv(exe, [str(exe), *sys.argv[1:]])


if __name__ == "__main__":
    main()
