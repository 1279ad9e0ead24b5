#!/usr/bin/env bash
# Grading throughput: N generated unittest submissions (half passing, half
# failing) graded through `uses: grading-python` on a `recycle: true`
# sandbox, against a sequential `ENGINE run --rm --network none` loop
# running the same tests in the same image, side by side, in one run.
#
#   scripts/bench-grading.sh podman|docker [N=40] [JOBS=2] [PD=target/release/pocketdock]
#
# Prints both times, the ratio (loop / pocketdock: above 1 means
# pocketdock is faster), the runner's peak RSS and the engine processes
# (conmon, containerd-shim) left after the job. LOOP=0 skips the loop
# (for the 2,000-submission run); RECYCLE=false times the same job without
# recycling.
set -euo pipefail

engine=${1:?usage: bench-grading.sh podman|docker [N] [JOBS] [PD]}
n=${2:-40}
jobs=${3:-2}
pd=$(realpath "${4:-target/release/pocketdock}")
image=pocketdock/minimal
case $engine in
  podman) export POCKETDOCK_SOCKET=unix:///run/podman/podman.sock ;;
  docker) export POCKETDOCK_SOCKET=unix:///var/run/docker.sock ;;
  *) echo "engine: podman or docker" >&2; exit 2 ;;
esac

work=$(mktemp -d /tmp/pd-bench-grading-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tests"
cat > "$work/tests/test_fizz.py" <<'PY'
import unittest
from fizz import fizz

class FizzTest(unittest.TestCase):
    def test_numbers(self):
        self.assertEqual(fizz(1), "1")
        self.assertEqual(fizz(7), "7")

    def test_fizz(self):
        self.assertEqual(fizz(3), "Fizz")

    def test_buzz(self):
        self.assertEqual(fizz(10), "Buzz")

    def test_fizzbuzz(self):
        self.assertEqual(fizz(30), "FizzBuzz")
PY
students=()
for i in $(seq -w 0 $((n - 1))); do
  s=s$i
  students+=("$s")
  mkdir -p "$work/submissions/$s"
  if (( 10#$i % 2 == 0 )); then
    # Passing.
    printf 'def fizz(n):\n    return "Fizz" * (n %% 3 == 0) + "Buzz" * (n %% 5 == 0) or str(n)\n' \
      > "$work/submissions/$s/fizz.py"
  else
    # Failing: forgets Buzz.
    printf 'def fizz(n):\n    return "Fizz" if n %% 3 == 0 else str(n)\n' > "$work/submissions/$s/fizz.py"
  fi
done
list=$(IFS=,; echo "${students[*]}")
cat > "$work/job.yaml" <<YAML
version: 1
name: bench-grading
limits: { matrix: 10000, sandboxes: 10000, steps: 100000 }
sandboxes:
  grader:
    image: $image
    network: false
    recycle: ${RECYCLE:-true}
    matrix:
      student: "{{ vars.students }}"
steps:
  grade:
    sandbox: grader
    uses: grading-python
    with: { tests: tests, submission: "submissions/{{ matrix.student }}", timeout: 10 }
YAML

strays() { ps -eo comm= | grep -cE '^(conmon|containerd-shim)' || true; }

before=$(strays)
start=$(date +%s.%N)
cd "$work"
/usr/bin/time -f '%M' -o "$work/rss" \
  "$pd" apply job.yaml --var "students=[$list]" --jobs "$jobs" --keep-going --output ndjson > "$work/events" || true
pd_s=$(echo "$(date +%s.%N) - $start" | bc)
passed=$(grep -c '"verdict":"passed"\|verdict=passed' "$work/events" || true)
verdicts=$(grep -oE 'verdict: (passed|failed|timed_out) \(' "$work/events" | sort | uniq -c | tr -s ' \n(' ' ')
created=$(grep -o '"event":"sandbox_created"[^}]*"container":"[^"]*"' "$work/events" | grep -o 'pd-[^"]*' | sort -u | wc -l)
sleep 2
after=$(strays)
echo "engine=$engine submissions=$n jobs=$jobs"
echo "pocketdock: ${pd_s}s, verdicts: $verdicts, containers: $created, peak RSS: $(( $(cat "$work/rss") / 1024 )) MiB"
echo "engine processes: before=$before after=$after"
# Where the time goes: each part of the recipe's median and slowest step.
grep '"event":"step_finished"' "$work/events" \
  | sed -E 's/.*"step":"([^@"]*)@[^"]*".*"duration_ms":([0-9]+).*/\1 \2/' \
  | sort -k1,1 -k2,2n \
  | awk '{ d[$1] = d[$1] " " $2; n[$1]++ }
         END { for (s in d) { split(substr(d[s], 2), v, " ");
               printf "  %-18s n=%d median=%d ms max=%d ms\n", s, n[s], v[int((n[s] + 1) / 2)], v[n[s]] } }' \
  | sort

if [ "${LOOP:-1}" = 1 ]; then
  start=$(date +%s.%N)
  for s in "${students[@]}"; do
    "$engine" run --rm --network none \
      -v "$work/tests:/home/sandbox/grading/tests:ro" -v "$work/submissions/$s:/home/sandbox/grading/src:ro" \
      -w /home/sandbox/grading -e PYTHONPATH=src "$image" \
      timeout -s KILL 10 python3 -m unittest discover -s tests > /dev/null 2>&1 || true
  done
  loop_s=$(echo "$(date +%s.%N) - $start" | bc)
  echo "loop ($engine run --rm --network none): ${loop_s}s"
  echo "ratio (loop / pocketdock): $(echo "scale=2; $loop_s / $pd_s" | bc)x"
fi
