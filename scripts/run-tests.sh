#!/usr/bin/env bash
# run-tests.sh: run every test suite and close with one summary line.
#   scripts/run-tests.sh all   core ctest, FATE fate-j2k_cuda (backend=cpu), ffmpeg interop checks,
#                              README's examples run as written, ffplay showing a j2k_cuda clip, a program built against `make install`
#   scripts/run-tests.sh gpu   Gpu* core tests and FATE fate-j2k_cuda-gpu (backend=cuda)
# Called by `make test` / `make test-gpu`, which set BUILD, CORE_DIR, FF_BUILD,
# FFMPEG, FFPROBE, FFPLAY and JOBS. Exit status is non-zero when anything failed.
set -uo pipefail

mode=${1:-all}
BUILD=${BUILD:-build}
CORE_DIR=${CORE_DIR:-$BUILD/core}
FF_BUILD=${FF_BUILD:-$BUILD/ffmpeg}
JOBS=${JOBS:-$(nproc)}
logs=$BUILD/test-logs
mkdir -p "$logs"
rm -f "$logs/summary.txt"
passed=0
failed=0
skipped=0
summary=()

note() { summary+=("$1"); }

# ctest: "NN% tests passed, F tests failed out of T"
run_ctest() {
    local log=$logs/ctest-$mode.txt
    if [ ! -f "$CORE_DIR/CTestTestfile.cmake" ]; then
        note "core tests: not built"; failed=$((failed + 1)); return
    fi
    if [ "$mode" = gpu ]; then
        (cd "$CORE_DIR" && GTEST_FILTER='Gpu*:*/Gpu*:*.Gpu*' ctest --output-on-failure -j "$JOBS") 2>&1 | tee "$log"
    else
        (cd "$CORE_DIR" && ctest --output-on-failure -j "$JOBS") 2>&1 | tee "$log"
    fi
    local line total fail
    line=$(grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1)
    if [ -z "$line" ]; then
        if grep -q 'No tests were found' "$log"; then
            note "core tests: none registered"; return
        fi
        note "core tests: ctest did not finish"; failed=$((failed + 1)); return
    fi
    total=$(echo "$line" | sed -E 's/.*out of ([0-9]+).*/\1/')
    fail=$(echo "$line" | sed -E 's/.* ([0-9]+) tests? failed.*/\1/')
    passed=$((passed + total - fail))
    failed=$((failed + fail))
    note "core tests: $((total - fail)) passed, $fail failed"
}

# FATE: one "TEST name" line per test; fate-run.sh prints "Test name failed." on a failure.
run_fate() {
    local target=$1 log=$logs/$1.txt
    if [ -f "$FF_BUILD/ffbuild/config.mak" ]; then
        env -u MAKEFLAGS -u MAKEOVERRIDES -u MFLAGS -u MAKELEVEL \
            make -C "$FF_BUILD" -k -j "$JOBS" SAMPLES= "$target" 2>&1 | tee "$log"
    elif [ -x "$BUILD/fate-bundle/run.sh" ]; then
        "$BUILD/fate-bundle/run.sh" "$([ "$target" = fate-j2k_cuda-gpu ] && echo cuda || echo cpu)" 2>&1 | tee "$log"
    else
        note "FATE: no FFmpeg build tree and no fate bundle"; failed=$((failed + 1)); return
    fi
    local total fail
    total=$(grep -cE '^TEST +j2k_cuda' "$log")
    fail=$(grep -cE '^Test j2k_cuda.* failed' "$log")
    if [ "$total" = 0 ]; then
        note "FATE $target: no test ran"; failed=$((failed + 1)); return
    fi
    passed=$((passed + total - fail))
    failed=$((failed + fail))
    note "FATE $target: $((total - fail)) passed, $fail failed"
}

# Scripts that print "PASS name", "FAIL name: why" or "SKIP name: why" lines.
# A script that ends without any such line counts as one failure.
run_script() {
    local title=$1 log=$logs/$2.txt
    shift 2
    "$@" 2>&1 | tee "$log"
    local p f s
    p=$(grep -c '^PASS ' "$log"); f=$(grep -c '^FAIL ' "$log"); s=$(grep -c '^SKIP ' "$log")
    if [ $((p + f + s)) = 0 ]; then
        note "$title: no result"; failed=$((failed + 1)); return
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    note "$title: $p passed, $f failed, $s skipped"
}

FFMPEG=${FFMPEG:-$BUILD/stage/bin/ffmpeg}
FFPROBE=${FFPROBE:-$BUILD/stage/bin/ffprobe}
FFPLAY=${FFPLAY:-$BUILD/stage/bin/ffplay}
# ctest's interop_ht runs FFmpeg's native decoder, from the core's build folder.
case $FFMPEG in */*) [ "${FFMPEG#/}" != "$FFMPEG" ] || FFMPEG=$PWD/$FFMPEG ;; esac
export FFMPEG FFPROBE FFPLAY
here=$(dirname "$0")

run_ctest
if [ "$mode" = gpu ]; then
    run_fate fate-j2k_cuda-gpu
else
    run_fate fate-j2k_cuda
    run_script "ffmpeg checks" ffmpeg-checks \
        env FFMPEG="$FFMPEG" FFPROBE="$FFPROBE" OUT="$BUILD/test-ffmpeg" "$here/ffmpeg-checks.sh"
    run_script "ffplay" player env FFMPEG="$FFMPEG" FFPLAY="$FFPLAY" OUT="$BUILD/test-player" "$here/player-test.sh"
    run_script "installed tree" install env BUILD="$BUILD" OUT="$BUILD/test-install" "$here/install-test.sh"
    run_script "README examples" readme env FFMPEG="$FFMPEG" FFPROBE="$FFPROBE" FFPLAY="$FFPLAY" \
        OUT="$BUILD/test-readme" "$here/readme-examples.sh" "$here/../README.md"
fi

echo
for line in "${summary[@]}"; do echo "  $line"; done
echo "$passed passed, $failed failed, $skipped skipped" | tee "$logs/summary.txt"
[ "$failed" = 0 ]
