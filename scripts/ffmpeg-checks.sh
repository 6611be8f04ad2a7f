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
    if ldd "$FFMPEG" 2>/dev/null | grep 'libcuda\.' >/dev/null; then
        fail start "ffmpeg links libcuda.so (must load it lazily)"; return
    fi
    pass start
}

check_help() {
    local h
    h=$("$FFMPEG" -hide_banner -h encoder=libj2kcuda 2>&1)
    for opt in profile lossless max_frame_bytes levels cblk_width precinct_width prog_order \
               layers tile_width tile_parts tlm plt sop eph step_phases gpu backend dci_4k; do
        grep -q -- "$opt" <<<"$h" || { fail help-encoder "option $opt missing"; return; }
    done
    pass help-encoder
    h=$("$FFMPEG" -hide_banner -h decoder=libj2kcuda 2>&1)
    grep -q backend <<<"$h" && grep -q layers <<<"$h" && grep -q pinned <<<"$h" && pass help-decoder ||
        fail help-decoder "options missing"
}

# The decoder ffmpeg picks for JPEG 2000 by itself, and j2k_cuda, the name of
# the first releases, still naming both codecs.
check_names() {
    ff -f lavfi -i testsrc2=s=64x48:d=0.04 -c:v libj2kcuda -backend "$BACKEND" "$OUT/names.j2c" ||
        { fail names "libj2kcuda could not encode"; return; }
    local map
    map=$("$FFMPEG" -nostdin -hide_banner -backend "$BACKEND" -i "$OUT/names.j2c" -f null - 2>&1)
    grep -q 'jpeg2000 (libj2kcuda)' <<<"$map" && pass decoder-preferred ||
        fail decoder-preferred "ffmpeg picked another decoder: $(echo "$map" | grep -m 1 'Stream #0:0 ->')"
    ff -f lavfi -i testsrc2=s=64x48:d=0.04 -c:v j2k_cuda -backend "$BACKEND" "$OUT/names-alias.j2c" &&
        ff -c:v j2k_cuda -backend "$BACKEND" -i "$OUT/names-alias.j2c" -f null - &&
        cmp -s "$OUT/names.j2c" "$OUT/names-alias.j2c" && pass name-j2k_cuda ||
        fail name-j2k_cuda "-c:v j2k_cuda does not code as libj2kcuda does"
}

# Without a usable GPU the default backend (auto) runs on the CPU and says so
# once; -backend cuda is an error there (check_gpu_gone).
check_no_device() {
    if has_gpu; then skip no-device "a GPU is present"; return; fi
    local err
    err=$("$FFMPEG" -nostdin -hide_banner -f lavfi -i testsrc2=s=64x64:d=0.04 -c:v libj2kcuda -f null - 2>&1)
    if [ $? != 0 ]; then fail no-device "the default backend failed without a GPU: $err"; return; fi
    if [ "$(echo "$err" | grep -c 'No usable NVIDIA GPU')" = 1 ]; then pass no-device
    else fail no-device "no single line saying the CPU runs it: $err"; fi
}

# ffmpeg's default thread count ("auto") must reach the core: libavcodec turns it into 1 for codecs without
# FF_CODEC_CAP_AUTO_THREADS, which ran Tier-1 decoding and the staging copies on one core.
check_threads() {
    local log=$OUT/threads.log
    "$FFMPEG" -nostdin -hide_banner -loglevel verbose -y -f lavfi -i testsrc2=s=64x48:d=0.04 \
        -c:v libj2kcuda -backend "$BACKEND" "$OUT/threads.j2c" > "$log" 2>&1 &&
    "$FFMPEG" -nostdin -hide_banner -loglevel verbose -c:v libj2kcuda -backend "$BACKEND" -i "$OUT/threads.j2c" \
        -f null - >> "$log" 2>&1 || { fail threads "ffmpeg failed: $(tail -n 1 "$log")"; return; }
    grep -q "Encoding .*, 0 CPU threads" "$log" && grep -q "Decoding .*, 0 CPU threads" "$log" ||
        { fail threads-auto "$(grep -E 'CPU threads' "$log" | tr '\n' ' ')"; return; }
    # grep reads the whole log: grep -q would stop early and, with pipefail,
    # count ffmpeg's SIGPIPE as a failure.
    "$FFMPEG" -nostdin -hide_banner -loglevel verbose -y -f lavfi -i testsrc2=s=64x48:d=0.04 \
        -c:v libj2kcuda -backend "$BACKEND" -threads 3 -f null - > "$log" 2>&1
    grep -q "Encoding .*, 3 CPU threads" "$log" &&
        pass threads || fail threads-manual "-threads 3 did not reach the encoder"
}

# The issue's DCI 4K command, then ffprobe and opj_decompress on an extracted frame.
check_dci_4k() {
    local mxf=$OUT/dci4k.mxf
    if ! ff -f lavfi -i testsrc2=s=4096x2160:d=1 -frames:v "$DCI_FRAMES" -pix_fmt xyz12le \
            -c:v libj2kcuda -profile:v dci_4k -backend "$BACKEND" "$mxf"; then
        fail dci-4k-encode "ffmpeg failed"; return
    fi
    pass dci-4k-encode
    local probe
    probe=$("$FFPROBE" -v error -select_streams v:0 -show_entries stream=codec_name,width,height,pix_fmt,profile \
            -of default=nw=1 "$mxf")
    if grep -q 'codec_name=jpeg2000' <<<"$probe" && grep -q 'width=4096' <<<"$probe" &&
       grep -q 'height=2160' <<<"$probe"; then
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
           -c:v libj2kcuda -backend "$BACKEND" -i "$OUT/dci4k.j2c" \
           -lavfi '[1:v]setparams=color_primaries=unknown:color_trc=unknown:range=unknown[t];[0:v]format=rgb48le[a];[t]format=rgb48le[b];[a][b]psnr' -f null - 2>&1 |
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
    ff -f lavfi -i "$src" -vf format=rgb48le -c:v libj2kcuda -backend "$BACKEND" -lossless 1 "$OUT/ll.mkv" ||
        { fail lossless-encode "ffmpeg failed"; return; }
    ff -c:v libj2kcuda -backend "$BACKEND" -i "$OUT/ll.mkv" -pix_fmt rgb48le -f framemd5 "$OUT/ll-ours.md5" &&
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
    ff -c:v libj2kcuda -backend "$BACKEND" -i "$file" -pix_fmt rgb48le -f framemd5 "$OUT/$name-ours.md5" ||
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
    # The encoder list is read whole: grep -q would stop early, and with
    # pipefail ffmpeg's SIGPIPE would make the check vanish at random.
    if [ "$("$FFMPEG" -hide_banner -encoders 2>/dev/null | grep -c ' libopenjpeg ')" -gt 0 ]; then
        ff -f lavfi -i testsrc2=s=65x49:d=0.04 -vf format=rgb24 -c:v libopenjpeg -f image2 -update 1 "$OUT/libopenjpeg.j2c" &&
            check_peer libopenjpeg-encoder "$OUT/libopenjpeg.j2c"
    else
        skip libopenjpeg-encoder "this ffmpeg has no libopenjpeg encoder"
    fi
}

# ---------------------------------------------------------------------------
# Hostile use: ffmpeg must end with an error status and a clear
# message, never die of a signal. ffmpeg's own error exits are 256 - errno
# (234 for EINVAL), so a signal is told apart by python's subprocess, not by
# the usual "exit status > 128".
# status_of CMD...: prints the exit status, or "signal N".
status_of() {
    python3 -c 'import subprocess, sys
r = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL)
print("signal %d" % -r.returncode if r.returncode < 0 else r.returncode)' "$@"
}
ff_status() { status_of "$FFMPEG" -nostdin -hide_banner -loglevel error -y "$@"; }
# libj2kcuda's own lines in a log (the library's message comes through its log callback).
ours() { grep -c '^\[libj2kcuda @' "$1"; }

# Lossless 3-component frames, so that j2k_cuda and the native decoder must agree exactly.
make_frames() {  # prefix WxH count
    ff -f lavfi -i "testsrc2=s=$2:d=1" -frames:v "$3" -pix_fmt rgb24 -c:v libj2kcuda -backend "$BACKEND" -lossless 1 \
        -f image2 "$OUT/$1%02d.j2c"
}

# Truncated packets: every cut of a codestream decodes or fails, frame by
# frame, without taking ffmpeg down; the intact first frame still comes out.
check_truncated() {
    make_frames tr 64x48 1 || { fail hostile-truncated "could not encode"; return; }
    local src=$OUT/tr01.j2c size i=1 cut st
    size=$(stat -c %s "$src")
    cp "$src" "$OUT/trunc-000.j2c"
    for cut in 1 2 6 12 40 47 60 $((size / 2)) $((size - 3)) $((size - 2)) $((size - 1)); do
        head -c "$cut" "$src" > "$OUT/trunc-$(printf %03d $i).j2c"; i=$((i + 1))
    done
    # The codestream with its middle zeroed, and with 0xFF bytes (marker-like) in the packet data.
    python3 -c "
import sys; d = bytearray(open(sys.argv[1], 'rb').read()); n = len(d)
a = bytearray(d); a[n // 3: 2 * n // 3] = bytes(2 * n // 3 - n // 3)
open(sys.argv[2], 'wb').write(a)
b = bytearray(d); b[n // 2: n // 2 + 16] = b'\xff\x90' * 8
open(sys.argv[3], 'wb').write(b)" "$src" "$OUT/trunc-$(printf %03d $i).j2c" "$OUT/trunc-$(printf %03d $((i + 1))).j2c"
    st=$(ff_status -f image2 -c:v libj2kcuda -backend "$BACKEND" -i "$OUT/trunc-%03d.j2c" -f framemd5 "$OUT/trunc.md5" 2>"$OUT/trunc.log")
    case $st in
    signal*) fail hostile-truncated "ffmpeg died of $st: $(tail -n 2 "$OUT/trunc.log" | tr '\n' ' ')"; return ;;
    esac
    local frames
    frames=$(grep -vc '^#' "$OUT/trunc.md5" 2>/dev/null || echo 0)
    if [ "$frames" -ge 1 ]; then
        pass hostile-truncated
    else
        fail hostile-truncated "exit $st, no frame decoded (the first is intact): $(head -n 2 "$OUT/trunc.log" | tr '\n' ' ')"
    fi
    # One truncated file on its own: an error exit with j2k_cuda's message, or a (partial) frame.
    st=$(ff_status -c:v libj2kcuda -backend "$BACKEND" -i "$OUT/trunc-004.j2c" -f null - 2>"$OUT/trunc1.log")
    case $st in
    signal*) fail hostile-truncated-header "ffmpeg died of $st" ;;
    0) fail hostile-truncated-header "a 12-byte codestream decoded" ;;
    *) [ "$(ours "$OUT/trunc1.log")" -ge 1 ] && pass hostile-truncated-header ||
           fail hostile-truncated-header "exit $st without a libj2kcuda message: $(head -n 1 "$OUT/trunc1.log")" ;;
    esac
}

# Packets of another codec handed to j2k_cuda: a PNG and a PPM named .j2c,
# raw video packets in NUT. An error with j2k_cuda's message, no crash.
check_other_codec() {
    python3 -c "
import struct, sys, zlib
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
w, h = 16, 8
raw = b''.join(b'\0' + bytes((x * 16 + y) & 255 for x in range(w) for _ in range(3)) for y in range(h))
png = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0)) + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')
open(sys.argv[1], 'wb').write(png)
open(sys.argv[2], 'wb').write(b'P6\n16 8\n255\n' + bytes(range(256)) * 1 + bytes(128))" "$OUT/png.j2c" "$OUT/ppm.j2c"
    ff -f lavfi -i testsrc2=s=64x48:d=0.08 -c:v rawvideo "$OUT/raw.nut" || { fail hostile-other-codec "no raw NUT"; return; }
    local what st bad=
    for what in png.j2c ppm.j2c raw.nut; do
        st=$(ff_status -c:v libj2kcuda -backend "$BACKEND" -i "$OUT/$what" -f null - 2>"$OUT/other-$what.log")
        case $st in
        signal*) bad="$bad $what: died of $st;" ;;
        0) bad="$bad $what: decoded;" ;;
        *) grep -q '^\[libj2kcuda @.*not a JPEG 2000' "$OUT/other-$what.log" ||
               bad="$bad $what: exit $st, message: $(head -n 1 "$OUT/other-$what.log");" ;;
        esac
    done
    [ -z "$bad" ] && pass hostile-other-codec || fail hostile-other-codec "$bad"
}

# The frame size changes mid-stream (64x48, then 96x80, then back), in an
# image sequence and in NUT: every frame decoded at its own size, pixel for
# pixel as FFmpeg's native decoder does.
check_size_change() {
    make_frames sa 64x48 2 && make_frames sb 96x80 2 || { fail hostile-size-change "could not encode"; return; }
    cp "$OUT/sa01.j2c" "$OUT/sizes-s000.j2c"; cp "$OUT/sa02.j2c" "$OUT/sizes-s001.j2c"
    cp "$OUT/sb01.j2c" "$OUT/sizes-s002.j2c"; cp "$OUT/sb02.j2c" "$OUT/sizes-s003.j2c"
    cp "$OUT/sa01.j2c" "$OUT/sizes-s004.j2c"
    ff -f image2 -i "$OUT/sizes-s%03d.j2c" -c copy "$OUT/sizes.nut" || { fail hostile-size-change "no NUT"; return; }
    local kind st
    for kind in image2 nut; do
        local in
        [ $kind = image2 ] && in=(-f image2 -i "$OUT/sizes-s%03d.j2c") || in=(-i "$OUT/sizes.nut")
        st=$(ff_status -c:v libj2kcuda -backend "$BACKEND" "${in[@]}" -noautoscale -pix_fmt rgb48le -f framemd5 \
             "$OUT/sizes-$kind-ours.md5" 2>"$OUT/sizes-$kind.log")
        case $st in
        0) ;;
        *) fail "hostile-size-change-$kind" "exit $st: $(head -n 2 "$OUT/sizes-$kind.log" | tr '\n' ' ')"; continue ;;
        esac
        ff -c:v jpeg2000 "${in[@]}" -noautoscale -pix_fmt rgb48le -f framemd5 "$OUT/sizes-$kind-native.md5"
        if [ "$(grep -vc '^#' "$OUT/sizes-$kind-ours.md5")" != 5 ]; then
            fail "hostile-size-change-$kind" "$(grep -vc '^#' "$OUT/sizes-$kind-ours.md5") frames, not 5"
        elif [ "$(grep -v '^#' "$OUT/sizes-$kind-ours.md5" | awk -F, '{print $5}' | sort -u | wc -l)" != 2 ]; then
            fail "hostile-size-change-$kind" "frames were not decoded at two sizes"
        elif ! diff <(grep -v '^#' "$OUT/sizes-$kind-ours.md5") <(grep -v '^#' "$OUT/sizes-$kind-native.md5") >/dev/null; then
            fail "hostile-size-change-$kind" "frames differ from FFmpeg's native decoder"
        else
            pass "hostile-size-change-$kind"
        fi
    done
}

# Host frames from the library's memory (-pinned 1: page-locked on the CUDA
# backend, plain memory on the CPU backend) against FFmpeg's own buffers
# (-pinned 0): the same frames in formats of one to three planes, with
# subsampled chroma, at odd sizes, and across a change of size (the
# frames of check_size_change).
check_pinned() {
    local fmt p in
    for fmt in yuv420p10le gbrp12le xyz12le gray; do
        ff -f lavfi -i testsrc2=s=67x45:d=0.12 -vf "format=$fmt" -c:v libj2kcuda -backend "$BACKEND" -lossless 1 \
           "$OUT/pinned-$fmt.mkv" || { fail pinned "could not encode $fmt"; return; }
    done
    for in in pinned-yuv420p10le.mkv pinned-gbrp12le.mkv pinned-xyz12le.mkv pinned-gray.mkv sizes.nut; do
        for p in 0 1; do
            ff -c:v libj2kcuda -backend "$BACKEND" -pinned $p -i "$OUT/$in" -f framemd5 "$OUT/$in-$p.md5" ||
                { fail pinned "$in did not decode with -pinned $p"; return; }
        done
        if [ "$(grep -vc '^#' "$OUT/$in-1.md5")" -lt 3 ]; then
            fail pinned "$in: $(grep -vc '^#' "$OUT/$in-1.md5") frames"; return
        fi
        diff "$OUT/$in-0.md5" "$OUT/$in-1.md5" >/dev/null || { fail pinned "$in: frames differ"; return; }
    done
    pass pinned
}

# The GPU is gone (hidden with CUDA_VISIBLE_DEVICES, or a device index that
# does not exist): -backend cuda fails with one message naming the device, in
# the encoder and in the decoder; with -backend auto the CPU takes over.
check_gpu_gone() {
    make_frames gg 32x24 1 || { fail hostile-gpu-gone "could not encode"; return; }
    local st bad= line
    st=$(CUDA_VISIBLE_DEVICES= ff_status -f lavfi -i testsrc2=s=32x24:d=0.04 -c:v libj2kcuda -backend cuda -f null - 2>"$OUT/gone-enc.log")
    case $st in signal*|0) bad="$bad encoder: $st;" ;; esac
    st=$(CUDA_VISIBLE_DEVICES= ff_status -c:v libj2kcuda -backend cuda -i "$OUT/gg01.j2c" -f null - 2>"$OUT/gone-dec.log")
    case $st in signal*|0) bad="$bad decoder: $st;" ;; esac
    st=$(ff_status -f lavfi -i testsrc2=s=32x24:d=0.04 -c:v libj2kcuda -backend cuda -gpu 99 -f null - 2>"$OUT/gone-idx.log")
    case $st in signal*|0) bad="$bad encoder -gpu 99: $st;" ;; esac
    for line in gone-enc gone-dec gone-idx; do
        grep -q '^\[libj2kcuda @.*\(CUDA device\|GPU\)' "$OUT/$line.log" || bad="$bad $line: no message naming the device;"
    done
    [ -z "$bad" ] && pass hostile-gpu-gone || fail hostile-gpu-gone "$bad"
    st=$(CUDA_VISIBLE_DEVICES= ff_status -c:v libj2kcuda -backend auto -i "$OUT/gg01.j2c" -f null - 2>"$OUT/gone-auto.log")
    [ "$st" = 0 ] && pass hostile-gpu-gone-auto-cpu || fail hostile-gpu-gone-auto-cpu "exit $st: $(head -n 1 "$OUT/gone-auto.log")"
}

# Encoder options, sizes and formats it cannot honour: an error exit and
# exactly one libj2kcuda line that says why (ffmpeg adds its generic lines).
reject() {  # name regexp ffmpeg-args...
    local name=$1 re=$2 st n
    shift 2
    st=$(ff_status "$@" -f null - 2>"$OUT/reject-$name.log")
    n=$(ours "$OUT/reject-$name.log")
    case $st in
    signal*) fail "reject-$name" "ffmpeg died of $st" ;;
    0) fail "reject-$name" "accepted" ;;
    *) if [ "$n" = 1 ] && grep -q "^\[libj2kcuda @.*$re" "$OUT/reject-$name.log"; then pass "reject-$name"
       else fail "reject-$name" "exit $st, $n libj2kcuda lines: $(grep '^\[libj2kcuda' "$OUT/reject-$name.log" | head -n 2 | tr '\n' ' ')"; fi ;;
    esac
}

check_encoder_rejects() {
    local src=(-f lavfi -i testsrc2=s=64x48:d=0.04)
    local enc=(-c:v libj2kcuda -backend "$BACKEND")
    reject profile-format 'needs 12-bit' "${src[@]}" -pix_fmt rgb24 "${enc[@]}" -profile:v dci_4k
    reject profile-size 'larger than 4096x2160' -f lavfi -i color=s=4104x16:d=0.04 -pix_fmt xyz12le "${enc[@]}" -profile:v dci_4k
    reject profile-levels 'decomposition levels' -f lavfi -i color=s=4096x2160:d=0.04 -pix_fmt xyz12le "${enc[@]}" -profile:v dci_4k -levels 7
    reject profile-tiles 'one tile' "${src[@]}" -pix_fmt xyz12le "${enc[@]}" -profile:v dci_2k -tile_width 16
    reject lossless-budget 'lossless' "${src[@]}" "${enc[@]}" -lossless 1 -max_frame_bytes 100
    reject cblk-area 'code-block size' "${src[@]}" "${enc[@]}" -cblk_width 1024 -cblk_height 1024
    reject cblk-power 'power of two' "${src[@]}" "${enc[@]}" -cblk_width 48
    reject precinct-one 'power of two in 2' "${src[@]}" "${enc[@]}" -precinct_width_r0 1
    reject bitrate 'bytes a frame' "${src[@]}" "${enc[@]}" -b:v 100
    # Pixel formats: ffmpeg converts what the encoder does not list, with one
    # line naming the format it chose; the frame is then encoded.
    local st
    st=$(status_of "$FFMPEG" -nostdin -hide_banner -loglevel warning -y "${src[@]}" -pix_fmt pal8 "${enc[@]}" \
         -f null - 2>"$OUT/pixfmt.log")
    if [ "$st" = 0 ] && grep -q "Incompatible pixel format 'pal8' for codec 'libj2kcuda', auto-selecting" "$OUT/pixfmt.log"; then
        pass pixfmt-negotiated
    else
        fail pixfmt-negotiated "exit $st: $(head -n 1 "$OUT/pixfmt.log")"
    fi
}

# Colour: what a JP2 colr box or a cinema Rsiz says reaches FFmpeg's colour
# properties (ffprobe shows them), ICC profiles travel as frame side data,
# and the encoder writes them back. Properties as ffprobe's csv prints them:
# color_range,color_space,color_transfer,color_primaries.
probe_colour() {  # file [ffprobe args...]
    local f=$1
    shift
    "$FFPROBE" -v warning -c:v libj2kcuda -backend "$BACKEND" "$@" -select_streams v:0 \
        -show_entries stream=color_range,color_space,color_transfer,color_primaries -of csv=p=0 "$f"
}

expect_colour() {  # name pattern file [ffprobe args...]
    local name=$1 want=$2 got
    shift 2
    got=$(probe_colour "$@" 2>"$OUT/$name.log")
    # shellcheck disable=SC2053
    [[ "$got" == $want ]] && pass "$name" || fail "$name" "ffprobe says '$got', want '$want'"
}

check_colour() {
    local src=(-f lavfi -i testsrc2=s=96x60:d=0.04 -frames:v 1 -s 97x61)
    local enc=(-c:v libj2kcuda -backend "$BACKEND")
    ff "${src[@]}" -pix_fmt rgb24 "${enc[@]}" -format jp2 "$OUT/srgb.jp2" &&
        expect_colour colour-srgb pc,gbr,iec61966-2-1,bt709 "$OUT/srgb.jp2" || fail colour-srgb "could not encode"
    ff "${src[@]}" -pix_fmt gray "${enc[@]}" -format jp2 "$OUT/grey.jp2" &&
        expect_colour colour-greyscale pc,unknown,iec61966-2-1,unknown "$OUT/grey.jp2" || fail colour-greyscale "could not encode"
    # sYCC is full-range BT.601 YCbCr, here with 4:2:0 chroma at odd sizes.
    ff "${src[@]}" -vf scale=out_range=full:out_color_matrix=bt601,format=yuv420p -color_range pc -colorspace bt470bg \
        "${enc[@]}" -lossless 1 -format jp2 "$OUT/sycc.jp2" &&
        expect_colour colour-sycc pc,bt470bg,iec61966-2-1,bt709 "$OUT/sycc.jp2" || fail colour-sycc "could not encode"
    # Right colours, not only right labels: sYCC decoded to RGB through
    # FFmpeg's conversion lands near the RGB it came from (a wrong matrix or
    # range costs well over 10 dB).
    local psnr=
    ff "${src[@]}" -pix_fmt rgb24 "$OUT/sycc-src.png" &&
    ff -c:v libj2kcuda -backend "$BACKEND" -i "$OUT/sycc.jp2" -pix_fmt rgb24 "$OUT/sycc-back.png" &&
    psnr=$("$FFMPEG" -nostdin -hide_banner -i "$OUT/sycc-back.png" -i "$OUT/sycc-src.png" \
           -lavfi psnr -f null - 2>&1 | sed -n 's/.*PSNR.* average:\([0-9.inf]*\).*/\1/p')
    if [ -n "$psnr" ] && { [ "$psnr" = inf ] || awk -v p="$psnr" 'BEGIN { exit !(p >= 30) }'; }; then
        pass colour-sycc-to-rgb
    else
        fail colour-sycc-to-rgb "PSNR of the decoded sYCC against its RGB source: '${psnr:-none}' dB"
    fi
    # DCI: Rsiz 4 says X'Y'Z' in a raw codestream, and the MXF says it too
    # (the matrix, meaningless for X'Y'Z', is whatever the container says).
    ff -f lavfi -i color=s=4096x2160:d=0.04 -frames:v 1 -pix_fmt xyz12le "${enc[@]}" -profile:v dci_4k "$OUT/dci.j2c" &&
        expect_colour colour-dci-codestream 'pc,*,smpte428,smpte428' "$OUT/dci.j2c" || fail colour-dci-codestream "could not encode"
    ff -f lavfi -i color=s=2048x1080:d=0.04 -frames:v 1 -pix_fmt xyz12le "${enc[@]}" -profile:v dci_2k "$OUT/dci.mxf" &&
        expect_colour colour-dci-mxf 'pc,*,smpte428,smpte428' "$OUT/dci.mxf" || fail colour-dci-mxf "could not encode"
    # ICC: frames with a profile (iccgen) give a JP2 whose decode carries it.
    if ff "${src[@]}" -pix_fmt rgb24 -vf setparams=color_primaries=bt2020:color_trc=bt470m,iccgen \
          "${enc[@]}" -format jp2 "$OUT/icc.jp2" 2>"$OUT/icc-enc.log"; then
        local sd
        sd=$("$FFPROBE" -v error -c:v libj2kcuda -backend "$BACKEND" -show_frames -show_entries frame=side_data_list \
             "$OUT/icc.jp2" 2>&1)
        grep -q 'side_data_type=ICC profile' <<<"$sd" && pass colour-icc ||
            fail colour-icc "no ICC profile side data on the decoded frame: $(echo "$sd" | head -n 3 | tr '\n' ' ')"
        # With FFmpeg's ICC handling on, the profile's primaries and transfer come back.
        sd=$("$FFPROBE" -v error -c:v libj2kcuda -backend "$BACKEND" -flags2 icc_profiles -show_frames \
             -show_entries frame=color_primaries,color_transfer -of csv=p=0 "$OUT/icc.jp2" 2>&1 | cut -d, -f1,2)
        [ "$sd" = "bt2020,bt470m" ] && pass colour-icc-detected || fail colour-icc-detected "got '$sd'"
    else
        fail colour-icc "could not encode: $(head -n 2 "$OUT/icc-enc.log" | tr '\n' ' ')"
    fi
    # Properties the codestream cannot hold survive in the containers (MOV's
    # colr atom has no range).
    local c want tag=setparams=color_primaries=bt709:color_trc=bt709:colorspace=bt709:range=tv
    for c in mov mkv mxf; do
        want=tv; [ $c = mov ] && want=unknown
        ff -f lavfi -i testsrc2=s=128x72:d=0.04 -frames:v 1 -vf "$tag,format=yuv422p10le" "${enc[@]}" \
            "$OUT/props.$c" && expect_colour "colour-kept-$c" "$want,bt709,bt709,bt709" "$OUT/props.$c" ||
            fail "colour-kept-$c" "could not encode"
    done
    # JP2 cannot label limited-range BT.709 YCbCr without a profile: one clear line, no guess.
    reject jp2-unlabelled 'JP2 cannot describe' -f lavfi -i testsrc2=s=64x48:d=0.04 -vf "$tag,format=yuv422p" \
        "${enc[@]}" -format jp2
}

# Damaged colour boxes: a colr with an unknown method decodes with a warning
# and unknown colours; an unknown enumerated space is reported as unknown,
# never guessed.
check_colour_hostile() {
    [ -s "$OUT/srgb.jp2" ] || { fail hostile-colr "no JP2 to damage"; return; }
    python3 -c "
import sys; d = bytearray(open(sys.argv[1], 'rb').read()); i = d.find(b'colr') + 4
m = bytearray(d); m[i] = 9
open(sys.argv[2], 'wb').write(m)
e = bytearray(d); e[i + 3:i + 7] = (99).to_bytes(4, 'big')
open(sys.argv[3], 'wb').write(e)" "$OUT/srgb.jp2" "$OUT/colr-method.jp2" "$OUT/colr-enum.jp2"
    local f got
    for f in colr-method colr-enum; do
        got=$(probe_colour "$OUT/$f.jp2" 2>"$OUT/$f.log") &&
            "$FFMPEG" -nostdin -hide_banner -c:v libj2kcuda -backend "$BACKEND" -i "$OUT/$f.jp2" -f null - 2>>"$OUT/$f.log"
        if [ $? = 0 ] && [ "$got" = unknown,unknown,unknown,unknown ] &&
           grep -q '^\[libj2kcuda @.*colr' "$OUT/$f.log"; then pass "hostile-$f"
        else fail "hostile-$f" "ffprobe '$got': $(head -n 2 "$OUT/$f.log" | tr '\n' ' ')"; fi
    done
}

# -err_detect explode refuses a damaged frame; without it the frame decodes
# as far as it goes (a player keeps playing).
check_strict() {
    make_frames st 64x48 1 || { fail strict "could not encode"; return; }
    local size st
    size=$(stat -c %s "$OUT/st01.j2c")
    head -c $((size * 2 / 3)) "$OUT/st01.j2c" > "$OUT/st-cut.j2c"
    st=$(ff_status -c:v libj2kcuda -backend "$BACKEND" -i "$OUT/st-cut.j2c" -f framemd5 "$OUT/st-lenient.md5" 2>"$OUT/st-lenient.log")
    if [ "$st" = 0 ] && [ "$(grep -vc '^#' "$OUT/st-lenient.md5")" = 1 ]; then pass strict-lenient
    else fail strict-lenient "exit $st, frames: $(grep -vc '^#' "$OUT/st-lenient.md5" 2>/dev/null)"; fi
    st=$(ff_status -c:v libj2kcuda -backend "$BACKEND" -err_detect explode -xerror -i "$OUT/st-cut.j2c" \
         -f framemd5 "$OUT/st-strict.md5" 2>"$OUT/st-strict.log")
    case $st in
    0) fail strict-explode "the damaged frame decoded" ;;
    signal*) fail strict-explode "ffmpeg died of $st" ;;
    *) grep -q '^\[libj2kcuda @' "$OUT/st-strict.log" && pass strict-explode ||
           fail strict-explode "exit $st without libj2kcuda's message" ;;
    esac
}

# Frames already on the GPU (hwupload_cuda) give the same MXF as frames in
# memory: the same codestreams, and the same picture and JPEG 2000
# descriptors, which the muxer must read from the essence since codecpar
# says only "cuda". bitexact makes the two files comparable byte for byte.
check_mxf_cuda_frames() {
    if ! has_gpu; then skip mxf-cuda-frames "needs an NVIDIA GPU for CUDA frames"; return; fi
    local fmt src=(-f lavfi -i testsrc2=s=1920x1080:r=24:d=0.125)
    # (CUDA frames hold YCbCr only, not X'Y'Z' or planar RGB above 8 bits.)
    for fmt in yuv420p yuv422p10le yuv444p16le; do
        ff "${src[@]}" -vf "format=$fmt" -c:v libj2kcuda -backend cuda -fflags +bitexact "$OUT/host-$fmt.mxf" 2>"$OUT/host-$fmt.log" &&
        ff -init_hw_device cuda=gpu -filter_hw_device gpu "${src[@]}" -vf "format=$fmt,hwupload_cuda" \
            -c:v libj2kcuda -backend cuda -fflags +bitexact "$OUT/cuda-$fmt.mxf" 2>"$OUT/cuda-$fmt.log" ||
            { fail "mxf-cuda-frames-$fmt" "encode failed: $(cat "$OUT/host-$fmt.log" "$OUT/cuda-$fmt.log" | head -n 2 | tr '\n' ' ')"; continue; }
        cmp -s "$OUT/host-$fmt.mxf" "$OUT/cuda-$fmt.mxf" && pass "mxf-cuda-frames-$fmt" ||
            fail "mxf-cuda-frames-$fmt" "the MXF from CUDA frames differs from the one from frames in memory"
    done
}

# Opacity: grey + alpha and RGBA round-trip bit-exact, and a JP2 of them says
# which channel is the opacity (cdef), so that opj_decompress keeps it too.
check_alpha() {
    local fmt
    for fmt in ya8 rgba rgba64le gbrap10le; do
        ff -f lavfi -i testsrc2=s=64x48:d=0.08 -vf "format=$fmt" -f framemd5 "$OUT/alpha-$fmt-src.md5" &&
        ff -f lavfi -i testsrc2=s=64x48:d=0.08 -vf "format=$fmt" -c:v libj2kcuda -backend "$BACKEND" -lossless 1 \
            "$OUT/alpha-$fmt.mkv" &&
        ff -c:v libj2kcuda -backend "$BACKEND" -i "$OUT/alpha-$fmt.mkv" -pix_fmt "$fmt" -f framemd5 "$OUT/alpha-$fmt.md5" ||
            { fail "alpha-$fmt" "could not encode or decode"; continue; }
        [ "$(frame_md5s "$OUT/alpha-$fmt-src.md5")" = "$(frame_md5s "$OUT/alpha-$fmt.md5")" ] &&
            pass "alpha-$fmt" || fail "alpha-$fmt" "the decoded frames differ from the source"
    done
    if have opj_decompress; then
        ff -f lavfi -i testsrc2=s=64x48:d=0.04 -frames:v 1 -vf format=rgba -c:v libj2kcuda -backend "$BACKEND" \
            -lossless 1 -format jp2 "$OUT/alpha.jp2" &&
        opj_decompress -i "$OUT/alpha.jp2" -o "$OUT/alpha-opj.png" > "$OUT/alpha-opj.log" 2>&1 &&
        ff -i "$OUT/alpha-opj.png" -pix_fmt rgba -f framemd5 "$OUT/alpha-opj.md5" &&
        ff -f lavfi -i testsrc2=s=64x48:d=0.04 -frames:v 1 -vf format=rgba -f framemd5 "$OUT/alpha-one.md5" &&
        [ "$(frame_md5s "$OUT/alpha-opj.md5")" = "$(frame_md5s "$OUT/alpha-one.md5")" ] &&
            pass alpha-jp2-opj_decompress || fail alpha-jp2-opj_decompress "opj_decompress did not give the RGBA frame back"
    else
        skip alpha-jp2-opj_decompress "opj_decompress not installed"
    fi
}

# A signed component (Ssiz's sign bit) comes out in offset binary, the sample
# plus 2^(precision-1), as FFmpeg's native decoder gives it: FFmpeg has no
# signed pixel formats. opj_compress writes a lossless 12-bit signed stream.
check_signed() {
    if ! have opj_compress || ! have python3; then
        skip signed-offset-binary "needs opj_compress and python3"; return
    fi
    ff -f lavfi -i testsrc2=s=64x48:d=0.04 -frames:v 1 -pix_fmt gray12le -f rawvideo "$OUT/signed-expect.raw" &&
    python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); open(sys.argv[2], "wb").write(b"".join(
        ((int.from_bytes(d[i:i + 2], "little") - 2048) & 0xFFFF).to_bytes(2, "big") for i in range(0, len(d), 2)))' \
        "$OUT/signed-expect.raw" "$OUT/signed.raw" &&
    opj_compress -i "$OUT/signed.raw" -F 64,48,1,12,s -o "$OUT/signed.j2k" > /dev/null 2>&1 &&
    ff -c:v libj2kcuda -backend "$BACKEND" -i "$OUT/signed.j2k" -f rawvideo -pix_fmt gray12le "$OUT/signed-out.raw" ||
        { fail signed-offset-binary "could not make or decode the signed stream"; return; }
    cmp -s "$OUT/signed-out.raw" "$OUT/signed-expect.raw" && pass signed-offset-binary ||
        fail signed-offset-binary "the samples are not the signed ones plus 2048"
}

check_start
check_help
check_names
check_threads
check_no_device
check_lossless
check_peers
check_dci_4k
check_truncated
check_other_codec
check_size_change
check_pinned
check_gpu_gone
check_encoder_rejects
check_colour
check_colour_hostile
check_strict
check_mxf_cuda_frames
check_alpha
check_signed
