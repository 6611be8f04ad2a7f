#!/usr/bin/env bash
# fate-bundle.sh: pack the fate-j2k_cuda list into a folder that runs without
# the FFmpeg build tree (for the GPU machine, which has no FFmpeg sources and
# none of Debian's libraries): ffmpeg and ffprobe of the staged install in
# bin/, the libraries they load in lib/ (FFmpeg's and, but for glibc, the
# system's: scripts/bundle-libs.sh), tests/base64, fate-run.sh, the
# references, the codestreams, and the exact fate-run.sh command lines
# FFmpeg's make would run. FATE runs $target_path/ffmpeg: there, two-line
# scripts start bin/ffmpeg, which finds ../lib by itself.
#   FF_SRC=... FF_BUILD=... STAGE=... scripts/fate-bundle.sh OUT_DIR
#   OUT_DIR/run.sh [cpu|cuda]     prints TEST lines and "N passed, N failed"
# OUT_DIR.tar.xz is the same folder in one file.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(realpath -m "$1")
FF_SRC=$(realpath "${FF_SRC:?}")
FF_BUILD=$(realpath "${FF_BUILD:?}")
STAGE=$(realpath "${STAGE:?}")
submake() { env -u MAKEFLAGS -u MAKEOVERRIDES -u MFLAGS -u MAKELEVEL make -C "$FF_BUILD" "$@"; }

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/tests/data/fate" "$out/src/tests/ref/fate" "$out/src/tests/j2k_cuda"
submake tests/base64 >/dev/null
for p in ffmpeg ffprobe; do
    cp "$STAGE/bin/$p" "$out/bin/"
    printf '#!/bin/sh\nexec "$(dirname "$0")/bin/%s" "$@"\n' "$p" > "$out/$p"
    chmod +x "$out/$p"
done
cp -P "$STAGE"/lib/lib*.so.[0-9]* "$out/lib/"
"$here/bundle-libs.sh" "$out/lib" "$out/bin/ffmpeg" "$out/bin/ffprobe"
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
"$out/ffmpeg" -hide_banner -decoders 2>/dev/null | grep ' libj2kcuda ' >/dev/null ||
    { echo "fate-bundle: $out/ffmpeg does not start or lacks libj2kcuda"; exit 1; }
# The system libraries make the folder large (ICU's data alone is 30 MB);
# compressed, it carries as one file: tar xf fate-bundle.tar.xz.
tar -C "$(dirname "$out")" -cf - "$(basename "$out")" | xz -T0 -6 > "$out.tar.xz"
echo "fate bundle: $out ($(du -sh "$out" | cut -f1), $(wc -l < "$out/commands-cpu.sh") tests; as one file:" \
     "$out.tar.xz, $(du -sh "$out.tar.xz" | cut -f1)); run: $out/run.sh cuda"
