"""The slowest tests of a gate run, from the logs nextest wrote.

    python3 scripts/slowest.py N target/gate/*.log

Prints the N slowest test runs, each with its time, the pass it ran in
(the log's name: `podman`, `docker-exec`, `faults-podman`, ...) and its
test binary. A test that ran twice (a retry) counts its slowest try.
"""

import pathlib
import re
import sys

# `        PASS [  12.345s] ( 7/933) pocketdock::integration cache::x`
LINE = re.compile(r"^\s+(?:TRY \d+ )?(PASS|FAIL|FLAKY[^[]*)\s*\[\s*([0-9.]+)s\]\s+(?:\([^)]*\)\s+)?(\S+)\s+(\S+)\s*$")


def runs(path):
    best = {}
    for line in path.read_text(errors="replace").splitlines():
        m = LINE.match(line)
        if m:
            key = (m.group(3), m.group(4))
            best[key] = max(best.get(key, 0.0), float(m.group(2)))
    for (binary, test), secs in best.items():
        yield secs, path.stem, binary, test


def main():
    n = int(sys.argv[1])
    rows = sorted((r for f in sys.argv[2:] for r in runs(pathlib.Path(f))), reverse=True)
    total = sum(r[0] for r in rows)
    print(f"\n{n} slowest of {len(rows)} test runs ({total / 60:.1f} test-minutes in all):")
    for secs, run, binary, test in rows[:n]:
        print(f"  {secs:7.1f} s  {run:<15} {binary} {test}")


if __name__ == "__main__":
    main()
