#!/usr/bin/env bash
# Fuzz the manifest front end (`validate`'s path: parse, then plan) for
# YAML and for KDL, each target for a bounded time, and exit non-zero when
# either finds a crash (a panic, a stack overflow, a position outside the
# text, or a run past libFuzzer's -timeout / -rss_limit_mb).
#
#   scripts/fuzz.sh            # 60 s per target (2 minutes of fuzzing)
#   scripts/fuzz.sh 300        # 300 s per target
#   scripts/fuzz.sh cmin       # minimise what was found into fuzz/corpus/
#   scripts/fuzz.sh build      # build both targets only (the gate does it early)
#   FUZZ_SANITIZER=address scripts/fuzz.sh
#
# Only a stable toolchain is needed: cargo-fuzz asks for nightly flags,
# which RUSTC_BOOTSTRAP=1 allows on stable. cargo-fuzz is installed from
# crates.io when missing. Each run starts from the committed, minimised
# corpus (fuzz/corpus/<target>/), fuzz/seeds/ and the examples; what it
# finds new grows a working corpus in the machine's cache (scripts/cache.sh),
# outside the clone, which `scripts/fuzz.sh cmin` folds back into
# fuzz/corpus/ to commit. A crash is written to fuzz/artifacts/<target>/
# and becomes a regression test named after it. The integration tests
# replay the committed corpus without fuzzing (tests/integration/fuzz_corpus.rs).
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=scripts/cache.sh
source scripts/cache.sh
work=$POCKETDOCK_CACHE/fuzz-corpus
# The fuzz build's own target directory: instrumented, never shared.
build=(--target-dir "$POCKETDOCK_CACHE/target-fuzz")
seconds="${1:-${FUZZ_SECONDS:-60}}"
sanitizer="${FUZZ_SANITIZER:-none}"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

targets=(validate_yaml validate_kdl)

# cmin: the working corpus and the committed one, minimised into fuzz/corpus/.
if [[ $seconds == cmin ]]; then
    for target in "${targets[@]}"; do
        all=$(mktemp -d)
        cp fuzz/corpus/"$target"/* "$work/$target"/* "$all"/ 2>/dev/null || true
        rm -rf "fuzz/corpus/$target" && mkdir -p "fuzz/corpus/$target"
        cargo fuzz run "${build[@]}" --sanitizer "$sanitizer" --debug-assertions "$target" \
            "fuzz/corpus/$target" "$all" -- -merge=1 -dict=fuzz/manifest.dict -max_len=65536
        rm -rf "$all"
        echo "fuzz: fuzz/corpus/$target holds $(ls "fuzz/corpus/$target" | wc -l) inputs" >&2
    done
    exit 0
fi

# Both targets built first, then fuzzed side by side (one core each), each
# run's output shown when both are done.
cargo fuzz build "${build[@]}" --sanitizer "$sanitizer" --debug-assertions
[[ $seconds == build ]] && exit 0
status=0 logs=$(mktemp -d)
declare -A pid=()
for target in "${targets[@]}"; do
    kind="${target#validate_}"
    examples=$logs/examples-$kind
    mkdir -p "$examples"
    for example in examples/*/*."$kind"; do
        cp "$example" "$examples/example-$(basename "$(dirname "$example")").$kind" 2>/dev/null || true
    done
    mkdir -p "$work/$target" "fuzz/corpus/$target"
    echo "fuzz: $target for ${seconds}s" >&2
    cargo fuzz run "${build[@]}" --sanitizer "$sanitizer" --debug-assertions "$target" \
        "$work/$target" "fuzz/corpus/$target" "fuzz/seeds/$kind" "$examples" -- \
        -max_total_time="$seconds" -dict=fuzz/manifest.dict -max_len=65536 \
        -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >"$logs/$target.log" 2>&1 &
    pid[$target]=$!
done
for target in "${targets[@]}"; do
    if ! wait "${pid[$target]}"; then
        echo "fuzz: $target found a crash: see fuzz/artifacts/$target/" >&2
        status=1
    fi
    tail -n 25 "$logs/$target.log" >&2
done
rm -rf "$logs"
exit "$status"
