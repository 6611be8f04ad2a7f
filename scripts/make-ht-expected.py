#!/usr/bin/env python3
"""Writes DIR/expected.txt (and DIR/*.ref) for the HT codestreams in DIR, as
tests/ht_decode_test.cpp reads them; run by scripts/make-ht-data.sh.

The reference decoder is OpenJPH's ojph_expand (.pgm/.ppm, or planar .yuv
for subsampled components; for signed ones, which it clips, opj_decompress). For 5/3 streams OpenJPEG's
opj_decompress must agree sample for sample (where it delivers the
components as coded: not for three subsampled ones, which it turns into
RGB), and the expectation is a hash; for 9/7 streams, where implementations
differ by rounding, the samples are stored too (FILE.ref: every component in
turn, 16-bit little-endian) and the test allows a difference of 1 (the
project's 9/7 tolerance against opj_decompress)."""
import glob
import os
import re
import struct
import subprocess
import sys
import tempfile

# The PNM reader of the interoperability suite, so both read the reference decoders' output alike.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'interop'))
from interop import read_pnm_planes  # noqa: E402


def run(*cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def codestream(path):
    data = open(path, 'rb').read()
    if data[:2] == b'\xff\x4f':
        return data
    pos = 0
    while pos + 8 <= len(data):
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        if kind == b'jp2c':
            return data[pos + 8:pos + length] if length else data[pos + 8:]
        pos += length
    raise SystemExit('no jp2c box in ' + path)


def components(cs):
    """Per component (width, height, precision, signed, dx, dy) from SIZ; and whether COD says 5/3."""
    assert cs[2:4] == b'\xff\x51'
    (_, _, xsiz, ysiz, x0, y0, _, _, _, _, csiz) = struct.unpack('>HHIIIIIIIIH', cs[4:42])
    comps = []
    for c in range(csiz):
        ssiz, dx, dy = cs[42 + 3 * c:45 + 3 * c]
        w = -(-xsiz // dx) - (-(-x0 // dx))
        h = -(-ysiz // dy) - (-(-y0 // dy))
        comps.append((w, h, (ssiz & 0x7F) + 1, ssiz >> 7, dx, dy))
    cod = cs.index(b'\xff\x52')
    reversible = cs[cod + 4 + 9] == 1  # Lcod, Scod, SGcod (4), SPcod: levels, xcb, ycb, style, transform
    return comps, reversible


def read_yuv(path, comps):
    data = open(path, 'rb').read()
    planes, pos = [], 0
    for (w, h, prec, sgn, _, _) in comps:
        size = 1 if prec <= 8 else 2
        fmt = '<%d%s' % (w * h, ('b' if sgn else 'B') if size == 1 else ('h' if sgn else 'H'))
        planes.append(list(struct.unpack_from(fmt, data, pos)))
        pos += w * h * size
    assert pos == len(data), path
    return planes


def read_pgx(path):
    data = open(path, 'rb').read()
    nl = data.index(b'\n')
    head = data[:nl].decode().split()
    sgn = head[2] == '-' if head[2] in '+-' else False
    rest = head[3:] if head[2] in '+-' else head[2:]
    prec, w, h = int(rest[0]), int(rest[1]), int(rest[2])
    size = 1 if prec <= 8 else (2 if prec <= 16 else 4)
    fmt = ('>' if head[1] == 'ML' else '<') + ({1: 'b', 2: 'h', 4: 'i'} if sgn else {1: 'B', 2: 'H', 4: 'I'})[size]
    return [struct.unpack_from(fmt, data, nl + 1 + i * size)[0] for i in range(w * h)]


def fnv(vals):
    h = 0xcbf29ce484222325
    for v in vals:
        for b in struct.pack('<i', v):
            h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    out = sys.argv[1]
    work = tempfile.mkdtemp()
    versions = subprocess.run(
        "dpkg-query -W -f='${Package} ${Version}; ' openjph-tools grokj2k-tools libopenjp2-tools",
        shell=True, capture_output=True, text=True).stdout.strip()
    lines = ['# written by scripts/make-ht-data.sh with ' + versions,
             '# file component width height precision signed fnv1a64(samples as int32 LE) tolerance',
             '# tolerance 0: the hash must match; 1: FILE.ref holds the samples (16-bit LE, components in turn)']
    # r_*: make-ht-refine.py's streams, which it checks and describes itself.
    names = sorted(os.path.basename(p) for p in glob.glob(out + '/*')
                   if re.search(r'\.(j2c|j2k|jph)$', p) and not os.path.basename(p).startswith('r_'))
    for name in names:
        cs = codestream(os.path.join(out, name))
        comps, reversible = components(cs)
        raw = os.path.join(work, 'cs.j2c')
        open(raw, 'wb').write(cs)
        subsampled = any(c[4] != 1 or c[5] != 1 for c in comps)
        if len(comps) == 3 and not subsampled and not any(c[3] for c in comps) and len({c[2] for c in comps}) == 1:
            kind = 'ppm'
        elif len(comps) == 1 and not comps[0][3]:
            kind = 'pgm'
        else:
            kind = 'yuv'
        opj = None
        if not (subsampled and len(comps) == 3):
            for f in glob.glob(work + '/opj*'):
                os.remove(f)
            run('opj_decompress', '-i', raw, '-o', os.path.join(work, 'opj.pgx'), '-quiet')
            opj = []
            for c in range(len(comps)):
                p = os.path.join(work, 'opj_%d.pgx' % c)
                opj.append(read_pgx(p if os.path.exists(p) else os.path.join(work, 'opj.pgx')))
        if any(c[3] for c in comps):
            # ojph_expand 0.9 writes signed components clipped to unsigned: opj_decompress
            # (exact only for 5/3) is the reference there.
            assert reversible and opj, name
            planes = opj
        else:
            ref = os.path.join(work, 'ref.' + kind)
            run('ojph_expand', '-i', raw, '-o', ref)
            planes = read_yuv(ref, comps) if kind == 'yuv' else read_pnm_planes(ref)[0]
        assert len(planes) == len(comps), name
        for c, (w, h, _, _, _, _) in enumerate(comps):
            assert len(planes[c]) == w * h, (name, c)
        if reversible and opj and opj != planes:
            raise SystemExit('make-ht-data: opj_decompress and ojph_expand differ on ' + name)
        tol = 0 if reversible else 1
        for c, (w, h, prec, sgn, _, _) in enumerate(comps):
            lines.append('%s %d %d %d %d %d %016x %d' % (name, c, w, h, prec, sgn, fnv(planes[c]), tol))
        if tol:
            with open(os.path.join(out, name + '.ref'), 'wb') as f:
                for c, comp in enumerate(comps):
                    f.write(struct.pack('<%d%s' % (len(planes[c]), 'h' if comp[3] else 'H'), *planes[c]))
    open(os.path.join(out, 'expected.txt'), 'w').write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
