"""Greets from inside the sandbox, with a little proof of where it ran."""

import platform
import sys

greeting = sys.argv[1] if len(sys.argv) > 1 else "Hello"
print(f"{greeting} from {platform.node()} (Python {platform.python_version()})")
