#!/usr/bin/env bash
# apply.sh: add the libj2kcuda codecs to an FFmpeg source tree (8.x or 9.0).
#
#   configure-patch/apply.sh FFMPEG_SOURCE_DIR
#
# Applies the unified diffs beside this script (configure: --enable-libj2kcuda,
# the libj2kcuda encoder and decoder and their alias j2k_cuda, the name of
# the first releases; libavcodec/Makefile; allcodecs.c; tests/Makefile: the
# FATE include), then copies the wrapper sources from libavcodec/ and the
# FATE list from fate/ into the tree. Idempotent: a diff already in place is
# skipped and files are copied only when they differ, so FFmpeg's make
# rebuilds only what changed. A tree patched when the wrapper was named
# j2kcuda*.c is first taken back to FFmpeg's own lines.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -f "$1/configure" ] || [ ! -d "$1/libavcodec" ]; then
    echo "usage: $0 FFMPEG_SOURCE_DIR" >&2
    exit 2
fi
src=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)

# The lines the earlier patches added (they only added lines) and the files
# they copied; the diffs below then apply to FFmpeg's own text again.
if [ -f "$src/libavcodec/j2kcudadec.c" ]; then
    earlier=$(mktemp)
    cat > "$earlier" <<'LINES'
  --enable-libj2kcuda      enable JPEG 2000 de/encoding on NVIDIA GPUs via libj2kcuda [no]
    libj2kcuda
j2k_cuda_decoder_deps="libj2kcuda"
j2k_cuda_encoder_deps="libj2kcuda"
enabled libj2kcuda        && require_pkg_config libj2kcuda "j2kcuda >= 0.1.0" j2kc.h j2kc_version
OBJS-$(CONFIG_J2K_CUDA_DECODER)           += j2kcudadec.o j2kcuda.o
OBJS-$(CONFIG_J2K_CUDA_ENCODER)           += j2kcudaenc.o j2kcuda.o
/* preferred over the native decoder: the GPU when there is one, else the
 * CPU reference path, and the colour the file declares either way */
extern const FFCodec ff_j2k_cuda_decoder;
extern const FFCodec ff_j2k_cuda_encoder;
LINES
    for f in configure libavcodec/Makefile libavcodec/allcodecs.c; do
        grep -vxF -f "$earlier" "$src/$f" > "$src/$f.tmp" || true
        cat "$src/$f.tmp" > "$src/$f" && rm -f "$src/$f.tmp"
    done
    rm -f "$earlier" "$src"/libavcodec/j2kcuda.c "$src"/libavcodec/j2kcuda.h \
          "$src"/libavcodec/j2kcudadec.c "$src"/libavcodec/j2kcudaenc.c
    echo "apply.sh: took out the wrapper under its earlier names (j2kcuda*.c)"
fi

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
for f in libj2kcuda.c libj2kcuda.h libj2kcudaenc.c libj2kcudadec.c; do
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
