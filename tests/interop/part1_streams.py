#!/usr/bin/env python3
"""Part-1 stream features the encoders' option matrices do not reach, made here.

Each case is a codestream built in a scratch folder from a procedural image:
by opj_compress (precincts down to 4x4 with 4x4 code-blocks, POC over
progressions, resolutions and layers across tile-parts, several
code-block-style combinations with several layers, 257 components with RGN on
the last, tiles of 1x1), by `j2kc encode` (images of 1x1 and 1x33 at 5 levels, precincts of 2x2
with code-blocks of 1x1 over layers,
components subsampled up to 255 with position-driven progressions and small
precincts, guard bits 0 and 7, 32 and 0 decomposition levels), or by editing
such a stream's bytes (packet headers moved into PPM or PPT, split across
segments and tile-parts, Nppm fields across PPM segments, Zppt from 0 in each
tile-part header or counted on through the tile; PLT made wrong, or moved into
PLM; precisions of 20 to 32 bits, 38 and 39 refused; image and tile offsets near
2^32; Psot 0 on the last tile-part, with and without EOC; CRG in the main
header and COM in a tile-part header; empty tile-parts with TNsot 0 after
every tile-part; a corrupted TLM; QCC and QCD in tile-part headers overriding
the main header's, in either order; COD and QCD in tile-part headers giving
each tile its own progression, layers, levels, code-blocks and precincts;
tile-parts interleaved across tiles, tiles in reverse order; wrong SOP
indices; 33 decomposition levels), or by merging
single-component opj_compress streams into one whose COC and QCC, in the main
header or in every tile-part header, give each component its own levels,
code-block size and style, precincts, wavelet and steps (each component must
equal the decode of the stream it came from).

Every case is decoded by `j2kc decode --raw-components` (to PGX), in full and
at reduced resolutions and layers, and by opj_decompress and grk_decompress
with the same options: the components must be equal (within 1 for 9/7), and
a lossless stream must give back its source. A stream that is
invalid must be refused with one line on stderr. Where a peer is wrong, a
named exception (OPJ_*, GRK_*) lists the cases: that peer must still differ
there (or refuse), so that a fixed peer or a changed stream is noticed.

Exit status: 0 all passed, 1 a failure, 77 when opj_decompress or
grk_decompress is missing (ctest SKIP_RETURN_CODE). Standard library only.

  part1_streams.py --j2kc build/core/cuda/j2kc [--backend cpu|cuda] [--jobs N]
"""

import argparse
import concurrent.futures
import math
import os
import random
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop import Pgx, cuda_decode_refusal, pgx_components, run  # noqa: E402

SKIP = 77

# Peers' known deviations: name -> (peer, cases, why). The peer must still differ (or refuse) on the
# first decode of each case that an exception covers; later ones are notes.
PEER_BUGS = {
    'OPJ_POSITION_STEP': ('opj', {'sub255_pcrl', 'sub255_rpcl'},
                          'OpenJPEG 2.5 walks PCRL/RPCL positions in steps of the smallest component '
                          'step, so it skips the positions of a component whose XRsiz * 2^(PPx + NL - r) '
                          'is not a multiple of it (B.12.1.4, B.12.1.3: XRsiz 3 beside 2)'),
    'GRK_POSITION_STEP': ('grk', {'sub255_pcrl', 'sub255_rpcl', 'sub255_cprl'},
                          'Grok 10 walks positions as OpenJPEG does (PCRL, RPCL), and CPRL too'),
    'GRK_EMPTY_TILE_PARTS': ('grk', {'empty_tile_parts'},
                             'Grok 10 loses a tile whose tile-parts (TNsot 0) include empty ones '
                             '(Psot 14, A.4.2) between the others'),
    'GRK_TLM': ('grk', {'tlm_corrupt'},
                'Grok 10 trusts TLM (A.7.1), an optional index, and refuses the stream when it is wrong'),
    'GRK_PPM_TILE_PARTS': ('grk', {'ppm_tile_parts', 'ppm_tile_parts_nppm_split'},
                           'Grok 10 misplaces the PPM packet headers of a stream of several tiles and '
                           'tile-parts (A.7.4)'),
    'OPJ_PPM_NPPM_SPLIT': ('opj', {'ppm_tile_parts_nppm_split'},
                           'OpenJPEG 2.5 refuses a PPM record whose Nppm field spans two PPM segments'),
    'OPJ_ZPPT': ('opj', {'ppt_tile_parts'},
                 'OpenJPEG 2.5 counts Zppt across the tile-parts of a tile and refuses a tile-part header '
                 'whose PPT starts again at 0; A.7.5 indexes the segments of the current header'),
    'GRK_ZPPT': ('grk', {'ppt_tile_parts'}, 'Grok 10 counts Zppt as OpenJPEG does'),
    'OPJ_OFFSETS_NEAR_2P32': ('opj', {'offsets_near_2p32'},
                              'OpenJPEG 2.5 refuses image offsets beyond 2^31 ("failed to set the decoded '
                              'area"); SIZ allows up to 2^32 - 2 (A.5.1)'),
    'GRK_REDUCED_ODD_OFFSET': ('grk', {'offsets_near_2p32@-r', 'tiles_2x3_offsets@-r'},
                               'Grok 10 makes a reduced component one sample too large when the image offset '
                               'is odd (B.5: ceil(x1 / 2^r) - ceil(x0 / 2^r))'),
    'GRK_PLT': ('grk', {'plt_corrupt'}, 'Grok 10 trusts PLT (A.7.3), an optional index, and misplaces '
                'packets where it is wrong'),
    'OPJ_PRECISION_32': ('opj', {'precision32u', 'precision32s'}, 'OpenJPEG 2.5 refuses precisions above 31 bits'),
    'GRK_PRECISION_17': ('grk', {'precision20u', 'precision20s', 'precision31u', 'precision32u', 'precision32s'},
                         'Grok 10 refuses precisions above 16 bits'),
    'GRK_COC_PRECINCTS': ('grk', {'coc_qcc_mixed_main_header', 'coc_qcc_mixed_tiles_main_header',
                                  'coc_qcc_mixed_tiles_tile_headers'},
                          'Grok 10 misreads packets of a component whose COC (A.6.2) gives it its own precinct '
                          'sizes'),
    'OPJ_QCC_ORDER': ('opj', {'tile_qcc_then_qcd'},
                      'OpenJPEG 2.5 lets a tile-part QCD that follows a tile-part QCC replace that '
                      "component's QCC; A.6.5: QCC overrides QCD in the same header whatever the order"),
}


def peer_bug(peer, name, opts):
    """The exception that covers this decode: its cases name a stream ('case', every decode of it) or
    one kind of decode of it ('case@-r', its reduced decodes)."""
    for tag, (p, cases, _) in PEER_BUGS.items():
        if p == peer and (name in cases or (opts and '%s@%s' % (name, opts[0]) in cases)):
            return tag
    return None


# --------------------------------------------------------------------------
# Sources
# --------------------------------------------------------------------------


def write_ppm(path, w, h, seed):
    r = random.Random(seed)
    data = bytearray()
    for y in range(h):
        for x in range(w):
            for c in range(3):
                data.append((x * 7 + y * 13 * (c + 1) + r.randint(0, 40)) & 0xFF)
    with open(path, 'wb') as f:
        f.write(b'P6\n%d %d\n255\n' % (w, h) + bytes(data))


def write_pgm(path, w, h, maxval, seed):
    r = random.Random(seed)
    data = bytearray()
    for y in range(h):
        for x in range(w):
            v = (x * 5 + y * 3 + r.randint(0, 60)) % (maxval + 1)
            data += bytes([v]) if maxval < 256 else struct.pack('>H', v)
    with open(path, 'wb') as f:
        f.write(b'P5\n%d %d\n%d\n' % (w, h, maxval) + bytes(data))


def write_raw(path, count, bits, signed, seed):
    """Big-endian samples for `j2kc encode --raw`."""
    r = random.Random(seed)
    nbytes = 1 if bits <= 8 else 2
    data = bytearray()
    for _ in range(count):
        v = r.randint(-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else r.randint(0, (1 << bits) - 1)
        data += (v & ((1 << (8 * nbytes)) - 1)).to_bytes(nbytes, 'big')
    with open(path, 'wb') as f:
        f.write(bytes(data))
    return list(data)


def raw_count(w, h, subs):
    return sum(math.ceil(w / dx) * math.ceil(h / dy) for dx, dy in subs)


# --------------------------------------------------------------------------
# Codestream edits
# --------------------------------------------------------------------------


def main_segments(b):
    """[(offset, marker, Lmar)] of the main header, up to the first SOT."""
    out, p = [], 2
    while p + 4 <= len(b):
        code, length = struct.unpack('>HH', b[p:p + 4])
        out.append((p, code, length))
        if code == 0xFF90:
            break
        p += 2 + length
    return out


def tile_parts(b):
    """[(offset, Psot)] of the tile-parts, following Psot."""
    out, p = [], main_segments(b)[-1][0]
    while p + 12 <= len(b) and b[p:p + 2] == b'\xff\x90':
        psot = struct.unpack('>I', b[p + 6:p + 10])[0]
        out.append((p, psot))
        if psot == 0:
            break
        p += psot
    return out


def segment(code, payload):
    return struct.pack('>HH', code, len(payload) + 2) + payload


def find(b, code):
    return [s for s in main_segments(b) if s[1] == code][0]


def with_tile_header(b, inserts):
    """Inserts inserts[i] (bytes) after the SOT of tile-part i, fixing Psot."""
    parts = tile_parts(b)
    out = bytearray(b[:parts[0][0]])
    for i, (p, psot) in enumerate(parts):
        tp = bytearray(b[p:p + psot])
        extra = inserts.get(i, b'')
        tp = tp[:12] + extra + tp[12:]
        tp[6:10] = struct.pack('>I', psot + len(extra))
        out += tp
    return bytes(out) + b'\xff\xd9'


def edit_psot0(b, eoc=True):
    p, _ = tile_parts(b)[-1]
    out = bytearray(b)
    out[p + 6:p + 10] = b'\0\0\0\0'
    return bytes(out) if eoc else bytes(out[:-2])


def edit_crg_com(b):
    qcd = find(b, 0xFF5C)
    at = qcd[0] + 2 + qcd[2]
    b = b[:at] + segment(0xFF63, struct.pack('>HH', 100, 200) * 3) + b[at:]
    return with_tile_header(b, {0: segment(0xFF64, b'\x00\x01a comment in a tile-part header')})


def edit_empty_tile_parts(b):
    """Every tile-part followed by an empty one of the same tile; TNsot 0 throughout."""
    parts = tile_parts(b)
    out = bytearray(b[:parts[0][0]])
    count = {}
    for p, psot in parts:
        tp = bytearray(b[p:p + psot])
        tile = struct.unpack('>H', tp[4:6])[0]
        k = count.get(tile, 0)
        tp[10], tp[11] = k, 0
        out += tp + struct.pack('>HHHIBB', 0xFF90, 10, tile, 14, k + 1, 0) + b'\xff\x93'
        count[tile] = k + 2
    return bytes(out) + b'\xff\xd9'


def edit_tlm(b):
    p, _, length = find(b, 0xFF55)
    out = bytearray(b)
    for i in range(p + 6, p + 2 + length):
        out[i] ^= 0x5A
    return bytes(out)


def edit_levels(b, levels):
    p = find(b, 0xFF52)[0]
    out = bytearray(b)
    out[p + 9] = levels
    return bytes(out)


def steps_changed(payload, mask):
    """A QCD body (Sqcd, SPqcd...) of scalar expounded steps, mantissas XOR mask."""
    out = bytearray(payload)
    for i in range(1, len(out) - 1, 2):
        v = struct.unpack('>H', out[i:i + 2])[0]
        out[i:i + 2] = struct.pack('>H', (v & 0xF800) | ((v & 0x7FF) ^ mask))
    return bytes(out)


def edit_quant_overrides(b, qcc_first):
    """Main QCC (component 1); tile-part headers: QCD; QCD and QCC (component 2) in either order; QCC (0)."""
    qcd = find(b, 0xFF5C)
    body = b[qcd[0] + 4:qcd[0] + 2 + qcd[2]]
    at = qcd[0] + 2 + qcd[2]
    b = b[:at] + segment(0xFF5D, b'\x01' + steps_changed(body, 0x155)) + b[at:]
    tqcd = segment(0xFF5C, steps_changed(body, 0x2AA))
    tqcc = segment(0xFF5D, b'\x02' + steps_changed(body, 0x0F0))
    return with_tile_header(b, {1: tqcd, 2: (tqcc + tqcd) if qcc_first else (tqcd + tqcc),
                                3: segment(0xFF5D, b'\x00' + steps_changed(body, 0x3FF))})


def split_packets(data):
    """[(header with its EPH, body with its SOP)] of a tile-part's data whose packets all have SOP and EPH."""
    out, i = [], 0
    while i < len(data):
        if data[i:i + 2] != b'\xff\x91':
            raise ValueError('no SOP at %d' % i)
        end = data.index(b'\xff\x92', i + 6) + 2
        nxt = data.find(b'\xff\x91', end)
        nxt = len(data) if nxt < 0 else nxt
        out.append((data[i + 6:end], data[i:i + 6] + data[end:nxt]))
        i = nxt
    return out


def unpacked(b):
    """[(tile-part header up to SOD, packet headers, packet bodies)] of a stream with SOP and EPH."""
    out = []
    for p, psot in tile_parts(b):
        tp = b[p:p + psot]
        sod = tp.index(b'\xff\x93', 12)
        packets = split_packets(tp[sod + 2:])
        out.append((tp[:sod], b''.join(h for h, _ in packets), b''.join(d for _, d in packets)))
    return out


def tile_part(header, body):
    tp = bytearray(header + body)
    tp[6:10] = struct.pack('>I', len(tp))
    return bytes(tp)


def edit_ppm(b, chunk, split_nppm):
    """Packet headers moved to PPM (A.7.4), in segments of at most `chunk` bytes: either the
    concatenated records cut anywhere (Nppm fields too), or each record's Nppm whole, its Ippm cut."""
    parts = unpacked(b)
    if split_nppm:
        records = b''.join(struct.pack('>I', len(h)) + h for _, h, _ in parts)
        pieces = [records[i:i + chunk] for i in range(0, len(records), chunk)]
    else:
        pieces = []
        for _, h, _ in parts:
            pieces.append(struct.pack('>I', len(h)) + h[:chunk])
            pieces += [h[i:i + chunk] for i in range(chunk, len(h), chunk)]
    out = b[:tile_parts(b)[0][0]] + b''.join(segment(0xFF60, bytes([z]) + x) for z, x in enumerate(pieces))
    return out + b''.join(tile_part(head + b'\xff\x93', d) for head, _, d in parts) + b'\xff\xd9'


def edit_ppt(b, chunk, z_per_tile):
    """Packet headers moved to PPT (A.7.5), segments of at most `chunk` bytes, Zppt from 0 in each
    tile-part header, or (z_per_tile) counted on across the tile-parts of a tile."""
    out, zs = bytearray(b[:tile_parts(b)[0][0]]), {}
    for head, h, d in unpacked(b):
        tile = struct.unpack('>H', head[4:6])[0]
        z = zs.get(tile, 0) if z_per_tile else 0
        segs = b''
        for i in range(0, len(h), chunk):
            segs += segment(0xFF61, bytes([z]) + h[i:i + chunk])
            z += 1
        zs[tile] = z
        out += tile_part(head + segs + b'\xff\x93', d)
    return bytes(out) + b'\xff\xd9'


def edit_offsets_near_2p32(b):
    """Image and tile offsets moved by nearly 2^32 - 2^17 (a multiple of every code-block and precinct
    step of 2 levels): the same partitions, so the same samples."""
    p = find(b, 0xFF51)[0]
    xsiz, ysiz, xo, yo, xt, yt, xto, yto = struct.unpack('>8I', b[p + 6:p + 38])
    kx, ky = 0xFFFE0000, 0xFFFA0000
    out = bytearray(b)
    out[p + 6:p + 38] = struct.pack('>8I', xsiz + kx, ysiz + ky, xo + kx, yo + ky, xt, yt, xto + kx, yto + ky)
    return bytes(out)


def tile_part_segments(tp):
    """[(offset, marker, Lmar)] of a tile-part header, and the offset of its SOD."""
    out, q = [], 12
    while tp[q:q + 2] != b'\xff\x93':
        code, length = struct.unpack('>HH', tp[q:q + 4])
        out.append((q, code, length))
        q += 2 + length
    return out, q


def edit_plt(b, mode):
    """PLT (A.7.3) changed: 'corrupt' adds 3 to every one-byte packet length (a well-formed list of
    wrong lengths); 'plm' moves every tile-part's lists into one PLM (A.7.2) in the main header."""
    parts = tile_parts(b)
    out, plm = bytearray(b[:parts[0][0]]), b''
    for p, psot in parts:
        tp = b[p:p + psot]
        segs, sod = tile_part_segments(tp)
        head, lists = bytearray(tp[:12]), b''
        for q, code, length in segs:
            if code != 0xFF58:
                head += tp[q:q + 2 + length]
            elif mode == 'corrupt':
                body = bytes(((x + 3) & 0x7F) if x < 0x80 else x for x in tp[q + 5:q + 2 + length])
                head += segment(0xFF58, tp[q + 4:q + 5] + body)
            else:
                lists += tp[q + 5:q + 2 + length]
        plm += bytes([len(lists)]) + lists
        out += tile_part(bytes(head) + b'\xff\x93', tp[sod + 2:])
    out += b'\xff\xd9'
    if mode == 'plm':
        out = out[:parts[0][0]] + segment(0xFF57, b'\x00' + plm) + out[parts[0][0]:]
    return bytes(out)


def edit_precision(b, bits, signed):
    """Every component's Ssiz (A.5.1) set to `bits`, signed or not; the coded data is unchanged."""
    p = find(b, 0xFF51)[0]
    out = bytearray(b)
    for c in range(struct.unpack('>H', b[p + 38:p + 40])[0]):
        out[p + 40 + 3 * c] = (bits - 1) | (0x80 if signed else 0)
    return bytes(out)


def merged(streams, in_tiles):
    """One stream of the components of single-component CPRL streams of one image size, tiling and layer
    count: SIZ lists their components, COD and QCD are the first's, COC and QCC (A.6.2, A.6.5) give
    each other component its own coding and steps in the main header or (in_tiles) in every tile-part
    header, and each its RGN. With CPRL a component's packets come one after another, so each tile's body is the
    concatenation of the single streams' bodies of that tile."""
    heads = [{code: b[p + 4:p + 2 + length] for p, code, length in main_segments(b)} for b in streams]
    siz, cod = heads[0][0xFF51], heads[0][0xFF52]
    if any(h[0xFF52][1:4] != cod[1:4] or h[0xFF51][:34] != siz[:34] for h in heads):
        raise ValueError('the streams differ in geometry, progression or layers')
    siz = siz[:34] + struct.pack('>H', len(streams)) + b''.join(h[0xFF51][36:39] for h in heads)

    def coc_qcc(c):
        own = heads[c][0xFF52]
        return segment(0xFF53, bytes([c, own[0] & 1]) + own[5:]) + segment(0xFF5D, bytes([c]) + heads[c][0xFF5C])

    def rgn(c):  # A.6.3: the component's own ROI shift
        return segment(0xFF5E, bytes([c]) + heads[c][0xFF5E][1:]) if 0xFF5E in heads[c] else b''
    overrides = b''.join(coc_qcc(c) for c in range(1, len(streams))) + b''.join(rgn(c) for c in range(len(streams)))
    out = bytearray(b'\xff\x4f' + segment(0xFF51, siz) + segment(0xFF52, cod) + segment(0xFF5C, heads[0][0xFF5C]))
    if not in_tiles:
        out += overrides
    bodies = []
    for b in streams:
        parts = []
        for p, psot in tile_parts(b):
            tp = b[p:p + psot]
            segs, sod = tile_part_segments(tp)
            if segs:
                raise ValueError('a tile-part header is not empty')
            parts.append((tp[:12], tp[sod + 2:]))
        bodies.append(parts)
    for k, (sot, _) in enumerate(bodies[0]):
        out += tile_part(sot + (overrides if in_tiles else b'') + b'\xff\x93', b''.join(x[k][1] for x in bodies))
    return bytes(out) + b'\xff\xd9'


def per_tile(streams):
    """Tile k of streams[k % n], with that stream's COD and QCD in its tile-part headers (A.6.1, A.6.4):
    streams of one image and tiling whose progression, layers, levels, code-blocks or wavelet differ."""
    parts = [tile_parts(b) for b in streams]
    out = bytearray(streams[0][:parts[0][0][0]])
    for k, (p, psot) in enumerate(parts[0]):
        b = streams[k % len(streams)]
        heads = {code: b[q:q + 2 + length] for q, code, length in main_segments(b)}
        q, qsot = parts[k % len(streams)][k]
        tp = b[q:q + qsot]
        segs, sod = tile_part_segments(tp)
        out += tile_part(tp[:12] + heads[0xFF52] + heads[0xFF5C] + tp[12:sod + 2], tp[sod + 2:])
    return bytes(out) + b'\xff\xd9'


def interleave_tile_parts(b, reverse_tiles):
    """The same tile-parts in another order (A.4.2 allows any): every tile's first tile-part, then every
    second one, ...; or (reverse_tiles) the tiles last to first, each tile's parts in order."""
    parts = []
    for p, psot in tile_parts(b):
        tp = b[p:p + psot]
        parts.append((struct.unpack('>H', tp[4:6])[0], tp[10], tp))
    if reverse_tiles:
        parts.sort(key=lambda x: (-x[0], x[1]))
    else:
        parts.sort(key=lambda x: (x[1], x[0]))
    return b[:tile_parts(b)[0][0]] + b''.join(tp for _, _, tp in parts) + b'\xff\xd9'


def edit_nsop(b):
    """Every SOP's Nsop (A.8.1) set to 0x5A5A: a wrong packet index that a decoder must not rely on."""
    out = bytearray(b)
    at = out.find(b'\xff\x91\x00\x04')
    while at >= 0:
        out[at + 4:at + 6] = b'\x5a\x5a'
        at = out.find(b'\xff\x91\x00\x04', at + 6)
    return bytes(out)


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------


class Case:
    def __init__(self, name, make, invalid=None, source=None, reduces=(1, 2), layers=(1,), lossless_rgb=False,
                 merged_from=0):
        self.name = name
        self.merged_from = merged_from  # a merge() of this many single-component streams
        self.lossless_rgb = lossless_rgb  # an opj_compress stream of rgb.ppm whose last layer is lossless
        self.make = make          # (work folder) -> stream path, or None when the encoder failed
        self.invalid = invalid    # words j2kc's refusal must contain
        self.source = source      # (work) -> the source samples of each component, for lossless j2kc streams
        self.reduces = reduces
        self.layers = layers


def opj(name, src, opts):
    def make(work):
        out = os.path.join(work, name + '.j2k')
        rc, so, se = run(['opj_compress', '-i', os.path.join(work, src), '-o', out] + opts)
        return out if rc == 0 else None
    return make


def ours(name, src, opts):
    def make(work):
        out = os.path.join(work, name + '.j2k')
        rc, so, se = run([ARGS.j2kc, 'encode', '-i', os.path.join(work, src), '-o', out, '--backend', 'cpu'] + opts)
        return out if rc == 0 else None
    return make


def merge(name, parts, in_tiles):
    """merged() of opj_compress streams: parts = [(source, options)]."""
    def make(work):
        made = [opj('%s_c%d' % (name, i), src, opts)(work) for i, (src, opts) in enumerate(parts)]
        if None in made:
            return None
        out = os.path.join(work, name + '.j2k')
        streams = []
        for m in made:
            with open(m, 'rb') as f:
                streams.append(f.read())
        with open(out, 'wb') as f:
            f.write(merged(streams, in_tiles))
        return out
    return make


def combine(name, makers, combiner):
    """combiner([stream bytes]) of the streams that makers write."""
    def make(work):
        made = [m(work) for m in makers]
        if None in made:
            return None
        streams = []
        for m in made:
            with open(m, 'rb') as f:
                streams.append(f.read())
        out = os.path.join(work, name + '.j2k')
        with open(out, 'wb') as f:
            f.write(combiner(streams))
        return out
    return make


def edited(name, base, edit):
    def make(work):
        made = base(work)
        if made is None:
            return None
        out = os.path.join(work, name + '.j2k')
        with open(made, 'rb') as f:
            data = edit(f.read())
        with open(out, 'wb') as f:
            f.write(data)
        return out
    return make


def raw_source(path, w, h, subs, bits, signed=False):
    """The source of a `j2kc encode --raw` stream, component by component (8 or 16-bit big-endian)."""
    def load(work):
        with open(os.path.join(work, path), 'rb') as f:
            data = f.read()
        nbytes = 1 if bits <= 8 else 2
        values = [int.from_bytes(data[i:i + nbytes], 'big', signed=signed) for i in range(0, len(data), nbytes)]
        out, at = [], 0
        for dx, dy in subs:
            n = math.ceil(w / dx) * math.ceil(h / dy)
            out.append(values[at:at + n])
            at += n
        return out
    return load


SUB = [(2, 1), (255, 255), (3, 7)]
SUB_DESC = '600x520x3x8u@2x1:255x255:3x7'


def cases():
    c = []
    # Precincts, POC, code-block styles (opj_compress).
    c.append(Case('precincts_4x4', opj('precincts_4x4', 'rgb.ppm',
                                       ['-n', '4', '-c', '[16,16],[8,8],[4,4]', '-b', '4,4', '-r', '8,3,1']),
                  lossless_rgb=True))
    c.append(Case('poc_tile_parts_r', opj('poc_tile_parts_r', 'rgb.ppm',
                                          ['-n', '3', '-t', '24,20', '-r', '20,5,1', '-TP', 'R', '-POC',
                                           'T0=0,0,1,2,3,LRCP/T0=0,0,3,4,3,RLCP']), lossless_rgb=True))
    c.append(Case('poc_tile_parts_c', opj('poc_tile_parts_c', 'rgb.ppm',
                                          ['-n', '3', '-t', '32,32', '-r', '20,5,1', '-TP', 'C', '-POC',
                                           'T0=0,0,1,4,3,LRCP/T0=0,0,2,4,3,RPCL/T0=0,0,3,4,3,CPRL']),
                  lossless_rgb=True))
    c.append(Case('poc_bounds_sop_eph', opj('poc_bounds_sop_eph', 'rgb.ppm',
                                            ['-n', '3', '-t', '24,20', '-r', '20,5,1', '-SOP', '-EPH', '-POC',
                                             'T0=1,0,3,4,3,RPCL/T0=0,0,3,1,3,CPRL']), lossless_rgb=True))
    for mode in (5, 18, 40, 63):
        c.append(Case('style%d_layers' % mode, opj('style%d_layers' % mode, 'rgb.ppm',
                                                   ['-n', '3', '-M', str(mode), '-r', '20,8,3,1', '-b', '16,16']),
                      lossless_rgb=True))
    c.append(Case('style63_97', opj('style63_97', 'rgb.ppm', ['-n', '3', '-M', '63', '-r', '30,10,4', '-I'])))
    c.append(Case('offsets_1e6', opj('offsets_1e6', 'rgb.ppm',
                                     ['-n', '3', '-d', '1000000,2000000', '-t', '32,16', '-T', '999990,1999999'])))
    # Subsampling up to 255, guard bits, levels (j2kc encode, lossless against the source).
    for prog in ('PCRL', 'RPCL', 'CPRL'):
        name = 'sub255_%s' % prog.lower()
        c.append(Case(name, ours(name, 'sub.raw', ['--raw', SUB_DESC, '--lossless', '--precincts', '16x16',
                                                   '--progression', prog]),
                      source=raw_source('sub.raw', 600, 520, SUB, 8), reduces=(1,), layers=()))
    c.append(Case('precincts_2x2_layers', ours('precincts_2x2_layers', 'g12u.raw', [
        '--raw', '64x48x1x12u', '--lossless', '--precincts', '2x2', '--levels', '3', '--layers', '3']),
        source=raw_source('g12u.raw', 64, 48, [(1, 1)], 12), layers=(1, 2)))
    c.append(Case('sub255_97', ours('sub255_97', 'sub.raw', ['--raw', SUB_DESC, '--quality', '0.5']),
                  reduces=(1,), layers=()))
    for g, kind in ((0, 's'), (7, 'u')):
        name = 'guard%d_53' % g
        if g == 0:  # a 16-bit lossless source needs guard bits (the encoder refuses, rightly)
            continue
        c.append(Case(name, ours(name, 'g16%s.raw' % kind, ['--raw', '64x48x1x16' + kind, '--guard-bits', str(g),
                                                             '--lossless']),
                      source=raw_source('g16%s.raw' % kind, 64, 48, [(1, 1)], 16, kind == 's'), layers=()))
        name = 'guard%d_97' % g
        c.append(Case(name, ours(name, 'g12%s.raw' % kind, ['--raw', '64x48x1x12' + kind, '--guard-bits', str(g),
                                                             '--quality', '0.3']), layers=()))
    c.append(Case('levels32', ours('levels32', 'g12u.raw', ['--raw', '64x48x1x12u', '--levels', '32',
                                                            '--lossless']),
                  source=raw_source('g12u.raw', 64, 48, [(1, 1)], 12), reduces=(1, 31), layers=()))
    c.append(Case('levels0_layers', ours('levels0_layers', 'g12u.raw', ['--raw', '64x48x1x12u', '--levels', '0',
                                                                        '--lossless', '--layers', '3']),
                  reduces=(), layers=(1, 2)))
    # Byte edits.
    one = opj('one_tile', 'rgb.ppm', ['-n', '3', '-r', '10,1'])
    tiled = opj('tiled', 'rgb.ppm', ['-n', '3', '-t', '20,20', '-TP', 'C'])
    tlm = opj('tiled_tlm', 'rgb.ppm', ['-n', '3', '-t', '20,20', '-TP', 'C', '-TLM'])
    q97 = opj('tiled_97', 'rgb.ppm', ['-n', '3', '-I', '-t', '32,24', '-r', '6'])
    c.append(Case('psot0', edited('psot0', one, edit_psot0)))
    c.append(Case('psot0_tiles', edited('psot0_tiles', tiled, edit_psot0)))
    c.append(Case('psot0_no_eoc', edited('psot0_no_eoc', one, lambda b: edit_psot0(b, eoc=False))))
    c.append(Case('crg_com', edited('crg_com', one, edit_crg_com)))
    c.append(Case('empty_tile_parts', edited('empty_tile_parts', tiled, edit_empty_tile_parts)))
    c.append(Case('tlm_corrupt', edited('tlm_corrupt', tlm, edit_tlm)))
    c.append(Case('tile_qcc_then_qcd', edited('tile_qcc_then_qcd', q97, lambda b: edit_quant_overrides(b, True))))
    c.append(Case('tile_qcd_then_qcc', edited('tile_qcd_then_qcc', q97, lambda b: edit_quant_overrides(b, False))))
    sop_eph = opj('sop_eph', 'rgb.ppm', ['-n', '3', '-r', '20,5,1', '-SOP', '-EPH'])
    sop_eph_tp = opj('sop_eph_tp', 'rgb.ppm', ['-n', '3', '-t', '32,32', '-TP', 'R', '-r', '20,5,1', '-SOP', '-EPH',
                                               '-c', '[32,32],[16,16]', '-p', 'RPCL'])
    c.append(Case('ppm_split', edited('ppm_split', sop_eph, lambda b: edit_ppm(b, 7, True)), lossless_rgb=True))
    c.append(Case('ppt_split', edited('ppt_split', sop_eph, lambda b: edit_ppt(b, 7, False)), lossless_rgb=True))
    c.append(Case('ppm_tile_parts', edited('ppm_tile_parts', sop_eph_tp, lambda b: edit_ppm(b, 5, False)),
                  lossless_rgb=True))
    c.append(Case('ppm_tile_parts_nppm_split', edited('ppm_tile_parts_nppm_split', sop_eph_tp,
                                                      lambda b: edit_ppm(b, 7, True)), lossless_rgb=True))
    c.append(Case('ppt_tile_parts', edited('ppt_tile_parts', sop_eph_tp, lambda b: edit_ppt(b, 7, False)),
                  lossless_rgb=True))
    c.append(Case('ppt_tile_parts_z_per_tile', edited('ppt_tile_parts_z_per_tile', sop_eph_tp,
                                                      lambda b: edit_ppt(b, 7, True)), lossless_rgb=True))
    offsets = opj('tile_offsets', 'rgb.ppm', ['-n', '3', '-t', '24,20', '-T', '5,3', '-d', '7,9'])
    c.append(Case('offsets_near_2p32', edited('offsets_near_2p32', offsets, edit_offsets_near_2p32),
                  lossless_rgb=True))
    plt = opj('tiled_plt', 'rgb.ppm', ['-n', '3', '-t', '32,32', '-TP', 'R', '-PLT', '-r', '20,5,1'])
    c.append(Case('plt_corrupt', edited('plt_corrupt', plt, lambda b: edit_plt(b, 'corrupt')), lossless_rgb=True))
    c.append(Case('plm', edited('plm', plt, lambda b: edit_plt(b, 'plm')), lossless_rgb=True))
    gray = opj('gray', 'rgb.ppm', ['-n', '2', '-r', '4,1'])
    for bits, signed in ((20, False), (20, True), (31, False), (32, False), (32, True)):
        name = 'precision%d%s' % (bits, 's' if signed else 'u')
        c.append(Case(name, edited(name, gray, lambda b, bits=bits, signed=signed: edit_precision(b, bits, signed)),
                      reduces=(1,)))
    c.append(Case('precision38', edited('precision38', gray, lambda b: edit_precision(b, 38, False)),
                  invalid='38-bit samples', reduces=(1,)))
    c.append(Case('precision39', edited('precision39', gray, lambda b: edit_precision(b, 39, True)),
                  invalid='precision 39 > 38'))
    c.append(Case('components257_rgn', opj('components257_rgn', 'c257.raw',
                                           ['-F', '9,7,257,8,u', '-n', '2', '-ROI', 'c=256,U=9', '-r', '3,1']),
                  reduces=(1,)))
    c.append(Case('image_1x1_levels5', ours('image_1x1_levels5', 'one.raw', ['--raw', '1x1x1x8u', '--levels', '5',
                                                                               '--lossless']),
                  source=raw_source('one.raw', 1, 1, [(1, 1)], 8), reduces=(1, 5), layers=()))
    c.append(Case('image_1x33_levels5', ours('image_1x33_levels5', 'strip.raw', ['--raw', '1x33x1x8u', '--levels',
                                                                                 '5', '--lossless']),
                  source=raw_source('strip.raw', 1, 33, [(1, 1)], 8), reduces=(2,), layers=()))
    c.append(Case('tiles_1x1', opj('tiles_1x1', 'rgb.ppm', ['-n', '1', '-t', '1,1']), lossless_rgb=True,
                  reduces=(), layers=()))
    c.append(Case('tiles_2x3_offsets', opj('tiles_2x3_offsets', 'rgb.ppm', ['-n', '2', '-t', '2,3', '-d', '1,2',
                                                                            '-T', '1,1']), reduces=(1,), layers=()))
    cprl = ['-p', 'CPRL', '-r', '12,4,1']
    mixed = [('ga.pgm', ['-n', '3', '-b', '16,16', '-M', '1']),
             ('gb.pgm', ['-n', '4', '-b', '32,8', '-c', '[32,32],[16,16]', '-I', '-M', '38']),
             ('gc.pgm', ['-n', '2', '-b', '4,64', '-M', '17', '-c', '[8,8]'])]
    levels = [('ga.pgm', ['-n', '1']), ('gb.pgm', ['-n', '5']), ('gc.pgm', ['-n', '3', '-b', '8,8'])]
    for tiles in ([], ['-t', '32,24']):
        for in_tiles in ((False, True) if tiles else (False,)):
            where = ('tiles_' if tiles else '') + ('tile_headers' if in_tiles else 'main_header')
            for kind, parts in (('levels', levels), ('mixed', mixed)):
                name = 'coc_qcc_%s_%s' % (kind, where)
                c.append(Case(name, merge(name, [(src, opts + cprl + tiles) for src, opts in parts], in_tiles),
                              merged_from=len(parts), reduces=() if kind == 'levels' else (1,)))
            name = 'rgn_per_component_%s' % where
            roi = [('ga.pgm', ['-n', '3', '-ROI', 'c=0,U=8']), ('gb.pgm', ['-n', '3']),
                   ('gc.pgm', ['-n', '3', '-ROI', 'c=0,U=11', '-I'])]
            c.append(Case(name, merge(name, [(src, opts + cprl + tiles) for src, opts in roi], in_tiles),
                          merged_from=len(roi), reduces=(1,)))
    grid = ['-t', '24,20']
    c.append(Case('tile_cod_qcd', combine('tile_cod_qcd', [
        opj('tile_cod_a', 'rgb.ppm', grid + ['-n', '3', '-r', '20,5,1', '-p', 'RLCP']),
        opj('tile_cod_b', 'rgb.ppm', grid + ['-n', '2', '-r', '8,1', '-p', 'PCRL', '-b', '8,8', '-c', '[16,16],[8,8]']),
        opj('tile_cod_c', 'rgb.ppm', grid + ['-n', '4', '-r', '12,5,3,1', '-p', 'CPRL', '-M', '5', '-EPH'])],
        per_tile), lossless_rgb=True, reduces=(1,)))
    c.append(Case('tile_parts_interleaved', edited('tile_parts_interleaved', opj(
        'tiled_r', 'rgb.ppm', grid + ['-n', '3', '-TP', 'R', '-r', '10,1']), lambda b: interleave_tile_parts(b, False)),
        lossless_rgb=True))
    c.append(Case('tiles_reversed', edited('tiles_reversed', opj(
        'tiled_r2', 'rgb.ppm', grid + ['-n', '3', '-TP', 'R', '-r', '10,1']), lambda b: interleave_tile_parts(b, True)),
        lossless_rgb=True))
    c.append(Case('sop_nsop_wrong', edited('sop_nsop_wrong', sop_eph, edit_nsop), lossless_rgb=True))
    # A 12-bit 9/7 component with an ROI shift of 20: Mb + s = 36 bit-planes, more than the 30 that
    # Tier-1 holds here; refused as unsupported (Grok 10 decodes it, OpenJPEG 2.5 refuses it).
    c.append(Case('roi_36_planes', opj('roi_36_planes', 'gb.pgm', ['-n', '3', '-ROI', 'c=0,U=20', '-I', '-r', '10,1']),
                  invalid='bit-planes exceed 30', reduces=(1,)))
    c.append(Case('levels33', edited('levels33', one, lambda b: edit_levels(b, 33)),
                  invalid='33 decomposition levels'))
    return c


# --------------------------------------------------------------------------
# Checking
# --------------------------------------------------------------------------


def decode(tool, stream, out_dir, opts):
    """(exit status, last stderr line, [Pgx])."""
    os.makedirs(out_dir)
    out = os.path.join(out_dir, 'o.pgx')
    if tool == 'j2kc':
        cmd = [ARGS.j2kc, 'decode', '-i', stream, '-o', out, '--raw-components'] + opts
        if ARGS.backend:
            cmd += ['--backend', ARGS.backend]
    elif tool == 'opj':
        cmd = ['opj_decompress', '-i', stream, '-o', out, '-quiet'] + opts
    else:
        cmd = ['grk_decompress', '-i', stream, '-o', out] + opts
    rc, so, se = run(cmd)
    lines = se.strip().splitlines()
    comps = [Pgx(p) for p in pgx_components(out)] if rc == 0 else []
    return rc, lines, comps


def difference(a, b):
    """None when the component lists differ in shape, else the largest |difference|."""
    if len(a) != len(b):
        return None
    worst = 0
    for x, y in zip(a, b):
        if (x.w, x.h) != (y.w, y.h):
            return None
        for u, v in zip(x.samples(), y.samples()):
            worst = max(worst, abs(u - v))
    return worst


def check(case, work):
    """[(status, text)] for the case at every decode option set."""
    os.makedirs(work)
    for name in os.listdir(ARGS.sources):
        shutil.copy(os.path.join(ARGS.sources, name), os.path.join(work, name))
    stream = case.make(work)
    if stream is None:
        return [('fail', 'the encoder failed to make the stream')]
    results = []
    enforced = set()
    opts_list = [[]] + [['-r', str(r)] for r in case.reduces] + [['-l', str(l)] for l in case.layers]
    for k, opts in enumerate(opts_list):
        label = ' '.join(opts) or 'full'
        rc, lines, mine = decode('j2kc', stream, os.path.join(work, 'j%d' % k), opts)
        if rc not in (0, 1) or (rc == 1 and len(lines) != 1):
            results.append(('fail', '%s: j2kc exit %s, %d stderr lines: %s' % (label, rc, len(lines),
                                                                               ' | '.join(lines[-2:]))))
            continue
        if case.invalid:
            ok = rc == 1 and case.invalid in lines[0]
            results.append(('pass' if ok else 'fail', '%s: %s' % (label, lines[0] if lines else 'decoded')))
            continue
        if rc != 0:
            results.append(('fail', '%s: j2kc refuses: %s' % (label, lines[0])))
            continue
        if case.source and not opts:
            want = case.source(work)
            same = len(want) == len(mine) and all(list(p.samples()) == w for p, w in zip(mine, want))
            results.append(('pass' if same else 'fail', '%s: %s the lossless source' % (label, 'equals' if same
                                                                                        else 'differs from')))
        if case.merged_from and not opts:
            for i in range(case.merged_from):
                single = os.path.join(work, '%s_c%d.j2k' % (case.name, i))
                src = decode('j2kc', single, os.path.join(work, 'single%d' % i), [])[2]
                same = len(src) == 1 and i < len(mine) and list(src[0].samples()) == list(mine[i].samples())
                results.append(('pass' if same else 'fail', '%s: component %d %s its single stream' % (
                    label, i, 'equals' if same else 'differs from')))
        if case.lossless_rgb and not opts:
            out = os.path.join(work, 'rgb_decoded.ppm')
            cmd = [ARGS.j2kc, 'decode', '-i', stream, '-o', out] + (['--backend', ARGS.backend] if ARGS.backend else [])
            n = 61 * 47 * 3
            with open(os.path.join(work, 'rgb.ppm'), 'rb') as f:
                want = f.read()[-n:]
            same = run(cmd)[0] == 0 and open(out, 'rb').read()[-n:] == want
            results.append(('pass' if same else 'fail', '%s: %s the lossless source' % (label, 'equals' if same
                                                                                        else 'differs from')))
        irreversible = 'irreversible' in run([ARGS.j2kc, 'dump', '-i', stream])[1]
        for peer in ('opj', 'grk'):
            prc, plines, theirs = decode(peer, stream, os.path.join(work, '%s%d' % (peer, k)), opts)
            bug = peer_bug(peer, case.name, opts)
            worst = difference(theirs, mine) if theirs else None
            agrees = worst is not None and worst <= (1 if irreversible else 0)
            if bug and (peer, bug) not in enforced:
                enforced.add((peer, bug))
                results.append(('pass' if not agrees else 'fail', '%s: %s %s (%s)' % (
                    label, peer, 'differs as known' if not agrees else 'now agrees: drop the exception', bug)))
            elif bug:
                results.append(('note', '%s: %s %s (%s)' % (label, peer, 'agrees' if agrees else 'differs', bug)))
            elif not theirs:
                results.append(('note', '%s: %s refuses it' % (label, peer)))
            else:
                results.append(('pass' if agrees else 'fail', '%s: %s max |diff| %s' % (label, peer, worst)))
    return results


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--j2kc', required=True, help='path of the j2kc tool')
    ap.add_argument('--backend', help='pass --backend to j2kc decode (cpu, cuda)')
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 2)
    ap.add_argument('--filter', help='substring of case names')
    ap.add_argument('--verbose', '-v', action='store_true', help='print every check')
    ARGS = ap.parse_args()
    ARGS.j2kc = os.path.abspath(ARGS.j2kc)
    missing = [t for t in ('opj_compress', 'opj_decompress', 'grk_decompress') if shutil.which(t) is None]
    if missing:
        print('part1_streams: SKIPPED, missing %s' % ', '.join(missing))
        return SKIP
    work = tempfile.mkdtemp(prefix='j2kc-part1-')
    ARGS.sources = os.path.join(work, 'sources')
    os.makedirs(ARGS.sources)
    if ARGS.backend == 'cuda':
        probe = os.path.join(ARGS.sources, 'probe')
        write_raw(probe + '.raw', 16 * 16, 8, False, 9)
        rc, _, se = run([ARGS.j2kc, 'encode', '-i', probe + '.raw', '--raw', '16x16x1x8u', '-o', probe + '.j2k',
                         '--backend', 'cpu'])
        if rc:
            refusal = se.strip() or 'exit status %s' % rc
        else:
            refusal = cuda_decode_refusal(ARGS.j2kc, probe + '.j2k')
        if refusal:
            print('part1_streams: SKIPPED, the CUDA backend cannot decode here: %s' % refusal)
            shutil.rmtree(work, ignore_errors=True)
            return SKIP
    write_ppm(os.path.join(ARGS.sources, 'rgb.ppm'), 61, 47, 1)
    write_raw(os.path.join(ARGS.sources, 'sub.raw'), raw_count(600, 520, SUB), 8, False, 2)
    for name, maxval, seed in (('ga.pgm', 255, 11), ('gb.pgm', 4095, 12), ('gc.pgm', 1023, 13)):
        write_pgm(os.path.join(ARGS.sources, name), 67, 45, maxval, seed)
    write_raw(os.path.join(ARGS.sources, 'c257.raw'), 9 * 7 * 257, 8, False, 3)
    write_raw(os.path.join(ARGS.sources, 'one.raw'), 1, 8, False, 4)
    write_raw(os.path.join(ARGS.sources, 'strip.raw'), 33, 8, False, 5)
    for bits in (12, 16):
        write_raw(os.path.join(ARGS.sources, 'g%ds.raw' % bits), 64 * 48, bits, True, bits)
        write_raw(os.path.join(ARGS.sources, 'g%du.raw' % bits), 64 * 48, bits, False, bits + 1)
    selected = [c for c in cases() if not ARGS.filter or ARGS.filter in c.name]
    with concurrent.futures.ThreadPoolExecutor(max_workers=ARGS.jobs) as pool:
        results = list(pool.map(lambda ic: check(ic[1], os.path.join(work, ic[1].name)), enumerate(selected)))
    failed = checks = 0
    for case, res in zip(selected, results):
        for status, text in res:
            checks += 1
            if status == 'fail':
                failed += 1
            if status == 'fail' or ARGS.verbose:
                print('%s %s: %s' % (status.upper(), case.name, text))
    print('part1_streams: %d cases, %d checks, %d failed' % (len(selected), checks, failed))
    if not failed:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
