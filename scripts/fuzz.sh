#!/usr/bin/env bash
# Fuzz the manifest front end (`validate`'s path: parse, then plan) for
# YAML and for KDL, each target for a bounded time, and exit non-zero when
# either finds a crash (a panic, a stack overflow, a position outside the
# text, or a run past libFuzzer's -timeout / -rss_limit_mb).
#
#   scripts/fuzz.sh            # 60 s per target (2 minutes of fuzzing)
#   scripts/fuzz.sh 300        # 300 s per target
#   FUZZ_SANITIZER=address scripts/fuzz.sh
#
# Only a stable toolchain is needed: cargo-fuzz asks for nightly flags,
# which RUSTC_BOOTSTRAP=1 allows on stable. cargo-fuzz is installed from
# crates.io when missing. The corpus grows in fuzz/corpus/ (seeded from
# fuzz/seeds/, the examples and the tests' manifests); a crash is written to
# fuzz/artifacts/<target>/ and becomes a regression test named after it.
set -euo pipefail

cd "$(dirname "$0")/.."
seconds="${1:-${FUZZ_SECONDS:-60}}"
sanitizer="${FUZZ_SANITIZER:-none}"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

status=0
for target in validate_yaml validate_kdl; do
    kind="${target#validate_}"
    corpus="fuzz/corpus/$target"
    mkdir -p "$corpus"
    cp -n fuzz/seeds/"$kind"/* "$corpus"/ 2>/dev/null || true
    for example in examples/*/*."$kind"; do
        cp -n "$example" "$corpus/example-$(basename "$(dirname "$example")").$kind" 2>/dev/null || true
    done
    echo "fuzz: $target for ${seconds}s" >&2
    if ! cargo fuzz run --sanitizer "$sanitizer" --debug-assertions "$target" "$corpus" -- \
        -max_total_time="$seconds" -dict=fuzz/manifest.dict -max_len=65536 \
        -timeout=10 -rss_limit_mb=2048 -print_final_stats=1; then
        echo "fuzz: $target found a crash: see fuzz/artifacts/$target/" >&2
        status=1
    fi
done
exit "$status"
