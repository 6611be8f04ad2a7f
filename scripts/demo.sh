#!/usr/bin/env bash
# demo.sh: the `make demo` job. Encodes a generated clip (lavfi testsrc2,
# 4096x2160, 12-bit X'Y'Z', 24 fps) to a DCI 4K MXF with j2k_cuda, decodes it
# back, and prints frames per second, bytes per frame against the DCI cap and
# PSNR. Runs on the GPU when one is present, else on the CPU backend.
#   FFMPEG=... FFPROBE=... OUT=dir [DEMO_SECONDS=n] scripts/demo.sh
set -euo pipefail

FFMPEG=${FFMPEG:-build/stage/bin/ffmpeg}
FFPROBE=${FFPROBE:-build/stage/bin/ffprobe}
OUT=${OUT:-build/demo}
mkdir -p "$OUT"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    backend=cuda
    seconds=${DEMO_SECONDS:-3}
    echo "demo: GPU found ($(nvidia-smi -L | head -n 1)); encoding on the CUDA backend"
else
    backend=cpu
    seconds=${DEMO_SECONDS:-0.25}
    echo "demo: no NVIDIA GPU here; encoding on the CPU reference backend (same codestreams, much slower),"
    echo "      so the clip is cut to ${seconds}s; DEMO_SECONDS=n changes that"
fi
fps=24
src="testsrc2=s=4096x2160:r=$fps:d=$seconds"
mxf=$OUT/dci4k.mxf
cap=$(( 250000000 / 8 / fps ))   # DCI: 250 Mbit/s at 24 fps

now() { date +%s.%N; }
ff() { "$FFMPEG" -nostdin -hide_banner -loglevel error -y "$@"; }

# The source and its conversion to X'Y'Z' alone, to take their time out of the encoder's.
t0=$(now)
ff -f lavfi -i "$src" -vf format=xyz12le -c:v wrapped_avframe -f null -
t1=$(now)
ff -f lavfi -i "$src" -vf format=xyz12le -c:v libj2kcuda -profile:v dci_4k -backend "$backend" "$mxf"
t2=$(now)
frames=$("$FFPROBE" -v error -count_packets -select_streams v:0 -show_entries stream=nb_read_packets -of csv=p=0 "$mxf")
ff -c:v libj2kcuda -backend "$backend" -i "$mxf" -f null -
t3=$(now)
# Both sides carry the same colour tags (the MXF says X'Y'Z'), so that the
# conversion to RGB for the comparison is the same on each.
tags=setparams=range=pc:color_primaries=smpte428:color_trc=smpte428:colorspace=gbr
psnr=$("$FFMPEG" -nostdin -hide_banner -c:v libj2kcuda -backend "$backend" -i "$mxf" -f lavfi -i "$src" \
       -lavfi "[0:v]$tags,format=rgb48le[dec];[1:v]format=xyz12le,$tags,format=rgb48le[ref];[dec][ref]psnr" -f null - 2>&1 |
       sed -nE 's/.*PSNR (.*)/\1/p' | tail -n 1)
sizes=$("$FFPROBE" -v error -select_streams v:0 -show_entries packet=size -of csv=p=0 "$mxf")

awk -v f="$frames" -v ts="$t0" -v t1="$t1" -v t2="$t2" -v t3="$t3" -v cap="$cap" -v be="$backend" \
    -v mxf="$mxf" -v psnr="$psnr" -v sizes="$sizes" 'BEGIN {
    n = split(sizes, s, "\n"); max = 0; sum = 0
    for (i = 1; i <= n; i++) { sum += s[i]; if (s[i] > max) max = s[i] }
    src = t1 - ts; enc = t2 - t1; dec = t3 - t2
    printf "\nj2k_cuda demo (%s backend): %d frames of 4096x2160 xyz12le, DCI 4K profile -> %s\n", be, f, mxf
    printf "  encode: %.2f fps end to end, %.2f fps without the test-pattern source (%.2fs)\n", f / enc, f / ((enc - src) > 0 ? enc - src : enc), src
    printf "  decode: %.2f fps\n", f / dec
    printf "  bytes/frame: mean %d, max %d; DCI cap %d at 24 fps (%s)\n", sum / n, max, cap, max <= cap ? "within" : "OVER"
    printf "  PSNR against the source: %s\n", psnr
}'
