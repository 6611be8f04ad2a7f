#!/usr/bin/env bash
# readme-examples.sh: run every command of README.md's Examples section as
# written, so that the README cannot promise what the build does not do.
#
#   FFMPEG=... FFPROBE=... FFPLAY=... OUT=dir scripts/readme-examples.sh [README.md]
#
# The commands run in OUT, in README order (later examples use what earlier
# ones wrote), with ffmpeg, ffprobe and ffplay first on PATH. The inputs they
# name are made here first: a ProRes 422 HQ master with a stereo 24-bit PCM
# track, a 16-bit TIFF scan, a 10-bit DPX sequence and a PNG photograph.
# A command passes when it exits 0 and, for ffmpeg, leaves a non-empty output
# file. Commands that need CUDA frames are skipped, with the reason, on a
# machine without a usable NVIDIA GPU. ffplay plays headless (SDL's dummy
# drivers) and gets -autoexit, the one thing added to what README says.
# Prints "PASS name", "FAIL name" or "SKIP name: reason" for each command.
set -uo pipefail

readme=${1:-$(dirname "$0")/../README.md}
FFMPEG=$(realpath "${FFMPEG:?FFMPEG must name the ffmpeg binary}")
FFPROBE=$(realpath "${FFPROBE:?FFPROBE must name the ffprobe binary}")
FFPLAY=${FFPLAY:-$(dirname "$FFMPEG")/ffplay}
OUT=${OUT:-build/test-readme}

rm -rf "$OUT" && mkdir -p "$OUT/bin"
OUT=$(realpath "$OUT")
ln -s "$FFMPEG" "$OUT/bin/ffmpeg"
ln -s "$FFPROBE" "$OUT/bin/ffprobe"
[ -x "$FFPLAY" ] && ln -s "$(realpath "$FFPLAY")" "$OUT/bin/ffplay"

# The Examples section's commands: indented code lines, continuation lines joined.
commands() {
    awk '
        /^## / { inside = ($0 == "## Examples") ; next }
        !inside { next }
        /^    / {
            line = substr($0, 5)
            if (cont != "") { sub(/^ +/, "", line); line = cont " " line }
            if (line ~ /\\$/) { sub(/ *\\$/, "", line); cont = line; next }
            cont = ""
            if (line ~ /^(ffmpeg|ffprobe|ffplay) /) print line
        }
    ' "$readme"
}

make_inputs() {
    local ff=("$FFMPEG" -nostdin -hide_banner -loglevel error -y)
    "${ff[@]}" -f lavfi -i testsrc2=s=1920x1080:r=24:d=0.125 \
        -f lavfi -i "sine=frequency=440:sample_rate=48000:duration=0.125" -ac 2 \
        -c:v prores_ks -profile:v 3 -pix_fmt yuv422p10le -c:a pcm_s24le -shortest "$OUT/master.mov" &&
    "${ff[@]}" -f lavfi -i testsrc2=s=640x480:d=0.04 -frames:v 1 -pix_fmt rgb48le "$OUT/scan.tif" &&
    "${ff[@]}" -f lavfi -i testsrc2=s=640x480:r=24:d=0.125 -pix_fmt gbrp10le "$OUT/scan_%05d.dpx" &&
    "${ff[@]}" -f lavfi -i testsrc2=s=320x240:d=0.04 -frames:v 1 -pix_fmt rgb24 "$OUT/photo.png"
}

have_gpu() { command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1; }

# The file an ffmpeg command writes: its last argument, unless that is a pipe.
output_of() {
    local last=${1##* }
    case "$1" in ffmpeg\ *) [ "$last" != - ] && echo "$last" ;; esac
}

if ! make_inputs; then
    echo "FAIL readme-inputs: ffmpeg could not make the example inputs"
    exit 1
fi

n=0
while IFS= read -r cmd; do
    n=$((n + 1))
    name="readme-$n-${cmd%% *}"
    if [[ "$cmd" =~ hwaccel\ cuda|hwupload_cuda|init_hw_device\ cuda ]] && ! have_gpu; then
        echo "SKIP $name: needs an NVIDIA GPU ($cmd)"
        continue
    fi
    run=$cmd
    if [[ "$cmd" == ffplay\ * ]]; then
        if [ ! -x "$OUT/bin/ffplay" ]; then
            echo "FAIL $name: this build has no ffplay"; continue
        fi
        [[ "$cmd" == *-autoexit* ]] || run="ffplay -autoexit ${cmd#ffplay }"
    fi
    out=$(output_of "$cmd")
    [ -n "$out" ] && rm -f "$OUT/$out"
    if (cd "$OUT" && PATH="$OUT/bin:$PATH" SDL_VIDEODRIVER=dummy SDL_AUDIODRIVER=dummy \
            timeout 600 bash -c "$run" < /dev/null > "$OUT/$name.log" 2>&1); then
        if [ -n "$out" ] && [ ! -s "$OUT/$out" ]; then
            echo "FAIL $name: no output $out ($cmd)"
        else
            echo "PASS $name"
        fi
    else
        echo "FAIL $name: exit $? ($cmd); see $OUT/$name.log"
        tail -n 5 "$OUT/$name.log" | sed 's/^/    /'
    fi
done < <(commands)

[ "$n" -gt 0 ] || echo "FAIL readme-examples: no command found in $readme"
