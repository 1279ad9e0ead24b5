"""The slowest tests of a gate run, from the JUnit files nextest wrote.

    python scripts/slowest.py N FILE.xml...

Prints the N slowest test cases, each with its time, the file it came
from (the pass: `podman`, `docker-exec`, `faults`, ...) and its suite
(the test binary). Needs junitparser (the tests' virtualenv has it).
"""

import pathlib
import sys

from junitparser import JUnitXml


def cases(path):
    xml = JUnitXml.fromfile(str(path))
    suites = [xml] if xml._tag == "testsuite" else list(xml)
    for suite in suites:
        for case in suite:
            yield case.time or 0.0, path.stem, suite.name, case.name


def main():
    n = int(sys.argv[1])
    rows = sorted(
        (c for f in sys.argv[2:] for c in cases(pathlib.Path(f))), reverse=True
    )
    total = sum(r[0] for r in rows)
    print(f"\n{n} slowest of {len(rows)} test runs ({total / 60:.1f} test-minutes in all):")
    for secs, run, suite, name in rows[:n]:
        print(f"  {secs:7.1f} s  {run:<14} {suite} {name}")


if __name__ == "__main__":
    main()
