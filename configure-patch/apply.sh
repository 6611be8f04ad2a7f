#!/usr/bin/env bash
# apply.sh: add j2k_cuda to an FFmpeg source tree (7.1, 8.x or 9.0).
#
#   configure-patch/apply.sh FFMPEG_SOURCE_DIR
#
# Applies the unified diffs beside this script (configure: --enable-libj2kcuda
# and the j2k_cuda_encoder/decoder entries; libavcodec/Makefile; allcodecs.c;
# tests/Makefile: the FATE include), then copies the wrapper sources from
# libavcodec/ and the FATE list from fate/ into the tree. Idempotent: a diff
# already in place is skipped and files are copied only when they differ, so
# FFmpeg's make rebuilds only what changed.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -f "$1/configure" ] || [ ! -d "$1/libavcodec" ]; then
    echo "usage: $0 FFMPEG_SOURCE_DIR" >&2
    exit 2
fi
src=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)

for p in "$here"/*.patch; do
    if patch -d "$src" -p1 -R --dry-run -s -f < "$p" >/dev/null 2>&1; then
        continue    # already applied
    fi
    if ! patch -d "$src" -p1 -N -s --fuzz=2 --no-backup-if-mismatch < "$p"; then
        echo "apply.sh: $(basename "$p") does not apply to $src" >&2
        exit 1
    fi
    echo "apply.sh: applied $(basename "$p")"
done

copy() {  # copy FILE to DEST only when the content differs
    if ! cmp -s "$1" "$2"; then
        mkdir -p "$(dirname "$2")"
        cp "$1" "$2"
        echo "apply.sh: updated ${2#"$src"/}"
    fi
}
for f in j2kcuda.c j2kcuda.h j2kcudaenc.c j2kcudadec.c; do
    copy "$top/libavcodec/$f" "$src/libavcodec/$f"
done
[ -e "$top/fate/j2k_cuda.mak" ] && copy "$top/fate/j2k_cuda.mak" "$src/tests/fate/j2k_cuda.mak"
for f in "$top"/fate/ref/*; do
    [ -e "$f" ] && copy "$f" "$src/tests/ref/fate/$(basename "$f")"
done
for f in "$top"/fate/data/*; do
    [ -e "$f" ] && copy "$f" "$src/tests/j2k_cuda/$(basename "$f")"
done
exit 0
