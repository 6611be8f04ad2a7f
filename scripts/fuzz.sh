#!/usr/bin/env bash
# fuzz.sh: build the libFuzzer targets (tests/fuzz) with clang + ASan + UBSan
# and run each for SECONDS (default 60) on a seed corpus made from opj/grk/j2kc
# streams of every feature (tests/fuzz/make_corpus.py).
#
#   scripts/fuzz.sh [SECONDS]
#
# Environment: BUILD (default build/fuzz), TARGETS (default "fuzz_decoder fuzz_jp2"),
# JOBS (build parallelism), FUZZ_ARGS (extra libFuzzer flags), PARALLEL=1 to run
# the targets side by side instead of one after the other.
# The corpus grows in $BUILD/corpus/<target> across runs; crashes, leaks and
# timeouts land in $BUILD/artifacts/<target>/ and make the script fail.
# A longer run for a release: scripts/fuzz.sh 3600 (an hour per target).
set -euo pipefail

secs=${1:-60}
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$top/build/fuzz}
TARGETS=${TARGETS:-"fuzz_decoder fuzz_jp2"}
JOBS=${JOBS:-$(nproc)}
CC=${CC:-clang}
CXX=${CXX:-clang++}

if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char *, unsigned long) { return 0; }' |
        "$CXX" -x c++ -fsanitize=fuzzer,address,undefined -o /dev/null - 2>/dev/null; then
    echo "fuzz.sh: $CXX cannot link -fsanitize=fuzzer (install clang)" >&2
    exit 77
fi

if [ ! -f "$BUILD/build.ninja" ]; then
    cmake -S "$top" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
        -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" -DJ2KC_FUZZ=ON -DJ2KC_BUILD_TESTS=OFF
fi
# shellcheck disable=SC2086
ninja -C "$BUILD" -j "$JOBS" $TARGETS j2kc

# Seeds: regenerated only when missing (the working corpus keeps what the fuzzer found).
seed_root=$BUILD/seeds
if [ ! -d "$seed_root/decoder" ]; then
    python3 "$top/tests/fuzz/make_corpus.py" --out "$seed_root" --j2kc "$BUILD/cuda/j2kc"
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() {
    local t=$1 seed_dir corpus art log
    case $t in
    fuzz_jp2) seed_dir=$seed_root/jp2 ;;
    *) seed_dir=$seed_root/decoder ;;
    esac
    corpus=$BUILD/corpus/$t
    art=$BUILD/artifacts/$t/
    log=$BUILD/$t.log
    mkdir -p "$corpus" "$art"
    # shellcheck disable=SC2086
    "$BUILD/tests/fuzz/$t" "$corpus" "$seed_dir" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2560 \
        -malloc_limit_mb=1024 -max_len=262144 -artifact_prefix="$art" -print_final_stats=1 ${FUZZ_ARGS:-} \
        >"$log" 2>&1
}

status=0
if [ "${PARALLEL:-0}" = 1 ]; then
    pids=()
    for t in $TARGETS; do run_one "$t" & pids+=($!); done
    for p in "${pids[@]}"; do wait "$p" || status=1; done
else
    for t in $TARGETS; do run_one "$t" || status=1; done
fi

# Crashes, leaks, timeouts and out-of-memory inputs fail the run. Slow units
# (libFuzzer's slow-unit-*, over 10 s) are listed but do not: the instrumented
# build codes Tier-1 at -O0, so a loaded CI machine makes some.
for t in $TARGETS; do
    runs=$(grep -E '^stat::number_of_executed_units' "$BUILD/$t.log" | awk '{print $2}' | tail -n 1)
    found=$(find "$BUILD/artifacts/$t" -type f ! -name 'slow-unit-*' | wc -l)
    slow=$(find "$BUILD/artifacts/$t" -type f -name 'slow-unit-*' | wc -l)
    echo "$t: ${runs:-?} executions in ${secs}s, corpus $(find "$BUILD/corpus/$t" -type f | wc -l) files," \
         "$found artifact(s) in $BUILD/artifacts/$t ($slow slow unit(s)) (log $BUILD/$t.log)"
    [ "$found" = 0 ] || status=1
done
exit $status
