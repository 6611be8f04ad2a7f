#!/usr/bin/env bash
# One call on the GPU machine: the Gpu* core tests, compute-sanitizer
# (memcheck with leak checks, racecheck, initcheck, synccheck) over every test
# binary that holds Gpu* tests, FATE with -backend cuda from a FATE bundle, and
# the codec benchmark. Logs go to $OUT when set.
# usage: scripts/gpu-check.sh TESTS_DIR [FATE_BUNDLE_DIR]
# Environment (to split the work over several calls of the 10-minute device limit):
#   PARTS        what to run, default "tests sanitize fate bench"
#   SAN_TOOLS    default "memcheck racecheck initcheck synccheck"
#   SAN_TESTS    test binaries, default: every *_test in TESTS_DIR with Gpu* tests
#   SAN_FILTER   gtest filter, default Gpu* without the exhaustive Tier-1 sweeps
#                (their kernels run in the other GpuTier1 tests; 20x slower instrumented)
#   SAN_TIMEOUT  seconds per binary and tool, default 150
#   SAN_KERNELS  racecheck: name substrings of the kernels to instrument
#                (default: the kernels with shared memory, the only memory
#                racecheck checks; the others run at full speed); "all"
#                instruments every kernel
#   SAN_SPLIT    1: one process per test (not per binary), SAN_JOBS of them at
#                once (default: the cores), each with SAN_TIMEOUT; for the
#                pipeline-sized tests, which instrumented take minutes each
# A sanitizer line reads "tool test: ERROR SUMMARY: 0 errors" (or RACECHECK
# SUMMARY); "TIMEOUT" or "no summary" lines are failures to look at.
set -u
tests=${1:?usage: gpu-check.sh TESTS_DIR [FATE_BUNDLE_DIR]}
bench=$tests/../bench   # codec_bench, beside the tests in the build tree
bundle=${2:-}
out=${OUT:-/tmp}
parts=${PARTS:-tests sanitize fate bench}
want() { case " $parts " in *" $1 "*) return 0 ;; esac; return 1; }
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv,noheader
if want tests; then
    echo "== Gpu* tests"
    scripts/run-gpu-tests.sh "$tests" 2>&1 | tee "$out/gpu-tests.log" | tail -25
fi
if want sanitize; then
    san_tests=${SAN_TESTS:-}
    if [ -z "$san_tests" ]; then
        for t in "$tests"/*_test; do
            [ -x "$t" ] || continue
            "$t" --gtest_list_tests --gtest_filter='Gpu*:*/Gpu*' 2>/dev/null | grep -q '^ ' &&
                san_tests="$san_tests $(basename "$t")"
        done
    fi
    filter=${SAN_FILTER:-'Gpu*:*/Gpu*-*EverySizeOrientationAndStyle*:*DISABLED_*'}
    # One run: tool, binary, gtest filter, log name. Prints its verdict line;
    # exit 0 when clean.
    # Tests leave out their largest frames under a tool (tests/test_images.h).
    export J2KC_TEST_INSTRUMENTED=1
    san_run() {
        local tool=$1 t=$2 f=$3 log=$4 extra=() rc summary tests_line
        [ "$tool" = memcheck ] && extra=(--leak-check full)
        local kernels=${SAN_KERNELS:-dwt_ rate_ tier1_model tier1_code tier1_encode Scan} k
        if [ "$tool" = racecheck ] && [ "$kernels" != all ]; then
            for k in $kernels; do extra+=(--kernel-name "kns=$k"); done
        fi
        timeout "${SAN_TIMEOUT:-150}" compute-sanitizer --tool "$tool" "${extra[@]}" --print-limit 5 \
            --error-exitcode 99 "$tests/$t" --gtest_filter="$f" --gtest_brief=1 > "$log" 2>&1
        rc=$?
        summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)
        tests_line=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$log" | tr '\n' ' ')
        if [ $rc = 124 ]; then
            echo "$tool $t $f: TIMEOUT after ${SAN_TIMEOUT:-150}s"; return 1
        elif [ -z "$summary" ]; then
            echo "$tool $t $f: no summary (exit $rc): $(tail -n 2 "$log" | tr '\n' ' ')"; return 1
        fi
        echo "$tool $t $f: $summary; $tests_line(exit $rc)"
        [ $rc = 0 ]
    }
    san_bad=0
    for tool in ${SAN_TOOLS:-memcheck racecheck initcheck synccheck}; do
        echo "== compute-sanitizer $tool ($filter${SAN_SPLIT:+, one process a test})"
        if [ "${SAN_SPLIT:-0}" = 1 ]; then
            verdicts=$out/$tool-verdicts.txt
            : > "$verdicts"
            export -f san_run
            export tests SAN_TIMEOUT SAN_KERNELS
            for t in $san_tests; do
                # --gtest_list_tests: "Suite." lines, then "  test  # GetParam() = ..." lines.
                "$tests/$t" --gtest_list_tests --gtest_filter="$filter" 2>/dev/null |
                    awk -v t="$t" '/^[^ ]/ {s=$1} /^  / {print t, s $1}'
            done | xargs -P "${SAN_JOBS:-$(nproc)}" -L 1 bash -c '
                log=$0/$1-$2-$(echo "$3" | tr "/." "__").log
                san_run "$1" "$2" "$3" "$log" >> "$0/$1-verdicts.txt"' "$out" "$tool"
            sort "$verdicts"
            san_bad=$((san_bad + $(grep -c -v -E '(ERROR SUMMARY: 0 errors|RACECHECK SUMMARY: 0 hazards).*\(exit 0\)$' "$verdicts")))
            continue
        fi
        for t in $san_tests; do
            san_run "$tool" "$t" "$filter" "$out/$tool-$t.log" || san_bad=$((san_bad + 1))
        done
    done
    echo "compute-sanitizer: $san_bad run(s) not clean"
fi
if want fate && [ -n "$bundle" ]; then
    echo "== FATE, backend cuda"
    "$bundle/run.sh" cuda > "$out/fate-gpu.log" 2>&1
    tail -3 "$out/fate-gpu.log"
fi
if want bench; then
    echo "== codec_bench (H-class GPU, 16 threads)"
    "$bench/codec_bench" --frames 20 --threads 16 2>&1 | tee "$out/bench.log"
    J2KC_TIMING=1 "$bench/codec_bench" --frames 2 --threads 16 dci4k 2>&1 | grep "stage ms" | tail -2
fi
