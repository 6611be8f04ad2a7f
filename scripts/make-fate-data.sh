#!/usr/bin/env bash
# make-fate-data.sh: regenerate fate/data/*.j2k and *.j2c, the codestreams
# made by opj_compress (Debian's libopenjp2-tools 2.5.0), and the HTJ2K ones
# made by ojph_compress (openjph-tools 0.9) and grk_compress (grokj2k-tools
# 10.0.5), that FATE decodes with libj2kcuda. Deterministic pictures are written by python3 as PPM/PGM first.
#   scripts/make-fate-data.sh [OUT_DIR]   (default fate/data)
set -euo pipefail
out=$(realpath -m "${1:-fate/data}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
python3 - <<'PY'
import math
W, H = 61, 47
def px(x, y, c):
    return int((math.sin(x * 0.3 + c) * 0.5 + 0.5) * 200 + (y * 37 + x * 11 + c * 53) % 55) & 255
with open('rgb.ppm', 'wb') as f:
    f.write(b'P6\n%d %d\n255\n' % (W, H))
    f.write(bytes(px(x, y, c) for y in range(H) for x in range(W) for c in range(3)))
with open('gray.pgm', 'wb') as f:
    f.write(b'P5\n%d %d\n255\n' % (W, H))
    f.write(bytes(px(x, y, 1) for y in range(H) for x in range(W)))
with open('rgb16.ppm', 'wb') as f:
    f.write(b'P6\n%d %d\n4095\n' % (W, H))
    out = bytearray()
    for y in range(H):
        for x in range(W):
            for c in range(3):
                v = (px(x, y, c) * 16 + (x * y + c) % 16) & 4095
                out += bytes([v >> 8, v & 255])
    f.write(bytes(out))
PY
mkdir -p "$out"
opj_compress -i rgb.ppm  -o "$out/opj-lossless-rgb.j2k"  >/dev/null
opj_compress -i gray.pgm -o "$out/opj-lossless-gray.j2k" >/dev/null
opj_compress -i rgb.ppm  -o "$out/opj-lossy-rgb.j2k" -I -r 8 -n 4 >/dev/null
opj_compress -i rgb16.ppm -o "$out/opj-rpcl-tiles.j2k" -p RPCL -t 32,24 -b 16,16 \
    -c '[32,32],[16,16]' -r 20,8,1 -n 3 -SOP -EPH >/dev/null
ojph_compress -i rgb.ppm -o "$out/ojph-ht-lossless-rgb.j2c" -reversible true >/dev/null
grk_compress -i rgb16.ppm -o "$out/grk-ht-tiles-rgb12.j2k" -M 64 -t 32,24 -b 16,16 -p RPCL >/dev/null
ls -l "$out"/*.j2k "$out"/*.j2c
