#!/usr/bin/env bash
# One call on the GPU machine: the Gpu* core tests, compute-sanitizer
# memcheck and racecheck on the end-to-end GPU tests, FATE with -backend cuda
# from a FATE bundle, and the codec benchmark. Logs go to $OUT when set.
# usage: scripts/gpu-check.sh TESTS_DIR [FATE_BUNDLE_DIR]
set -u
tests=${1:?usage: gpu-check.sh TESTS_DIR [FATE_BUNDLE_DIR]}
bundle=${2:-}
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== Gpu* tests"
scripts/run-gpu-tests.sh "$tests" 2>&1 | tee "$out/gpu-tests.log" | tail -25
for tool in memcheck racecheck; do
    echo "== compute-sanitizer $tool (GpuApi, GpuTier2, GpuQuant)"
    for t in api_test gpu_tier2_test quant_test; do
        timeout 300 compute-sanitizer --tool $tool --print-limit 5 "$tests/$t" --gtest_filter='Gpu*' \
            --gtest_brief=1 > "$out/$tool-$t.log" 2>&1
        echo "$t: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/$tool-$t.log" | tail -1)"
    done
done
if [ -n "$bundle" ]; then
    echo "== FATE, backend cuda"
    "$bundle/run.sh" cuda > "$out/fate-gpu.log" 2>&1
    tail -3 "$out/fate-gpu.log"
fi
echo "== codec_bench (H-class GPU, 16 threads)"
"$tests/codec_bench" --frames 20 --threads 16 2>&1 | tee "$out/bench.log"
J2KC_TIMING=1 "$tests/codec_bench" --frames 2 --threads 16 dci4k 2>&1 | grep "stage ms" | tail -2
