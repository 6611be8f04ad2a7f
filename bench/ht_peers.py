"""The HTJ2K (ISO/IEC 15444-15) rows of `make bench` (run.py): j2k_cuda's HT
block coder under a byte target, at a fixed quantisation and lossless,
against nvJPEG2000's HT encoder and decoder, OpenJPH (ojph_compress,
ojph_expand), Grok (grk_compress -M 64) and OpenJPEG's HT decoder, on the
same frames as the Part-1 cases."""
import os
import subprocess
import time

import numpy as np

from cases import FORMATS, HT_CASES, psnr, read_planar
from harness import THREADS, Skip
from peers import (J2KC, NVJPEG2K_BATCHES, _j2kc_encode_cmd, dec_grk, dec_j2kc, dec_nvjpeg2k, dec_opj, enc_cli, enc_j2kc,
                   enc_nvjpeg2k)

HT_BPP = 2.0  # the lossy HT case's target: bits a sample


def ht_target(fs):
    """Bytes a frame of the lossy HT case."""
    return HT_BPP * fs.raw_bytes() / fs.prec


def _largest_under(size_of, lo, hi, target, steps=7):
    """The parameter in [lo, hi] (bytes fall as it grows) whose output is the
    largest under target, by bisection on its logarithm."""
    if size_of(hi) > target:
        raise Skip("over the target even at %g" % hi)
    if size_of(lo) <= target:
        return lo
    for _ in range(steps):
        mid = (lo * hi) ** 0.5
        if size_of(mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi


_QUALITY = {}


def _j2kc_fixed_quality(bench, fs, target):
    """j2k_cuda's quality (a step scale) for its first frame to land under the
    target: one-frame probes, once a frame set."""
    key = (fs.fmt, fs.content, target)
    if key not in _QUALITY:
        out = os.path.join(bench.work, "ht-probe")
        os.makedirs(out, exist_ok=True)
        cmd = _j2kc_encode_cmd(bench, fs, J2KC["backend"], out, 1, 0) + ["--frames", "1", "--ht"]

        def size_of(q):
            bench.run(cmd + ["--quality", "%.6g" % q])
            return os.path.getsize(os.path.join(out, "000.j2c"))
        _QUALITY[key] = _largest_under(size_of, 0.05, 64.0, target)
    return _QUALITY[key]


# ---------------------------------------------------------------------------
# OpenJPH: its tools run one thread each, so a machine's worth of them run at
# once on distinct frames (THREADS processes), as a batch transcoder would.


def _parallel_rounds(bench, make_cmd, sources, out, ext):
    """Rounds of THREADS processes at once over the sources in turn after a
    one-process warm-up; frames a second over the rounds' wall time."""
    bench.run(make_cmd(sources[0], os.path.join(out, "warm." + ext)), timeout=min(120, max(5, bench.left())))
    frames, wall, k = 0, 0.0, 0
    outputs = []
    while True:
        cmds = []
        for j in range(THREADS):
            i = (k + j) % len(sources)
            dst = os.path.join(out, "%03d.%s" % (i, ext))
            if dst not in outputs:
                outputs.append(dst)
            cmds.append(make_cmd(sources[i], dst))
        t0 = time.monotonic()
        procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=bench.env) for c in cmds]
        fails = [p for p in procs if p.wait(timeout=max(5, bench.left())) != 0]
        if fails:
            raise Skip("exit %d: %s" % (fails[0].returncode, fails[0].stderr.read().decode(errors="replace")[-160:]))
        wall += time.monotonic() - t0
        frames += len(cmds)
        k += THREADS
        if bench.quick or wall > 3 or k >= 3 * THREADS:
            break
    return dict(fps=frames / wall, frames=frames, outputs=sorted(outputs),
                note="%d processes at once (one thread each), files in tmpfs" % THREADS)


def _full_size(fs):
    return all(s == (1, 1) for s in FORMATS[fs.fmt]["sub"])


def _ojph_inputs(fs):
    """The frames as ojph_compress reads them: 16-bit PPM where the three
    components are full size (so it applies its colour transform, as every
    other encoder here does), else planar raw under .yuv names."""
    paths = []
    for k, p in enumerate(fs.rawl):
        if _full_size(fs):
            path = p[:-len(".rawl")] + ".ppm"
            if not os.path.exists(path):
                with open(path, "wb") as fp:
                    fp.write(b"P6\n%d %d\n%d\n" % (fs.w, fs.h, (1 << fs.prec) - 1))
                    fp.write(np.stack(fs.frames[k], -1).astype(">u2").tobytes())
        else:
            path = p[:-len(".rawl")] + ".yuv"
            if not os.path.exists(path):
                os.symlink(p, path)
        paths.append(path)
    return paths


def _read_ppm(path):
    """The planes of a binary 16-bit PPM (P6, maxval above 255)."""
    with open(path, "rb") as fp:
        data = fp.read()
    fields, i = [], 0
    while len(fields) < 4:
        while data[i:i + 1].isspace():
            i += 1
        j = i
        while not data[j:j + 1].isspace():
            j += 1
        fields.append(data[i:j])
        i = j
    w, h = int(fields[1]), int(fields[2])
    a = np.frombuffer(data, ">u2", count=w * h * 3, offset=i + 1).reshape(h, w, 3)
    return [a[..., c] for c in range(3)]


def _ojph_compress_cmd(bench, fs, lossless, qstep):
    n = len(fs.frames[0])

    def cmd(src, dst):
        c = [bench.tool("ojph_compress"), "-i", src, "-o", dst]
        if src.endswith(".yuv"):
            c += ["-dims", "{%d,%d}" % (fs.w, fs.h), "-num_comps", str(n), "-signed", ",".join(["false"] * n),
                  "-bit_depth", ",".join([str(fs.prec)] * n),
                  "-downsamp", ",".join("{%d,%d}" % s for s in FORMATS[fs.fmt]["sub"])]
        return c + (["-reversible", "true"] if lossless else ["-qstep", "%.6g" % qstep])
    return cmd


def enc_ojph(bench, fs, mode, target, out):
    srcs = _ojph_inputs(fs)
    note = ""
    qstep = None
    if mode != "lossless":  # no byte target: the finest step whose first frame fits
        probe = os.path.join(out, "probe.j2c")

        def size_of(q):
            bench.run(_ojph_compress_cmd(bench, fs, False, q)(srcs[0], probe))
            return os.path.getsize(probe)
        qstep = _largest_under(size_of, 1e-5, 0.5, target)
        note = "qstep %.3g (the finest whose first frame fits the target); " % qstep
    r = _parallel_rounds(bench, _ojph_compress_cmd(bench, fs, mode == "lossless", qstep), srcs, out, "j2c")
    files = r.pop("outputs")[:fs.d]
    r.update(files=files, bytes=[os.path.getsize(p) for p in files], note=note + r["note"])
    return r


def dec_ojph(bench, fs, files, out):
    ext = "ppm" if _full_size(fs) else "yuv"
    r = _parallel_rounds(bench, lambda s, d: [bench.tool("ojph_expand"), "-i", s, "-o", d], files, out, ext)
    first = r.pop("outputs")[0]
    r["psnr"] = psnr(fs.frames[0], _read_ppm(first) if ext == "ppm" else read_planar(first, fs.fmt), fs.prec)
    return r


def _enc_nvjpeg2k_ht(bench, fs, mode, target, out):
    return enc_nvjpeg2k(bench, fs, mode, target, out, ht=True)


_grk_ht = enc_cli("grk_compress", "-H", extra=("-M", "64"))


def _enc_grk_ht(bench, fs, mode, target, out):
    r = _grk_ht(bench, fs, mode, target, out)
    if mode == "rate":
        r["note"] += "; -r asked, which its HT coder does not follow"
    return r


HT_ENCODERS = [
    ("j2k_cuda", enc_j2kc("cuda", ht=True)),
    ("j2k_cuda, CUDA frames", enc_j2kc("cuda", device_input=True, ht=True)),
    ("j2k_cuda, fixed step", enc_j2kc("cuda", ht=True, quality=_j2kc_fixed_quality)),
    ("j2k_cuda, fixed step, CUDA frames", enc_j2kc("cuda", device_input=True, ht=True, quality=_j2kc_fixed_quality)),
    ("nvJPEG2000", _enc_nvjpeg2k_ht),
    ("OpenJPH ojph_compress", enc_ojph),
    ("Grok grk_compress", _enc_grk_ht),
    ("j2k_cuda CPU backend", enc_j2kc("cpu", ht=True)),
]
# Lossless has one setting: the fixed-step rows are the lossy case's alone;
# OpenJPEG writes no HT streams of its own.
HT_SKIP = {("j2k_cuda, fixed step", "ht4k-lossless-natural"), ("j2k_cuda, fixed step, CUDA frames",
                                                               "ht4k-lossless-natural")} | {
    ("own:OpenJPEG opj_decompress", c) for c in HT_CASES}


def ht_decoders():
    """The decode rows of the HT cases: each on j2k_cuda's HT stream and on
    its own encoder's."""
    return ([("j2k_cuda", dec_j2kc("cuda")), ("j2k_cuda, one frame in flight", dec_j2kc("cuda", in_flight=1)),
             ("nvJPEG2000", dec_nvjpeg2k())]
            + [("nvJPEG2000, batch %d" % b, dec_nvjpeg2k(b)) for b in NVJPEG2K_BATCHES]
            + [("nvJPEG2000, one image", dec_nvjpeg2k(1)), ("OpenJPH ojph_expand", dec_ojph),
               ("Grok grk_decompress", dec_grk), ("OpenJPEG opj_decompress", dec_opj),
               ("j2k_cuda CPU backend", dec_j2kc("cpu"))])
