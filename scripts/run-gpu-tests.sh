#!/usr/bin/env bash
# Runs the GPU half of the GoogleTest suite (suites named Gpu*) from a build's
# tests/ folder, one binary after another, and prints one summary line.
# usage: scripts/run-gpu-tests.sh BUILD_TESTS_DIR [extra gtest args]
set -u
dir=${1:?usage: run-gpu-tests.sh BUILD_TESTS_DIR}
shift
passed=0 failed=0 skipped=0 bad=()
for t in "$dir"/*_test; do
    [ -x "$t" ] || continue
    out=$("$t" --gtest_filter='Gpu*:*/Gpu*' --gtest_brief=1 "$@" 2>&1)
    rc=$?
    echo "$out" | grep -E -A4 "FAILED|Failure|j2kc:|SKIPPED \[" | head -60
    p=$(echo "$out" | sed -n 's/.*PASSED  *\] \([0-9]*\) test.*/\1/p' | tail -1)
    s=$(echo "$out" | sed -n 's/.*SKIPPED *\] \([0-9]*\) test.*/\1/p' | tail -1)
    f=$(echo "$out" | sed -n 's/.*FAILED  *\] \([0-9]*\) test.*/\1/p' | tail -1)
    passed=$((passed + ${p:-0})); skipped=$((skipped + ${s:-0})); failed=$((failed + ${f:-0}))
    if [ $rc -ne 0 ]; then bad+=("$(basename "$t")"); [ -z "$f" ] && failed=$((failed + 1)); fi
done
[ ${#bad[@]} -gt 0 ] && echo "failing binaries: ${bad[*]}"
echo "gpu: $passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
