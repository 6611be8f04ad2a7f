#!/usr/bin/env python3
"""HT streams with SigProp and MagRef passes, placeholder passes and an HT set
spread over layers, and a vertically causal SigProp that differs from the
plain one, which no encoder at hand writes (OpenJPH and Grok code one
cleanup pass a block): run by scripts/make-ht-data.sh.

Each stream holds one code-block. Its HT cleanup pass is OpenJPH's, of an
8-bit image with no wavelet levels (the coefficients are the samples less
128, coded down to plane 0); the stream then says 9 bits (SIZ, QCD), so the
same cleanup codes plane 1, and a refinement segment written here adds
plane 0: SigProp makes some insignificant samples with significant
neighbours +-1, MagRef gives the others their last bit (ISO/IEC 15444-15
7.4, 7.5). The samples the stream codes are known by construction and
appended to expected.txt. opj_decompress and ojph_expand must decode the
one-layer streams to exactly those samples; the streams with placeholder
passes or layers, which they do not take, are checked against FFmpeg's
decoder (when given) through their one-layer twins.

usage: make-ht-refine.py OUT_DIR WORK_DIR EXPECTED_TXT [FFMPEG]"""
import importlib.util
import os
import random
import struct
import subprocess
import sys


def _sibling(name, path):
    spec = importlib.util.spec_from_file_location(name, os.path.join(os.path.dirname(os.path.abspath(__file__)), path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The sample hash of expected.txt, the one make-ht-expected.py writes for the other HT streams.
fnv = _sibling('make_ht_expected', 'make-ht-expected.py').fnv


class Bits:
    """Packet-header bits, most significant first, with the bit stuffing of B.10.1."""

    def __init__(self):
        self.out, self.byte, self.n, self.limit = bytearray(), 0, 0, 8

    def put(self, bit):
        self.byte = (self.byte << 1) | bit
        self.n += 1
        if self.n == self.limit:
            self.out.append(self.byte)
            self.limit = 7 if self.byte == 0xFF else 8
            self.byte, self.n = 0, 0

    def put_bits(self, value, count):
        for i in range(count - 1, -1, -1):
            self.put((value >> i) & 1)

    def finish(self):
        if self.n:
            self.out.append(self.byte << (self.limit - self.n))
            if self.out[-1] == 0xFF:
                self.out.append(0)
        elif self.limit == 7:
            self.out.append(0)
        return bytes(self.out)


def num_passes_code(b, n):
    if n == 1:
        b.put(0)
    elif n == 2:
        b.put_bits(2, 2)
    elif n <= 5:
        b.put_bits(0xC | (n - 3), 4)
    elif n <= 36:
        b.put_bits(0x1E0 | (n - 6), 9)
    else:
        b.put_bits(0xFF80 | (n - 37), 16)


def log2(n):
    return n.bit_length() - 1


class HeaderReader:
    def __init__(self, data):
        self.data, self.pos, self.bits_left, self.byte, self.last_ff = data, 0, 0, 0, False

    def bit(self):
        if self.bits_left == 0:
            self.byte = self.data[self.pos]
            self.pos += 1
            self.bits_left = 7 if self.last_ff else 8
            self.last_ff = self.byte == 0xFF
        self.bits_left -= 1
        return (self.byte >> self.bits_left) & 1

    def bits(self, n):
        v = 0
        for _ in range(n):
            v = (v << 1) | self.bit()
        return v

    def end(self):
        self.bits_left = 0
        if self.last_ff:
            self.pos += 1
        return self.pos


def markers(cs):
    """(marker, offset of segment body, length) of the main header, up to SOT."""
    pos, out = 2, []
    while True:
        m = struct.unpack('>H', cs[pos:pos + 2])[0]
        length = struct.unpack('>H', cs[pos + 2:pos + 4])[0]
        out.append((m, pos + 4, length - 2))
        if m == 0xFF90:
            return out
        pos += 2 + length


def cleanup_of(cs):
    """The one code-block's P and cleanup bytes from an OpenJPH stream of one packet."""
    sod = cs.index(b'\xff\x93') + 2
    r = HeaderReader(cs[sod:])
    assert r.bit() == 1                      # non-empty packet
    assert r.bit() == 1                      # inclusion tag tree: included in layer 0
    p = 0
    while r.bit() == 0:                      # zero bit-plane tag tree of one node
        p += 1
    assert r.bit() == 0                      # one pass
    lblock = 3
    while r.bit():
        lblock += 1
    length = r.bits(lblock)
    body = sod + r.end()
    return p, cs[body:body + length]


class ForwardWriter:
    """SigProp bits: least significant first, a 0 stuffed as bit 7 after 0xFF."""

    def __init__(self):
        self.out, self.cur, self.n, self.limit = bytearray(), 0, 0, 8

    def put(self, bit):
        self.cur |= bit << self.n
        self.n += 1
        if self.n == self.limit:
            self.out.append(self.cur)
            self.limit = 7 if self.cur == 0xFF else 8
            self.cur, self.n = 0, 0

    def finish(self):
        if self.n:
            self.out.append(self.cur)
        return bytes(self.out)


class BackwardWriter:
    """MagRef bits in reading order (the segment ends with them reversed):
    least significant first; after a byte above 0x8F, seven ones make a byte
    of their own (0x7F)."""

    def __init__(self):
        self.bits = []

    def put(self, bit):
        self.bits.append(bit)

    def finish(self):
        out, i, last = bytearray(), 0, 0xFF
        bits = self.bits
        while i < len(bits):
            if last > 0x8F and len(bits) - i >= 7 and all(bits[i:i + 7]):
                byte, i = 0x7F, i + 7
            else:
                chunk = bits[i:i + 8]
                byte = sum(b << k for k, b in enumerate(chunk))
                i += 8
                if last > 0x8F and byte & 0x7F == 0x7F:
                    # fewer than 7 bits were left and padding made 0x7F/0xFF: the
                    # decoder would read 7 bits, which is harmless (zeros follow)
                    pass
            out.append(byte)
            last = byte
        return bytes(reversed(out))


def refine(q, w, h, causal, rng):
    """Plane-0 bits for the cleanup's coefficients q (plane 1 after the shift): returns the
    refinement segment (SigProp forward, MagRef backward), the SigProp-only part, and the
    final coefficients."""
    final = [[2 * v for v in row] for row in q]
    sig = [[1 if q[y][x] else 0 for x in range(w)] for y in range(h)]
    sp = ForwardWriter()
    for y0 in range(0, h, 4):
        for x0 in range(0, w, 4):
            fresh = []
            for x in range(x0, min(x0 + 4, w)):
                for y in range(y0, min(y0 + 4, h)):
                    if sig[y][x]:
                        continue
                    nb = False
                    for dy in (-1, 0, 1):
                        if dy == 1 and causal and (y - y0) == 3:
                            continue
                        for dx in (-1, 0, 1):
                            xx, yy = x + dx, y + dy
                            if (dx or dy) and 0 <= xx < w and 0 <= yy < h and sig[yy][xx]:
                                nb = True
                    if not nb:
                        continue
                    bit = 1 if rng.random() < 0.4 else 0
                    sp.put(bit)
                    if bit:
                        sig[y][x] = 2
                        fresh.append((x, y))
            for (x, y) in fresh:
                neg = rng.random() < 0.5
                sp.put(1 if neg else 0)
                final[y][x] = -1 if neg else 1
    mr = BackwardWriter()
    for y0 in range(0, h, 4):
        for x in range(w):
            for y in range(y0, min(y0 + 4, h)):
                if q[y][x]:
                    bit = rng.randrange(2)
                    mr.put(bit)
                    final[y][x] += bit if q[y][x] > 0 else -bit
    spb = sp.finish()
    return spb + mr.finish(), spb, final


def build(src, cleanup, p, refinement, sp_only, variant, style_extra):
    """A new codestream around the cleanup and refinement segments."""
    ms = markers(src)
    out = bytearray(b'\xff\x4f')
    for (m, body, length) in ms:
        seg = bytearray(src[body:body + length])
        if m == 0xFF90:
            break
        if m == 0xFF51:                       # SIZ: 9-bit samples
            assert seg[36] == 7
            seg[36] = 8
        elif m == 0xFF50:                     # CAP: MAGB one up
            seg[5] = (seg[5] & 0xE0) | ((seg[5] & 0x1F) + 1)
        elif m == 0xFF52:                     # COD: one layer or three, style
            seg[1] = 0                        # LRCP
            seg[2:4] = struct.pack('>H', 3 if variant == 'layers' else 1)
            seg[8] |= style_extra
        elif m == 0xFF5C:                     # QCD: the LL band's exponent one up (Mb + 1)
            assert len(seg) == 2
            seg[1] = ((seg[1] >> 3) + 1) << 3
        elif m == 0xFF64:
            continue
        out += struct.pack('>HH', m, len(seg) + 2) + seg
    packets = []
    if variant == 'layers':
        # Layer 0: the cleanup; layer 1: SigProp (a refinement segment begins);
        # layer 2: MagRef (the same segment goes on).
        for layer, (passes, data, first) in enumerate(
                [(1, cleanup, True), (1, sp_only, False), (1, refinement[len(sp_only):], False)]):
            b = Bits()
            b.put(1)
            if first:
                b.put(1)                      # inclusion (layer 0)
                for _ in range(p):
                    b.put(0)
                b.put(1)                      # P
            else:
                b.put(1)                      # included again
            num_passes_code(b, passes)
            need = max(3, len(data).bit_length())
            for _ in range(need - 3 if first else need - lblock):
                b.put(1)
            b.put(0)
            lblock = need if first else max(lblock, need)
            b.put_bits(len(data), lblock)
            packets.append(b.finish() + data)
    else:
        b = Bits()
        b.put(1)
        b.put(1)                              # inclusion in layer 0
        zbp = p - 1 if variant == 'placeholders' else p
        for _ in range(zbp):
            b.put(0)
        b.put(1)
        placeholders = 3 if variant == 'placeholders' else 0
        num_passes_code(b, placeholders + 3)
        first = placeholders + 1              # passes of the cleanup's segment
        need = max(3, len(cleanup).bit_length() - log2(first), len(refinement).bit_length() - 1)
        for _ in range(need - 3):
            b.put(1)
        b.put(0)
        b.put_bits(len(cleanup), need + log2(first))
        b.put_bits(len(refinement), need + 1)
        packets.append(b.finish() + cleanup + refinement)
    tile = b''.join(packets)
    out += struct.pack('>HHHIBB', 0xFF90, 10, 0, 12 + 2 + len(tile), 0, 1)
    out += b'\xff\x93' + tile + b'\xff\xd9'
    return bytes(out)


def decode_opj(path, work, n):
    out = '%s/opj.pgx' % work
    subprocess.run(['opj_decompress', '-i', path, '-o', out, '-quiet'], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if not os.path.exists(out):
        out = '%s/opj_0.pgx' % work
    d = open(out, 'rb').read()
    nl = d.index(b'\n')
    return list(struct.unpack('>%dH' % n, d[nl + 1:nl + 1 + 2 * n]))


def decode_ojph(path, work, n):
    out = '%s/ojph.pgm' % work
    subprocess.run(['ojph_expand', '-i', path, '-o', out], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return list(struct.unpack('>%dH' % n, open(out, 'rb').read()[-2 * n:]))


def decode_ffmpeg(ffmpeg, path, work, n):
    out = '%s/ffmpeg.raw' % work
    subprocess.run([ffmpeg, '-v', 'error', '-y', '-c:v', 'jpeg2000', '-i', path, '-f', 'rawvideo',
                    '-pix_fmt', 'gray9le', out], check=True)
    return list(struct.unpack('<%dH' % n, open(out, 'rb').read()[:2 * n]))


def main():
    out_dir, work, expected = sys.argv[1], sys.argv[2], sys.argv[3]
    ffmpeg = sys.argv[4] if len(sys.argv) > 4 else ''
    rng = random.Random(15444)
    cases = [('r_refine_32x20', 32, 20, 'one', 0), ('r_refine_causal_17x13', 17, 13, 'one', 0x08),
             ('r_placeholders_24x24', 24, 24, 'placeholders', 0), ('r_layers_31x9', 31, 9, 'layers', 0),
             ('r_causal_rows_16x12', 16, 12, 'one', 0x08)]
    lines = []
    for (name, w, h, variant, style) in cases:
        pix = []
        for y in range(h):
            row = []
            for x in range(w):
                v = 128
                if name.startswith('r_causal_rows'):
                    # Significant samples only in the first row of the second and third
                    # stripes: the last row of the stripe above has its significant
                    # neighbours below it alone, which the vertically causal SigProp
                    # does not see (7.4), so the bit changes which samples it codes.
                    if y in (4, 8) and rng.random() < 0.6:
                        v += rng.choice([-1, 1]) * rng.choice([1, 2, 3, 7, 20])
                elif rng.random() < 0.35 or (x // 5 + y // 3) % 4 == 0:
                    # Sparse, with clusters: many insignificant samples next to significant ones.
                    v += rng.choice([-1, 1]) * rng.choice([1, 1, 2, 3, 7, 20, 60, 125])
                row.append(v)
            pix.append(row)
        pgm = '%s/%s.pgm' % (work, name)
        with open(pgm, 'wb') as f:
            f.write(b'P5\n%d %d\n255\n' % (w, h) + bytes(v for row in pix for v in row))
        j2c = '%s/%s_src.j2c' % (work, name)
        subprocess.run(['ojph_compress', '-i', pgm, '-o', j2c, '-reversible', 'true', '-num_decomps', '0',
                        '-block_size', '{32,32}'], check=True, stdout=subprocess.DEVNULL)
        src = open(j2c, 'rb').read()
        p, cleanup = cleanup_of(src)
        q = [[v - 128 for v in row] for row in pix]
        refinement, sp_only, final = refine(q, w, h, style & 0x08, rng)
        path = '%s/%s.j2c' % (out_dir, name)
        open(path, 'wb').write(build(src, cleanup, p, refinement, sp_only, variant, style))
        want = [v + 256 for row in final for v in row]
        n = w * h
        if variant == 'one':
            # OpenJPEG and OpenJPH decode SigProp and MagRef: they must give the samples coded.
            for tool, got in (('opj_decompress', decode_opj(path, work, n)), ('ojph_expand', decode_ojph(path, work, n))):
                if got != want:
                    raise SystemExit('make-ht-refine: %s does not decode %s as coded' % (tool, name))
        elif ffmpeg:
            # Neither decodes placeholder passes or a set over layers (opj_decompress 2.5.0 and
            # ojph_expand 0.9 refuse or misread them); FFmpeg's decoder does, with 9-bit
            # samples off by one from these (as for the one-layer streams, which the others
            # confirm): it must give the same for this stream as for its one-layer twin.
            twin = '%s/%s_twin.j2c' % (work, name)
            open(twin, 'wb').write(build(src, cleanup, p, refinement, sp_only, 'one', style))
            if decode_ffmpeg(ffmpeg, path, work, n) != decode_ffmpeg(ffmpeg, twin, work, n):
                raise SystemExit('make-ht-refine: FFmpeg decodes %s unlike its one-layer twin' % name)
        else:
            print('make-ht-refine: no FFmpeg to cross-check %s' % name, file=sys.stderr)
        lines.append('%s 0 %d %d 9 0 %016x 0' % (name + '.j2c', w, h, fnv(want)))
    with open(expected, 'a') as f:
        f.write('# r_*: one code-block with SigProp and MagRef passes, by scripts/make-ht-refine.py; the samples it codes\n')
        f.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
