#!/usr/bin/env bash
# Regenerates tests/data/ht/: small HTJ2K (ISO/IEC 15444-15) codestreams
# written by two independent encoders, OpenJPH's ojph_compress and Grok's
# grk_compress -M 64, and the samples an independent decoder (OpenJPH's
# ojph_expand, cross-checked by OpenJPEG's opj_decompress for the
# 5/3 streams) gives for them, as tests/ht_decode_test.cpp expects them
# (and MIXED streams, scripts/make-ht-mixed.py):
# scripts/make-ht-expected.py writes expected.txt (per component its size,
# precision, signedness, the FNV-1a 64 hash of its samples as 32-bit
# little-endian integers, and the tolerance) and the samples of 9/7 streams.
#
# Debian 12: apt-get install openjph-tools grokj2k-tools libopenjp2-tools
# The test images are synthetic (a fixed pseudo-random pattern), so the output
# depends only on the encoder versions (recorded in expected.txt).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/tests/data/ht}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
rm -f "$out"/*.j2c "$out"/*.j2k "$out"/*.jph "$out"/*.ref "$out"/expected.txt

for tool in ojph_compress ojph_expand grk_compress opj_decompress python3; do
    command -v $tool >/dev/null || { echo "make-ht-data: $tool is missing" >&2; exit 1; }
done

# ------------------------------------------------------------------ sources
python3 - "$work" <<'EOF'
import math, random, struct, sys
d = sys.argv[1]
def plane(w, h, maxv, seed, edge=7):
    r = random.Random(seed)
    v = []
    for y in range(h):
        for x in range(w):
            t = 0.5 + 0.3 * math.sin(x * 0.21 + seed) * math.cos(y * 0.13 + 0.5 * seed) + 0.15 * math.sin((x + y) * 0.05)
            if ((x // edge) + (y // (edge + 2))) % 4 == 0:
                t = 1.0 - t
            t += r.gauss(0, 0.04)
            if r.random() < 0.01:
                t = r.random()
            v.append(max(0, min(maxv, int(round(t * maxv)))))
    return v
def pnm(name, w, h, maxv, planes):
    magic = b'P5' if len(planes) == 1 else b'P6'
    with open(f'{d}/{name}', 'wb') as f:
        f.write(b'%s\n%d %d\n%d\n' % (magic, w, h, maxv))
        fmt = '>H' if maxv > 255 else 'B'
        for i in range(w * h):
            for p in planes:
                f.write(struct.pack(fmt, p[i]))
def raw(name, comps, bits, signed=False):
    # comps: list of (w, h, values); little-endian 16-bit when bits > 8
    with open(f'{d}/{name}', 'wb') as f:
        for (w, h, vals) in comps:
            for v in vals:
                if signed:
                    v -= 1 << (bits - 1)
                if bits > 8:
                    f.write(struct.pack('<h' if signed else '<H', v))
                else:
                    f.write(struct.pack('b' if signed else 'B', v))
pnm('gray8.pgm', 97, 71, 255, [plane(97, 71, 255, 1)])
pnm('rgb8.ppm', 80, 60, 255, [plane(80, 60, 255, s) for s in (2, 3, 4)])
pnm('gray12.pgm', 61, 47, 4095, [plane(61, 47, 4095, 5)])
pnm('gray16.pgm', 50, 40, 65535, [plane(50, 40, 65535, 6)])
pnm('wide8.pgm', 300, 9, 255, [plane(300, 9, 255, 7, edge=3)])
pnm('tall8.pgm', 7, 200, 255, [plane(7, 200, 255, 8, edge=5)])
raw('yuv420.yuv', [(64, 48, plane(64, 48, 255, 9)), (32, 24, plane(32, 24, 255, 10)), (32, 24, plane(32, 24, 255, 11))], 8)
raw('yuv422_10.yuv', [(72, 40, plane(72, 40, 1023, 12)), (36, 40, plane(36, 40, 1023, 13)), (36, 40, plane(36, 40, 1023, 14))], 10)
raw('signed12.yuv', [(45, 33, plane(45, 33, 4095, 15))], 12, signed=True)
EOF

# ------------------------------------------------------------------ streams
o() { local name=$1; shift; ojph_compress -o "$out/$name" "$@" >/dev/null; }
g() { local name=$1; shift; grk_compress -M 64 -o "$out/$name" "$@" >/dev/null; }
w=$work

# OpenJPH: one HT cleanup pass per code-block.
o o_gray8_rev.j2c       -i $w/gray8.pgm -reversible true
o o_gray8_rev_l0.j2c    -i $w/gray8.pgm -reversible true -num_decomps 0 -block_size '{32,32}'
o o_rgb8_irv_32.j2c     -i $w/rgb8.ppm -qstep 0.02 -block_size '{32,32}' -prog_order LRCP
o o_rgb8_rev_nomct.j2c  -i $w/rgb8.ppm -reversible true -colour_trans false -block_size '{16,16}' -prog_order RLCP
o o_gray12_rev_16x64.j2c -i $w/gray12.pgm -reversible true -block_size '{16,64}' -num_decomps 3
o o_gray16_irv.j2c      -i $w/gray16.pgm -qstep 0.0005 -num_decomps 4
o o_gray16_rev.j2c      -i $w/gray16.pgm -reversible true -block_size '{8,8}' -num_decomps 2
o o_wide8_4x1024.j2c    -i $w/wide8.pgm -reversible true -block_size '{4,1024}' -num_decomps 1
o o_tall8_1024x4.j2c    -i $w/tall8.pgm -reversible true -block_size '{1024,4}' -num_decomps 1
o o_yuv420_rev_tiles.j2c -i $w/yuv420.yuv -dims '{64,48}' -num_comps 3 -signed false,false,false \
    -bit_depth 8,8,8 -downsamp '{1,1},{2,2},{2,2}' -reversible true -tile_size '{32,32}' \
    -precincts '{16,16},{32,32}' -prog_order PCRL -num_decomps 2 -block_size '{16,16}'
o o_yuv422_10_irv.j2c   -i $w/yuv422_10.yuv -dims '{72,40}' -num_comps 3 -signed false,false,false \
    -bit_depth 10,10,10 -downsamp '{1,1},{2,1},{2,1}' -qstep 0.005 -prog_order CPRL \
    -precincts '{32,32},{64,64}' -num_decomps 3
o o_signed12_rev_offset.j2c -i $w/signed12.yuv -dims '{45,33}' -num_comps 1 -signed true -bit_depth 12 \
    -downsamp '{1,1}' -reversible true -image_offset '{3,5}' -tile_offset '{1,2}' -tile_size '{24,20}' \
    -num_decomps 2 -block_size '{16,32}'

# Grok (HT cleanup passes too; its rate control is not offered for HT, nor
# subsampled raw input).
g g_rgb8_rev_tiles.j2k  -i $w/rgb8.ppm -t 40,32 -p RPCL -b 32,32 -c '[32,32],[16,16]' -S -E
g g_rgb8_irv.j2k        -i $w/rgb8.ppm -I -n 4 -b 16,16
g g_gray8_rev_poc.j2k   -i $w/gray8.pgm -n 4 -P 'T0=0,0,1,2,1,RLCP/T0=0,0,1,4,1,LRCP' -u R
g g_gray12_irv.j2k      -i $w/gray12.pgm -I -b 64,32 -p CPRL
g g_gray16_rev.j2k      -i $w/gray16.pgm -n 2 -b 8,64
# JPH (15444-15 Annex D): Grok writes JP2 files only; its .jp2 with the
# brand and compatibility list of a JPH file ('jph ') is one.
g g_rgb8_rev.jp2        -i $w/rgb8.ppm -n 3
python3 - "$out/g_rgb8_rev.jp2" "$out/g_rgb8_rev.jph" <<'EOF2'
import struct, sys
data = bytearray(open(sys.argv[1], 'rb').read())
# the ftyp box follows the 12-byte signature box
assert data[16:20] == b'ftyp' and data[20:24] == b'jp2 '
data[20:24] = b'jph '
length = struct.unpack('>I', data[12:16])[0]
for i in range(28, 12 + length, 4):
    if data[i:i + 4] == b'jp2 ':
        data[i:i + 4] = b'jph '
open(sys.argv[2], 'wb').write(data)
EOF2
rm "$out/g_rgb8_rev.jp2"

# ------------------------------------------------------------------ expected samples
python3 "$here/scripts/make-ht-expected.py" "$out"
# SigProp/MagRef, placeholder passes, an HT set over layers (FFmpeg, when at
# hand, cross-checks the last two: FFMPEG=/path/to/ffmpeg).
ffmpeg=${FFMPEG:-$(command -v ffmpeg || true)}
[[ -z $ffmpeg && -x $here/build/stage/bin/ffmpeg ]] && ffmpeg=$here/build/stage/bin/ffmpeg
python3 "$here/scripts/make-ht-refine.py" "$out" "$work" "$out/expected.txt" $ffmpeg
# MIXED tile-components of HT and Part-1 code-blocks, put together by the
# tests (HT_DECODE_TEST, default build/core/tests/ht_decode_test) and checked
# with FFmpeg's native decoder, which both need.
test=${HT_DECODE_TEST:-$here/build/core/tests/ht_decode_test}
if [[ -n $ffmpeg && -x $test ]]; then
    python3 "$here/scripts/make-ht-mixed.py" "$out" "$work" "$out/expected.txt" "$test" "$ffmpeg"
else
    echo "make-ht-data: no FFmpeg or no $test: the MIXED streams (m_*) are left out" >&2
fi
ls -l "$out"
