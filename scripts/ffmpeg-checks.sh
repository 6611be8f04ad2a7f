#!/usr/bin/env bash
# ffmpeg-checks.sh: end-to-end checks of the built ffmpeg/ffprobe with
# j2k_cuda against the peers (FFmpeg's native jpeg2000 decoder, opj_*,
# grk_compress). Prints one "PASS name", "FAIL name: why" or "SKIP name: why"
# line per check. Backend: J2K_CUDA_BACKEND (default cpu).
#   FFMPEG=build/ffmpeg/ffmpeg FFPROBE=build/ffmpeg/ffprobe OUT=dir scripts/ffmpeg-checks.sh
set -uo pipefail

FFMPEG=${FFMPEG:-build/ffmpeg/ffmpeg}
FFPROBE=${FFPROBE:-build/ffmpeg/ffprobe}
OUT=${OUT:-build/test-ffmpeg}
BACKEND=${J2K_CUDA_BACKEND:-cpu}
DCI_FRAMES=${DCI_FRAMES:-2}
mkdir -p "$OUT"
rm -f "$OUT"/*
ff() { "$FFMPEG" -nostdin -hide_banner -loglevel error -y "$@"; }

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }
have() { command -v "$1" >/dev/null 2>&1; }
has_gpu() { have nvidia-smi && nvidia-smi -L >/dev/null 2>&1; }

# The frame md5s of a decode, without the header lines.
frame_md5s() { grep -v '^#' "$1" | awk -F, '{print $NF}'; }

check_start() {
    if ! "$FFMPEG" -hide_banner -version >/dev/null 2>&1; then
        fail start "ffmpeg does not run"; return
    fi
    if ldd "$FFMPEG" 2>/dev/null | grep -q 'libcuda\.'; then
        fail start "ffmpeg links libcuda.so (must load it lazily)"; return
    fi
    pass start
}

check_help() {
    local h
    h=$("$FFMPEG" -hide_banner -h encoder=j2k_cuda 2>&1)
    for opt in profile lossless max_frame_bytes levels cblk_width precinct_width prog_order \
               layers tile_width tile_parts tlm plt sop eph gpu backend dci_4k; do
        echo "$h" | grep -q -- "$opt" || { fail help-encoder "option $opt missing"; return; }
    done
    pass help-encoder
    h=$("$FFMPEG" -hide_banner -h decoder=j2k_cuda 2>&1)
    echo "$h" | grep -q backend && echo "$h" | grep -q layers && pass help-decoder ||
        fail help-decoder "options missing"
}

check_no_device() {
    if has_gpu; then skip no-device "a GPU is present"; return; fi
    local err
    err=$("$FFMPEG" -nostdin -hide_banner -f lavfi -i testsrc2=s=64x64:d=0.04 -c:v j2k_cuda -f null - 2>&1)
    if [ $? = 0 ]; then fail no-device "encoding on CUDA without a GPU succeeded"; return; fi
    if echo "$err" | grep -qi 'GPU'; then pass no-device; else fail no-device "no clear message: $err"; fi
}

# The issue's DCI 4K command, then ffprobe and opj_decompress on an extracted frame.
check_dci_4k() {
    local mxf=$OUT/dci4k.mxf
    if ! ff -f lavfi -i testsrc2=s=4096x2160:d=1 -frames:v "$DCI_FRAMES" -pix_fmt xyz12le \
            -c:v j2k_cuda -profile:v dci_4k -backend "$BACKEND" "$mxf"; then
        fail dci-4k-encode "ffmpeg failed"; return
    fi
    pass dci-4k-encode
    local probe
    probe=$("$FFPROBE" -v error -select_streams v:0 -show_entries stream=codec_name,width,height,pix_fmt,profile \
            -of default=nw=1 "$mxf")
    if echo "$probe" | grep -q 'codec_name=jpeg2000' && echo "$probe" | grep -q 'width=4096' &&
       echo "$probe" | grep -q 'height=2160'; then
        pass dci-4k-ffprobe
    else
        fail dci-4k-ffprobe "$(echo "$probe" | tr '\n' ' ')"
    fi
    ff -i "$mxf" -map 0:v -c copy -frames:v 1 -f image2 -update 1 "$OUT/dci4k.j2c" || { fail dci-4k-extract "ffmpeg -c copy failed"; return; }
    local size
    size=$(stat -c %s "$OUT/dci4k.j2c")
    # DCI cap at 24 fps: 250 Mbit/s = 1302083 bytes a frame.
    if [ "$size" -le 1302083 ]; then pass dci-4k-cap; else fail dci-4k-cap "$size bytes > 1302083"; fi
    if have opj_decompress; then
        if opj_decompress -i "$OUT/dci4k.j2c" -o "$OUT/dci4k.pgx" >"$OUT/opj.log" 2>&1; then
            pass dci-4k-opj_decompress
        else
            fail dci-4k-opj_decompress "$(tail -n 2 "$OUT/opj.log" | tr '\n' ' ')"
        fi
    else
        skip dci-4k-opj_decompress "opj_decompress not installed"
    fi
    # Our decoder against FFmpeg's native one on the same lossy codestream.
    local psnr
    psnr=$("$FFMPEG" -nostdin -hide_banner -c:v jpeg2000 -i "$OUT/dci4k.j2c" \
           -c:v j2k_cuda -backend "$BACKEND" -i "$OUT/dci4k.j2c" \
           -lavfi '[0:v]format=rgb48le[a];[1:v]format=rgb48le[b];[a][b]psnr' -f null - 2>&1 |
           sed -nE 's/.*PSNR .* average:([0-9.inf]+).*/\1/p' | tail -n 1)
    case "$psnr" in
        inf) pass dci-4k-vs-native ;;
        "") fail dci-4k-vs-native "no PSNR" ;;
        *) if awk "BEGIN{exit !($psnr >= 50)}"; then pass dci-4k-vs-native; else fail dci-4k-vs-native "PSNR $psnr dB"; fi ;;
    esac
}

# Lossless archive in MKV: j2k_cuda, the native decoder and opj_decompress give back the source.
check_lossless() {
    local src=testsrc2=s=127x95:d=0.12,format=rgb48le
    ff -f lavfi -i "$src" -vf format=rgb48le -f framemd5 "$OUT/src.md5" || { fail lossless "source"; return; }
    ff -f lavfi -i "$src" -vf format=rgb48le -c:v j2k_cuda -backend "$BACKEND" -lossless 1 "$OUT/ll.mkv" ||
        { fail lossless-encode "ffmpeg failed"; return; }
    ff -c:v j2k_cuda -backend "$BACKEND" -i "$OUT/ll.mkv" -pix_fmt rgb48le -f framemd5 "$OUT/ll-ours.md5" &&
        [ "$(frame_md5s "$OUT/src.md5")" = "$(frame_md5s "$OUT/ll-ours.md5")" ] &&
        pass lossless-j2k_cuda || fail lossless-j2k_cuda "decoded frames differ from the source"
    ff -c:v jpeg2000 -i "$OUT/ll.mkv" -pix_fmt rgb48le -f framemd5 "$OUT/ll-native.md5" &&
        [ "$(frame_md5s "$OUT/src.md5")" = "$(frame_md5s "$OUT/ll-native.md5")" ] &&
        pass lossless-native-decoder || fail lossless-native-decoder "FFmpeg's jpeg2000 decoder disagrees"
}

# Streams of other encoders decoded by j2k_cuda, checked against FFmpeg's native decoder.
check_peer() {  # name file
    local name=$1 file=$2
    ff -c:v jpeg2000 -i "$file" -pix_fmt rgb48le -f framemd5 "$OUT/$name-native.md5" || { skip "$name" "native decoder failed"; return; }
    ff -c:v j2k_cuda -backend "$BACKEND" -i "$file" -pix_fmt rgb48le -f framemd5 "$OUT/$name-ours.md5" ||
        { fail "$name" "j2k_cuda could not decode it"; return; }
    [ "$(frame_md5s "$OUT/$name-native.md5")" = "$(frame_md5s "$OUT/$name-ours.md5")" ] &&
        pass "$name" || fail "$name" "pixels differ from FFmpeg's native decoder"
}

check_peers() {
    python3 -c "
import sys
W,H=83,59
sys.stdout.buffer.write(b'P6\n%d %d\n255\n'%(W,H)+bytes((x*7+y*3+c*91+(x*y)%13)&255 for y in range(H) for x in range(W) for c in range(3)))" > "$OUT/peer.ppm"
    if have opj_compress; then
        opj_compress -i "$OUT/peer.ppm" -o "$OUT/opj-ll.j2k" >/dev/null 2>&1 && check_peer opj_compress-lossless "$OUT/opj-ll.j2k"
        opj_compress -i "$OUT/peer.ppm" -o "$OUT/opj-pcrl.j2k" -p PCRL -t 40,30 -b 8,8 -n 3 -SOP -EPH >/dev/null 2>&1 &&
            check_peer opj_compress-pcrl-tiles "$OUT/opj-pcrl.j2k"
    else
        skip opj_compress "not installed"
    fi
    if have grk_compress; then
        grk_compress -i "$OUT/peer.ppm" -o "$OUT/grk-ll.j2k" >/dev/null 2>&1 && check_peer grk_compress-lossless "$OUT/grk-ll.j2k"
        grk_compress -i "$OUT/peer.ppm" -o "$OUT/grk-rlcp.j2k" -p RLCP -b 16,16 -n 4 -r 10,1 >/dev/null 2>&1 &&
            check_peer grk_compress-rlcp-layers "$OUT/grk-rlcp.j2k"
    else
        skip grk_compress "not installed"
    fi
    if "$FFMPEG" -hide_banner -encoders 2>/dev/null | grep -q libopenjpeg; then
        ff -f lavfi -i testsrc2=s=65x49:d=0.04 -vf format=rgb24 -c:v libopenjpeg -f image2 -update 1 "$OUT/libopenjpeg.j2c" &&
            check_peer libopenjpeg-encoder "$OUT/libopenjpeg.j2c"
    fi
}

check_start
check_help
check_no_device
check_lossless
check_peers
check_dci_4k
