#!/usr/bin/env python3
"""Interoperability matrix for j2kc.

Sections:
  decode     streams made by opj_compress and grk_compress over their option
             matrix (progressions, precincts, tiles and offsets, layers, every
             -M code-block style bit and combinations, ROI, subsampling, bit
             depths 1..16 signed and unsigned, 5/3 and 9/7, levels 0..N,
             tile-parts, SOP/EPH, PLT/TLM, POC, JP2), decoded by the decoder
             under test to PGX and compared component by component with
             opj_decompress: exact for 5/3, max |diff| <= 1 for 9/7. Where a 9/7
             decode differs by 2..4 the decoder passes only if it is at least as
             close to the source image as opj_decompress (squared error): at
             16 bits the float32 9/7 of OpenJPEG/Grok loses precision. Such
             cases are printed as NOTE lines.
  encode     `j2kc encode` over its options, decoded by opj_decompress:
             bit-exact against the source image for lossless; for lossy equal
             (<= 1 LSB, exact count reported) to `j2kc decode` of the same file.
  deliver    JP2 files (and a raw codestream) that `j2kc encode` writes: sYCC
             4:2:0/4:2:2/4:4:4 at odd sizes, greyscale, RGB and greyscale with an
             ICC profile made here, CMYK, e-sYCC and CIELab colour boxes,
             channel definitions (cdef) that reorder colours and opacity, on
             a palette too, 8 to 16 bits, decoded by `j2kc decode` and by
             opj_decompress: the images both deliver (RGB from YCbCr, sRGB
             through the profile, channels in cdef's order) are equal within
             1 LSB; `--raw-components` gives the coded components, which for
             these lossless files are the source's. A malformed cdef: the
             coded order with one warning.
  malformed  truncated and corrupted streams: `j2kc decode`/`dump` must exit
             0 or 1 with one line on stderr, never crash or hang.
  dump       `j2kc dump` names the markers of opj streams; --full adds a DCI 2K
             stream that must pass the profile checks (--strict).
  cli        help, bad arguments, missing files (needs no reference tool).
  ht-decode  HTJ2K (ISO/IEC 15444-15) streams made by ojph_compress (5/3 and
             9/7 with -qstep, -num_decomps 0..5, code-blocks 4x4 to 1024x4,
             every progression with precincts, tiles and tile/image offsets,
             colour transform on and off, 8 to 16 bits, signed, 4:2:0 and
             4:2:2 through .yuv, odd sizes) and by grk_compress -M 64 (levels,
             code-blocks, progressions with precincts, tiles, tile-parts,
             PLT/SOP/EPH, MCT off, image offset, 8..16 bits signed and
             unsigned), and 180 combinations of their options drawn with a
             fixed seed; edge_* cases (also on the CUDA backend, skipped
             without a GPU) code uniform noise, flat, checkerboard and sparse
             images at 8..16 bits, signed extremes, images of 1..7 samples a
             side, bands of 26 and 29 magnitude bit-planes, HT and Part-1
             tiles or components spliced into one codestream, an RGN shift
             above every magnitude, 2 and 5 components (FFmpeg's native
             decoder a peer of these too, given --ffmpeg or $FFMPEG); all
             decoded by `j2kc decode --raw-components` and by
             ojph_expand, opj_decompress and grk_decompress, some at reduced
             resolutions (-r, -skip_res, FFmpeg's -lowres): exact for 5/3
             (and j2kc's decode is the source image), within 1 LSB for 9/7
             (the peers' 9/7 runs in float32; 2..4 LSB pass where j2kc is the
             closer to the source, as in `decode`). Grok and OpenJPEG deliver
             three subsampled components as RGB: Grok's (which has no option
             to decode one component) is compared with j2kc's delivered RGB,
             within 4 for 9/7, where 1 LSB of Y, Cb or Cr grows in the sYCC
             matrix.
  ht-encode  `j2kc encode --ht` (lossless, fixed steps, byte budgets with
             refinement passes, layers, levels, code-blocks, progressions with
             precincts, tiles, tile-parts, TLM/PLT/SOP/EPH, 4:2:0/4:2:2, 8 to
             16 bits, signed, 2 and 4 components, guard bits, the IMF profile,
             JPH, and 120 combinations drawn with a fixed seed; some decoded
             at reduced resolutions or to their first layers) decoded by
             ojph_expand, opj_decompress, grk_decompress and FFmpeg's native decoder
             (`ffmpeg -c:v jpeg2000`, --ffmpeg or $FFMPEG), against `j2kc
             decode` of the same stream: exact for --lossless (the source
             image), within 1 LSB for 9/7 (4 for Grok's delivered RGB).
             In both HT sections a peer's known bug is a named exception
             (GRK_*, OJPH_*, FFMPEG_*) on the cases it concerns: the peer must
             still fail there.

Exit status: 0 all passed, 1 a mismatch or failure, 77 reference tools
missing (ctest SKIP_RETURN_CODE). Python 3 standard library only.

  interop.py --j2kc build/core/cuda/j2kc                 # CI subset
  interop.py --j2kc ... --full                           # every case
  interop.py --j2kc ... --sections ht --ffmpeg F         # the HT matrix (ht-decode,ht-encode)
  interop.py --dut grk                                   # prove the harness on grk_decompress
  interop.py --self-test [--j2kc ... --ffmpeg F]         # prove a wrong decoder is caught (HT too with j2kc)
"""

import argparse
import array
import concurrent.futures
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

SKIP = 77
TIMEOUT = 120  # seconds for any one tool run

# --------------------------------------------------------------------------
# Images: procedural content, PGX / PNM / raw writers, PGX reader
# --------------------------------------------------------------------------


def gen_plane(w, h, prec, signed, seed):
    """Gradient + noise + hard edges, hitting both ends of the range."""
    rng = random.Random(seed)
    lo = -(1 << (prec - 1)) if signed else 0
    hi = (1 << (prec - 1)) - 1 if signed else (1 << prec) - 1
    span = hi - lo
    noise = max(1, span // 16)
    out = [0] * (w * h)
    bx = max(1, w // 5)
    by = max(1, h // 3)
    for y in range(h):
        row = y * w
        for x in range(w):
            g = ((x * 3 + y * 5) * span) // (3 * w + 5 * h + 1)
            if ((x // bx) + (y // by)) % 3 == 0:
                g = span - g  # an edge every few blocks
            v = lo + g + rng.randint(-noise, noise)
            out[row + x] = lo if v < lo else hi if v > hi else v
    out[0] = hi
    out[-1] = lo
    if w * h > 2:
        out[(w * h) // 2] = hi
    return out


def sample_bytes(prec):
    return 1 if prec <= 8 else 2 if prec <= 16 else 4


def pack_samples(samples, prec, little=False):
    n = sample_bytes(prec)
    code = {1: 'B', 2: 'H', 4: 'I'}[n]
    mask = (1 << (8 * n)) - 1
    a = array.array(code, (v & mask for v in samples))
    if (sys.byteorder == 'little') != little and n > 1:
        a.byteswap()
    return a.tobytes()


def unpack_samples(data, prec, signed, count, little=False):
    n = sample_bytes(prec)
    code = {1: 'B', 2: 'H', 4: 'I'}[n]
    a = array.array(code)
    a.frombytes(data[:count * n])
    if (sys.byteorder == 'little') != little and n > 1:
        a.byteswap()
    if signed:
        half = 1 << (8 * n - 1)
        full = 1 << (8 * n)
        return [v - full if v >= half else v for v in a]
    return list(a)


def write_pgx(path, w, h, prec, signed, samples):
    with open(path, 'wb') as f:
        f.write(b'PG ML %s %d %d %d\n' % (b'-' if signed else b'+', prec, w, h))
        f.write(pack_samples(samples, prec))


PGX_HEADER = re.compile(rb'PG[ \t]+(ML|LM)[ \t]*([+-]?)[ \t]*(\d+)[ \t]+(\d+)[ \t]+(\d+)[ \t\r]*\n')


class Pgx:
    def __init__(self, path):
        with open(path, 'rb') as f:
            data = f.read()
        m = PGX_HEADER.match(data)
        if not m:
            raise ValueError('%s: not a PGX file' % path)
        self.little = m.group(1) == b'LM'
        self.signed = m.group(2) == b'-'
        self.prec = int(m.group(3))
        self.w = int(m.group(4))
        self.h = int(m.group(5))
        self.body = data[m.end():]
        need = self.w * self.h * sample_bytes(self.prec)
        if len(self.body) < need:
            raise ValueError('%s: truncated PGX' % path)
        self.body = self.body[:need]

    def samples(self):
        return unpack_samples(self.body, self.prec, self.signed, self.w * self.h, self.little)


def write_pnm(path, planes, w, h, prec):
    maxval = (1 << prec) - 1
    magic = b'P5' if len(planes) == 1 else b'P6'
    n = 1 if maxval < 256 else 2
    inter = [0] * (w * h * len(planes))
    for c, p in enumerate(planes):
        inter[c::len(planes)] = p
    with open(path, 'wb') as f:
        f.write(b'%s\n%d %d\n%d\n' % (magic, w, h, maxval))
        f.write(pack_samples(inter, 8 if n == 1 else 16))


def write_raw(path, planes, prec, little=False):
    with open(path, 'wb') as f:
        for p in planes:
            f.write(pack_samples(p, prec, little))


def make_icc(space='RGB ', gamma=2.2):
    """A minimal ICC v2 display profile (ICC.1:2001): matrix/TRC RGB with Adobe
    RGB-like primaries, or greyscale, both with a gamma curve: far enough
    from sRGB that applying it changes every sample."""
    def s15(v):
        return struct.pack('>i', int(round(v * 65536)))

    def xyz(x, y, z):
        return b'XYZ \0\0\0\0' + s15(x) + s15(y) + s15(z)
    curve = b'curv\0\0\0\0' + struct.pack('>IH', 1, int(round(gamma * 256)))
    text = b'j2kc interop profile'
    desc = (b'desc\0\0\0\0' + struct.pack('>I', len(text) + 1) + text + b'\0' + struct.pack('>IIHB', 0, 0, 0, 0) +
            b'\0' * 67)
    tags = [(b'desc', desc), (b'wtpt', xyz(0.9642, 1.0, 0.8249)), (b'cprt', b'text\0\0\0\0public domain\0')]
    if space == 'RGB ':
        tags += [(b'rXYZ', xyz(0.6097, 0.3111, 0.0195)), (b'gXYZ', xyz(0.2053, 0.6257, 0.0609)),
                 (b'bXYZ', xyz(0.1492, 0.0632, 0.7446)), (b'rTRC', curve), (b'gTRC', curve), (b'bTRC', curve)]
    else:
        tags += [(b'kTRC', curve)]
    offset = 128 + 4 + 12 * len(tags)
    table, data = b'', b''
    for sig, body in tags:
        table += sig + struct.pack('>II', offset + len(data), len(body))
        data += body + b'\0' * (-len(body) % 4)
    header = (struct.pack('>I', offset + len(data)) + b'\0' * 4 + struct.pack('>I', 0x02100000) + b'mntr' +
              space.encode() + b'XYZ ' + b'\0' * 12 + b'acsp' + b'\0' * 24 + struct.pack('>I', 0) +
              s15(0.9642) + s15(1.0) + s15(0.8249) + b'\0' * 48)
    return header + struct.pack('>I', len(tags)) + table + data


def jp2_boxes(data, start, end):
    pos = start
    while pos + 8 <= end:
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        yield pos, length, kind
        pos += length


def set_jp2h_box(data, box, content):
    """The JP2 file with the content of its (one) `box` in jp2h replaced, or
    the box added at the end of jp2h (after any added before: pclr, then cmap)."""
    out = b''
    for pos, length, kind in jp2_boxes(data, 0, len(data)):
        if kind != b'jp2h':
            out += data[pos:pos + length]
            continue
        inner, found = b'', False
        for p2, l2, k2 in jp2_boxes(data, pos + 8, pos + length):
            found = found or k2 == box
            inner += struct.pack('>I', 8 + len(content)) + box + content if k2 == box else data[p2:p2 + l2]
        if not found:
            inner += struct.pack('>I', 8 + len(content)) + box + content
        out += struct.pack('>I', 8 + len(inner)) + b'jp2h' + inner
    return out


def cdef(*channels):
    """A cdef box's content: (channel, type, association) triples (I.5.3.6)."""
    return struct.pack('>H', len(channels)) + b''.join(struct.pack('>3H', *c) for c in channels)


def palette_boxes(columns=3, entries=256):
    """pclr (8-bit columns, every index of an 8-bit component) and cmap
    sending component 0 through each column, in that order."""
    pclr = struct.pack('>HB', entries, columns) + bytes([7] * columns)
    pclr += bytes((e * (37 + 50 * c) + 11 * c) & 0xFF for e in range(entries) for c in range(columns))
    cmap = b''.join(struct.pack('>HBB', 0, 1, c) for c in range(columns))
    return [(b'pclr', pclr), (b'cmap', cmap)]


# --------------------------------------------------------------------------
# Sources: described by a key, generated once per run
# --------------------------------------------------------------------------

class Source:
    """An input image: planes with their sizes, precision, sign, subsampling."""

    def __init__(self, key, w, h, comps, prec, signed=False, sub=None, seed=1, flat=False):
        self.key, self.w, self.h, self.comps, self.prec, self.signed = key, w, h, comps, prec, signed
        self.flat = flat  # big images: a few generated rows repeated (fast in pure Python)
        self.sub = sub or [(1, 1)] * comps
        self.seed = seed
        self.planes = None
        self.paths = {}

    def dims(self, c):
        dx, dy = self.sub[c]
        return (self.w + dx - 1) // dx, (self.h + dy - 1) // dy

    def make(self, root):
        if self.planes is None:
            self.planes = []
            for c in range(self.comps):
                cw, ch = self.dims(c)
                if self.flat:
                    rows = gen_plane(cw, 16, self.prec, self.signed, self.seed * 131 + c)
                    self.planes.append((rows * ((ch + 15) // 16))[:cw * ch])
                else:
                    self.planes.append(gen_plane(cw, ch, self.prec, self.signed, self.seed * 131 + c))
        return self

    def file(self, root, kind):
        """kind: pgx (component 0 only, or X_N.pgx list), pnm, raw, rawl (yuv: rawl named .yuv)."""
        if kind in self.paths:
            return self.paths[kind]
        self.make(root)
        base = os.path.join(root, 'src_' + self.key)
        if kind == 'pgx':
            for c in range(self.comps):
                cw, ch = self.dims(c)
                write_pgx('%s_%d.pgx' % (base, c), cw, ch, self.prec, self.signed, self.planes[c])
            path = base + '_0.pgx'
        elif kind == 'pnm':
            assert not self.signed and self.comps in (1, 3) and all(s == (1, 1) for s in self.sub)
            path = base + ('.pgm' if self.comps == 1 else '.ppm')
            write_pnm(path, self.planes, self.w, self.h, self.prec)
        elif kind in ('raw', 'rawl', 'yuv'):
            path = base + '.' + kind
            write_raw(path, self.planes, self.prec, kind != 'raw')
        else:
            raise ValueError(kind)
        self.paths[kind] = path
        return path

    def raw_spec_opj(self):
        sub = ':'.join('%dx%d' % s for s in self.sub)
        return '%d,%d,%d,%d,%s@%s' % (self.w, self.h, self.comps, self.prec, 's' if self.signed else 'u', sub)

    def raw_spec_j2kc(self):
        sub = ':'.join('%dx%d' % s for s in self.sub)
        return '%dx%dx%dx%d%s@%s' % (self.w, self.h, self.comps, self.prec, 's' if self.signed else 'u', sub)


SOURCES = {}


def source(key, *a, **k):
    if key not in SOURCES:
        SOURCES[key] = Source(key, *a, **k)
    return SOURCES[key]


def src_rgb8():
    return source('rgb8_33x17', 33, 17, 3, 8, seed=2)


def src_gray8():
    return source('gray8_17x9', 17, 9, 1, 8, seed=3)


# --------------------------------------------------------------------------
# Running tools
# --------------------------------------------------------------------------

def run(cmd, cwd=None, timeout=TIMEOUT):
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        return p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')
    except subprocess.TimeoutExpired:
        return 'timeout', '', 'timed out after %ds' % timeout
    except OSError as e:
        return 'oserror', '', str(e)


def cuda_decode_refusal(j2kc, stream):
    """Why j2kc's CUDA backend cannot decode `stream` here (no usable GPU,
    ...), or None when it can: the runs on the CUDA backend skip on it."""
    out = tempfile.mkdtemp(prefix='j2kc-cuda-probe-')
    try:
        rc, _, se = run([j2kc, 'decode', '-i', stream, '-o', os.path.join(out, 'p.pgx'), '--backend', 'cuda'])
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return None if rc == 0 else se.strip() or 'exit status %s' % rc


def pgx_components(base):
    """out.pgx -> [out_0.pgx, out_1.pgx, ...] that exist."""
    stem = base[:-4]
    files = []
    i = 0
    while os.path.exists('%s_%d.pgx' % (stem, i)):
        files.append('%s_%d.pgx' % (stem, i))
        i += 1
    return files


class Decoder:
    """A decoder that writes PGX: the reference (opj) or the one under test."""

    def __init__(self, kind, j2kc=None, backend=None):
        self.kind, self.j2kc, self.backend = kind, j2kc, backend

    def decode(self, stream, out, reduce=0, layers=0, component=None, raw_components=False):
        if self.kind == 'j2kc':
            cmd = [self.j2kc, 'decode', '-i', stream, '-o', out] + (['--raw-components'] if raw_components else [])
            if reduce:
                cmd += ['-r', str(reduce)]
            if layers:
                cmd += ['-l', str(layers)]
            if self.backend:
                cmd += ['--backend', self.backend]
        elif self.kind in ('opj', 'opj+perturb'):
            cmd = ['opj_decompress', '-i', stream, '-o', out, '-quiet']
            if reduce:
                cmd += ['-r', str(reduce)]
            if layers:
                cmd += ['-l', str(layers)]
            if component is not None:
                cmd += ['-c', str(component)]
        elif self.kind == 'grk':
            cmd = ['grk_decompress', '-i', stream, '-o', out]
            if reduce:
                cmd += ['-r', str(reduce)]
            if layers:
                cmd += ['-l', str(layers)]
        else:
            raise ValueError(self.kind)
        rc, so, se = run(cmd)
        if rc == 0 and self.kind == 'opj+perturb':
            perturb(out)
        return rc, (se.strip() or so.strip()).splitlines()[-1:] if rc != 0 else []


def perturb(out):
    """Self-test decoder: opj's output with one sample moved by 2."""
    files = pgx_components(out)
    if not files:
        return
    p = Pgx(files[-1])
    s = p.samples()
    i = len(s) // 2
    lo = -(1 << (p.prec - 1)) if p.signed else 0
    s[i] = s[i] + 2 if s[i] - 2 < lo else s[i] - 2
    write_pgx(files[-1], p.w, p.h, p.prec, p.signed, s)


def compare_pgx(ref_files, dut_files, tolerance):
    """Returns (ok, max_diff, differing_samples, message)."""
    if len(ref_files) != len(dut_files):
        return False, None, None, '%d components from the reference, %d from the decoder' % (
            len(ref_files), len(dut_files))
    worst, ndiff = 0, 0
    for c, (rf, df) in enumerate(zip(ref_files, dut_files)):
        r, d = Pgx(rf), Pgx(df)
        if (r.w, r.h) != (d.w, d.h):
            return False, None, None, 'component %d: %dx%d vs %dx%d' % (c, r.w, r.h, d.w, d.h)
        if (r.prec, r.signed) != (d.prec, d.signed):
            return False, None, None, 'component %d: %d-bit %s vs %d-bit %s' % (
                c, r.prec, '-' if r.signed else '+', d.prec, '-' if d.signed else '+')
        if r.body == d.body and r.little == d.little:
            continue
        rs, ds = r.samples(), d.samples()
        first = None
        for i, (a, b) in enumerate(zip(rs, ds)):
            if a != b:
                ndiff += 1
                diff = abs(a - b)
                if diff > worst:
                    worst = diff
                    first = (c, i % r.w, i // r.w, a, b)
        if worst > tolerance:
            c_, x, y, a, b = first
            return False, worst, ndiff, 'component %d (%d, %d): reference %d, decoder %d (max |diff| %d, %d samples differ)' % (
                c_, x, y, a, b, worst, ndiff)
    return True, worst, ndiff, ''


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------

# Streams on which j2kc deliberately differs from OpenJPEG, printed as NOTE
# lines with the reason; any other difference fails.
KNOWN_DEVIATIONS = {
    'decode/grk/roi_53': 'Grok writes a max-shift smaller than its background needs, so no decoder (opj, grk, '
                         'j2kc) rebuilds the lossless source; j2kc applies Annex H (ROI when M >= 2^s), '
                         'OpenJPEG and Grok compare against 2^(s-1)',
    'decode/grk/roi_97': 'same Grok ROI stream as roi_53, irreversible',
    'decode/opj/layers_psnr_97': '16-bit 9/7 in float32 differs by 2-3 LSB between implementations; on '
                                 'the single-layer 16-bit streams j2kc is the one closer to the source',
    'decode/grk/layers_psnr_97': 'as decode/opj/layers_psnr_97',
}


def arbitrate(src, ref_files, dut_files, worst, limit=4):
    """9/7 streams where the decoders differ by more than 1 LSB: the one
    closer to the source image (squared error) is the better decoder; the
    reference's float32 wavelet loses precision at 13-16 bits. Returns a note
    when the decoder under test is at least as close, else None."""
    if src is None or worst is None or worst > limit or len(ref_files) != src.comps:
        return None
    src.make(None)
    sse_ref = sse_dut = 0
    for c, (rf, df) in enumerate(zip(ref_files, dut_files)):
        r, d = Pgx(rf), Pgx(df)
        if (r.w, r.h) != src.dims(c) or (d.w, d.h) != src.dims(c):
            return None
        plane = src.planes[c]
        sse_ref += sum((a - b) ** 2 for a, b in zip(r.samples(), plane))
        sse_dut += sum((a - b) ** 2 for a, b in zip(d.samples(), plane))
    if sse_dut <= sse_ref:
        return 'differs by up to %d from the reference, but is closer to the source (squared error %d vs %d)' % (
            worst, sse_dut, sse_ref)
    return None


class Result:
    def __init__(self, case, status, message='', max_diff=0, ndiff=0, irreversible=False, arbitrated=False):
        self.case, self.status, self.message = case, status, message
        self.arbitrated = arbitrated
        self.max_diff, self.ndiff, self.irreversible = max_diff, ndiff, irreversible


class DecodeCase:
    """A stream made by opj_compress or grk_compress, decoded by both sides."""

    section = 'decode'

    def __init__(self, name, encoder, src, kind, args, ext='j2k', reduce=0, layers=0, full_only=False):
        self.name = 'decode/%s/%s' % (encoder, name)
        self.encoder, self.src, self.kind, self.args, self.ext = encoder, src, kind, args, ext
        self.reduce, self.layers, self.full_only = reduce, layers, full_only
        self.irreversible = '-I' in args

    def run(self, ctx, work):
        inp = self.src.file(ctx.root, self.kind)
        stream = os.path.join(work, 'stream.' + self.ext)
        tool = 'opj_compress' if self.encoder == 'opj' else 'grk_compress'
        cmd = [tool, '-i', inp, '-o', stream] + self.args
        if self.kind in ('raw', 'rawl'):
            cmd += ['-F', self.src.raw_spec_opj()]
        rc, so, se = run(cmd)
        if rc != 0 or not os.path.exists(stream) or os.path.getsize(stream) == 0:
            msg = (se.strip() or so.strip()).splitlines()
            return Result(self, 'skip', '%s refused: %s' % (tool, msg[-1] if msg else rc))
        return decode_and_compare(ctx, work, stream, self.reduce, self.layers, self.irreversible, self)


def decode_and_compare(ctx, work, stream, reduce, layers, irreversible, case):
    ref_out = os.path.join(work, 'ref.pgx')
    rc, msg = ctx.reference.decode(stream, ref_out, reduce, layers)
    if rc != 0:
        return Result(case, 'skip', 'opj_decompress refused: %s' % (msg[0] if msg else rc))
    dut_out = os.path.join(work, 'dut.pgx')
    rc, msg = ctx.dut.decode(stream, dut_out, reduce, layers)
    if rc != 0:
        return Result(case, 'fail', 'decoder failed (%s): %s' % (rc, msg[0] if msg else ''))
    tol = 1 if irreversible else 0
    ref_files, dut_files = pgx_components(ref_out), pgx_components(dut_out)
    ok, worst, ndiff, why = compare_pgx(ref_files, dut_files, tol)
    per = ref_files
    if not ok and len(ref_files) == 3:
        # opj_decompress turns 3 subsampled components (or a JP2 sYCC image)
        # into upsampled RGB; decode each component alone to see the codestream's.
        per = []
        for c in range(3):
            out = os.path.join(work, 'ref_c%d.pgx' % c)
            rc, m = ctx.reference.decode(stream, out, reduce, layers, component=c)
            if rc != 0:
                break
            per += pgx_components(out)
        if len(per) == 3:
            ok, worst, ndiff, why = compare_pgx(per, dut_files, tol)
            ref_files = per
    if not ok and irreversible and (reduce, layers) == (0, 0):
        note = arbitrate(getattr(case, 'src', None), ref_files if len(ref_files) == len(dut_files) else per,
                         dut_files, worst)
        if note:
            return Result(case, 'pass', note, worst, ndiff, irreversible, arbitrated=True)
    # Only j2kc's own deviations are known; any other decoder (the self-test's) must match.
    if not ok and ctx.dut.kind == 'j2kc' and case.name in KNOWN_DEVIATIONS:
        return Result(case, 'pass', '%s (known deviation: %s)' % (why, KNOWN_DEVIATIONS[case.name]), worst, ndiff,
                      irreversible, arbitrated=True)
    if not ok:
        return Result(case, 'fail', why, worst or 0, ndiff or 0, irreversible)
    return Result(case, 'pass', '', worst, ndiff, irreversible)


def read_pnm(path):
    """(width, height, depth, maxval, samples) of a P5/P6/P7 file; comments skipped."""
    with open(path, 'rb') as f:
        data = f.read()
    magic = data[:2]
    if magic == b'P7':
        end = data.index(b'ENDHDR\n') + 7
        fields = dict(l.split(None, 1) for l in data[3:end - 7].decode().splitlines() if l and not l.startswith('#'))
        w, h, d, maxval = (int(fields[k]) for k in ('WIDTH', 'HEIGHT', 'DEPTH', 'MAXVAL'))
    else:
        tokens, pos = [], 2
        while len(tokens) < 3:
            while data[pos:pos + 1].isspace():
                pos += 1
            if data[pos:pos + 1] == b'#':
                pos = data.index(b'\n', pos) + 1
                continue
            start = pos
            while not data[pos:pos + 1].isspace():
                pos += 1
            tokens.append(int(data[start:pos]))
        w, h, maxval = tokens
        d = 1 if magic == b'P5' else 3
        end = pos + 1
    prec = 8 if maxval < 256 else 16
    return w, h, d, maxval, unpack_samples(data[end:], prec, False, w * h * d)


class FormatCase:
    """`j2kc decode` to PGM/PPM/raw against a reference decoder writing the same format."""

    section = 'decode'

    def __init__(self, name, src, kind, args, ext, full_only=False):
        self.name = 'format/' + name
        self.src, self.kind, self.args, self.ext, self.full_only = src, kind, args, ext, full_only
        self.irreversible = '-I' in args

    def run(self, ctx, work):
        inp = self.src.file(ctx.root, self.kind)
        stream = os.path.join(work, 'stream.j2k')
        rc, so, se = run(['opj_compress', '-i', inp, '-o', stream] + self.args)
        if rc != 0:
            return Result(self, 'skip', 'opj_compress refused')
        ref, dut = os.path.join(work, 'ref.' + self.ext), os.path.join(work, 'dut.' + self.ext)
        if self.ext == 'raw':
            # opj_decompress 2.5 writes .raw little-endian (as .rawl), although
            # opj_compress reads .raw big-endian; grk_decompress writes .raw
            # big-endian like both compressors read it: that is the reference.
            if shutil.which('grk_decompress') is None:
                return Result(self, 'skip', 'no grk_decompress')
            rc, so, se = run(['grk_decompress', '-i', stream, '-o', ref])
        else:
            rc, so, se = run(['opj_decompress', '-i', stream, '-o', ref, '-quiet'])
        if rc != 0:
            return Result(self, 'skip', 'reference decoder refused')
        cmd = [ctx.j2kc, 'decode', '-i', stream, '-o', dut] + (['--backend', ctx.backend] if ctx.backend else [])
        rc, so, se = run(cmd)
        if rc != 0:
            return Result(self, 'fail', 'j2kc decode failed (%s): %s' % (rc, se.strip()[:200]))
        tol = 1 if self.irreversible else 0
        if self.ext in ('raw', 'rawl'):
            with open(ref, 'rb') as a, open(dut, 'rb') as b:
                ra, rb = a.read(), b.read()
            if len(ra) != len(rb):
                return Result(self, 'fail', 'raw files of %d and %d bytes' % (len(ra), len(rb)))
            n = len(ra) // sample_bytes(self.src.prec)
            sa = unpack_samples(ra, self.src.prec, False, n, self.ext == 'rawl')
            sb = unpack_samples(rb, self.src.prec, False, n, self.ext == 'rawl')
        else:
            a, b = read_pnm(ref), read_pnm(dut)
            if a[:4] != b[:4]:
                return Result(self, 'fail', 'PNM geometry %s vs %s' % (a[:4], b[:4]))
            sa, sb = a[4], b[4]
        diffs = [abs(x - y) for x, y in zip(sa, sb) if x != y]
        worst = max(diffs or [0])
        if worst > tol:
            return Result(self, 'fail', 'samples differ by up to %d (%d of %d)' % (worst, len(diffs), len(sa)),
                          worst, len(diffs), self.irreversible)
        return Result(self, 'pass', '', worst, len(diffs), self.irreversible)


class DumpCase:
    """`j2kc dump` on a stream of opj_compress: exit 0 and the main markers named."""

    section = 'dump'
    irreversible = False

    def __init__(self, name, src, kind, args, want, strict=False, ext='j2k', full_only=False):
        self.name = 'dump/' + name
        self.src, self.kind, self.args, self.want, self.strict = src, kind, args, want, strict
        self.ext, self.full_only = ext, full_only

    def run(self, ctx, work):
        inp = self.src.file(ctx.root, self.kind)
        stream = os.path.join(work, 'stream.' + self.ext)
        cmd = ['opj_compress', '-i', inp, '-o', stream] + self.args
        if self.kind in ('raw', 'rawl'):
            cmd += ['-F', self.src.raw_spec_opj()]
        rc, so, se = run(cmd)
        if rc != 0:
            return Result(self, 'skip', 'opj_compress refused')
        rc, so, se = run([ctx.j2kc, 'dump', '-i', stream] + (['--strict'] if self.strict else []))
        if rc != 0:
            return Result(self, 'fail', 'j2kc dump exited %s: %s' % (rc, se.strip()[:300]))
        missing = [w for w in self.want if w not in so]
        if missing:
            return Result(self, 'fail', 'dump lacks %s' % ', '.join(missing))
        return Result(self, 'pass')


class EncodeCase:
    """`j2kc encode` output decoded by opj_decompress (and by j2kc for lossy)."""

    section = 'encode'

    def __init__(self, name, src, kind, args, ext='j2c', full_only=False, budget=None, strict_dump=False):
        self.name = 'encode/' + name
        self.strict_dump = strict_dump  # `j2kc dump --strict`: the profile's constraints hold
        self.src, self.kind, self.args, self.ext, self.full_only = src, kind, args, ext, full_only
        self.lossless = '--lossless' in args
        self.irreversible = not self.lossless
        self.budget = budget

    def run(self, ctx, work):
        inp = self.src.file(ctx.root, self.kind)
        if self.kind == 'pgx':
            inp = inp[:-len('_0.pgx')] + '.pgx'  # X.pgx reads X_0.pgx, X_1.pgx, ...
        stream = os.path.join(work, 'ours.' + self.ext)
        cmd = [ctx.j2kc, 'encode', '-i', inp, '-o', stream] + self.args
        if self.kind in ('raw', 'rawl'):
            cmd += ['--raw', self.src.raw_spec_j2kc()]
        if ctx.backend:
            cmd += ['--backend', ctx.backend]
        rc, so, se = run(cmd)
        if rc != 0:
            return Result(self, 'fail', 'j2kc encode failed (%s): %s' % (rc, se.strip().splitlines()[-1:] or ''))
        if self.budget and os.path.getsize(stream) > self.budget:
            return Result(self, 'fail', 'stream of %d bytes exceeds the budget of %d' % (
                os.path.getsize(stream), self.budget))
        if self.strict_dump:
            rc, so, se = run([ctx.j2kc, 'dump', '-i', stream, '--strict'])
            if rc != 0:
                broken = [l.strip() for l in so.splitlines() if l.startswith('  ')][-3:]
                return Result(self, 'fail', 'profile checks fail: %s' % '; '.join(broken) or se.strip())
        ref_out = os.path.join(work, 'opj.pgx')
        rc, msg = ctx.reference.decode(stream, ref_out)
        if rc != 0:
            return Result(self, 'fail', 'opj_decompress cannot decode our stream: %s' % (msg[0] if msg else rc))
        ref_files = pgx_components(ref_out)
        # Subsampled chroma: the codestream's components, each decoded alone
        # (opj_decompress, like `j2kc decode`, delivers them as RGB).
        per_component = len(ref_files) == 3 and any(s != (1, 1) for s in self.src.sub)
        if per_component:
            ref_files = []
            for c in range(3):
                out = os.path.join(work, 'opj_c%d.pgx' % c)
                ctx.reference.decode(stream, out, component=c)
                ref_files += pgx_components(out)
        if self.lossless:
            src_files = []
            self.src.make(ctx.root)
            for c in range(self.src.comps):
                cw, ch = self.src.dims(c)
                path = os.path.join(work, 'src_%d.pgx' % c)
                write_pgx(path, cw, ch, self.src.prec, self.src.signed, self.src.planes[c])
                src_files.append(path)
            ok, worst, ndiff, why = compare_pgx(src_files, ref_files, 0)
            if not ok:
                return Result(self, 'fail', 'lossless, opj_decompress vs source: ' + why)
            return Result(self, 'pass')
        ours = os.path.join(work, 'ours.pgx')
        rc, msg = Decoder('j2kc', ctx.j2kc, ctx.backend).decode(stream, ours, raw_components=per_component)
        if rc != 0:
            return Result(self, 'fail', 'j2kc cannot decode its own stream: %s' % (msg[0] if msg else rc))
        tol = 0 if ctx.strict97 else 1
        ok, worst, ndiff, why = compare_pgx(ref_files, pgx_components(ours), tol)
        if not ok and not ctx.strict97:
            note = arbitrate(self.src, ref_files, pgx_components(ours), worst)
            if note:
                return Result(self, 'pass', note, worst, ndiff, True, arbitrated=True)
        if not ok:
            return Result(self, 'fail', 'lossy, opj_decompress vs j2kc decode: ' + why, worst or 0, ndiff or 0, True)
        return Result(self, 'pass', '', worst, ndiff, True)


def read_pnm_planes(path):
    """Planes, width, height, precision of a binary PGM/PPM."""
    with open(path, 'rb') as f:
        data = f.read()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b'#':
            pos = data.index(b'\n', pos)
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    pos += 1
    comps = {b'P5': 1, b'P6': 3}[fields[0]]
    w, h, maxval = int(fields[1]), int(fields[2]), int(fields[3])
    n = 1 if maxval < 256 else 2
    body = data[pos:pos + w * h * comps * n]
    if n == 1:
        samples = list(body)
    else:
        samples = [body[i] << 8 | body[i + 1] for i in range(0, len(body), 2)]
    return [samples[c::comps] for c in range(comps)], w, h, maxval.bit_length()


class FileSource:
    """A test image from tests/data (a binary PNM), usable where a Source is."""

    def __init__(self, name):
        self.path = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data', name)
        self.planes = None

    def make(self, root):
        if self.planes is None:
            self.planes, self.w, self.h, self.prec = read_pnm_planes(self.path)
            self.comps = len(self.planes)
        return self

    def file(self, root, kind):
        assert kind == 'pnm'
        return self.path


def psnr_db(ref_planes, planes, prec):
    total, count = 0, 0
    for a, b in zip(ref_planes, planes):
        total += sum((x - y) * (x - y) for x, y in zip(a, b))
        count += len(a)
    if total == 0:
        return float('inf')
    peak = (1 << prec) - 1
    return 10 * math.log10(peak * peak * count / total)


class XyzPhotoSource(FileSource):
    """A smooth 12-bit X'Y'Z' image made from a tests/data photograph as DCI
    masters are (sRGB to linear, to XYZ, 48 cd/m2 white, 1/2.6 gamma): the
    content where the base step, not PCRD-opt, limits PSNR at high rates."""

    def __init__(self, name):
        FileSource.__init__(self, name)
        self.key = 'xyz12_' + os.path.splitext(name)[0]

    def make(self, root):
        if self.planes is None:
            rgb, self.w, self.h, _ = read_pnm_planes(self.path)
            lut = [v / 3294.6 if v <= 10.31475 else ((v / 255.0 + 0.055) / 1.055) ** 2.4 for v in range(256)]
            m = ((0.4124, 0.3576, 0.1805), (0.2126, 0.7152, 0.0722), (0.0193, 0.1192, 0.9505))
            scale = 48.0 / 52.37
            self.planes = []
            for row in m:
                a, b, c = (k * scale for k in row)
                self.planes.append([int(round(min(1.0, a * lut[r] + b * lut[g] + c * lut[bl]) ** (1 / 2.6) * 4095))
                                    for r, g, bl in zip(*rgb)])
            self.prec, self.comps = 12, 3
        return self

    def file(self, root, kind):
        assert kind == 'pnm'
        path = os.path.join(root, 'src_%s.ppm' % self.key)
        if not os.path.exists(path):  # each run has its own work directory
            self.make(root)
            write_pnm(path, self.planes, self.w, self.h, 12)
        return path


class PsnrCase:
    """At the byte count opj_compress -I reaches for a ratio, our
    encoder (given that many bytes as its budget) uses no more bytes and
    reaches at least its PSNR; both streams decoded by opj_decompress."""

    section = 'encode'

    def __init__(self, name, src, ratio, full_only=False):
        self.name = 'encode/psnr_%s_r%d' % (name, ratio)
        self.src, self.kind, self.ratio, self.full_only = src, 'pnm', ratio, full_only

    def run(self, ctx, work):
        inp = self.src.file(ctx.root, 'pnm')
        self.src.make(ctx.root)
        theirs = os.path.join(work, 'opj.j2k')
        rc, so, se = run(['opj_compress', '-i', inp, '-o', theirs, '-I', '-r', str(self.ratio)])
        if rc != 0:
            return Result(self, 'fail', 'opj_compress failed (%s)' % rc)
        budget = os.path.getsize(theirs)
        ours = os.path.join(work, 'ours.j2c')
        cmd = [ctx.j2kc, 'encode', '-i', inp, '-o', ours, '--bytes', str(budget)]
        if ctx.backend:
            cmd += ['--backend', ctx.backend]
        rc, so, se = run(cmd)
        if rc != 0:
            return Result(self, 'fail', 'j2kc encode failed (%s): %s' % (rc, se.strip().splitlines()[-1:] or ''))
        size = os.path.getsize(ours)
        figures = []
        for stream in (theirs, ours):
            out = os.path.join(work, os.path.basename(stream) + '.pgx')
            rc, msg = ctx.reference.decode(stream, out)
            if rc != 0:
                return Result(self, 'fail', 'opj_decompress cannot decode %s: %s' % (stream, msg))
            planes = [Pgx(f).samples() for f in pgx_components(out)]
            figures.append(psnr_db(self.src.planes, planes, self.src.prec))
        text = 'opj %d B %.3f dB, ours %d B %.3f dB (%+.3f)' % (budget, figures[0], size, figures[1],
                                                               figures[1] - figures[0])
        if size > budget:
            return Result(self, 'fail', 'more bytes than opj: ' + text)
        if figures[1] < figures[0]:
            return Result(self, 'fail', 'lower PSNR than opj: ' + text)
        return Result(self, 'pass', text)


class DeliverCase:
    """A JP2 file `j2kc encode` writes (a colour box rewritten where `colr` is
    given, the jp2h boxes of `boxes` set: cdef, pclr and cmap), decoded by
    `j2kc decode` and by opj_decompress, both delivering the image: equal
    within `tolerance`, and with `pnm` their .pnm files too (PAM with alpha
    for 2 and 4 channels). With `reference='opj16'` (an ICC profile on 12-bit
    samples, which opj_decompress hands to lcms2 unscaled as 16-bit codes) the
    reference is opj_decompress's decode of the same image scaled to 16 bits,
    scaled back. Lossless files also check that `--raw-components` gives the
    source's components (in their coded order, whatever cdef says)."""

    section = 'deliver'

    def __init__(self, name, src, args, ext='jp2', icc=None, colr=None, tolerance=1, reference='opj', boxes=(),
                 pnm=False):
        self.name = 'deliver/' + name
        self.src, self.kind, self.args, self.ext = src, 'raw', args, ext
        self.icc, self.colr, self.tolerance, self.reference = icc, colr, tolerance, reference
        self.boxes = ([(b'colr', colr)] if colr else []) + list(boxes)
        self.full_only = False
        self.pnm = pnm
        # The library applies a palette even to the raw components: they are no longer the source's.
        self.lossless = '--lossless' in args and not any(box == b'pclr' for box, _ in self.boxes)

    def encode(self, ctx, work, src, name):
        stream = os.path.join(work, name + '.' + self.ext)
        cmd = [ctx.j2kc, 'encode', '-i', src.file(ctx.root, 'raw'), '-o', stream, '--raw', src.raw_spec_j2kc()]
        cmd += self.args + (['--backend', ctx.backend] if ctx.backend else [])
        if self.icc:
            icc = os.path.join(work, 'profile.icc')
            with open(icc, 'wb') as f:
                f.write(make_icc(self.icc))
            cmd += ['--icc', icc]
        rc, so, se = run(cmd)
        if rc != 0:
            raise RuntimeError('j2kc encode failed (%s): %s' % (rc, se.strip()))
        if self.boxes:
            with open(stream, 'rb') as f:
                data = f.read()
            for box, content in self.boxes:
                data = set_jp2h_box(data, box, content)
            with open(stream, 'wb') as f:
                f.write(data)
        return stream

    def run(self, ctx, work):
        if (self.icc or (self.colr and self.colr[3:7] == struct.pack('>I', 14))) and not ctx.lcms2:
            return Result(self, 'skip', 'j2kc is built without lcms2')
        stream = self.encode(ctx, work, self.src, 'ours')
        dut = os.path.join(work, 'dut.pgx')
        rc, so, se = run([ctx.j2kc, 'decode', '-i', stream, '-o', dut] + (['--backend', ctx.backend] if ctx.backend else []))
        if rc != 0:
            return Result(self, 'fail', 'j2kc decode failed (%s): %s' % (rc, se.strip()))
        if se.strip():
            return Result(self, 'fail', 'j2kc decode warns: %s' % se.strip().splitlines()[0])
        ref = os.path.join(work, 'ref.pgx')
        if self.reference == 'opj16':
            wide = scaled_source(self.src, 16)
            rc, msg = ctx.reference.decode(self.encode(ctx, work, wide, 'wide'), ref)
            if rc == 0:
                for path in pgx_components(ref):
                    p = Pgx(path)
                    top = (1 << self.src.prec) - 1
                    write_pgx(path, p.w, p.h, self.src.prec, False, [(v * top + 32767) // 65535 for v in p.samples()])
        else:
            rc, msg = ctx.reference.decode(stream, ref)
        if rc != 0:
            return Result(self, 'fail', 'opj_decompress cannot decode it: %s' % (msg[0] if msg else rc))
        ok, worst, ndiff, why = compare_pgx(pgx_components(ref), pgx_components(dut), self.tolerance)
        if not ok:
            return Result(self, 'fail', why, worst or 0, ndiff or 0)
        if self.pnm:
            why = compare_pnm(ctx, stream, work, self.tolerance)
            if why:
                return Result(self, 'fail', why)
        if self.lossless:
            raw = os.path.join(work, 'raw.pgx')
            rc, so, se = run([ctx.j2kc, 'decode', '-i', stream, '-o', raw, '--raw-components'])
            self.src.make(ctx.root)
            src_files = []
            for c in range(self.src.comps):
                cw, ch = self.src.dims(c)
                path = os.path.join(work, 'src_%d.pgx' % c)
                write_pgx(path, cw, ch, self.src.prec, self.src.signed, self.src.planes[c])
                src_files.append(path)
            ok2, _, _, why2 = compare_pgx(src_files, pgx_components(raw), 0)
            if rc != 0 or not ok2:
                return Result(self, 'fail', '--raw-components: %s' % (why2 or se.strip()))
        return Result(self, 'pass', 'max |diff| %d in %d samples' % (worst or 0, ndiff or 0), worst or 0, ndiff or 0)


def compare_pnm(ctx, stream, work, tolerance):
    """Both decoders' .pnm of the stream (P7 with a tuple type for 2 and 4
    channels): why they differ, or None."""
    files = {}
    for who in ('ref', 'dut'):
        out = os.path.join(work, who + '.pnm')
        if who == 'ref':
            rc, so, se = run(['opj_decompress', '-i', stream, '-o', out, '-quiet'])
        else:
            rc, so, se = run([ctx.j2kc, 'decode', '-i', stream, '-o', out] +
                             (['--backend', ctx.backend] if ctx.backend else []))
        if rc != 0:
            return '%s cannot write a .pnm (%s): %s' % (who, rc, (se or so).strip()[:200])
        with open(out, 'rb') as f:
            kind = re.search(rb'TUPLTYPE (\S+)', f.read(512))
        files[who] = (kind and kind.group(1), read_pnm(out))
    (rtype, (rw, rh, rd, rmax, rs)), (dtype, (dw, dh, dd, dmax, ds)) = files['ref'], files['dut']
    if (rtype, rw, rh, rd, rmax) != (dtype, dw, dh, dd, dmax):
        return '.pnm: reference %s %dx%dx%d max %d, decoder %s %dx%dx%d max %d' % (
            rtype, rw, rh, rd, rmax, dtype, dw, dh, dd, dmax)
    worst = max((abs(a - b) for a, b in zip(rs, ds)), default=0)
    return '.pnm: samples differ by up to %d' % worst if worst > tolerance else None


class CdefIgnoredCase(DeliverCase):
    """A JP2 file with a malformed cdef (which opj_decompress refuses): `j2kc
    decode` delivers the channels in their coded order with one warning."""

    def run(self, ctx, work):
        stream = self.encode(ctx, work, self.src, 'ours')
        backend = ['--backend', ctx.backend] if ctx.backend else []
        out, raw = os.path.join(work, 'dut.pgx'), os.path.join(work, 'raw.pgx')
        rc, so, se = run([ctx.j2kc, 'decode', '-i', stream, '-o', out] + backend)
        lines = [l for l in se.splitlines() if l.strip()]
        if rc != 0 or len(lines) != 1 or 'channel definitions' not in lines[0]:
            return Result(self, 'fail', 'exit %s, stderr %r (want 0 and one warning)' % (rc, se.strip()[:300]))
        rc, so, se = run([ctx.j2kc, 'decode', '-i', stream, '-o', raw, '--raw-components'] + backend)
        ok, _, _, why = compare_pgx(pgx_components(raw), pgx_components(out), 0)
        if rc != 0 or not ok:
            return Result(self, 'fail', 'not the coded order: %s' % (why or se.strip()))
        return Result(self, 'pass', lines[0])


def scaled_source(src, prec):
    """The same image at another depth, each sample rounded to the nearest code."""
    key = '%s_as%d' % (src.key, prec)
    if key not in SOURCES:
        src.make(None)
        wide = Source(key, src.w, src.h, src.comps, prec, src.signed, src.sub, src.seed)
        top_from, top_to = (1 << src.prec) - 1, (1 << prec) - 1
        wide.planes = [[(v * top_to + top_from // 2) // top_from for v in p] for p in src.planes]
        SOURCES[key] = wide
    return SOURCES[key]


class StrictCase:
    """`j2kc decode` of a stream cut short: decoded with a warning by default,
    refused (exit 1, one line naming strict decoding) with --strict."""

    section = 'malformed'
    full_only = False
    irreversible = False

    def __init__(self, name, cut):
        self.name = 'malformed/strict_' + name
        self.cut = cut

    def run(self, ctx, work):
        src = src_rgb8()
        stream = os.path.join(work, 'cut.j2c')
        rc, so, se = run([ctx.j2kc, 'encode', '-i', src.file(ctx.root, 'pnm'), '-o', stream, '--tile', '16x8'])
        if rc != 0:
            return Result(self, 'fail', 'j2kc encode failed: %s' % se.strip())
        with open(stream, 'rb') as f:
            data = f.read()
        with open(stream, 'wb') as f:
            f.write(data[:len(data) - self.cut])
        backend = ['--backend', ctx.backend] if ctx.backend else []
        out = os.path.join(work, 'out.pgx')
        rc, so, se = run([ctx.j2kc, 'decode', '-i', stream, '-o', out] + backend)
        if rc != 0:
            return Result(self, 'fail', 'lenient decode failed (%s): %s' % (rc, se.strip()))
        rc, so, se = run([ctx.j2kc, 'decode', '-i', stream, '-o', out, '--strict'] + backend)
        lines = [l for l in se.splitlines() if l.strip()]
        if rc != 1 or len(lines) != 1 or 'strict' not in lines[0]:
            return Result(self, 'fail', '--strict: exit %s, stderr %r' % (rc, se.strip()[:200]))
        return Result(self, 'pass')


class MalformedCase:
    """A damaged stream: j2kc must answer with status 0 or 1 and one line, never crash."""

    section = 'malformed'

    def __init__(self, name, base_case, mutate):
        self.name = 'malformed/' + name
        self.base_case, self.mutate = base_case, mutate
        self.full_only = False
        self.irreversible = False

    def run(self, ctx, work):
        src = self.base_case.src.file(ctx.root, self.base_case.kind)
        stream = os.path.join(work, 'good.j2k')
        cmd = ['opj_compress', '-i', src, '-o', stream] + self.base_case.args
        if self.base_case.kind in ('raw', 'rawl'):
            cmd += ['-F', self.base_case.src.raw_spec_opj()]
        rc, so, se = run(cmd)
        if rc != 0:
            return Result(self, 'skip', 'opj_compress refused')
        with open(stream, 'rb') as f:
            data = bytearray(f.read())
        bad = bytes(self.mutate(data))
        path = os.path.join(work, 'bad.j2k')
        with open(path, 'wb') as f:
            f.write(bad)
        for sub in (['decode', '-i', path, '-o', os.path.join(work, 'out.pgx')], ['dump', '-i', path]):
            cmd = [ctx.j2kc] + sub
            if sub[0] == 'decode' and ctx.backend:
                cmd += ['--backend', ctx.backend]
            rc, so, se = run(cmd, timeout=60)
            if rc not in (0, 1):
                return Result(self, 'fail', 'j2kc %s exited with %s: %s' % (sub[0], rc, se.strip()[:200]))
            lines = [l for l in se.splitlines() if l.strip()]
            if rc == 1 and len(lines) != 1:
                return Result(self, 'fail', 'j2kc %s printed %d lines on failure' % (sub[0], len(lines)))
        return Result(self, 'pass')


class CliCase:
    section = 'cli'
    full_only = False
    irreversible = False

    def __init__(self, name, args, want_rc, want_stdout=None, one_line=True):
        self.name = 'cli/' + name
        self.args, self.want_rc, self.want_stdout, self.one_line = args, want_rc, want_stdout, one_line

    def run(self, ctx, work):
        args = [a.replace('{work}', work) for a in self.args]
        rc, so, se = run([ctx.j2kc] + args, timeout=30)
        if rc != self.want_rc:
            return Result(self, 'fail', 'exit %s, expected %s: %s' % (rc, self.want_rc, se.strip()[:200]))
        if self.want_stdout and self.want_stdout not in so:
            return Result(self, 'fail', 'stdout lacks %r' % self.want_stdout)
        if self.want_rc != 0 and self.one_line:
            lines = [l for l in se.splitlines() if l.strip()]
            if len(lines) != 1:
                return Result(self, 'fail', 'expected one line on stderr, got %d' % len(lines))
        return Result(self, 'pass')


# --------------------------------------------------------------------------
# The matrix
# --------------------------------------------------------------------------

MODES = [1, 2, 4, 8, 16, 32, 3, 5, 6, 12, 20, 36, 48, 56, 63]
PROGRESSIONS = ['LRCP', 'RLCP', 'RPCL', 'PCRL', 'CPRL']


def decode_cases():
    cases = []
    rgb = src_rgb8()
    gray = src_gray8()
    gray16 = source('gray16_61x45', 61, 45, 1, 16, seed=4)
    wide = source('gray12_4097x33', 4097, 33, 1, 12, seed=5)
    big = source('rgb8_640x480', 640, 480, 3, 8, seed=6)
    one_rgb = source('rgb8_1x1', 1, 1, 3, 8, seed=7)
    one_gray = source('gray8_1x1', 1, 1, 1, 8, seed=8)
    yuv420 = source('yuv420_8_35x19', 35, 19, 3, 8, sub=[(1, 1), (2, 2), (2, 2)], seed=9)
    # opj_compress 2.5 rejects some subsampled raw geometries with odd sizes at 10+ bits.
    yuv422 = source('yuv422_10_36x19', 36, 19, 3, 10, sub=[(1, 1), (2, 1), (2, 1)], seed=10)
    odd4 = source('sub4_12_30x24', 30, 24, 4, 12, sub=[(1, 1), (2, 1), (1, 2), (3, 3)], seed=11)

    for enc in ('opj', 'grk'):
        D = lambda name, src, kind, args, **k: cases.append(DecodeCase(name, enc, src, kind, args, **k))
        tp = '-TP' if enc == 'opj' else '-u'
        sop = ['-SOP', '-EPH'] if enc == 'opj' else ['-S', '-E']
        plt = ['-PLT', '-TLM'] if enc == 'opj' else ['-L']
        roi = '-ROI' if enc == 'opj' else '-R'
        for irr in ([], ['-I']):
            t = '97' if irr else '53'
            D('rgb_%s' % t, rgb, 'pnm', ['-n', '3'] + irr)
            D('gray_%s' % t, gray, 'pnm', ['-n', '2'] + irr)
            for p in PROGRESSIONS:
                D('prog_%s_%s' % (p, t), rgb, 'pnm',
                  ['-n', '3', '-p', p, '-c', '[16,16],[8,8]', '-b', '8,8', '-r', '20,5,1'] + irr)
            for m in MODES:
                D('mode%d_%s' % (m, t), rgb, 'pnm', ['-n', '3', '-M', str(m), '-r', '10,3,1', '-b', '8,8'] + irr,
                  full_only=(irr and m not in (1, 4, 63)))
            D('roi_%s' % t, rgb, 'pnm', ['-n', '3', roi, 'c=0,U=3', '-r', '8,1'] + irr)
            D('tiles_%s' % t, rgb, 'pnm', ['-n', '2', '-t', '16,8'] + irr)
            D('tiles_odd_offset_%s' % t, rgb, 'pnm', ['-n', '2', '-t', '7,5', '-d', '3,2', '-T', '1,1'] + irr)
            D('layers_rates_%s' % t, rgb, 'pnm', ['-n', '3', '-r', '40,20,10,5,2,1'] + irr)
            D('layers_psnr_%s' % t, gray16, 'pnm', ['-n', '4', '-q', '40,50,60'] + irr)
            D('layers_decode2_%s' % t, rgb, 'pnm', ['-n', '3', '-r', '40,10,1'] + irr, layers=2)
            D('reduce1_%s' % t, rgb, 'pnm', ['-n', '4', '-b', '4,4'] + irr, reduce=1)
            D('reduce2_%s' % t, gray16, 'pnm', ['-n', '4'] + irr, reduce=2)
            D('levels0_%s' % t, rgb, 'pnm', ['-n', '1'] + irr)
            D('levels5_%s' % t, gray16, 'pnm', ['-n', '6'] + irr)
            D('tp_R_%s' % t, rgb, 'pnm', ['-n', '3', '-t', '16,16', tp, 'R'] + irr)
            D('tp_C_%s' % t, rgb, 'pnm', ['-n', '3', tp, 'C'] + irr)
            D('tp_L_%s' % t, rgb, 'pnm', ['-n', '3', '-r', '10,1', tp, 'L'] + irr)
            D('sop_eph_%s' % t, rgb, 'pnm', ['-n', '3', '-r', '10,1'] + sop + irr)
            D('plt_tlm_%s' % t, rgb, 'pnm', ['-n', '3', '-t', '16,16'] + plt + irr)
            D('sub_s22_%s' % t, rgb, 'pnm', ['-n', '2', '-s', '2,2'] + irr, full_only=enc == 'grk')
            if enc == 'opj':  # grk_compress reads no subsampled raw files
                D('yuv420_%s' % t, yuv420, 'raw', ['-n', '3'] + irr)
                D('yuv422_%s' % t, yuv422, 'raw', ['-n', '3'] + irr)
                D('sub4comp_%s' % t, odd4, 'raw', ['-n', '2', '-p', 'RPCL', '-c', '[8,8]'] + irr)
            D('mct0_%s' % t, rgb, 'pnm', ['-n', '3', ('-mct' if enc == 'opj' else '-Y'), '0'] + irr)
            D('cblk_4x4_%s' % t, gray16, 'pnm', ['-n', '3', '-b', '4,4'] + irr)
            D('cblk_1024x4_%s' % t, wide, 'pgx', ['-n', '3', '-b', '1024,4'] + irr)
            D('cblk_8x512_%s' % t, gray16, 'pnm', ['-n', '2', '-b', '8,512'] + irr)
            D('wide_4097x33_%s' % t, wide, 'pgx', ['-n', '6'] + irr)
            D('one_rgb_%s' % t, one_rgb, 'pnm', ['-n', '1'] + irr)
            D('one_gray_%s' % t, one_gray, 'pnm', ['-n', '1'] + irr)
            D('jp2_rgb_%s' % t, rgb, 'pnm', ['-n', '3'] + irr, ext='jp2')
            D('jp2_gray_%s' % t, gray16, 'pnm', ['-n', '3'] + irr, ext='jp2')
            D('big_640x480_%s' % t, big, 'pnm', ['-n', '6', '-r', '20'] + irr, full_only=enc == 'grk')
            if enc == 'opj':
                D('poc_%s' % t, rgb, 'pnm', ['-n', '3', '-POC', 'T1=0,0,1,2,3,LRCP/T1=2,0,1,3,3,RPCL'] + irr)
        # Bit depths 1..16, unsigned and signed, through raw and PGX input.
        for bits in range(1, 17):
            for signed in (False, True):
                if signed and bits == 1:
                    continue
                if enc == 'opj' and ((bits < 8 and bits % 2) or (signed and bits not in (2, 8, 12, 16))):
                    continue  # opj_compress 2.5 reads no odd depths below 8; grk covers every depth
                s = source('d%d%s_23x13' % (bits, 's' if signed else 'u'), 23, 13, 1, bits, signed, seed=20 + bits)
                # opj's PGX reader derives the depth from the samples and widens
                # depths below 8, so it gets raw input there; grk's needs 4+ bits.
                # Its PGX reader also labels signed data one bit short, so signed goes raw too.
                kind = 'pgx' if (enc == 'grk' and bits >= 4) or (enc == 'opj' and bits >= 8 and not signed) else 'raw'
                D('depth%d%s_53' % (bits, 's' if signed else 'u'), s, kind, ['-n', '2'])
                D('depth%d%s_97' % (bits, 's' if signed else 'u'), s, kind, ['-n', '2', '-I'],
                  full_only=bits not in (1, 4, 8, 12, 16))
    return cases


def encode_cases():
    cases = []
    E = lambda name, src, kind, args, **k: cases.append(EncodeCase(name, src, kind, args, **k))
    rgb = src_rgb8()
    gray = src_gray8()
    gray16 = source('gray16_61x45', 61, 45, 1, 16, seed=4)
    s12 = source('s12_17x9', 17, 9, 1, 12, True, seed=30)
    wide = source('gray12_4097x33', 4097, 33, 1, 12, seed=5)
    big = source('rgb8_640x480', 640, 480, 3, 8, seed=6)
    one_rgb = source('rgb8_1x1', 1, 1, 3, 8, seed=7)
    one_gray = source('gray8_1x1', 1, 1, 1, 8, seed=8)
    yuv420 = source('yuv420_8_35x19', 35, 19, 3, 8, sub=[(1, 1), (2, 2), (2, 2)], seed=9)
    yuv420_10 = source('yuv420_10_17x9', 17, 9, 3, 10, sub=[(1, 1), (2, 2), (2, 2)], seed=31)
    yuv422 = source('yuv422_10_35x19', 35, 19, 3, 10, sub=[(1, 1), (2, 1), (2, 1)], seed=10)
    yuv444_s = source('s444_9_13x11', 13, 11, 3, 9, True, seed=32)

    for name, src, kind in (('gray8', gray, 'pnm'), ('rgb8', rgb, 'pnm'), ('gray16', gray16, 'pnm'),
                            ('s12', s12, 'pgx'), ('wide12', wide, 'pgx'), ('one_rgb', one_rgb, 'pnm'),
                            ('one_gray', one_gray, 'pnm'), ('yuv420', yuv420, 'raw'),
                            ('yuv420_10le', yuv420_10, 'rawl'), ('yuv422_10', yuv422, 'raw'),
                            ('s9_444', yuv444_s, 'pgx'),
                            ('rgb8_640x480', big, 'pnm')):
        E('lossless_%s' % name, src, kind, ['--lossless'])
        E('lossy_%s' % name, src, kind, ['--quality', '1.0'])
    # PSNR against opj_compress at equal bytes: a photograph (Grace Hopper, US
    # Navy, public domain; 240x320 from matplotlib's sample), the synthetic 640x480 in --full.
    photo = FileSource('photo_hopper_240x320.ppm')
    for r in (10, 20, 40):
        cases.append(PsnrCase('photo', photo, r))
    # The same photograph as smooth 12-bit X'Y'Z' at high rates (the base
    # step under a budget follows the distortion expected there).
    xyz_photo = XyzPhotoSource('photo_hopper_240x320.ppm')
    for r in (4, 9):
        cases.append(PsnrCase('xyz12_photo', xyz_photo, r))
    for r in (10, 20, 40, 80):
        cases.append(PsnrCase('rgb8_640x480', big, r, full_only=True))
    for lv in (0, 1, 5):
        E('levels%d' % lv, gray16, 'pnm', ['--lossless', '--levels', str(lv)])
    for cb in ('4x4', '64x64', '1024x4', '32x128'):
        E('cblk_%s' % cb, wide, 'pgx', ['--lossless', '--cblk', cb])
    for p in PROGRESSIONS:
        E('prog_%s' % p, rgb, 'pnm', ['--lossless', '--progression', p, '--precincts', '16x16,8x8', '--layers', '3'])
        E('prog_%s_lossy' % p, rgb, 'pnm', ['--progression', p, '--precincts', '32x32', '--layers', '3',
                                            '--bytes', '600'], budget=600)
    E('tiles', rgb, 'pnm', ['--lossless', '--tile', '16x8'])
    E('tiles_R', rgb, 'pnm', ['--lossless', '--tile', '16x16', '--tile-parts', 'R', '--tlm'])
    E('tiles_C', rgb, 'pnm', ['--lossless', '--tile-parts', 'C', '--tlm', '--plt'])
    E('sop_eph', rgb, 'pnm', ['--lossless', '--sop', '--eph', '--layers', '2'])
    E('bytes_2000', big, 'pnm', ['--bytes', '2000'], budget=2000)
    E('bytes_50000', big, 'pnm', ['--bytes', '50000', '--layers', '4'], budget=50000)
    E('mct0', rgb, 'pnm', ['--lossless', '--mct', '0'])
    E('jp2_rgb', rgb, 'pnm', ['--lossless'], ext='jp2')
    E('jp2_yuv420', yuv420, 'raw', ['--lossless'], ext='jp2')
    E('jp2_s12', s12, 'pgx', ['--lossless'], ext='jp2')
    dci = source('xyz12_2048x1080', 2048, 1080, 3, 12, seed=40, flat=True)
    E('dci_2k_24', dci, 'raw', ['--profile', 'dci_2k', '--fps', '24'], full_only=True, strict_dump=True,
      budget=1302083)
    E('dci_2k_48', dci, 'raw', ['--profile', 'dci_2k', '--fps', '48'], full_only=True, strict_dump=True,
      budget=651041)
    return cases


def format_cases():
    rgb = src_rgb8()
    gray16 = source('gray16_61x45', 61, 45, 1, 16, seed=4)
    gray = src_gray8()
    return [
        FormatCase('ppm_53', rgb, 'pnm', ['-n', '3'], 'ppm'),
        FormatCase('ppm_97', rgb, 'pnm', ['-n', '3', '-I'], 'ppm'),
        FormatCase('pgm16_53', gray16, 'pnm', ['-n', '3'], 'pgm'),
        FormatCase('pgm8_97', gray, 'pnm', ['-n', '2', '-I'], 'pgm'),
        FormatCase('raw_rgb', rgb, 'pnm', ['-n', '3'], 'raw'),
        FormatCase('raw_gray16', gray16, 'pnm', ['-n', '3'], 'raw'),
        FormatCase('raw_rgb_97', rgb, 'pnm', ['-n', '3', '-I'], 'raw'),
        FormatCase('rawl_gray16', gray16, 'pnm', ['-n', '3'], 'rawl'),
    ]


def deliver_cases():
    """The colours JP2 files declare, each delivered by both decoders."""
    cases = []
    D = lambda name, src, args, **k: cases.append(DeliverCase(name, src, args, **k))
    lossless = ['--lossless']
    y420 = source('yuv420_8_35x19', 35, 19, 3, 8, sub=[(1, 1), (2, 2), (2, 2)], seed=9)
    y422 = source('yuv422_8_33x17', 33, 17, 3, 8, sub=[(1, 1), (2, 1), (2, 1)], seed=50)
    y420_12 = source('yuv420_12_21x15', 21, 15, 3, 12, sub=[(1, 1), (2, 2), (2, 2)], seed=51)
    y422_16 = source('yuv422_16_19x9', 19, 9, 3, 16, sub=[(1, 1), (2, 1), (2, 1)], seed=52)
    y444 = source('yuv444_8_13x11', 13, 11, 3, 8, seed=53)
    rgb8 = source('rgb8_31x13', 31, 13, 3, 8, seed=54)
    rgb12 = source('rgb12_21x11', 21, 11, 3, 12, seed=55)
    rgb16 = source('rgb16_23x9', 23, 9, 3, 16, seed=56)
    rgba8 = source('rgba8_17x9', 17, 9, 4, 8, seed=57)
    gray8 = source('gray8_29x7', 29, 7, 1, 8, seed=58)
    gray16 = source('gray16_15x13', 15, 13, 1, 16, seed=59)
    cmyk = source('cmyk8_21x11', 21, 11, 4, 8, seed=60)
    enum = lambda cs, extra=b'': bytes([1, 0, 0]) + struct.pack('>I', cs) + extra
    D('sycc420_8_35x19', y420, lossless)
    D('sycc422_8_33x17', y422, lossless)
    D('sycc420_12_21x15', y420_12, lossless)
    D('sycc422_16_19x9', y422_16, lossless)
    D('sycc444_8_13x11', y444, lossless + ['--mct', '0'], colr=enum(18))
    D('sycc420_8_lossy', y420, ['--quality', '0.5'])
    D('yuv420_8_raw_codestream', y420, lossless, ext='j2c')
    D('gray8_29x7', gray8, lossless)
    D('gray16_15x13', gray16, lossless)
    D('icc_rgb8', rgb8, lossless, icc='RGB ')
    D('icc_rgb8_lossy', rgb8, ['--quality', '0.5'], icc='RGB ')
    D('icc_rgba8', rgba8, lossless, icc='RGB ')
    D('icc_rgb16', rgb16, lossless, icc='RGB ')
    D('icc_rgb12', rgb12, lossless, icc='RGB ', reference='opj16')
    D('icc_gray8', gray8, lossless, icc='GRAY')
    D('esycc_8', y444, lossless + ['--mct', '0'], colr=enum(24))
    D('cmyk_8', cmyk, lossless, colr=enum(12))
    D('cielab_8_default', rgb8, lossless + ['--mct', '0'], colr=enum(14))
    D('cielab_8_parameters', rgb8, lossless + ['--mct', '0'],
      colr=enum(14, struct.pack('>7I', 100, 0, 170, 128, 200, 96, 0x00443530)))
    # Channel definitions (cdef, I.5.3.6): both decoders deliver colour 1, 2,
    # 3 in that order, opacity after, whatever order the channels are coded in.
    rgba16 = source('rgba16_13x7', 13, 7, 4, 16, seed=61)
    ga8 = source('ga8_19x7', 19, 7, 2, 8, seed=62)
    index8 = source('index8_23x9', 23, 9, 1, 8, seed=63)
    reversed3 = cdef((0, 0, 3), (1, 0, 2), (2, 0, 1))
    alpha_first = cdef((0, 1, 0), (1, 0, 3), (2, 0, 2), (3, 0, 1))
    D('cdef_rgb8_reversed', rgb8, lossless, boxes=[(b'cdef', reversed3)])
    D('cdef_rgb16_reversed', rgb16, lossless, boxes=[(b'cdef', reversed3)])
    D('cdef_rgba8_alpha_first', rgba8, lossless, boxes=[(b'cdef', alpha_first)], pnm=True)
    D('cdef_rgba16_alpha_first', rgba16, lossless, boxes=[(b'cdef', alpha_first)], pnm=True)
    D('cdef_rgba16_premultiplied_last', rgba16, lossless,
      boxes=[(b'cdef', cdef((0, 0, 2), (1, 0, 1), (2, 0, 3), (3, 2, 0)))], pnm=True)
    D('cdef_rgba8_unspecified', rgba8, lossless,
      boxes=[(b'cdef', cdef((0, 0, 3), (1, 0, 2), (2, 0, 1), (3, 0xFFFF, 0xFFFF)))], pnm=True)
    D('cdef_gray_alpha8_alpha_first', ga8, lossless, boxes=[(b'cdef', cdef((0, 1, 0), (1, 0, 1)))], pnm=True)
    D('cdef_sycc444_reversed', y444, lossless + ['--mct', '0'], colr=enum(18), boxes=[(b'cdef', reversed3)])
    D('cdef_icc_rgba8_alpha_first', rgba8, lossless, icc='RGB ', boxes=[(b'cdef', alpha_first)])
    D('cdef_palette_reversed', index8, lossless, colr=enum(16), boxes=palette_boxes() + [(b'cdef', reversed3)])
    # Malformed ones, which opj_decompress refuses: the coded order, with a warning.
    bad = lambda name, src, boxes, colr=None: cases.append(CdefIgnoredCase(
        'cdef_ignored_' + name, src, lossless, colr=colr, boxes=boxes))
    bad('channel_twice', rgb8, [(b'cdef', cdef((0, 0, 3), (0, 0, 2), (2, 0, 1)))])
    bad('absent_channel', rgba8, [(b'cdef', cdef((0, 0, 3), (1, 0, 2), (2, 0, 1), (4, 1, 0)))])
    bad('short', rgb8, [(b'cdef', cdef((0, 0, 3), (1, 0, 2), (2, 0, 1))[:-2])])
    bad('reserved_type', rgb8, [(b'cdef', cdef((0, 0, 3), (1, 0, 2), (2, 3, 1)))])
    bad('palette_channel_3_of_3', index8, palette_boxes() + [(b'cdef', cdef((0, 0, 3), (1, 0, 2), (3, 0, 1)))],
        colr=enum(16))
    # A well-formed cdef for the channels ihdr declares, more or fewer than the codestream has.
    ihdr = lambda src, n: (b'ihdr', struct.pack('>IIHBBBB', src.h, src.w, n, src.prec - 1, 7, 0, 0))
    bad('ihdr_more_channels', rgba8, [ihdr(rgba8, 5), (b'cdef', cdef((0, 1, 0), (1, 0, 3), (2, 0, 2), (3, 0, 1),
                                                                      (4, 0xFFFF, 0xFFFF)))])
    bad('ihdr_fewer_channels', rgba8, [ihdr(rgba8, 3), (b'cdef', reversed3)])
    return cases


def dump_cases():
    rgb = src_rgb8()
    dci = source('xyz12_2048x1080', 2048, 1080, 3, 12, seed=40, flat=True)
    base = ['SIZ', 'COD', 'QCD', 'tile']
    return [
        DumpCase('plain', rgb, 'pnm', ['-n', '3'], base),
        DumpCase('tiles_tlm_plt', rgb, 'pnm', ['-n', '3', '-t', '16,8', '-TLM', '-PLT', '-TP', 'R'], base + ['TLM']),
        DumpCase('sop_eph_poc', rgb, 'pnm', ['-n', '3', '-SOP', '-EPH', '-POC', 'T1=0,0,1,2,3,LRCP/T1=2,0,1,3,3,RPCL'],
                 base + ['POC']),
        DumpCase('roi_coc', rgb, 'pnm', ['-n', '3', '-ROI', 'c=1,U=4'], base + ['RGN']),
        DumpCase('jp2', rgb, 'pnm', ['-n', '3'], base, ext='jp2'),
        # OpenJPEG before 2.5.3 writes 2 guard bits for 2K, which DCI forbids.
        DumpCase('dci_2k', dci, 'raw', ['-cinema2K', '24', '-GuardBits', '1'], base + ['TLM'], strict=True,
                 full_only=True),
    ]


def malformed_cases():
    base = DecodeCase('base', 'opj', src_rgb8(), 'pnm', ['-n', '3', '-t', '16,16', '-r', '10,1', '-SOP', '-EPH'])
    cases = []

    def truncate(frac):
        return lambda d: d[:max(0, int(len(d) * frac))]

    for frac in (0.0, 0.01, 0.05, 0.1, 0.3, 0.5, 0.9, 0.99):
        cases.append(MalformedCase('truncate_%g' % frac, base, truncate(frac)))
    cases += [StrictCase('no_eoc', 2), StrictCase('cut_in_data', 40)]

    def set_bytes(offset, values):
        def f(d):
            d = bytearray(d)
            for i, v in enumerate(values):
                if offset + i < len(d):
                    d[offset + i] = v
            return d
        return f

    # SIZ starts at byte 2: Lsiz at 4, Rsiz 6, Xsiz 8, Ysiz 12, XOsiz 16, YOsiz 20,
    # XTsiz 24, YTsiz 28, XTOsiz 32, YTOsiz 36, Csiz 40, components from 42.
    lies = {
        'siz_huge': (8, [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
        'siz_zero_width': (8, [0, 0, 0, 0]),
        'siz_tile_zero': (24, [0, 0, 0, 0]),
        'siz_tile_tiny': (24, [0, 0, 0, 1, 0, 0, 0, 1]),
        'siz_offset_past_end': (16, [0x7F, 0xFF, 0xFF, 0xFF]),
        'siz_csiz_huge': (40, [0xFF, 0xFF]),
        'siz_csiz_zero': (40, [0, 0]),
        'siz_precision_39': (42, [38]),
        'siz_subsampling_zero': (43, [0, 0]),
        'siz_length_short': (4, [0, 2]),
        'siz_length_long': (4, [0xFF, 0xFF]),
        'soc_missing': (0, [0, 0]),
    }
    for name, (off, vals) in lies.items():
        cases.append(MalformedCase(name, base, set_bytes(off, vals)))

    def find_marker(marker, delta, values):
        def f(d):
            i = bytes(d).find(bytes([0xFF, marker]))
            if i >= 0:
                d = set_bytes(i + delta, values)(d)
            return d
        return f

    cases += [
        MalformedCase('cod_levels_40', base, find_marker(0x52, 9, [40])),
        MalformedCase('cod_cblk_huge', base, find_marker(0x52, 10, [15, 15])),
        MalformedCase('cod_layers_zero', base, find_marker(0x52, 6, [0, 0])),
        MalformedCase('cod_progression_9', base, find_marker(0x52, 5, [9])),
        MalformedCase('qcd_length_zero', base, find_marker(0x5C, 2, [0, 0])),
        MalformedCase('sot_psot_huge', base, find_marker(0x90, 6, [0xFF, 0xFF, 0xFF, 0xFF])),
        MalformedCase('sot_psot_small', base, find_marker(0x90, 6, [0, 0, 0, 1])),
        MalformedCase('sot_tile_index_huge', base, find_marker(0x90, 4, [0xFF, 0xFF])),
        MalformedCase('sot_tpsot_bad', base, find_marker(0x90, 10, [200, 1])),
    ]
    rng = random.Random(1234)
    for i in range(16):
        seeds = [rng.random() for _ in range(8)]

        def flip(d, seeds=seeds):
            d = bytearray(d)
            for s in seeds:
                j = int(s * len(d))
                d[j] ^= 1 << int(s * 1000) % 8
            return d
        cases.append(MalformedCase('bitflips_%d' % i, base, flip))
    return cases


def cli_cases():
    rgb = src_rgb8()
    return [
        CliCase('help', ['--help'], 0, 'decode'),
        CliCase('decode_help', ['decode', '--help'], 0, '--reduce'),
        CliCase('decode_help_delivery', ['decode', '--help'], 0, '--raw-components'),
        CliCase('version_names_colour_management', ['--version'], 0, 'ICC profiles'),
        CliCase('encode_icc_needs_jp2', ['encode', '-i', 'x.ppm', '-o', 'y.j2c', '--icc', 'p.icc'], 2),

        CliCase('encode_help', ['encode', '--help'], 0, '--progression'),
        CliCase('encode_help_ht', ['encode', '--help'], 0, '--ht'),
        CliCase('dump_help', ['dump', '--help'], 0, '-i'),
        CliCase('no_command', [], 2, one_line=False),
        CliCase('unknown_command', ['transcode'], 2),
        CliCase('unknown_option', ['decode', '--frobnicate', '-i', 'x', '-o', 'y.pgx'], 2),
        CliCase('missing_value', ['decode', '-i'], 2),
        CliCase('bad_output_ext', ['decode', '-i', 'x.j2k', '-o', 'y.bmp'], 2),
        CliCase('bad_reduce', ['decode', '-i', 'x.j2k', '-o', 'y.pgx', '-r', 'two'], 2),
        CliCase('bad_backend', ['decode', '-i', 'x.j2k', '-o', 'y.pgx', '--backend', 'tpu'], 2),
        CliCase('missing_input', ['decode', '-i', '{work}/absent.j2k', '-o', '{work}/y.pgx'], 1),
        CliCase('not_a_codestream', ['decode', '-i', '/etc/hostname', '-o', '{work}/y.pgx'], 1),
        CliCase('dump_missing', ['dump', '-i', '{work}/absent.j2k'], 1),
        CliCase('encode_missing', ['encode', '-i', '{work}/absent.ppm', '-o', '{work}/y.j2c'], 1),
        CliCase('encode_bad_cblk', ['encode', '-i', 'x.ppm', '-o', 'y.j2c', '--cblk', '48x48'], 2),
        # Precinct exponents of 0 are not expressible (0 means the default): refused, not replaced.
        CliCase('encode_precincts_1x1', ['encode', '-i', 'x.ppm', '-o', 'y.j2c', '--precincts', '1x1'], 2),
        CliCase('encode_precincts_r0_1x1', ['encode', '-i', 'x.ppm', '-o', 'y.j2c', '--precincts', '64x64,1x1'], 2),
        CliCase('encode_bad_profile', ['encode', '-i', 'x.ppm', '-o', 'y.j2c', '--profile', 'dci_8k'], 2),
        CliCase('encode_raw_no_layout', ['encode', '-i', '{work}/x.raw', '-o', '{work}/y.j2c'], 1),
    ]


# --------------------------------------------------------------------------
# HTJ2K (ISO/IEC 15444-15): peers' HT streams decoded by j2kc, j2kc's HT
# streams decoded by the peers
# --------------------------------------------------------------------------

# A decoded image: a list of planes, each (width, height, precision, signed, samples).

def pgx_planes(files):
    out = []
    for f in files:
        p = Pgx(f)
        out.append((p.w, p.h, p.prec, p.signed, p.samples()))
    return out


def source_planes(src):
    src.make(None)
    return [src.dims(c) + (src.prec, src.signed, src.planes[c]) for c in range(src.comps)]


def compare_planes(ref, dut, tolerance):
    """(ok, max |diff|, differing samples, why) of two decoded images."""
    if len(ref) != len(dut):
        return False, None, None, '%d components against %d' % (len(ref), len(dut))
    worst, ndiff, first = 0, 0, None
    for c, (r, d) in enumerate(zip(ref, dut)):
        if r[:2] != d[:2]:
            return False, None, None, 'component %d: %dx%d against %dx%d' % (c, r[0], r[1], d[0], d[1])
        if r[4] == d[4]:
            continue
        for i, (a, b) in enumerate(zip(r[4], d[4])):
            if a != b:
                ndiff += 1
                if abs(a - b) > worst:
                    worst, first = abs(a - b), (c, i % r[0], i // r[0], a, b)
    if worst > tolerance:
        c, x, y, a, b = first
        return False, worst, ndiff, 'component %d (%d, %d): %d against %d (max |diff| %d, %d samples differ)' % (
            c, x, y, a, b, worst, ndiff)
    return True, worst, ndiff, ''


def perturb_planes(planes):
    """Self-test: the image with one sample moved by 2."""
    w, h, prec, signed, s = planes[-1]
    s = list(s)
    i = len(s) // 2
    lo = -(1 << (prec - 1)) if signed else 0
    s[i] = s[i] + 2 if s[i] - 2 < lo else s[i] - 2
    return planes[:-1] + [(w, h, prec, signed, s)]


def read_yuv(path, shape):
    """ojph_expand's .yuv: the components one after the other, each at its own
    size, 1 byte a sample up to 8 bits and 2 (little-endian) above; `shape`
    gives sizes, precision and signedness (from j2kc's decode)."""
    with open(path, 'rb') as f:
        data = f.read()
    out, pos = [], 0
    for w, h, prec, signed, _ in shape:
        n = w * h * sample_bytes(prec)
        out.append((w, h, prec, signed, unpack_samples(data[pos:pos + n], prec, signed, w * h, little=True)))
        pos += n
    if pos != len(data):
        raise ValueError('%s: %d bytes for %d expected' % (path, len(data), pos))
    return out


# FFmpeg's raw output formats: (the component each plane holds, or None for
# packed samples; components a pixel; bits a sample's container; depth).
FF_PIX_FMTS = {
    'gray': (None, 1, 8, 8), 'gray10le': (None, 1, 16, 10), 'gray12le': (None, 1, 16, 12),
    'gray16le': (None, 1, 16, 16), 'rgb24': (None, 3, 8, 8), 'rgb48le': (None, 3, 16, 16),
    'gbrp': ([2, 0, 1], 3, 8, 8), 'gbrp10le': ([2, 0, 1], 3, 16, 10), 'gbrp12le': ([2, 0, 1], 3, 16, 12),
    'gbrp16le': ([2, 0, 1], 3, 16, 16), 'rgba': (None, 4, 8, 8), 'rgba64le': (None, 4, 16, 16),
    'gbrap': ([2, 0, 1, 3], 4, 8, 8), 'gbrap10le': ([2, 0, 1, 3], 4, 16, 10),
    'gbrap12le': ([2, 0, 1, 3], 4, 16, 12), 'gbrap16le': ([2, 0, 1, 3], 4, 16, 16),
    'ya8': (None, 2, 8, 8), 'ya16le': (None, 2, 16, 16),
}


def ff_layout(fmt):
    """(plane order, components, bits a sample, pixel depth, chroma shifts) of an FFmpeg pixel format."""
    if fmt in FF_PIX_FMTS:
        order, n, bits, depth = FF_PIX_FMTS[fmt]
        return order, n, bits, depth, (0, 0)
    m = re.match(r'yuv(420|422|444|440|411)p(\d+le)?$', fmt)
    if not m:
        raise ValueError('FFmpeg pixel format %s is not read here' % fmt)
    depth = int(m.group(2)[:-2]) if m.group(2) else 8
    shift = {'420': (1, 1), '422': (1, 0), '444': (0, 0), '440': (0, 1), '411': (2, 0)}[m.group(1)]
    return [0, 1, 2], 3, 8 if depth == 8 else 16, depth, shift


def read_ffmpeg_raw(path, fmt, w, h, shape):
    """FFmpeg's rawvideo frame as planes: samples below the format's depth
    (12 bits in gray16le) are shifted back to the codestream's precision, and
    signed components, which FFmpeg's pixel formats cannot hold, come offset
    by 2^(precision - 1) as the native decoder writes them."""
    order, n, bits, depth, (sx, sy) = ff_layout(fmt)
    with open(path, 'rb') as f:
        data = f.read()
    code = 'B' if bits == 8 else 'H'
    a = array.array(code)
    a.frombytes(data[:len(data) - len(data) % (bits // 8)])
    if bits == 16 and sys.byteorder != 'little':
        a.byteswap()
    if len(shape) != n:
        raise ValueError('FFmpeg gave %d components (%s), the codestream has %d' % (n, fmt, len(shape)))
    raw = []
    if order is None:
        if len(a) != w * h * n:
            raise ValueError('%d samples in a %dx%d %s frame' % (len(a), w, h, fmt))
        raw = [list(a[c::n]) for c in range(n)]
        sizes = [(w, h)] * n
    else:
        sizes = [(w, h) if c == 0 or fmt.startswith('gbr') else (-(-w >> sx), -(-h >> sy)) for c in range(n)]
        pos, planes = 0, []
        for cw, ch in sizes:
            planes.append(list(a[pos:pos + cw * ch]))
            pos += cw * ch
        if pos != len(a):
            raise ValueError('%d samples in a %dx%d %s frame, %d expected' % (len(a), w, h, fmt, pos))
        raw = [planes[order.index(c)] for c in range(n)]
    out = []
    # The native decoder shifts samples to the top of 16 bits in gray16le,
    # rgb48le and rgba64le only; elsewhere to the image's largest precision.
    top = 16 if fmt in ('gray16le', 'rgb48le', 'rgba64le') else 8 if bits == 8 else max(p[2] for p in shape)
    for c, (cw, ch) in enumerate(sizes):
        prec = shape[c][2]
        shift = top - prec
        if shift < 0:
            raise ValueError('%s holds %d bits, the component %d' % (fmt, depth, prec))
        if shift and any(v & ((1 << shift) - 1) for v in raw[c]):
            return None, 'FFmpeg\'s %s samples of component %d are not %d-bit samples shifted by %d' % (
                fmt, c, prec, shift)
        offset = 1 << (prec - 1) if shape[c][3] else 0
        out.append((cw, ch, prec, shape[c][3], [(v >> shift) - offset for v in raw[c]]))
    return out, ''


# The peers' HT decoders: decode(ctx, stream, work, shape, delivered, reduce)
# -> (planes or None, why), `reduce` resolutions dropped. `shape` is j2kc's decode of the same stream
# (--raw-components), which gives sizes, precisions and signedness to formats
# that do not carry them; why is 'delivered' where the planes are the RGB a
# decoder delivers from three subsampled components.

def decode_ojph(ctx, stream, work, shape, delivered, reduce=0):
    full = all(p[:2] == shape[0][:2] for p in shape)
    unsigned = not any(p[3] for p in shape)
    if len(shape) == 3 and full and unsigned:
        ext = 'ppm'
    elif len(shape) == 1 and unsigned:
        ext = 'pgm'
    else:
        ext = 'yuv'
    out = os.path.join(work, 'ojph.' + ext)
    rc, so, se = run(['ojph_expand', '-i', stream, '-o', out] + (['-skip_res', '%d,%d' % (reduce, reduce)]
                                                                 if reduce else []))
    if rc != 0 or not os.path.exists(out):
        return None, 'ojph_expand failed (%s): %s' % (rc, (se.strip() or so.strip()).splitlines()[-1:])
    if ext == 'yuv':
        return read_yuv(out, shape), ''
    planes, w, h, _ = read_pnm_planes(out)
    return [(w, h, s[2], s[3], p) for p, s in zip(planes, shape)], ''


def decode_opj(ctx, stream, work, shape, delivered, reduce=0, layers=0):
    out = os.path.join(work, 'opj.pgx')
    rc, msg = Decoder('opj').decode(stream, out, reduce, layers)
    if rc != 0:
        return None, 'opj_decompress failed (%s): %s' % (rc, msg[0] if msg else '')
    files = pgx_components(out)
    if len(files) == 3 and len(shape) == 3 and any(p[:2] != shape[0][:2] for p in shape):
        # Three subsampled components come out as upsampled RGB; one at a time they are the codestream's.
        files = []
        for c in range(3):
            one = os.path.join(work, 'opj_c%d.pgx' % c)
            rc, msg = Decoder('opj').decode(stream, one, reduce, layers, component=c)
            if rc != 0:
                return None, 'opj_decompress -c %d failed: %s' % (c, msg[0] if msg else rc)
            files += pgx_components(one)
    return pgx_planes(files), ''


def decode_grk(ctx, stream, work, shape, delivered, reduce=0, layers=0):
    out = os.path.join(work, 'grk.pgx')
    rc, so, se = run(['grk_decompress', '-i', stream, '-o', out] + (['-r', str(reduce)] if reduce else []) +
                     (['-l', str(layers)] if layers else []))
    files = pgx_components(out)
    if rc != 0 or not files:
        return None, 'grk_decompress failed (%s): %s' % (rc, (se.strip() or so.strip()).splitlines()[-1:])
    planes = pgx_planes(files)
    if len(shape) == 3 and any(p[:2] != shape[0][:2] for p in shape):
        # Like opj_decompress, Grok delivers three subsampled components as
        # upsampled RGB, with no option to decode one alone: compare with
        # j2kc's delivered image (the same conversion).
        return planes, 'delivered'
    return planes, ''


def decode_ffmpeg(ctx, stream, work, shape, delivered, reduce=0):
    out = os.path.join(work, 'ffmpeg.raw')
    rc, so, se = run([ctx.ffmpeg, '-hide_banner', '-nostdin', '-y', '-c:v', 'jpeg2000', '-lowres', str(reduce),
                      '-i', stream,
                      '-frames:v', '1', '-f', 'rawvideo', out])
    m = re.search(r'Output #0.*?Video: rawvideo[^,]*, (\w+)', se, re.S)
    if rc != 0 or not m or not os.path.exists(out):
        lines = [l for l in se.splitlines() if 'rror' in l] or se.strip().splitlines()
        return None, 'ffmpeg -c:v jpeg2000 failed (%s): %s' % (rc, lines[-1:] if lines else '')
    w = max(p[0] for p in shape)
    h = max(p[1] for p in shape)
    planes, why = read_ffmpeg_raw(out, m.group(1), w, h, shape)
    return planes, why


HT_PEERS = {
    'ojph': (decode_ojph, 'ojph_expand'),
    'opj': (decode_opj, 'opj_decompress'),
    'grk': (decode_grk, 'grk_decompress'),
    'ffmpeg': (decode_ffmpeg, 'ffmpeg'),
}

# Known bugs of the peers' decoders. A case names the ones its stream meets
# (known={peer: reason}); there the peer must still fail (refuse the stream or
# give another image), so that a fixed peer makes the case fail and the
# exception is taken out.
GRK_REFINEMENT = ('grk_decompress 10 passes an HT code-block\'s cleanup and refinement (SigProp/MagRef) '
                  'segments to its block decoder as one and refuses the block; streams under a byte budget '
                  'carry refinement passes')
GRK_TILE_ROWS = ('grk_decompress 10 decodes 5/3 tiles wrongly (Part 1 streams too) where tile rows start at a y '
                 'that is not a multiple of 2^levels (14-high tiles at 2 or more levels, offset tile grids); '
                 '16-high tiles, columns at any x and 9/7 tiles decode right')
GRK_TILE_PARTS_SOP = ('grk_decompress 10 decodes its own streams with tile-parts by resolution (-u R) and SOP/EPH '
                      'markers wrongly (whole areas at 0 or the top); OpenJPEG, OpenJPH and j2kc decode them to '
                      'their source')
OJPH_SIGNED = ('ojph_expand 0.9 writes signed components to .yuv clipped to the unsigned range [0, 2^B - 1]: '
               'negative samples become 0, samples above 2^(B-1) - 1 stay unclipped')
OJPH_PRECINCT_1 = ('ojph_expand 0.9 cannot decode precincts of 1x1 (grk_compress halves the last -c size at each '
                   'lower resolution, down to 1x1 at resolution 0): "Error decoding a codeblock" or "missing '
                   'msbs are larger or equal to Kmax"')
OJPH_EMPTY_BANDS = ('ojph_expand 0.9 loses its place in the packets of precincts without code-blocks (every '
                    'subband of the resolution empty, as in narrow or short edge tiles at 5 levels, or the '
                    '16x16 chroma of a 32x32 4:2:0 tile): "Error decoding a codeblock", "missing msbs are '
                    'larger or equal to Kmax", or with EPH "should find EPH"')
FFMPEG_GUARD_BITS = ('FFmpeg 8.1\'s native HT decoder refuses ("Bad HT cleanup segment") code-blocks with few '
                     'missing MSBs, as 0 guard bits (9/7) or 1 (5/3) give: it bounds a quad\'s exponent by the '
                     'missing-MSB count plus 2 (jpeg2000htdec.c, maxbp); OpenJPEG, OpenJPH and Grok decode these '
                     'streams as j2kc does, the 5/3 one to its source')


GRK_24_BITPLANES = ('grk_decompress 10 refuses ("Failed to decompress tile") HT code-blocks of bands with more '
                    'than 24 magnitude bit-planes (guard bits + exponent - 1 in QCD/QCC), which fine steps on deep '
                    'samples give')


OJPH_TINY = ('ojph_expand 0.9 decodes images of a few samples a side at 5 levels wrongly (1x7, 7x1, 2x3, 3x2, '
             '5x5; 1x1, 1x100 and 2x33 right), or refuses them ("missing msbs are larger or equal to Kmax"): '
             'resolutions whose subbands are all empty, as OJPH_EMPTY_BANDS; OpenJPEG and Grok decode them as '
             'j2kc does, the 5/3 ones to their source')


GRK_HT_DECLARED = ('grk_decompress 10 refuses ("Failed to decompress tile") codestreams whose tile-components '
                   'are some HT and some Part 1 (Ccap15 HTDECLARED, the style set by tile-part COD or main COC), '
                   'the Part-1 tiles too; OpenJPEG 2.5 decodes them to their source as j2kc does')


FFMPEG_HT_RGN = ('FFmpeg 8.1\'s native decoder refuses (AVERROR_PATCHWELCOME) HT code-blocks of a component '
                 'with an RGN shift')
FFMPEG_HT_DECLARED = ('FFmpeg 8.1\'s native decoder refuses (AVERROR_PATCHWELCOME) codestreams whose tile-components '
                      'are some HT and some Part 1')


FFMPEG_CPRL_NARROW = ('FFmpeg 8.1\'s native decoder refuses ("prc 0 0 outside limits 0 1") a CPRL stream of '
                      '10x37 tiles at 4 levels with 4x16 precincts (its packet iteration, Part 1 as much as HT); '
                      'OpenJPEG decodes it to its source as j2kc does')


# An RGN shift (Annex H) of 10 on an 8-bit component coded by grk_compress -R
# with -M 64: above every magnitude, so every coefficient is background and the
# stream holds the source, with the blocks' missing MSBs counted over Mb + s.
HT_RGN = {
    'ojph': 'ojph_expand 0.9 ignores RGN: it counts the missing MSBs over Mb alone ("missing msbs are larger '
            'or equal to Kmax")',
    'opj': 'opj_decompress 2.5 refuses HT code-blocks of a component with an RGN shift',
    'ffmpeg': FFMPEG_HT_RGN,
    'grk': 'grk_decompress 10 does not decode its own HT streams with -R to their source (nor do the other '
           'decoders here where the shift is below the magnitudes, U=1 or 5, which grk_compress 10 writes '
           'inconsistently)',
}


def ht_exception(case, peer):
    return case.known.get(peer)


def max_band_bitplanes(ctx, stream):
    """The largest number of magnitude bit-planes of a band (Mb = guard bits
    + exponent - 1, E.1) in the stream's QCD/QCC, from `j2kc dump`."""
    rc, so, se = run([ctx.j2kc, 'dump', '-i', stream])
    if rc != 0:
        raise RuntimeError('j2kc dump failed: %s' % se.strip())
    top, guard = 0, None
    for line in so.splitlines():
        m = re.search(r'(\d+) guard bits?', line)
        if m and re.match(r'\s*QC[DC]', line):
            guard = int(m.group(1))
        elif guard is not None and 'exponent' in line:
            top = max([top] + [guard + int(e) - 1 for e in re.findall(r'\((\d+),', line)])
    return top


def check_peers(ctx, case, work, stream, own, delivered, tolerance, peers, src=None):
    """Each peer's decode of `stream` against `own` (j2kc's): the failures
    (none when all agree), notes, and the largest difference and number of
    differing samples of a peer that passed without arbitration."""
    fails, notes, stats = [], [], (0, 0)
    for peer in peers:
        if peer == 'ffmpeg' and not ctx.ffmpeg:
            continue  # FFmpeg is a peer of the edge_* cases where --ffmpeg or $FFMPEG names one
        decode = HT_PEERS[peer][0]
        known = ht_exception(case, peer)
        pwork = os.path.join(work, peer)
        os.makedirs(pwork, exist_ok=True)
        extra = {'layers': case.layers} if getattr(case, 'layers', 0) else {}
        planes, why = decode(ctx, stream, pwork, own, delivered, getattr(case, 'reduce', 0), **extra)
        if planes is not None and peer in ctx.perturb:
            planes = perturb_planes(planes)
        ok = False
        if planes is not None:
            ref = delivered if why == 'delivered' else own
            # A 1-LSB difference of 9/7 Y, Cb or Cr becomes up to 4 in the RGB
            # delivered from subsampled chroma (the sYCC matrix's 1.772 and
            # 1.402 factors and each side's rounding; corpus.py's issue142).
            tol = 4 if why == 'delivered' and tolerance else tolerance
            ok, worst, ndiff, why = compare_planes(ref, planes, tol)
            if not ok and tol == 1 and worst is not None and 1 < worst <= 4 and src is not None:
                note = arbitrate_planes(src, ref, planes, worst)
                if note:
                    ok = True
                    notes.append('%s %s' % (peer, note))
            elif ok and not known:
                stats = max(stats, (worst, ndiff))
        if known:
            if ok:
                fails.append('%s decodes it now; its known failure (%s) no longer holds' % (peer, known))
            continue
        if not ok:
            fails.append('%s: %s' % (peer, why))
    return fails, notes, stats


def arbitrate_planes(src, ref, dut, worst):
    """As arbitrate(): where a 9/7 decode differs by 2..4 from j2kc's, the
    closer of the two to the source passes (the float32 wavelets of the peers
    lose precision at 13-16 bits)."""
    planes = source_planes(src)
    if [p[:2] for p in planes] != [p[:2] for p in ref]:
        return None
    sse_ref = sum((a - b) ** 2 for s, r in zip(planes, ref) for a, b in zip(s[4], r[4]))
    sse_dut = sum((a - b) ** 2 for s, d in zip(planes, dut) for a, b in zip(s[4], d[4]))
    if sse_ref <= sse_dut:
        return 'differs by up to %d, j2kc closer to the source (squared error %d vs %d)' % (worst, sse_ref, sse_dut)
    return None


def j2kc_decode_planes(ctx, stream, work, name, raw=True, reduce=0, layers=0):
    out = os.path.join(work, name + '.pgx')
    cmd = [ctx.j2kc, 'decode', '-i', stream, '-o', out] + (['--raw-components'] if raw else [])
    if reduce:
        cmd += ['-r', str(reduce)]
    if layers:
        cmd += ['-l', str(layers)]
    if ctx.backend:
        cmd += ['--backend', ctx.backend]
    rc, so, se = run(cmd)
    if rc != 0:
        return None, 'j2kc decode failed (%s): %s' % (rc, se.strip().splitlines()[-1:])
    planes = pgx_planes(pgx_components(out))
    if 'j2kc' in ctx.perturb:
        planes = perturb_planes(planes)
    return planes, ''


class HtDecodeCase:
    """An HT codestream made by ojph_compress or grk_compress, decoded by j2kc
    and by the peers (the encoder's own decoder, opj_decompress, and for
    Grok's streams ojph_expand too): exact for 5/3, within 1 LSB for 9/7;
    for 5/3 j2kc's decode is also the source image."""

    section = 'ht-decode'

    def __init__(self, name, encoder, src, kind, args, irreversible, full_only=False, peers=None,
                 lossless=None, known=None, reduce=0):
        self.name = 'ht-decode/%s/%s' % (encoder, name)
        self.known = known or {}
        self.reduce = reduce
        self.encoder, self.src, self.kind, self.args = encoder, src, kind, args
        self.irreversible, self.full_only = irreversible, full_only
        self.peers = peers or ['ojph', 'opj', 'grk']
        self.lossless = not irreversible and not reduce if lossless is None else lossless

    def encode(self, ctx, work):
        inp = self.src.file(ctx.root, self.kind)
        if self.encoder == 'ojph':
            stream = os.path.join(work, 'stream.j2c')
            cmd = ['ojph_compress', '-i', inp, '-o', stream] + self.args
            if self.kind == 'yuv':
                s = self.src
                cmd += ['-dims', '{%d,%d}' % (s.w, s.h), '-num_comps', str(s.comps),
                        '-downsamp', ','.join('{%d,%d}' % d for d in s.sub),
                        '-bit_depth', ','.join([str(s.prec)] * s.comps),
                        '-signed', ','.join(['true' if s.signed else 'false'] * s.comps)]
        else:
            stream = os.path.join(work, 'stream.j2k')
            cmd = ['grk_compress', '-i', inp, '-o', stream, '-M', '64'] + self.args
            if self.kind in ('raw', 'rawl'):
                cmd += ['-F', self.src.raw_spec_opj()]
        rc, so, se = run(cmd)
        if rc != 0 or not os.path.exists(stream) or os.path.getsize(stream) == 0:
            msg = (se.strip() or so.strip()).splitlines()
            raise RuntimeError('%s failed (%s): %s' % (cmd[0], rc, msg[-1] if msg else ''))
        return stream

    def run(self, ctx, work):
        stream = self.encode(ctx, work)
        own, why = j2kc_decode_planes(ctx, stream, work, 'j2kc', reduce=self.reduce)
        if own is None:
            return Result(self, 'fail', why)
        delivered = None
        if len(own) == 3 and any(p[:2] != own[0][:2] for p in own):
            delivered, why = j2kc_decode_planes(ctx, stream, work, 'j2kc_rgb', raw=False, reduce=self.reduce)
            if delivered is None:
                return Result(self, 'fail', why)
        fails = []
        if self.lossless:
            ok, _, _, why = compare_planes(source_planes(self.src), own, 0)
            if not ok:
                fails.append('j2kc against the source: ' + why)
        more, notes, (worst, ndiff) = check_peers(ctx, self, work, stream, own, delivered,
                                                  1 if self.irreversible else 0, self.peers,
                                                  self.src if self.irreversible else None)
        fails += more
        if fails:
            return Result(self, 'fail', '; '.join(fails), irreversible=self.irreversible)
        return Result(self, 'pass', '; '.join(notes), worst, ndiff, self.irreversible, arbitrated=bool(notes))


class HtEncodeCase:
    """`j2kc encode --ht` decoded by ojph_expand, opj_decompress,
    grk_decompress and FFmpeg's native decoder, against `j2kc decode` of the
    same stream: exact for --lossless (which is also the source image), within
    1 LSB for 9/7."""

    section = 'ht-encode'

    def __init__(self, name, src, kind, args, ext='j2c', budget=None, full_only=False, strict_dump=False,
                 known=None, peers=None, reduce=0, layers=0):
        self.name = 'ht-encode/' + name
        self.known = known or {}
        self.reduce, self.layers = reduce, layers  # decode at reduced resolution, of the first layers
        self.src, self.kind, self.args, self.ext = src, kind, args, ext
        self.budget, self.full_only, self.strict_dump = budget, full_only, strict_dump
        self.lossless = '--lossless' in args
        self.irreversible = not self.lossless
        if peers is None:
            # ojph_expand 0.9 decodes the first quality layer only (and fails on
            # later layers' packets in the other progressions): one-layer streams only.
            layers = int(args[args.index('--layers') + 1]) if '--layers' in args else 1
            # Nor does it write images of 2 or 4 components (.pgm, .ppm and .yuv take 1 or 3).
            peers = ['opj', 'grk', 'ffmpeg'] + (['ojph'] if layers == 1 and src.comps in (1, 3) else [])
        self.peers = peers

    def run(self, ctx, work):
        inp = self.src.file(ctx.root, self.kind)
        if self.kind == 'pgx':
            inp = inp[:-len('_0.pgx')] + '.pgx'
        stream = os.path.join(work, 'ours.' + self.ext)
        cmd = [ctx.j2kc, 'encode', '--ht', '-i', inp, '-o', stream] + self.args
        if self.kind in ('raw', 'rawl', 'yuv'):
            cmd += ['--raw', self.src.raw_spec_j2kc()]
        if ctx.backend:
            cmd += ['--backend', ctx.backend]
        rc, so, se = run(cmd)
        if rc != 0:
            return Result(self, 'fail', 'j2kc encode failed (%s): %s' % (rc, se.strip().splitlines()[-1:]))
        if self.budget and os.path.getsize(stream) > self.budget:
            return Result(self, 'fail', 'stream of %d bytes exceeds the budget of %d' % (
                os.path.getsize(stream), self.budget))
        if self.strict_dump:
            rc, so, se = run([ctx.j2kc, 'dump', '-i', stream, '--strict'])
            if rc != 0:
                return Result(self, 'fail', 'profile checks fail: %s' % ' '.join(so.splitlines()[-3:]))
        own, why = j2kc_decode_planes(ctx, stream, work, 'j2kc', reduce=self.reduce, layers=self.layers)
        if own is None:
            return Result(self, 'fail', why)
        delivered = None
        if len(own) == 3 and any(p[:2] != own[0][:2] for p in own):
            delivered, why = j2kc_decode_planes(ctx, stream, work, 'j2kc_rgb', raw=False, reduce=self.reduce,
                                                layers=self.layers)
            if delivered is None:
                return Result(self, 'fail', why)
        fails = []
        if self.lossless and not self.reduce and not self.layers:
            ok, _, _, why = compare_planes(source_planes(self.src), own, 0)
            if not ok:
                fails.append('j2kc decode against the source: ' + why)
        if max_band_bitplanes(ctx, stream) > 24 and 'grk' not in self.known:
            self.known = dict(self.known, grk=GRK_24_BITPLANES)
        more, notes, (worst, ndiff) = check_peers(ctx, self, work, stream, own, delivered,
                                                  0 if self.lossless else 1, self.peers,
                                                  None if self.lossless else self.src)
        fails += more
        if fails:
            return Result(self, 'fail', '; '.join(fails), irreversible=self.irreversible)
        return Result(self, 'pass', '; '.join(notes), worst, ndiff, self.irreversible, arbitrated=bool(notes))


def split_codestream(data):
    """(main header segments [(marker, bytes)], tile-parts [(SOT bytes, header
    segments, packet data)]) of a codestream without PPM; Psot must be set."""
    i, main, parts = 2, [], []
    while i + 4 <= len(data):
        marker, length = struct.unpack('>HH', data[i:i + 4])
        if marker == 0xFF90:
            psot = struct.unpack('>I', data[i + 6:i + 10])[0]
            sot, j, head = data[i:i + 12], i + 12, []
            while struct.unpack('>H', data[j:j + 2])[0] != 0xFF93:
                m, n = struct.unpack('>HH', data[j:j + 4])
                head.append((m, data[j:j + 2 + n]))
                j += 2 + n
            parts.append((sot, head, data[j + 2:i + psot]))
            i += psot
            continue
        if marker == 0xFFD9:
            break
        main.append((marker, data[i:i + 2 + length]))
        i += 2 + length
    return main, parts


def join_codestream(main, parts):
    out = bytearray(b'\xff\x4f')
    for _, seg in main:
        out += seg
    for sot, head, body in parts:
        hdr = b''.join(seg for _, seg in head)
        psot = len(sot) + len(hdr) + 2 + len(body)
        out += sot[:6] + struct.pack('>I', psot) + sot[10:] + hdr + b'\xff\x93' + body
    return bytes(out + b'\xff\xd9')


class HtSpliceCase(HtDecodeCase):
    """HT and Part-1 tile-components in one codestream: grk_compress codes the
    image twice (Part 1, and HT with -M 64) with the same tiles and levels, and
    the codestream takes the Part-1 one's main header with CAP (Ccap15
    HTDECLARED, 15444-15 A.3) and, from the HT one, 'tiles': every other
    tile-part with a tile-part COD and QCD, or 'components': component 1's
    tile-part (CPRL, -u C, no MCT) with a main-header COC and QCC. Both are
    lossless, so j2kc's decode is the source, and OpenJPEG's (GRK_HT_DECLARED,
    FFMPEG_HT_DECLARED)."""

    def __init__(self, name, src, kind, args, mode, **k):
        HtDecodeCase.__init__(self, name, 'grk', src, kind, args, False, peers=['opj', 'grk', 'ffmpeg'],
                              known={'grk': GRK_HT_DECLARED, 'ffmpeg': FFMPEG_HT_DECLARED}, **k)
        self.mode = mode

    def encode(self, ctx, work):
        inp = self.src.file(ctx.root, self.kind)
        streams = []
        for tag, extra in (('p1', []), ('ht', ['-M', '64'])):
            path = os.path.join(work, tag + '.j2k')
            rc, so, se = run(['grk_compress', '-i', inp, '-o', path] + self.args + extra)
            if rc != 0 or not os.path.exists(path):
                raise RuntimeError('grk_compress failed (%s): %s' % (rc, (se or so).strip()[-200:]))
            with open(path, 'rb') as f:
                streams.append(split_codestream(f.read()))
        (p1_main, p1_parts), (ht_main, ht_parts) = streams
        if len(p1_parts) != len(ht_parts) or len(p1_parts) < 2:
            raise RuntimeError('the two encodings have %d and %d tile-parts' % (len(p1_parts), len(ht_parts)))
        seg = dict(ht_main)
        cap = bytearray(seg[0xFF50])
        cap[8] = (cap[8] & 0x3F) | 0x80  # Ccap15: HTDECLARED
        cod, qcd = seg[0xFF52], seg[0xFF5C]
        main = []
        for m, b in p1_main:
            if m == 0xFF51:
                b = b[:4] + struct.pack('>H', struct.unpack('>H', b[4:6])[0] | 0x4000) + b[6:]
            main.append((m, b))
            if m == 0xFF51:
                main.append((0xFF50, bytes(cap)))
        parts = []
        if self.mode == 'tiles':
            for i, (p1, ht) in enumerate(zip(p1_parts, ht_parts)):
                parts.append(p1 if i % 2 == 0 else (ht[0], [(0xFF52, cod), (0xFF5C, qcd)] + ht[1], ht[2]))
        else:
            # COC: Ccoc, Scoc (the precinct bit of Scod), SPcoc (SPcod: after Scod and SGcod's 4 bytes).
            body = b'\x01' + bytes([cod[4] & 1]) + cod[9:]
            coc = struct.pack('>HH', 0xFF53, 2 + len(body)) + body
            body = b'\x01' + qcd[4:]
            qcc = struct.pack('>HH', 0xFF5D, 2 + len(body)) + body
            at = max(i for i, (m, _) in enumerate(main) if m in (0xFF52, 0xFF5C))
            main[at + 1:at + 1] = [(0xFF53, coc), (0xFF5D, qcc)]
            for p1, ht in zip(p1_parts, ht_parts):
                parts.append(ht if p1[0][10] == 1 else p1)  # TPsot: a tile-part a component
        stream = os.path.join(work, 'stream.j2k')
        with open(stream, 'wb') as f:
            f.write(join_codestream(main, parts))
        return stream


def ht_source(key, w, h, comps, prec, signed=False, sub=None, seed=1):
    s = source(key, w, h, comps, prec, signed, sub, seed)
    if signed and s.planes is None:
        # ojph_compress 0.9 reads signed .yuv samples without sign extension
        # (a negative sample becomes a large positive one, coded as such and
        # clipped by every decoder): signed sources hold the non-negative half.
        s.planes = [gen_plane(cw, ch, prec - 1, False, seed * 131 + c) for c, (cw, ch) in
                    enumerate(s.dims(c) for c in range(comps))]
    return s


def ht_fixed_sources():
    """The sources the fixed cases of both HT sections code: rgb8, gray8, rgb10,
    gray12, gray16, rgb16, big (256x192 RGB), y420 (8-bit 4:2:0), y422 (10-bit
    4:2:2)."""
    return (ht_source('ht_rgb8_67x45', 67, 45, 3, 8, seed=70),
            ht_source('ht_gray8_129x97', 129, 97, 1, 8, seed=71),
            ht_source('ht_rgb10_129x97', 129, 97, 3, 10, seed=72),
            ht_source('ht_gray12_67x45', 67, 45, 1, 12, seed=73),
            ht_source('ht_gray16_67x45', 67, 45, 1, 16, seed=74),
            ht_source('ht_rgb16_67x45', 67, 45, 3, 16, seed=75),
            ht_source('ht_rgb8_256x192', 256, 192, 3, 8, seed=76),
            ht_source('ht_yuv420_8_67x45', 67, 45, 3, 8, sub=[(1, 1), (2, 2), (2, 2)], seed=77),
            ht_source('ht_yuv422_10_129x97', 129, 97, 3, 10, sub=[(1, 1), (2, 1), (2, 1)], seed=78))


def ht_decode_cases():
    cases = []
    rgb8, gray8, rgb10, gray12, gray16, rgb16, big, y420, y422 = ht_fixed_sources()
    y420_12 = ht_source('ht_yuv420_12_67x45', 67, 45, 3, 12, sub=[(1, 1), (2, 2), (2, 2)], seed=79)
    s12 = ht_source('ht_s12_67x45', 67, 45, 1, 12, signed=True, seed=80)
    s16 = ht_source('ht_s16_67x45', 67, 45, 1, 16, signed=True, seed=81)
    gray10_yuv = ht_source('ht_gray10_67x45', 67, 45, 1, 10, seed=82)

    def O(name, src, kind, args, irr=None, **k):
        irreversible = irr if irr is not None else '-qstep' in args or '-reversible' not in args
        cases.append(HtDecodeCase(name, 'ojph', src, kind, args, irreversible, **k))

    rev = ['-reversible', 'true']
    # ojph_compress 0.9 has no -tileparts or -tlm_marker (OpenJPH 0.10 added them),
    # and refuses a colour transform on .yuv input (so 4:4:4 goes through .ppm).
    for name, src, kind in (('rgb8', rgb8, 'pnm'), ('gray8', gray8, 'pnm'), ('rgb10', rgb10, 'pnm'),
                            ('gray12', gray12, 'pnm'), ('gray16', gray16, 'pnm'), ('rgb16', rgb16, 'pnm'),
                            ('yuv420_8', y420, 'yuv'), ('yuv422_10', y422, 'yuv'), ('yuv420_12', y420_12, 'yuv'),
                            ('signed12', s12, 'yuv'), ('signed16', s16, 'yuv'), ('gray10_yuv', gray10_yuv, 'yuv')):
        O('%s_53' % name, src, kind, rev)
        # The 9/7 overshoots the signed sources' range at the top.
        O('%s_97' % name, src, kind, ['-qstep', '0.01' if src.prec <= 12 else '0.001'],
          known={'ojph': OJPH_SIGNED} if src.signed else None)
    O('rgb8_97_q0.1', rgb8, 'pnm', ['-qstep', '0.1'])
    O('rgb8_97_q0.002', rgb8, 'pnm', ['-qstep', '0.002'])
    O('gray16_97_q0.0001', gray16, 'pnm', ['-qstep', '0.0001'])
    for n in range(6):
        O('decomps%d_53' % n, gray8, 'pnm', rev + ['-num_decomps', str(n)])
        O('decomps%d_97' % n, rgb8, 'pnm', ['-num_decomps', str(n), '-qstep', '0.02'])
    for bs in ('{64,64}', '{32,32}', '{16,64}', '{64,16}', '{4,1024}', '{1024,4}', '{8,8}', '{4,4}'):
        tag = bs.strip('{}').replace(',', 'x')
        O('block_%s_53' % tag, gray8, 'pnm', rev + ['-block_size', bs])
        O('block_%s_97' % tag, rgb10, 'pnm', ['-block_size', bs, '-qstep', '0.01'])
    for p in PROGRESSIONS:
        O('prog_%s_53' % p, rgb8, 'pnm', rev + ['-prog_order', p, '-precincts', '{16,16},{32,32},{64,64}',
                                                '-block_size', '{16,16}'])
        O('prog_%s_97' % p, y422, 'yuv', ['-prog_order', p, '-precincts', '{32,32},{64,64}', '-qstep', '0.01'])
    O('precincts_128_256', big, 'pnm', rev + ['-precincts', '{128,128},{256,256}', '-prog_order', 'RPCL'])
    O('tiles_53', big, 'pnm', rev + ['-tile_size', '{64,48}'])
    O('tiles_97', big, 'pnm', ['-tile_size', '{100,70}', '-qstep', '0.01'])
    O('tiles_offset_53', rgb8, 'pnm', rev + ['-tile_size', '{32,16}', '-tile_offset', '{5,3}',
                                             '-image_offset', '{11,7}'], known={'grk': GRK_TILE_ROWS})
    O('image_offset_97', gray12, 'pnm', ['-image_offset', '{3,5}', '-qstep', '0.01'])
    O('tiles_offset_yuv420', y420, 'yuv', rev + ['-tile_size', '{32,32}', '-tile_offset', '{4,2}',
                                                 '-image_offset', '{6,4}'], known={'grk': GRK_TILE_ROWS})
    O('colour_trans_false_53', rgb8, 'pnm', rev + ['-colour_trans', 'false'])
    O('colour_trans_false_97', rgb16, 'pnm', ['-colour_trans', 'false', '-qstep', '0.001'])
    for r in (1, 2, 5):
        O('reduce%d_53' % r, big, 'pnm', rev, reduce=r)
        O('reduce%d_97_yuv422' % r, y422, 'yuv', ['-qstep', '0.01'], reduce=r)
    O('reduce2_tiles_53', big, 'pnm', rev + ['-tile_size', '{64,64}'], reduce=2)
    O('big_53', big, 'pnm', rev)
    O('big_97', big, 'pnm', ['-qstep', '0.005'])

    def G(name, src, kind, args, **k):
        cases.append(HtDecodeCase(name, 'grk', src, kind, args, '-I' in args, **k))

    # grk_compress 10 with HT takes no rates or PSNR layers (-r/-q: "not
    # supported for Part 15"; -r is ignored), so one layer; it reads no
    # subsampled input (and ignores -s). With both -d and -T its streams do not
    # hold the source (Part 1 too), so its tiles take no offsets.
    gd16 = ht_source('ht_gray16_129x97', 129, 97, 1, 16, seed=83)
    for irr in ([], ['-I']):
        t = '97' if irr else '53'
        G('rgb8_%s' % t, rgb8, 'pnm', irr)
        G('gray16_%s' % t, gd16, 'pgx', irr)
        for n in (1, 2, 4, 6):
            G('n%d_%s' % (n, t), gray8, 'pnm', ['-n', str(n)] + irr)
        for b in ('64,64', '32,32', '16,64', '64,16', '4,4', '8,512'):
            G('b_%s_%s' % (b.replace(',', 'x'), t), rgb10, 'pnm', ['-b', b] + irr)
        for p in PROGRESSIONS:
            G('p_%s_%s' % (p, t), rgb8, 'pnm', ['-p', p, '-c', '[32,32],[16,16]', '-b', '16,16'] + irr,
              known={'ojph': OJPH_PRECINCT_1})
            G('p_%s_n4_%s' % (p, t), rgb10, 'pnm', ['-p', p, '-n', '4', '-c', '[64,64],[32,32]'] + irr)
        G('tiles_%s' % t, big, 'pnm', ['-t', '64,48'] + irr)
        G('tiles_odd_%s' % t, rgb8, 'pnm', ['-t', '30,14'] + irr,
          known=dict({'ojph': OJPH_EMPTY_BANDS}, **({} if irr else {'grk': GRK_TILE_ROWS})))
        G('image_offset_%s' % t, rgb8, 'pnm', ['-d', '7,5'] + irr)
        G('tile_parts_R_%s' % t, big, 'pnm', ['-t', '128,96', '-u', 'R', '-p', 'RPCL'] + irr)
        G('tile_parts_C_%s' % t, rgb8, 'pnm', ['-u', 'C', '-p', 'CPRL'] + irr)
        G('plt_sop_eph_%s' % t, rgb8, 'pnm', ['-L', '-S', '-E'] + irr)
        G('tile_parts_R_sop_eph_%s' % t, big, 'pnm', ['-u', 'R', '-S', '-E'] + irr, known={'grk': GRK_TILE_PARTS_SOP})
        G('mct0_%s' % t, rgb8, 'pnm', ['-Y', '0'] + irr)
        G('reduce2_%s' % t, big, 'pnm', ['-t', '128,64'] + irr, reduce=2)
    cases += ht_decode_mix(120) + ht_decode_grk_mix(60) + ht_decode_edge_cases()
    for bits in (8, 9, 10, 11, 12, 13, 14, 15, 16):
        for signed in (False, True):
            s = source('ht_d%d%s_67x45' % (bits, 's' if signed else 'u'), 67, 45, 1, bits, signed, seed=90 + bits)
            # grk_compress 10 reads signed big-endian .raw samples above 8 bits
            # wrongly (12-bit 2047 becomes -1), its .rawl reader right.
            kind = 'rawl' if signed else 'pgx'
            known = {'ojph': OJPH_SIGNED} if signed else None
            G('depth%d%s_53' % (bits, 's' if signed else 'u'), s, kind, [], known=known)
            if bits in (8, 12, 16):
                G('depth%d%s_97' % (bits, 's' if signed else 'u'), s, kind, ['-I'], known=known)
    return cases


def ht_pattern_source(key, w, h, prec, signed, pattern, seed):
    """One component whose samples stress the HT block coder: 'noise'
    (uniform over the whole range: long U-VLC prefixes and suffixes, every
    MagSgn width, MEL runs of significant quads), 'zero' and 'max' (code-blocks
    without a significant sample, or a flat top), 'min' (signed: the most
    negative sample), 'checker' (the range's ends alternating: the widest
    high-pass magnitudes), 'sparse' (one sample in a hundred at the top:
    long MEL runs of insignificant quads between single quads)."""
    s = source(key, w, h, 1, prec, signed, None, seed)
    if s.planes is None:
        rng = random.Random(seed)
        lo = -(1 << (prec - 1)) if signed else 0
        hi = (1 << (prec - 1)) - 1 if signed else (1 << prec) - 1
        n = w * h
        if pattern == 'noise':
            p = [rng.randint(lo, hi) for _ in range(n)]
        elif pattern == 'checker':
            p = [hi if (i % w + i // w) % 2 else lo for i in range(n)]
        elif pattern == 'sparse':
            p = [hi if rng.random() < 0.01 else (0 if not signed else lo) for _ in range(n)]
        else:
            p = [{'zero': 0, 'max': hi, 'min': lo}[pattern]] * n
        s.planes = [p]
    return s


def ht_decode_edge_cases():
    """Stream features that have broken HT decoders, made by ojph_compress
    and grk_compress (names edge_*, also run on the CUDA backend by
    interop_ht_cuda): extreme sample patterns at 8, 12 and 16 bits through
    code-blocks of 64x64, 4x4, 1024x4 and 4x1024; signed extremes; images of
    a few samples a side at 5 levels (code-blocks of 1 row or column, empty
    subbands and resolutions); bands of 26 and 29 magnitude bit-planes
    (15444-15 allows up to 30 in a 32-bit decoder)."""
    cases = []
    rev = ['-reversible', 'true']

    peers = ['ojph', 'opj', 'grk', 'ffmpeg']

    def O(name, src, kind, args, **k):
        irr = '-reversible' not in args
        cases.append(HtDecodeCase('edge_' + name, 'ojph', src, kind, args, irr, peers=peers, **k))

    def G(name, src, kind, args, **k):
        cases.append(HtDecodeCase('edge_' + name, 'grk', src, kind, args, '-I' in args, peers=peers, **k))

    for prec in (8, 12, 16):
        for pat in ('noise', 'zero', 'max', 'checker', 'sparse'):
            if prec == 12 and pat != 'noise':
                continue
            s = ht_pattern_source('ht_%s%d_67x45' % (pat, prec), 67, 45, prec, False, pat, seed=300 + prec)
            t = '%s%d' % (pat, prec)
            O(t + '_53', s, 'pnm', rev)
            O(t + '_53_b4x4', s, 'pnm', rev + ['-block_size', '{4,4}'])
            O(t + '_53_b1024x4', s, 'pnm', rev + ['-block_size', '{1024,4}'])
            O(t + '_97', s, 'pnm', ['-qstep', '0.001' if prec < 16 else '0.0001'])
            G(t + '_53', s, 'pgx', [])
            G(t + '_53_b4x1024', s, 'pgx', ['-b', '4,1024'])
            G(t + '_97', s, 'pgx', ['-I'])
    # grk_compress reads signed little-endian raw samples right (ht_decode_cases).
    for prec in (12, 16):
        for pat in ('noise', 'min', 'max', 'checker'):
            s = ht_pattern_source('ht_s%s%d_40x33' % (pat, prec), 40, 33, prec, True, pat, seed=350 + prec)
            known = None if pat == 'max' else {'ojph': OJPH_SIGNED}
            G('s%s%d_53' % (pat, prec), s, 'rawl', [], known=known)
            G('s%s%d_97' % (pat, prec), s, 'rawl', ['-I'], known=known)
    for w, h in ((1, 1), (1, 7), (7, 1), (2, 3), (3, 2), (1, 100), (100, 1), (5, 5), (33, 2), (2, 33)):
        s = ht_pattern_source('ht_tiny%dx%d' % (w, h), w, h, 8, False, 'noise', seed=400 + 7 * w + h)
        known = {'ojph': OJPH_TINY} if (w, h) in ((1, 7), (7, 1), (2, 3), (3, 2), (5, 5)) else None
        t = 'tiny%dx%d' % (w, h)
        O(t + '_53', s, 'pnm', rev, known=known)
        O(t + '_97', s, 'pnm', ['-qstep', '0.01'], known=known)
        G(t + '_53', s, 'pgx', [], known=known)
        G(t + '_97', s, 'pgx', ['-I'], known=known)
        G(t + '_53_n1', s, 'pgx', ['-n', '1'])
    # 1 guard bit and exponents of 26 and 29 (QCD): Mb 26 and 29, as deep as
    # 9/7 steps of 16-bit samples go (a 32-bit decoder's limit is 30).
    n16 = ht_pattern_source('ht_noise16_67x45', 67, 45, 16, False, 'noise', seed=316)
    O('mb26_noise16_97', n16, 'pnm', ['-qstep', '0.000001'], known={'grk': GRK_24_BITPLANES})
    O('mb29_noise16_97', n16, 'pnm', ['-qstep', '0.0000001'], known={'grk': GRK_24_BITPLANES})
    g16 = ht_source('ht_gray16_67x45', 67, 45, 1, 16, seed=74)
    O('mb29_gray16_97', g16, 'pnm', ['-qstep', '0.0000001'], known={'grk': GRK_24_BITPLANES})
    # Five components (MCT on the first three), and two: ojph_expand 0.9 writes
    # neither, nor FFmpeg five.
    for comps, others in ((5, ['opj', 'grk']), (2, ['opj', 'grk', 'ffmpeg'])):
        s = source('ht_c%d_8_40x30' % comps, 40, 30, comps, 8, seed=500 + comps)
        for t, extra in (('53', []), ('97', ['-I']), ('53_tiles', ['-t', '16,16']),
                         ('53_cprl_tp', ['-p', 'CPRL', '-u', 'C'])):
            cases.append(HtDecodeCase('edge_comps%d_%s' % (comps, t), 'grk', s, 'raw', extra, '-I' in extra,
                                      peers=others))
    # HT and Part-1 tile-components side by side (HtSpliceCase).
    rgb = ht_source('ht_rgb8_67x45', 67, 45, 3, 8, seed=70)
    cases.append(HtDecodeCase('edge_rgn_U10', 'grk', rgb, 'pnm', ['-R', 'c=0,U=10'], False, peers=peers,
                              known=HT_RGN))
    big = ht_source('ht_rgb8_256x192', 256, 192, 3, 8, seed=76)
    cases.append(HtSpliceCase('edge_splice_tiles', rgb, 'pnm', ['-t', '32,32', '-n', '3'], 'tiles'))
    cases.append(HtSpliceCase('edge_splice_tiles_rpcl', big, 'pnm', ['-t', '64,64', '-p', 'RPCL', '-c', '[32,32]',
                                                                    '-b', '16,16'], 'tiles'))
    cases.append(HtSpliceCase('edge_splice_components', rgb, 'pnm', ['-n', '3', '-Y', '0', '-p', 'CPRL', '-u', 'C'],
                              'components'))
    cases.append(HtSpliceCase('edge_splice_components_tiles', big, 'pnm', ['-Y', '0', '-p', 'CPRL', '-u', 'C',
                                                                          '-t', '128,96', '-b', '32,16'],
                              'components'))
    cases += ht_decode_odd_mix(60)
    return cases


def ht_decode_odd_mix(count):
    """edge_odd*: ojph_compress 5/3 streams of odd little images (1..70 a side,
    8..16 bits, noise, sparse, checkerboard or gradient) with option
    combinations drawn with a fixed seed: levels 0..6, code-blocks from 4x4 to
    1024x4, every progression, tiles with image and tile offsets, precincts;
    against the source, opj_decompress and FFmpeg's native decoder (ojph_expand:
    OJPH_TINY; Grok's decoder: GRK_TILE_ROWS)."""
    rng = random.Random(150015)
    cases = []
    for i in range(count):
        w, h = rng.randint(1, 70), rng.randint(1, 70)
        prec = rng.choice([8, 10, 12, 16])
        pat = rng.choice(['noise', 'sparse', 'checker', 'grad'])
        key = 'ht_odd%d_%dx%d_%d_%s' % (i, w, h, prec, pat)
        s = (ht_source(key, w, h, 1, prec, seed=600 + i) if pat == 'grad' else
             ht_pattern_source(key, w, h, prec, False, pat, seed=600 + i))
        bw, bh = rng.choice([(4, 4), (8, 8), (16, 16), (32, 32), (64, 64), (4, 1024), (1024, 4), (8, 512),
                             (128, 32), (16, 4), (4, 16)])
        args = ['-reversible', 'true', '-num_decomps', str(rng.randint(0, 6)), '-block_size', '{%d,%d}' % (bh, bw),
                '-prog_order', rng.choice(PROGRESSIONS)]
        if rng.random() < 0.4:
            args += ['-tile_size', '{%d,%d}' % (rng.randint(10, 40), rng.randint(10, 40))]
            if rng.random() < 0.5:
                ox, oy = rng.randint(0, 9), rng.randint(0, 9)
                args += ['-image_offset', '{%d,%d}' % (ox, oy),
                         '-tile_offset', '{%d,%d}' % (rng.randint(0, ox), rng.randint(0, oy))]
        if rng.random() < 0.3:
            args += ['-precincts', '{%d,%d}' % (2 ** rng.randint(2, 7), 2 ** rng.randint(2, 7))]
        name = 'edge_odd%02d_%dx%d_%d_%s' % (i, w, h, prec, pat)
        known = {'ffmpeg': FFMPEG_CPRL_NARROW} if name == 'edge_odd58_45x70_8_grad' else None
        cases.append(HtDecodeCase(name, 'ojph', s, 'pnm', args, False, peers=['opj', 'ffmpeg'], known=known))
    return cases


def ht_mix_sources():
    """(name, source, kind for ojph, tiles). Tiles and precincts go on the
    256x192 images only, and the tiles divide them (no precinct or tile of one
    sample, OJPH_EMPTY_BANDS); the tiles start their rows at
    multiples of 32 (GRK_TILE_ROWS); odd sizes and edges are the fixed cases'
    part. 16-bit sources are coded reversibly only: their 9/7 decodes differ by
    2 LSB between float32 implementations, which the fixed 16-bit cases
    arbitrate against the source."""
    return [
        ('rgb8', ht_source('ht_rgb8_256x192', 256, 192, 3, 8, seed=76), 'pnm', ['64x64', '128x96', '128x64']),
        ('rgb12', ht_source('ht_rgb12_129x97', 129, 97, 3, 12, seed=91), 'pnm', []),
        ('gray16', ht_source('ht_gray16_129x97', 129, 97, 1, 16, seed=83), 'pnm', []),
        ('gray10', ht_source('ht_gray10_256x192', 256, 192, 1, 10, seed=92), 'pnm', ['128x64', '64x96']),
        ('yuv422_10', ht_source('ht_yuv422_10_129x97', 129, 97, 3, 10, sub=[(1, 1), (2, 1), (2, 1)], seed=78),
         'yuv', []),
        ('yuv420_8', ht_source('ht_yuv420_8_256x192', 256, 192, 3, 8, sub=[(1, 1), (2, 2), (2, 2)], seed=93),
         'yuv', ['128x128', '128x64']),
    ]


def ht_decode_mix(count):
    """ojph_compress option combinations drawn with a fixed seed."""
    rng = random.Random(15444)
    cases = []
    for i in range(count):
        name, src, kind, tiles = rng.choice(ht_mix_sources())
        rev = rng.random() < 0.5 or src.prec == 16
        args = ['-reversible', 'true'] if rev else ['-qstep', rng.choice(['0.002', '0.01', '0.05'])]
        args += ['-num_decomps', str(rng.randint(0, 5)), '-prog_order', rng.choice(PROGRESSIONS),
                 '-block_size', rng.choice(['{64,64}', '{32,32}', '{16,64}', '{64,16}', '{8,128}', '{128,8}'])]
        if tiles and rng.random() < 0.5:
            args += ['-precincts', rng.choice(['{32,32},{64,64}', '{16,16},{128,128}', '{64,64}', '{128,128},{32,32}'])]
        if tiles and rng.random() < 0.4:
            t = rng.choice(tiles).split('x')
            args += ['-tile_size', '{%s,%s}' % (t[0], t[1])]
        if name.startswith('rgb') and rng.random() < 0.3:
            args += ['-colour_trans', 'false']
        cases.append(HtDecodeCase('mix%02d_%s_%s' % (i, name, '53' if rev else '97'), 'ojph', src, kind, args,
                                  not rev))
    return cases


def ht_decode_grk_mix(count):
    """grk_compress -M 64 option combinations drawn with a fixed seed (PNM input only)."""
    rng = random.Random(15415)
    cases = []
    choices = [s for s in ht_mix_sources() if s[2] == 'pnm']
    for i in range(count):
        name, src, kind, tiles = rng.choice(choices)
        irr = src.prec < 16 and rng.random() < 0.5
        args = ['-n', str(rng.randint(1, 6)), '-p', rng.choice(PROGRESSIONS),
                '-b', rng.choice(['64,64', '32,32', '16,64', '64,16', '8,128', '128,8'])] + (['-I'] if irr else [])
        if tiles and rng.random() < 0.5:
            args += ['-c', rng.choice(['[128,128],[64,64]', '[64,64]', '[256,256],[128,128],[32,32]'])]
        if tiles and rng.random() < 0.4:
            args += ['-t', rng.choice(tiles).replace('x', ',')] + rng.choice([[], ['-u', 'R'], ['-L']])
        if src.comps == 3 and rng.random() < 0.3:
            args += ['-Y', '0']
        if rng.random() < 0.2:
            args += ['-S', '-E']
        known = {'grk': GRK_TILE_PARTS_SOP} if '-u' in args and '-S' in args else None
        cases.append(HtDecodeCase('mix%02d_%s_%s' % (i, name, '97' if irr else '53'), 'grk', src, kind, args, irr,
                                  known=known))
    return cases


def ht_encode_mix(count):
    """`j2kc encode --ht` option combinations drawn with a fixed seed."""
    rng = random.Random(15015)
    cases = []
    for i in range(count):
        name, src, kind, tiles = rng.choice(ht_mix_sources())
        mode = 'lossless' if src.prec == 16 else rng.choice(['lossless', 'quality', 'bytes'])
        args = {'lossless': ['--lossless'], 'quality': ['--quality', rng.choice(['0.5', '1', '3'])],
                'bytes': ['--bytes', str(rng.choice([2000, 6000, 20000]))]}[mode]
        layers = rng.choice([1, 1, 2, 3]) if mode != 'quality' else 1
        args += ['--levels', str(rng.randint(0, 5)), '--progression', rng.choice(PROGRESSIONS),
                 '--cblk', rng.choice(['64x64', '32x32', '16x64', '64x16', '8x128', '128x32'])]
        if layers > 1:
            args += ['--layers', str(layers)]
        if tiles and rng.random() < 0.5:
            args += ['--precincts', rng.choice(['64x64,32x32', '128x128', '32x32,16x16', '256x256,128x128'])]
        if tiles and rng.random() < 0.4:
            args += ['--tile', rng.choice(tiles)] + rng.choice([[], ['--tile-parts', 'R', '--tlm'], ['--plt']])
        if rng.random() < 0.2:
            args += ['--sop', '--eph']
        cases.append(HtEncodeCase('mix%02d_%s_%s' % (i, name, mode), src, kind, args,
                                  budget=int(args[1]) if mode == 'bytes' else None,
                                  known={'grk': GRK_REFINEMENT} if mode == 'bytes' and layers == 1 else None))
    return cases


def ht_encode_cases():
    cases = []
    E = lambda name, src, kind, args, **k: cases.append(HtEncodeCase(name, src, kind, args, **k))
    rgb8, gray8, rgb10, gray12, gray16, rgb16, big, y420, y422 = ht_fixed_sources()
    y420_16 = ht_source('ht_yuv420_16_67x45', 67, 45, 3, 16, sub=[(1, 1), (2, 2), (2, 2)], seed=84)
    s12 = source('ht_enc_s12_67x45', 67, 45, 1, 12, True, seed=85)
    y422_12 = ht_source('ht_yuv422_12_256x192', 256, 192, 3, 12, sub=[(1, 1), (2, 1), (2, 1)], seed=86)
    for name, src, kind in (('gray8', gray8, 'pnm'), ('rgb8', rgb8, 'pnm'), ('rgb10', rgb10, 'pnm'),
                            ('gray12', gray12, 'pnm'), ('gray16', gray16, 'pnm'), ('rgb16', rgb16, 'pnm'),
                            ('yuv420_8', y420, 'yuv'), ('yuv422_10', y422, 'yuv'), ('yuv420_16', y420_16, 'yuv'),
                            ('signed12', s12, 'pgx')):
        known = {'ojph': OJPH_SIGNED} if src.signed else None
        E('lossless_%s' % name, src, kind, ['--lossless'], known=known)
        E('lossy_%s' % name, src, kind, ['--quality', '1.0'], known=known)
    E('lossy_rgb8_q0.25', rgb8, 'pnm', ['--quality', '0.25'])
    E('lossy_rgb8_q4', rgb8, 'pnm', ['--quality', '4'])
    # Under a budget, rate control mixes HT sets with SigProp/MagRef passes.
    for name, src, kind, budget in (('rgb8_256x192', big, 'pnm', 6000), ('rgb8_256x192_big', big, 'pnm', 40000),
                                    ('gray16', gray16, 'pnm', 3000), ('yuv422_12', y422_12, 'yuv', 20000),
                                    ('yuv420_8', y420, 'yuv', 1500)):
        E('bytes_%d_%s' % (budget, name), src, kind, ['--bytes', str(budget)], budget=budget,
          known={'grk': GRK_REFINEMENT})
    E('bytes_layers3', big, 'pnm', ['--bytes', '12000', '--layers', '3'], budget=12000)
    # The first layers alone (FFmpeg's native decoder has no option for it).
    for n in (1, 2):
        for p in ('LRCP', 'RPCL'):
            E('bytes_layers4_decode%d_%s' % (n, p), big, 'pnm', ['--bytes', '16000', '--layers', '4', '--progression',
                                                               p, '--precincts', '64x64'],
              budget=16000, layers=n, peers=['opj', 'grk'])
        E('bytes_layers3_decode%d_yuv422' % n, y422, 'yuv', ['--bytes', '8000', '--layers', '3'], budget=8000,
          layers=n, peers=['opj', 'grk'])
    for lv in (0, 1, 5):
        E('levels%d_lossless' % lv, gray12, 'pnm', ['--lossless', '--levels', str(lv)])
        E('levels%d_lossy' % lv, rgb8, 'pnm', ['--levels', str(lv)])
    for cb in ('4x4', '16x16', '32x64', '64x16', '1024x4', '4x1024', '128x32'):
        E('cblk_%s_lossless' % cb, gray8, 'pnm', ['--lossless', '--cblk', cb])
        E('cblk_%s_lossy' % cb, rgb10, 'pnm', ['--cblk', cb])
    for p in PROGRESSIONS:
        E('prog_%s' % p, rgb8, 'pnm', ['--lossless', '--progression', p, '--precincts', '32x32,16x16',
                                       '--cblk', '16x16', '--layers', '2'])
        E('prog_%s_yuv422' % p, y422, 'yuv', ['--progression', p, '--precincts', '64x64,32x32'])
    E('tiles', big, 'pnm', ['--lossless', '--tile', '64x48'])
    for r in (1, 3):
        E('reduce%d_lossless' % r, big, 'pnm', ['--lossless', '--tile', '128x64'], reduce=r)
        E('reduce%d_lossy_yuv422' % r, y422, 'yuv', ['--quality', '1'], reduce=r)
    E('tiles_odd', rgb8, 'pnm', ['--tile', '30x20'])
    E('tiles_R_tlm', big, 'pnm', ['--lossless', '--tile', '128x96', '--tile-parts', 'R', '--tlm'])
    E('tiles_C_tlm_plt', y420, 'yuv', ['--lossless', '--tile', '32x32', '--tile-parts', 'C', '--tlm', '--plt'],
      known={'ojph': OJPH_EMPTY_BANDS})
    E('tiles_C_tlm_plt_levels3', y420, 'yuv', ['--lossless', '--tile', '32x32', '--levels', '3', '--tile-parts',
                                               'C', '--tlm', '--plt'])
    E('sop_eph', rgb8, 'pnm', ['--lossless', '--sop', '--eph', '--layers', '2'])
    E('mct0', rgb8, 'pnm', ['--lossless', '--mct', '0'])
    E('imf_lossless', y422_12, 'yuv', ['--profile', 'imf', '--lossless', '--fps', '24'], strict_dump=True)
    E('imf_lossy', y422_12, 'yuv', ['--profile', 'imf', '--fps', '24'], strict_dump=True)
    E('jph', rgb8, 'pnm', ['--lossless'], ext='jph')
    rgba8 = ht_source('ht_rgba8_67x45', 67, 45, 4, 8, seed=87)
    rgba16 = ht_source('ht_rgba16_129x97', 129, 97, 4, 16, seed=88)
    ga12 = ht_source('ht_ga12_67x45', 67, 45, 2, 12, seed=89)
    for name, src in (('rgba8', rgba8), ('rgba16', rgba16), ('ga12', ga12)):
        E('lossless_%s' % name, src, 'raw', ['--lossless'])
        E('lossy_%s' % name, src, 'raw', ['--quality', '0.5'])
    E('bytes_3000_rgba8', rgba8, 'raw', ['--bytes', '3000'], budget=3000, known={'grk': GRK_REFINEMENT})
    # (0 guard bits cannot hold a lossless 5/3 image: the encoder refuses it.)
    for g in (0, 1, 2, 7):
        if g:
            E('guard_bits%d_lossless' % g, gray12, 'pnm', ['--lossless', '--guard-bits', str(g)],
              known={'ffmpeg': FFMPEG_GUARD_BITS} if g == 1 else None)
        E('guard_bits%d_lossy' % g, gray12, 'pnm', ['--guard-bits', str(g)],
          known={'ffmpeg': FFMPEG_GUARD_BITS} if g == 0 else None)
    E('component_bytes', big, 'pnm', ['--component-bytes', '2500'], known={'grk': GRK_REFINEMENT})
    E('bytes_levels0', gray8, 'pnm', ['--bytes', '2000', '--levels', '0'], budget=2000,
      known={'grk': GRK_REFINEMENT})
    E('bytes_cblk_1024x4_16bit', gray16, 'pnm', ['--bytes', '4000', '--cblk', '1024x4'], budget=4000,
      known={'grk': GRK_REFINEMENT})
    E('bytes_pcrl_layers4', y422_12, 'yuv', ['--bytes', '30000', '--layers', '4', '--progression', 'PCRL',
                                             '--precincts', '64x64,32x32'], budget=30000)
    E('lossy_mct0', rgb10, 'pnm', ['--mct', '0', '--quality', '2'])
    cases += ht_encode_mix(120)
    E('tiles_lossy_yuv422', y422, 'yuv', ['--tile', '64x32', '--tile-parts', 'R', '--tlm', '--plt', '--sop',
                                          '--eph'], known={'ojph': OJPH_EMPTY_BANDS})
    return cases


# --------------------------------------------------------------------------
# Runner
# --------------------------------------------------------------------------

class Context:
    pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--j2kc', help='path of the j2kc tool')
    ap.add_argument('--dut', default='j2kc', choices=['j2kc', 'grk', 'opj', 'opj+perturb'],
                    help='decoder under test in the decode section (default j2kc)')
    ap.add_argument('--backend', help='pass --backend to j2kc (cpu, cuda)')
    ap.add_argument('--sections', default=None,
                    help='comma list: decode,encode,deliver,dump,malformed,cli,ht-decode,ht-encode '
                         '(default the first six; ht = ht-decode,ht-encode)')
    ap.add_argument('--ffmpeg', default=os.environ.get('FFMPEG'),
                    help='ffmpeg whose native jpeg2000 decoder the ht-encode section runs (default $FFMPEG)')
    ap.add_argument('--full', action='store_true', help='every case, not the CI subset')
    ap.add_argument('--filter', help='regular expression on case names')
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 2)
    ap.add_argument('--work', help='work directory (kept); default a temporary one, removed on success')
    ap.add_argument('--strict-97', dest='strict97', action='store_true',
                    help='require exact equality for lossy encode cases too')
    ap.add_argument('--self-test', action='store_true',
                    help='run the decode section against a decoder that is wrong by 2 in one sample '
                         'and against grk_decompress: pass when every perturbed case fails and grk passes')
    ap.add_argument('--list', action='store_true', help='list the cases and exit')
    ap.add_argument('--verbose', '-v', action='store_true', help='print every case')
    args = ap.parse_args()

    missing = [t for t in ('opj_compress', 'opj_decompress', 'grk_compress') if shutil.which(t) is None]
    if args.self_test:
        return self_test(args, missing)

    if args.sections:
        sections = []
        for name in args.sections.split(','):
            sections += ['ht-decode', 'ht-encode'] if name == 'ht' else [name]
    else:
        sections = ['decode', 'encode', 'deliver', 'dump', 'malformed', 'cli'] if args.dut == 'j2kc' else ['decode']
    if any(s.startswith('ht-') for s in sections):
        gone = missing_ht_tools(args, sections)
        if gone:
            print('interop: SKIPPED, missing %s (Debian: openjph-tools libopenjp2-tools grokj2k-tools; '
                  'ffmpeg through --ffmpeg or $FFMPEG)' % ', '.join(gone))
            return SKIP
    needs_j2kc = args.dut == 'j2kc' or any(s in sections for s in ('encode', 'deliver', 'dump', 'malformed', 'cli',
                                                                   'ht-decode', 'ht-encode'))
    if needs_j2kc and not (args.j2kc and os.access(args.j2kc, os.X_OK)):
        print('interop: j2kc not found (--j2kc %s)' % args.j2kc)
        return SKIP
    if missing and any(s in sections for s in ('decode', 'encode', 'deliver', 'dump', 'malformed')):
        print('interop: SKIPPED, missing %s (Debian: libopenjp2-tools grokj2k-tools)' % ', '.join(missing))
        return SKIP
    if args.dut == 'grk' and shutil.which('grk_decompress') is None:
        print('interop: SKIPPED, missing grk_decompress')
        return SKIP
    if args.backend == 'cuda' and needs_j2kc:
        probe = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data', 'ht', 'o_gray8_rev.j2c')
        refusal = cuda_decode_refusal(args.j2kc, probe)
        if refusal:
            print('interop: SKIPPED, the CUDA backend cannot decode here: %s' % refusal)
            return SKIP
    return run_matrix(args, sections)


def missing_ht_tools(args, sections):
    tools = ['ojph_compress', 'ojph_expand', 'opj_decompress', 'grk_compress', 'grk_decompress']
    gone = [t for t in tools if shutil.which(t) is None]
    if 'ht-encode' in sections and not (args.ffmpeg and os.access(args.ffmpeg, os.X_OK)):
        gone.append('ffmpeg (%s)' % (args.ffmpeg or 'not given'))
    return gone


def collect(args, sections):
    cases = []
    if 'decode' in sections:
        cases += decode_cases()
    if 'encode' in sections:
        cases += encode_cases()
    if 'decode' in sections:
        cases += format_cases()
    if 'deliver' in sections:
        cases += deliver_cases()
    if 'dump' in sections:
        cases += dump_cases()
    if 'malformed' in sections:
        cases += malformed_cases()
    if 'cli' in sections:
        cases += cli_cases()
    if 'ht-decode' in sections:
        cases += ht_decode_cases()
    if 'ht-encode' in sections:
        cases += ht_encode_cases()
    if not args.full:
        cases = [c for c in cases if not c.full_only]
    if args.filter:
        rx = re.compile(args.filter)
        cases = [c for c in cases if rx.search(c.name)]
    return cases


def run_matrix(args, sections, quiet=False):
    cases = collect(args, sections)
    if args.list:
        for c in cases:
            print(c.name)
        return 0
    ctx = Context()
    ctx.j2kc = os.path.abspath(args.j2kc) if args.j2kc else None
    ctx.backend = args.backend
    ctx.strict97 = args.strict97
    ctx.reference = Decoder('opj')
    ctx.lcms2 = False
    if ctx.j2kc:
        rc, so, se = run([ctx.j2kc, '--version'])
        ctx.lcms2 = rc == 0 and 'lcms2' in so and 'without' not in so
    ctx.dut = Decoder(args.dut, ctx.j2kc, args.backend)
    ctx.ffmpeg = os.path.abspath(args.ffmpeg) if getattr(args, 'ffmpeg', None) else None
    ctx.perturb = set(getattr(args, 'perturb', ()))
    keep = bool(args.work)
    ctx.root = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(prefix='j2kc_interop_')
    os.makedirs(ctx.root, exist_ok=True)
    for src in SOURCES.values():
        src.paths = {}  # files of an earlier run lie in its (removed) work directory
    # Sources are generated up front (one thread) so that workers only read them.
    for c in cases:
        if hasattr(c, 'src'):
            c.src.file(ctx.root, c.kind)
        if hasattr(c, 'base_case'):
            c.base_case.src.file(ctx.root, c.base_case.kind)

    start = time.time()

    def one(item):
        i, case = item
        work = os.path.join(ctx.root, '%04d_%s' % (i, re.sub(r'[^A-Za-z0-9_.-]', '_', case.name)))
        os.makedirs(work, exist_ok=True)
        try:
            return case.run(ctx, work)
        except Exception as e:  # a harness error is a failure, with its reason
            return Result(case, 'fail', 'harness: %s: %s' % (type(e).__name__, e))

    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for r in pool.map(one, enumerate(cases)):
            results.append(r)
            if not quiet and (r.status == 'fail' or args.verbose or r.status == 'skip' or r.arbitrated):
                extra = ''
                if r.status == 'pass' and r.irreversible:
                    extra = ' (9/7 max |diff| %d, %d samples differ)' % (r.max_diff or 0, r.ndiff or 0)
                label = 'NOTE' if r.arbitrated else r.status.upper()
                print('%-4s %s%s%s' % (label, r.case.name, ': ' + r.message if r.message else '', extra))
                sys.stdout.flush()

    by = {'pass': 0, 'fail': 0, 'skip': 0}
    for r in results:
        by[r.status] += 1
    irr = [r for r in results if r.irreversible and r.status == 'pass']
    worst = max([r.max_diff or 0 for r in irr] or [0])
    exact = sum(1 for r in irr if not r.ndiff)
    arbitrated = sum(1 for r in irr if r.arbitrated)
    worst = max([r.max_diff or 0 for r in irr if not r.arbitrated] or [0])
    per_section = {}
    for r in results:
        s = per_section.setdefault(r.case.section, [0, 0, 0])
        s[['pass', 'fail', 'skip'].index(r.status)] += 1
    detail = ', '.join('%s %d/%d' % (k, v[0], v[0] + v[1]) for k, v in per_section.items())
    summary = ('interop (%s): %d cases, %d passed, %d failed, %d skipped [%s]; 9/7: %d of %d bit-exact, '
               'max |diff| %d, %d closer to the source than the reference; %.0fs') % (
        args.dut, len(results), by['pass'], by['fail'], by['skip'], detail, exact, len(irr), worst, arbitrated,
        time.time() - start)
    if not quiet:
        print(summary)
    if by['fail'] == 0 and not keep:
        shutil.rmtree(ctx.root, ignore_errors=True)
    elif not quiet:
        print('interop: work files kept in %s' % ctx.root)
    if quiet:
        return results
    return 1 if by['fail'] else 0


HT_SELF_TEST = (r'ht-decode/(ojph/(rgb8|gray16|yuv420_8|yuv422_10|signed12|decomps0|tiles)_(53|97)|'
                r'grk/(rgb8|depth12s|p_RPCL_n4)_(53|97))$|'
                r'ht-encode/(lossless_(rgb8|gray16|yuv420_8|signed12)|lossy_(rgb10|gray12|signed12)|'
                r'bytes_6000_rgb8_256x192|bytes_layers3|tiles|imf_lossless)$')


def ht_self_test(args):
    """The HT sections on a subset: all pass as they are; with j2kc's decode
    wrong by 2 in one sample every case fails; with each peer's in turn every
    reversible case where that peer's column is checked (not a known failure)
    fails. On 9/7 streams a peer farther from the source than j2kc is excused
    by design (arbitrate_planes), as the decode section excuses OpenJPEG."""
    args.filter = HT_SELF_TEST
    args.perturb = ()
    res = run_matrix(args, ['ht-decode', 'ht-encode'], quiet=True)
    bad = [r for r in res if r.status != 'pass']
    print('self-test: HT, as they are: %d cases, %d failed or skipped (want 0)' % (len(res), len(bad)))
    for r in bad:
        print('  FAIL %s: %s' % (r.case.name, r.message))
    ok = not bad and len(res) > 20
    for wrong in ['j2kc'] + sorted(HT_PEERS):
        args.perturb = (wrong,)
        res = run_matrix(args, ['ht-decode', 'ht-encode'], quiet=True)
        if wrong != 'j2kc':
            res = [r for r in res if wrong in r.case.peers and not ht_exception(r.case, wrong) and
                   not r.case.irreversible]
        missed = [r for r in res if r.status != 'fail']
        print('self-test: HT, %s wrong by 2 in one sample: %d of %d cases caught (want all)' % (
            wrong, len(res) - len(missed), len(res)))
        for r in missed:
            print('  MISSED %s' % r.case.name)
        ok = ok and not missed and len(res) > 3
    args.perturb = ()
    return ok


def self_test(args, missing):
    """The harness must pass a correct decoder and fail a wrong one."""
    if missing or shutil.which('grk_decompress') is None:
        print('interop self-test: SKIPPED, missing reference tools')
        return SKIP
    args.full = False
    args.filter = args.filter or r'decode/(opj|grk)/(rgb_|gray_|prog_LRCP|mode63|tiles_|depth(4|12|16)[us]_53|wide|layers_rates|roi_)'
    ok = True
    args.dut = 'opj'
    res = run_matrix(args, ['decode'], quiet=True)
    bad = [r for r in res if r.status != 'pass']
    print('self-test: opj_decompress vs itself: %d cases, %d failed or skipped (want 0)' % (len(res), len(bad)))
    ok = ok and not bad and len(res) > 10
    args.dut = 'grk'
    res = run_matrix(args, ['decode'], quiet=True)
    bad = [r for r in res if r.status != 'pass']
    worst = max([r.max_diff or 0 for r in res] or [0])
    print('self-test: grk_decompress: %d cases, %d failed or skipped, max |diff| %d (want 0)' % (len(res), len(bad), worst))
    for r in bad:
        print('  FAIL %s: %s' % (r.case.name, r.message))
    ok = ok and not bad
    args.dut = 'opj+perturb'
    res = run_matrix(args, ['decode'], quiet=True)
    caught = [r for r in res if r.status == 'fail']
    ran = res
    print('self-test: a decoder wrong by 2 in one sample: %d of %d cases caught (want all)' % (len(caught), len(ran)))
    ok = ok and len(caught) == len(ran) and len(ran) > 10
    if args.j2kc and os.access(args.j2kc, os.X_OK) and not missing_ht_tools(args, ['ht-decode', 'ht-encode']):
        ok = ht_self_test(args) and ok
    else:
        print('self-test: HT sections not run (they need --j2kc, OpenJPH, Grok and --ffmpeg)')
    print('interop self-test: %s' % ('PASSED' if ok else 'FAILED'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
