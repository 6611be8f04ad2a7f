#!/usr/bin/env bash
# install-test.sh: the installed tree as its users get it. `make install`
# into a temporary PREFIX; a program (tests/install/decode_frames.c) built
# with nothing but `pkg-config --cflags --libs libavformat libavcodec
# libavutil` from that tree decodes a j2k_cuda clip made by the installed
# ffmpeg, and its frame md5s must be those of ffmpeg's own framemd5. Then the
# tree is moved, and its ffmpeg must still start and load its own libraries.
# Prints "PASS name", "FAIL name: why" or "SKIP name: why" lines.
#   BUILD=build OUT=dir scripts/install-test.sh
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(realpath -m "${BUILD:-$top/build}")
OUT=$(realpath -m "${OUT:-$BUILD/test-install}")
BACKEND=${J2K_CUDA_BACKEND:-cpu}

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }

name=install-tree
for tool in cc pkg-config ldd; do
    command -v "$tool" >/dev/null 2>&1 || { skip $name "$tool is not installed"; skip install-relocated "$tool is not installed"; exit 0; }
done
rm -rf "$OUT"
mkdir -p "$OUT"
prefix=$OUT/prefix

check_install() {
    if ! env -u MAKELEVEL make -C "$top" install BUILD="$BUILD" PREFIX="$prefix" > "$OUT/install.log" 2>&1; then
        fail $name "make install PREFIX=$prefix failed: $(tail -n 3 "$OUT/install.log" | tr '\n' ' ')"; return 1
    fi
    local f
    for f in bin/ffmpeg bin/ffprobe bin/ffplay bin/j2kc lib/libavcodec.so lib/libavcodec.a lib/libavformat.so \
             lib/libavutil.a lib/libj2kcuda.a include/j2kc.h include/libavcodec/avcodec.h \
             lib/pkgconfig/libavcodec.pc lib/pkgconfig/j2kcuda.pc; do
        [ -e "$prefix/$f" ] || { fail $name "make install left out $f"; return 1; }
    done
    export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
    local pc
    for pc in libavformat libavcodec libavutil j2kcuda; do
        [ "$(pkg-config --variable=prefix $pc)" = "$prefix" ] ||
            { fail $name "$pc.pc: prefix is '$(pkg-config --variable=prefix $pc)', not $prefix"; return 1; }
    done
    # shellcheck disable=SC2046  # pkg-config's output is a list of flags
    if ! cc -O1 -o "$OUT/decode_frames" "$top/tests/install/decode_frames.c" \
            $(pkg-config --cflags --libs libavformat libavcodec libavutil) > "$OUT/cc.log" 2>&1; then
        fail $name "the program does not build from the installed tree: $(head -n 3 "$OUT/cc.log" | tr '\n' ' ')"; return 1
    fi
    local lib
    lib=$(ldd "$OUT/decode_frames" | awk '$1 ~ /^libavcodec\.so/ {print $3}')
    [ -n "$lib" ] && [ "$(dirname "$lib")" = "$prefix/lib" ] ||
        { fail $name "the program loads libavcodec from '${lib:-nowhere}', not $prefix/lib"; return 1; }

    local clip=$OUT/clip.mov
    if ! "$prefix/bin/ffmpeg" -nostdin -hide_banner -loglevel error -y -f lavfi -i testsrc2=s=96x64:r=10:d=0.8 \
            -pix_fmt yuv422p10le -c:v libj2kcuda -backend "$BACKEND" "$clip" 2> "$OUT/encode.log"; then
        fail $name "the installed ffmpeg does not encode: $(tail -n 2 "$OUT/encode.log" | tr '\n' ' ')"; return 1
    fi
    if ! "$OUT/decode_frames" "$clip" "$BACKEND" > "$OUT/program.txt" 2> "$OUT/program.log"; then
        fail $name "the program failed: $(tail -n 2 "$OUT/program.log" | tr '\n' ' ')"; return 1
    fi
    if ! "$prefix/bin/ffmpeg" -nostdin -hide_banner -loglevel error -c:v libj2kcuda -backend "$BACKEND" -i "$clip" \
            -map 0:v -c:v rawvideo -f framemd5 "$OUT/ffmpeg.md5" 2> "$OUT/framemd5.log"; then
        fail $name "ffmpeg's framemd5 failed: $(tail -n 2 "$OUT/framemd5.log" | tr '\n' ' ')"; return 1
    fi
    local frames expected
    frames=$(sed -n 's/^frames //p' "$OUT/program.txt")
    expected=$(grep -vc '^#' "$OUT/ffmpeg.md5")
    if [ "$frames" != "$expected" ] || [ "$expected" -lt 2 ]; then
        fail $name "the program decoded ${frames:-no} frames, ffmpeg $expected"; return 1
    fi
    if ! diff <(grep -v '^frames ' "$OUT/program.txt") <(grep -v '^#' "$OUT/ffmpeg.md5" | awk -F', *' '{print $NF}') \
            > "$OUT/md5.diff"; then
        fail $name "frame md5s differ from ffmpeg's framemd5 (see $OUT/md5.diff)"; return 1
    fi
    pass "$name: $frames frames, the same md5s as ffmpeg's framemd5"
}

check_relocated() {
    local moved=$OUT/moved
    mv "$prefix" "$moved"
    "$moved/bin/ffmpeg" -hide_banner -decoders > "$OUT/moved-decoders.txt" 2> "$OUT/moved.log"
    if ! grep -q ' libj2kcuda ' "$OUT/moved-decoders.txt"; then
        fail install-relocated "the moved ffmpeg does not start or lacks libj2kcuda: $(tail -n 2 "$OUT/moved.log" | tr '\n' ' ')"
        return
    fi
    local stray soname path
    stray=$(ldd "$moved/bin/ffmpeg" | awk '$1 ~ /^lib(av|sw)/ {print $1, $3}' | while read -r soname path; do
        case $(realpath -m -s "$path") in "$moved"/lib/*) ;; *) echo "$soname => $path" ;; esac
    done)
    [ -z "$stray" ] && pass install-relocated || fail install-relocated "libraries loaded from outside the tree: $stray"
}

if check_install; then
    check_relocated
else
    skip install-relocated "the installed tree did not pass"
fi
exit 0
