#!/usr/bin/env bash
# fate-bundle.sh: pack the fate-j2k_cuda list into a folder that runs without
# the FFmpeg build tree (for the GPU machine, which has no FFmpeg sources):
# ffmpeg, ffprobe, tests/base64, fate-run.sh, the references, the codestreams,
# and the exact fate-run.sh command lines FFmpeg's make would run.
#   FF_SRC=... FF_BUILD=... scripts/fate-bundle.sh OUT_DIR
#   OUT_DIR/run.sh [cpu|cuda]     prints TEST lines and "N passed, N failed"
set -euo pipefail
out=$(realpath -m "$1")
FF_SRC=$(realpath "${FF_SRC:?}")
FF_BUILD=$(realpath "${FF_BUILD:?}")
submake() { env -u MAKEFLAGS -u MAKEOVERRIDES -u MFLAGS -u MAKELEVEL make -C "$FF_BUILD" "$@"; }

rm -rf "$out"
mkdir -p "$out/tests/data/fate" "$out/src/tests/ref/fate" "$out/src/tests/j2k_cuda"
submake tests/base64 >/dev/null
cp "$FF_BUILD/ffmpeg" "$FF_BUILD/ffprobe" "$out/"
cp "$FF_BUILD/tests/base64" "$out/tests/"
cp "$FF_SRC/tests/fate-run.sh" "$FF_SRC/tests/md5.sh" "$out/src/tests/"
cp "$FF_SRC"/tests/ref/fate/j2k_cuda-* "$out/src/tests/ref/fate/" 2>/dev/null || true
cp "$FF_SRC"/tests/j2k_cuda/* "$out/src/tests/j2k_cuda/"
for backend in cpu cuda; do
    submake -n -k SAMPLES= J2K_CUDA_BACKEND=$backend fate-j2k_cuda 2>/dev/null |
        grep -E 'fate-run\.sh ' | sed -e "s|$FF_SRC|@BUILD@/src|g" -e "s|$FF_BUILD|@BUILD@|g" > "$out/commands-$backend.sh"
done
cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the fate-j2k_cuda list as FFmpeg's `make fate-j2k_cuda` would.
#   run.sh [cpu|cuda]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
backend=${1:-cpu}
cd "$here"
passed=0; failed=0
while IFS= read -r line; do
    name=$(echo "$line" | sed -E 's/.*fate-run\.sh (fate-[^ ]+).*/\1/')
    echo "TEST    ${name#fate-}"
    if eval "${line//@BUILD@/$here}"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done < "commands-$backend.sh"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
RUN
chmod +x "$out/run.sh"
echo "fate bundle: $out ($(du -sh "$out" | cut -f1), $(wc -l < "$out/commands-cpu.sh") tests); run: $out/run.sh cuda"
