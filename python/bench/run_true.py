"""Warm ``run("true")`` p50 from Python beside the Rust library's, in the
same run on the engine POCKETDOCK_SOCKET names; the import time of
``pocketdock``; the wheel's size.

    python python/bench/run_true.py [RUST_BINARY] [WHEEL] [N]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time


def python_p50(n: int) -> float:
    import pocketdock

    with pocketdock.create_new_container(profile="minimal") as c:
        for _ in range(20):
            c.run("true")
        samples = []
        for _ in range(n):
            t = time.perf_counter()
            c.run("true")
            samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(samples)


def import_ms() -> float:
    # A fresh interpreter each time: the median of 5 cold imports.
    code = "import time; t = time.perf_counter(); import pocketdock; print((time.perf_counter() - t) * 1e3)"
    runs = [float(subprocess.check_output([sys.executable, "-c", code], text=True)) for _ in range(5)]
    return statistics.median(runs)


ROUNDS = 3


def _ms(xs: list) -> str:
    return ", ".join(f"{x:.3f}" for x in xs)


def main() -> None:
    rust = sys.argv[1] if len(sys.argv) > 1 else None
    wheel = sys.argv[2] if len(sys.argv) > 2 else None
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    engine = os.environ.get("POCKETDOCK_SOCKET", "(first found)")
    print(f"engine {engine}")
    # Rounds alternate the two sides, so that load drift hits both alike.
    pys, rss = [], []
    for _ in range(ROUNDS):
        pys.append(python_p50(n))
        if rust:
            rss.append(float(subprocess.check_output([rust, str(n)], text=True)))
    py = statistics.median(pys)
    print(f"python run('true') p50: {py:.3f} ms (median of {ROUNDS} rounds of {n} runs: {_ms(pys)})")
    if rust:
        rs = statistics.median(rss)
        print(f"rust   run('true') p50: {rs:.3f} ms ({_ms(rss)}); python - rust = {py - rs:+.3f} ms")
    print(f"import pocketdock: {import_ms():.1f} ms")
    if wheel:
        print(f"wheel {os.path.basename(wheel)}: {os.path.getsize(wheel) / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
