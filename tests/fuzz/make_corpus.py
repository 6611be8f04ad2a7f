#!/usr/bin/env python3
"""make_corpus.py: seed corpus for the fuzz targets (tests/fuzz).

Small test images are encoded with every tool that is installed (j2kc,
opj_compress, grk_compress, ojph_compress) over the feature matrix of
ISO/IEC 15444-1 and the HT block coder of ISO/IEC 15444-15 (HT-only streams
of j2kc, grk_compress -M 64 and ojph_compress, with refinement passes from
j2kc under a budget, and JPH files):
progression orders, precincts, tiles and tile offsets, image offsets,
layers, code-block styles (-M 1..63), ROI, subsampling, SOP/EPH, PLT/TLM,
tile-parts, 5/3 and 9/7, signed and deep samples, JP2. PPM and PPT streams,
which no installed encoder writes, are made here by moving the packet
headers of a SOP+EPH stream into PPM/PPT markers (A.7.4, A.7.5).

Usage: make_corpus.py --out DIR [--j2kc PATH]
Writes DIR/decoder (each file prefixed by the decoder target's option byte)
and DIR/jp2. Tools that are missing are skipped; the corpus is never empty
as long as one of them is present.
"""
import argparse
import hashlib
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile


def write_pnm(path, w, h, comps, maxval, rng):
    """A smooth gradient with noise: compresses to a few hundred bytes but exercises every pass."""
    magic = b"P5" if comps == 1 else b"P6"
    wide = maxval > 255
    out = bytearray()
    for y in range(h):
        for x in range(w):
            for c in range(comps):
                v = ((x * 7 + y * 3 + c * 50) * maxval // (w * 7 + h * 3 + 100)) + rng.randint(-3, 3)
                v = max(0, min(maxval, v))
                out += struct.pack(">H", v) if wide else bytes([v])
    with open(path, "wb") as f:
        f.write(b"%s\n%d %d\n%d\n" % (magic, w, h, maxval))
        f.write(out)


def run(cmd):
    try:
        r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        return r.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def marker_segments(cs):
    """Yields (offset, marker, length) of a main or tile-part header walk; stops at SOD/EOC."""
    pos = 2
    while pos + 4 <= len(cs):
        m = struct.unpack(">H", cs[pos:pos + 2])[0]
        if m in (0xFF93, 0xFFD9):
            yield pos, m, 0
            return
        n = struct.unpack(">H", cs[pos + 2:pos + 4])[0]
        yield pos, m, n
        pos += 2 + n


def split_packets(body):
    """Splits SOP+EPH tile-part data into (header incl. EPH, body incl. SOP) pairs."""
    starts = []
    i = 0
    while True:
        i = body.find(b"\xff\x91", i)
        if i < 0:
            break
        starts.append(i)
        i += 6
    if not starts or starts[0] != 0:
        return None
    packets = []
    for k, s in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(body)
        pkt = body[s:end]
        e = pkt.find(b"\xff\x92", 6)
        if e < 0:
            return None
        packets.append((pkt[6:e + 2], pkt[:6] + pkt[e + 2:]))
    return packets


def pack_headers(cs, where):
    """Rewrites a SOP+EPH codestream (no TLM/PLT) with packet headers in PPM ('main') or PPT ('tile')."""
    # Main header.
    main_end = None
    for pos, m, n in marker_segments(cs):
        if m == 0xFF90:
            main_end = pos
            break
        if m in (0xFF55, 0xFF58, 0xFF60, 0xFF61):  # TLM, PLT, PPM, PPT: not handled
            return None
    if main_end is None:
        return None
    main = bytearray(cs[:main_end])
    parts = []  # (sot fields, header segments, packed headers, bodies)
    pos = main_end
    while pos + 12 <= len(cs) and cs[pos:pos + 2] == b"\xff\x90":
        isot, psot, tpsot, tnsot = struct.unpack(">HIBB", cs[pos + 4:pos + 12])
        if psot == 0:
            return None
        end = pos + psot
        hdr = bytearray()
        q = pos + 12
        while cs[q:q + 2] != b"\xff\x93":
            n = struct.unpack(">H", cs[q + 2:q + 4])[0]
            hdr += cs[q:q + 2 + n]
            q += 2 + n
        packets = split_packets(cs[q + 2:end])
        if packets is None:
            return None
        parts.append(((isot, tpsot, tnsot), bytes(hdr), b"".join(h for h, _ in packets),
                      b"".join(b for _, b in packets)))
        pos = end
    if not parts:
        return None
    out = bytearray(main)
    if where == "main":
        # One PPM with all tile-parts' Nppm records (split into PPMs of < 65535 bytes).
        records = b"".join(struct.pack(">I", len(p[2])) + p[2] for p in parts)
        z = 0
        while records:
            chunk, records = records[:65000], records[65000:]
            out += b"\xff\x60" + struct.pack(">HB", len(chunk) + 3, z) + chunk
            z += 1
    for (isot, tpsot, tnsot), hdr, packed, bodies in parts:
        extra = b""
        if where == "tile":
            z = 0
            rest = packed
            while rest or z == 0:
                chunk, rest = rest[:65000], rest[65000:]
                extra += b"\xff\x61" + struct.pack(">HB", len(chunk) + 3, z) + chunk
                z += 1
        psot = 12 + len(hdr) + len(extra) + 2 + len(bodies)
        out += b"\xff\x90" + struct.pack(">HHIBB", 10, isot, psot, tpsot, tnsot) + hdr + extra + b"\xff\x93" + bodies
    out += b"\xff\xd9"
    return bytes(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--j2kc", default=None)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    dec_dir = os.path.join(args.out, "decoder")
    jp2_dir = os.path.join(args.out, "jp2")
    os.makedirs(dec_dir, exist_ok=True)
    os.makedirs(jp2_dir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="j2kc-corpus-")
    images = {}
    for name, w, h, comps, maxval in [("g8", 37, 33, 1, 255), ("c8", 40, 34, 3, 255),
                                      ("g12", 24, 17, 1, 4095), ("c16", 19, 21, 3, 65535),
                                      ("g1", 16, 16, 1, 1)]:
        p = os.path.join(tmp, name + (".pgm" if comps == 1 else ".ppm"))
        write_pnm(p, w, h, comps, maxval, rng)
        images[name] = p

    streams = []  # (tag, path)

    def enc(tool, tag, image, ext, opts):
        out = os.path.join(tmp, "%s-%s.%s" % (tool, tag, ext))
        if tool == "j2kc":
            if not args.j2kc:
                return
            cmd = [args.j2kc, "encode", "-i", images[image], "-o", out, "--backend", "cpu"] + opts
        else:
            exe = shutil.which(tool + "_compress")
            if not exe:
                return
            cmd = [exe, "-i", images[image], "-o", out] + opts
        if run(cmd) and os.path.exists(out):
            streams.append((tool + "-" + tag, out))

    # opj_compress and grk_compress share the option spelling for what is used here.
    for tool in ("opj", "grk"):
        enc(tool, "default", "c8", "j2k", [])
        enc(tool, "lossy", "c8", "j2k", ["-I", "-r", "20"])
        enc(tool, "layers", "g8", "j2k", ["-r", "40,10,1"])
        for p in ("LRCP", "RLCP", "RPCL", "PCRL", "CPRL"):
            enc(tool, "prog" + p, "c8", "j2k", ["-p", p, "-c", "[16,16],[8,8]", "-b", "8,8", "-r", "30,5"])
        enc(tool, "tiles", "c8", "j2k", ["-t", "16,12", "-n", "3"])
        enc(tool, "offsets", "g8", "j2k", ["-d", "5,3", "-T", "2,1", "-t", "16,16", "-n", "2"])
        for mode in (1, 2, 4, 8, 16, 32, 63):
            enc(tool, "mode%d" % mode, "g8", "j2k", ["-M", str(mode), "-b", "16,16", "-r", "15,1"])
        enc(tool, "roi", "c8", "j2k", ["-ROI" if tool == "opj" else "-R", "c=0,U=5"])
        enc(tool, "sopeph", "c8", "j2k", ["-SOP", "-EPH"] if tool == "opj" else ["-S", "-E"])
        enc(tool, "sopeph_tiles", "c8", "j2k",
            (["-SOP", "-EPH"] if tool == "opj" else ["-S", "-E"]) + ["-t", "16,16", "-r", "20,4", "-n", "3"])
        enc(tool, "plt_tlm", "c8", "j2k", (["-PLT", "-TLM"] if tool == "opj" else ["-L"]) + ["-t", "16,16", "-n", "3"])
        enc(tool, "tileparts", "c8", "j2k", ["-TP" if tool == "opj" else "-u", "R", "-t", "16,16", "-n", "3"])
        enc(tool, "sub", "g8", "j2k", ["-s", "2,2", "-n", "4"])
        enc(tool, "poc", "c8", "j2k", ["-POC" if tool == "opj" else "-P", "T1=0,0,1,3,2,CPRL/T1=0,0,3,3,3,LRCP",
                                       "-r", "20,5"])
        enc(tool, "deep", "c16", "j2k", ["-n", "2"])
        enc(tool, "deep97", "g12", "j2k", ["-I", "-n", "4"])
        enc(tool, "bilevel", "g1", "j2k", ["-n", "3"])
        enc(tool, "levels0", "g8", "j2k", ["-n", "1"])
        enc(tool, "cblk4", "g8", "j2k", ["-b", "4,4"])
        enc(tool, "jp2", "c8", "jp2", [])
        enc(tool, "jp2gray", "g12", "jp2", ["-I"])
    if args.j2kc:
        enc("j2kc", "lossless", "c8", "j2c", ["--lossless"])
        enc("j2kc", "lossy", "c8", "j2c", ["--quality", "4"])
        enc("j2kc", "layers", "c8", "j2c", ["--layers", "4", "--bytes", "600", "--progression", "RPCL"])
        enc("j2kc", "tiles", "c8", "j2c", ["--tile", "16x8", "--tile-parts", "R", "--tlm", "--plt"])
        enc("j2kc", "sopeph", "g12", "j2c", ["--sop", "--eph", "--precincts", "8x8", "--cblk", "4x4"])
        enc("j2kc", "jp2", "c16", "jp2", ["--lossless"])
        enc("j2kc", "guard", "g8", "j2c", ["--guard-bits", "0", "--levels", "5"])
        enc("j2kc", "ht_lossless", "c8", "j2c", ["--ht", "--lossless"])
        enc("j2kc", "ht_lossy", "g12", "j2c", ["--ht", "--quality", "2", "--cblk", "8x8"])
        enc("j2kc", "ht_refine", "c8", "j2c", ["--ht", "--bytes", "500"])
        enc("j2kc", "ht_layers", "c8", "j2c", ["--ht", "--bytes", "600", "--layers", "3", "--tile", "16x8"])
        enc("j2kc", "jph", "c16", "jph", ["--ht", "--lossless"])
    if shutil.which("grk_compress"):
        enc("grk", "ht", "c8", "j2k", ["-M", "64"])
        enc("grk", "ht_tiles", "g12", "j2k", ["-M", "64", "-t", "16,12", "-b", "8,8", "-p", "RPCL"])
    ojph = shutil.which("ojph_compress")
    if ojph:
        for tag, image, opts in (("ht_rev", "c8", ["-reversible", "true"]), ("ht_irv", "g12", ["-qstep", "0.01"]),
                                 ("ht_cblk", "g8", ["-block_size", "{8,16}", "-num_decomps", "2"])):
            out = os.path.join(tmp, "ojph-%s.j2c" % tag)
            if run([ojph, "-i", images[image], "-o", out] + opts) and os.path.exists(out):
                streams.append(("ojph-" + tag, out))

    # The HT streams of tests/data/ht: other encoders', refinement and
    # placeholder passes, and MIXED tile-components of HT and Part-1 blocks.
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "ht")
    for name in sorted(os.listdir(data)):
        if name.endswith((".j2c", ".j2k", ".jph")):
            streams.append(("data-" + name, os.path.join(data, name)))

    # PPM / PPT versions of the SOP+EPH streams.
    packed = []
    for tag, path in streams:
        if "sopeph" not in tag:
            continue
        with open(path, "rb") as f:
            cs = f.read()
        for where, name in (("main", "ppm"), ("tile", "ppt")):
            conv = pack_headers(cs, where)
            if conv:
                out = os.path.join(tmp, "%s-%s.j2k" % (tag, name))
                with open(out, "wb") as f:
                    f.write(conv)
                packed.append((tag + "-" + name, out))
    streams += packed

    count = 0
    for tag, path in streams:
        with open(path, "rb") as f:
            data = f.read()
        # Option byte 0 (full decode), plus reduce 1 / 2 layers for a few.
        prefixes = [0] + ([1 | (2 << 3)] if rng.random() < 0.3 else [])
        for p in prefixes:
            blob = bytes([p]) + data
            name = hashlib.sha1(blob).hexdigest()[:16] + "-" + tag
            with open(os.path.join(dec_dir, name), "wb") as f:
                f.write(blob)
            count += 1
        if data[:4] == b"\x00\x00\x00\x0c":
            with open(os.path.join(jp2_dir, tag), "wb") as f:
                f.write(data)
    shutil.rmtree(tmp)
    print("corpus: %d decoder seeds from %d streams, %d JP2 seeds in %s" %
          (count, len(streams), len(os.listdir(jp2_dir)), args.out))
    return 0 if streams else 1


if __name__ == "__main__":
    sys.exit(main())
