#!/usr/bin/env bash
# player-test.sh: ffplay plays a j2k_cuda MXF headless, and the frame it
# shows must be the frame ffmpeg decodes. SDL's dummy video driver saves each
# frame the window presents as a BMP (SDL_VIDEO_DUMMY_SAVE_FRAMES, SDL 2.26),
# through the software renderer; audio is off. The clip is one still picture
# repeated, so whichever frame was shown last is compared with ffmpeg's first
# decoded frame (rgb24, the window's size): PSNR at least PLAYER_MIN_PSNR dB
# (default 40). A black window or another picture is far below that.
# Prints "PASS name", "FAIL name: why" or "SKIP name: why".
#   FFMPEG=... FFPLAY=... OUT=dir scripts/player-test.sh
set -uo pipefail

FFMPEG=$(realpath -m "${FFMPEG:-build/stage/bin/ffmpeg}")
FFPLAY=$(realpath -m "${FFPLAY:-build/stage/bin/ffplay}")
OUT=$(realpath -m "${OUT:-build/test-player}")
BACKEND=${J2K_CUDA_BACKEND:-cpu}
MIN_PSNR=${PLAYER_MIN_PSNR:-40}
name=ffplay-shows-j2k_cuda

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
skip() { echo "SKIP $1: $2"; }

[ -x "$FFPLAY" ] || { skip $name "no ffplay at $FFPLAY (FFmpeg built without SDL2?)"; exit 0; }
[ -x "$FFMPEG" ] || { fail $name "no ffmpeg at $FFMPEG"; exit 0; }
command -v timeout >/dev/null 2>&1 || { skip $name "timeout (coreutils) is not installed"; exit 0; }
rm -rf "$OUT"
mkdir -p "$OUT/frames"

w=160 h=120
clip=$OUT/still.mxf
ff() { "$FFMPEG" -nostdin -hide_banner -loglevel error -y "$@"; }

run() {
    if ! ff -f lavfi -i "testsrc2=s=${w}x$h:r=24:d=0.04,loop=loop=23:size=1" -pix_fmt rgb24 \
            -c:v libj2kcuda -backend "$BACKEND" "$clip" 2> "$OUT/encode.log"; then
        fail $name "encoding the clip failed: $(tail -n 2 "$OUT/encode.log" | tr '\n' ' ')"; return
    fi
    if ! ff -c:v libj2kcuda -backend "$BACKEND" -i "$clip" -frames:v 1 -pix_fmt rgb24 -f rawvideo "$OUT/ref.rgb" \
            2> "$OUT/ref.log"; then
        fail $name "ffmpeg's decode failed: $(tail -n 2 "$OUT/ref.log" | tr '\n' ' ')"; return
    fi

    local st=0
    (cd "$OUT/frames" &&
     SDL_VIDEODRIVER=dummy SDL_VIDEO_DUMMY_SAVE_FRAMES=1 SDL_RENDER_DRIVER=software SDL_AUDIODRIVER=dummy \
     timeout -k 5 60 "$FFPLAY" -hide_banner -loglevel error -nostats -an -autoexit -x $w -y $h \
         -vcodec libj2kcuda -backend "$BACKEND" "$clip" < /dev/null > "$OUT/ffplay.log" 2>&1) || st=$?
    case $st in
    0) ;;
    124|137) fail $name "ffplay did not end within 60 s"; return ;;
    *) fail $name "ffplay exited with $st: $(tail -n 2 "$OUT/ffplay.log" | tr '\n' ' ')"; return ;;
    esac
    local shown
    shown=$(ls "$OUT"/frames/SDL_window*.bmp 2>/dev/null | sort | tail -n 1)
    [ -n "$shown" ] || { fail $name "ffplay saved no frame (SDL without SDL_VIDEO_DUMMY_SAVE_FRAMES?)"; return; }
    local size
    size=$("${FFMPEG%/*}/ffprobe" -v error -show_entries stream=width,height -of csv=p=0:s=x "$shown" 2>/dev/null)
    [ "$size" = "${w}x$h" ] || { fail $name "the window is ${size:-unreadable}, not ${w}x$h"; return; }

    local psnr
    psnr=$("$FFMPEG" -nostdin -hide_banner -i "$shown" -f rawvideo -pixel_format rgb24 -video_size ${w}x$h \
           -i "$OUT/ref.rgb" -lavfi "[0:v]format=rgb24[a];[1:v]format=rgb24[b];[a][b]psnr" -f null - 2>&1 |
           sed -nE 's/.*PSNR .* average:([0-9.]+|inf) .*/\1/p' | tail -n 1)
    [ -n "$psnr" ] || { fail $name "no PSNR from the comparison"; return; }
    if [ "$psnr" = inf ] || awk -v p="$psnr" -v m="$MIN_PSNR" 'BEGIN { exit !(p >= m) }'; then
        pass "$name: $(ls "$OUT"/frames/*.bmp | wc -l) frames presented, the last one at PSNR $psnr dB against ffmpeg's decode"
    else
        fail $name "the shown frame is at PSNR $psnr dB against ffmpeg's decode (needs $MIN_PSNR)"
    fi
}
run
exit 0
