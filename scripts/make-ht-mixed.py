#!/usr/bin/env python3
"""MIXED streams of ISO/IEC 15444-15 (code-block style 0xC0: each code-block HT
or Part-1, as its first packet-header length says), which no encoder at hand
writes: run by scripts/make-ht-data.sh.

ht_decode_test (HtMixed.WriteStreams) puts them together from this library's
lossless Part-1 and HT encodings of one image and writes each with that image.
A stream is kept only where FFmpeg's native decoder, the decoder at hand that
reads MIXED mode, gives the image back exactly (FFmpeg scales 12-bit samples in
16-bit words: either form counts); the image's samples go into expected.txt.
FFmpeg 8.1 misreads the Part-1 blocks of a MIXED tile-component whose modes
make several codeword segments (TERMALL, BYPASS): those streams are left out
with a note, and only the tests decode them (to their images).

usage: make-ht-mixed.py OUT_DIR WORK_DIR EXPECTED_TXT HT_DECODE_TEST FFMPEG"""
import glob
import os
import runpy
import shutil
import struct
import subprocess
import sys

# The sample hash of expected.txt, the one make-ht-expected.py writes for the other HT streams.
fnv = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'make-ht-expected.py'))['fnv']


def siz(cs):
    """Width, height, components and precision of a one-tile, unsubsampled codestream."""
    assert cs[2:4] == b'\xff\x51'
    _, _, xsiz, ysiz, xo, yo = struct.unpack('>HHIIII', cs[4:24])
    csiz = struct.unpack('>H', cs[40:42])[0]
    return xsiz - xo, ysiz - yo, csiz, (cs[42] & 0x7F) + 1


def ffmpeg_planes(ffmpeg, path, work, w, h, n, prec):
    """FFmpeg's native decode of `path`, one list of samples per component."""
    wide = prec > 8
    fmt = ('gray16le' if wide else 'gray') if n == 1 else ('rgb48le' if wide else 'rgb24')
    out = os.path.join(work, 'ffmpeg.raw')
    subprocess.run([ffmpeg, '-v', 'error', '-y', '-c:v', 'jpeg2000', '-i', path, '-f', 'rawvideo', '-pix_fmt', fmt,
                    out], check=True)
    data = open(out, 'rb').read()
    vals = struct.unpack('<%dH' % (w * h * n), data) if wide else list(data)
    return [list(vals[c::n]) for c in range(n)]


def main():
    out_dir, work, expected, test, ffmpeg = sys.argv[1:6]
    gen = os.path.join(work, 'mixed')
    os.makedirs(gen, exist_ok=True)
    env = dict(os.environ, J2KC_HT_MIXED_OUT=gen)
    subprocess.run([test, '--gtest_filter=HtMixed.WriteStreams'], check=True, env=env, stdout=subprocess.DEVNULL)
    lines = []
    for path in sorted(glob.glob(os.path.join(gen, 'm_*.j2c'))):
        name = os.path.basename(path)
        w, h, n, prec = siz(open(path, 'rb').read())
        raw = open(path[:-4] + '.raw', 'rb').read()
        image = [list(struct.unpack_from('<%dH' % (w * h), raw, 2 * c * w * h)) for c in range(n)]
        got = ffmpeg_planes(ffmpeg, path, work, w, h, n, prec)
        shift = 16 - prec if prec > 8 else 0
        if got != image and [[v >> shift for v in p] for p in got] != image:
            print('make-ht-mixed: FFmpeg does not decode %s to its image: left out' % name, file=sys.stderr)
            continue
        shutil.copy(path, os.path.join(out_dir, name))
        for c in range(n):
            lines.append('%s %d %d %d %d 0 %016x 0' % (name, c, w, h, prec, fnv(image[c])))
    with open(expected, 'a') as f:
        f.write('# m_*: MIXED tile-components of HT and Part-1 code-blocks, by scripts/make-ht-mixed.py; '
                'the image, as FFmpeg decodes them\n')
        f.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
