"""The peers of `make bench` (run.py): how each encoder and decoder is run
and timed (libj2kcuda through j2kc_bench and FFmpeg, nvJPEG2000, OpenJPEG,
Grok, FFmpeg's native and libopenjpeg codecs), which of them run which case,
and the FFmpeg encode and decode paths measured side by side."""
import hashlib
import json
import os
import re
import shutil
import sys
import time

import numpy as np

from cases import CASES, DCI_CAP, FORMATS, HT_CASES, psnr, read_ffmpeg_output, read_planar
from harness import FF_PROGRESS, FF_WARM, THREADS, Skip, frames_for

# The FFmpeg paths and their targets at DCI 4K (encode from host frames,
# 120 fps; decode through `ffmpeg -f null`, 96 fps), measured side by side on
# this case.
FF_CASE = "dci4k-cap-natural"
FF_ENC_TARGET, FF_DEC_TARGET = 120.0, 96.0
# glibc settings that keep FFmpeg's rawvideo packets (53 MB at DCI 4K) off a
# fresh mmap each: the file-input rows run with and without them.
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "268435456", "MALLOC_TRIM_THRESHOLD_": "1073741824"}
# Frames of the MXF clip FFmpeg's j2k_cuda decode rows read (no loop while
# timed: 3 s at 500 fps; 1.95 GB at the DCI 4K cap).
FF_DEC_CLIP = 1500
# Where j2k_cuda's own rows run: "cuda", or "cpu" for a dry run off the GPU
# machine (--cpu): the same commands on the reference backend.
J2KC = {"backend": "cuda"}
# What this build can set (found at start-up): the decoder's Tier-1 placement
# in j2kc_bench (--tier1) and in FFmpeg (-tier1 on the libj2kcuda decoder).
CAPS = {"bench_tier1": False, "ffmpeg_tier1": [], "ffmpeg_loop": False}
# The Tier-1 placements the decode rows compare when the
# core (j2kc_decoder_config::tier1_on_gpu) and the wrapper (-tier1) have them;
# [] leaves them out. j2kc_bench's row of the default placement stands for
# its own variant; FFmpeg's rows are the explicit ones.
TIER1_VARIANTS = ["cpu", "gpu"]
# nvJPEG2000's larger batches keep gaining: its best is taken over the case's
# streams as one batch (usually 4) and these.
NVJPEG2K_BATCHES = [16, 32]
# j2k_cuda's decoder with as many frames in flight as nvJPEG2000's largest batch
# (frames_in_flight; the default row keeps the library's default).
DEEP_QUEUE = 32


# ---------------------------------------------------------------------------
# Encoders. Each takes (bench, frames, mode, target bytes or None, out dir)
# and returns dict(fps, bytes=[...], files=[...], ...).


def _j2kc_encode_cmd(bench, fs, be, out, distinct, warmup):
    sub = ":".join("%dx%d" % s for s in FORMATS[fs.fmt]["sub"])
    return [bench.tool("j2kc_bench"), "encode", "--in", fs.planar, "--width", str(fs.w), "--height", str(fs.h),
            "--comps", "3", "--prec", str(fs.prec), "--sub", sub, "--distinct", str(distinct),
            "--backend", be, "--threads", str(THREADS), "--warmup", str(warmup), "--out-dir", out]


def enc_j2kc(backend, device_input=False, ht=False, quality=None, step_phases=None):
    """j2kc_bench's encode; ht: HTJ2K code-blocks; quality(bench, fs, target):
    a fixed quantisation (j2kc_encoder_config::quality) instead of the
    byte target; step_phases: the step phase search under a byte target
    (j2kc_encoder_config::step_phases; 1: none)."""
    def run(bench, fs, mode, target, out):
        be = J2KC["backend"] if backend == "cuda" else backend
        if device_input and be != "cuda":
            raise Skip("n/a")
        f = FORMATS[fs.fmt]
        # Warm-up: every distinct frame once on the GPU (each size class of
        # the pipeline), one frame on the CPU backend (its thread pool).
        cmd = _j2kc_encode_cmd(bench, fs, be, out, fs.d, fs.d if be == "cuda" else 1)
        note = None
        if mode == "lossless":
            cmd += ["--lossless"]
        elif mode == "cap":
            cmd += ["--profile", f["profile"]]
        elif quality:
            q = quality(bench, fs, target)
            cmd += ["--quality", "%.6g" % q]
            note = "fixed quantisation, quality %.4g (the largest step scale whose first frame stays under the "\
                   "target)" % q
        else:
            cmd += ["--bytes", str(int(target))]
        if ht:
            cmd += ["--ht"]
        if step_phases:
            cmd += ["--step-phases", str(step_phases)]
        if device_input:
            cmd += ["--device-input"]
        # GPU: 48 timed frames (about a second); CPU: each distinct frame once.
        big = fs.w * fs.h > 4096 * 2160
        n = 1 if mode == "sweep" or bench.quick else ((16 if big else 48) if be == "cuda" else fs.d)
        cmd += ["--frames", str(n)]
        _, so, _ = bench.run(cmd)
        r = json.loads(so.strip().splitlines()[-1])
        r["command"] = bench.cmd_text(cmd)
        r["files"] = [os.path.join(out, "%03d.j2c" % i) for i in range(fs.d)]
        if note:
            r["note"] = note
        return r
    return run


def _cli_loop(bench, fs, make_cmd, out, ext, once=False):
    """One process per frame, frames in turn; the first one is warm-up."""
    times, files = [], []
    k = 0
    t_case = time.monotonic()
    while True:
        i = k % fs.d
        dst = os.path.join(out, "%03d.%s" % (i, ext))
        dt, _, _ = bench.run(make_cmd(fs.rawl[i], dst), timeout=min(120, max(5, bench.left())))
        if k < fs.d:
            files.append(dst)
        if k > 0:
            times.append(dt)
        k += 1
        spent = time.monotonic() - t_case
        if once or (k >= 2 and (len(times) >= (1 if bench.quick else 6) or spent > 4 or k >= fs.d and spent > 2)):
            break
    if not times:
        times = [dt]
    return dict(fps=len(times) / sum(times), frames=len(times), files=files,
                bytes=[os.path.getsize(p) for p in files], note="process per frame, files in tmpfs")


# The DCI profiles' own switches (code-blocks, precincts, progression, tile-parts
# and the cap at 24 fps), which the cap cases give OpenJPEG and Grok.
DCI_SWITCHES = {"opj_compress": {"dci_2k": ["-cinema2K", "24"], "dci_4k": ["-cinema4K", "24"]},
                "grk_compress": {"dci_2k": ["-w", "24"], "dci_4k": ["-x", "24"]}}


def enc_cli(tool, threads_flag, extra=()):
    """OpenJPEG's opj_compress or Grok's grk_compress (same options but the
    thread count's flag), one process a frame; `extra` options after the
    common ones."""
    def run(bench, fs, mode, target, out):
        def cmd(src, dst):
            c = [bench.tool(tool), "-i", src, "-o", dst, "-F", fs.opj_raw_spec(), threads_flag, str(THREADS)]
            c += list(extra)
            if mode == "cap" and tool in DCI_SWITCHES:
                c += DCI_SWITCHES[tool][FORMATS[fs.fmt]["profile"]]
            elif mode in ("cap", "sweep", "rate"):
                c += ["-r", "%.3f" % (fs.raw_bytes() / _frame_bytes(mode, target)), "-I"]
            return c
        return _cli_loop(bench, fs, cmd, out, "j2k", once=mode == "sweep")
    return run


enc_opj = enc_cli("opj_compress", "-threads")
enc_grk = enc_cli("grk_compress", "-H")


def _ffmpeg_clip(bench, fs, pix, codec_args, out, ext="j2c", once=False, frame_threads=False):
    """Encodes the first n frames of the clip; per-frame time from a 1-frame
    run and an n+1-frame run (start-up and the first frame cancel)."""
    src = fs.ff[pix]
    base = [bench.tool("ffmpeg"), "-hide_banner", "-nostdin", "-y", "-loglevel", "error",
            "-f", "rawvideo", "-pix_fmt", pix, "-s", "%dx%d" % (fs.w, fs.h), "-framerate", "24",
            "-stream_loop", "-1", "-i", src]
    pat = os.path.join(out, "%03d." + ext)

    def clip(n):
        for p in os.listdir(out):
            os.unlink(os.path.join(out, p))
        return bench.run(base + codec_args + ["-frames:v", str(n), "-start_number", "0", "-f", "image2", pat])[0]
    t1 = clip(1)
    if once:
        return dict(fps=1 / t1, frames=1, files=[pat % 0], bytes=[os.path.getsize(pat % 0)],
                    note="one frame, start-up included")
    if frame_threads:  # frames run in parallel: time a round of one frame a thread
        n = THREADS if not bench.quick else 2
    else:
        n = frames_for(bench, t1, lo=1, hi=24, seconds=4.0)
    tn = clip(n + 1)
    files = [pat % i for i in range(min(fs.d, n + 1))]
    fps, note = n / max(tn - t1, 1e-6), "FFmpeg clip, start-up subtracted"
    if tn - t1 < 0.1 * t1:  # too close to tell apart: whole clip, start-up included
        fps, note = (n + 1) / tn, "FFmpeg clip of %d frames, start-up included" % (n + 1)
    return dict(fps=fps, frames=n, files=files, bytes=[os.path.getsize(p) for p in files], note=note)


def _ff_pix(fs, xyz="xyz12le"):
    """FFmpeg's pixel format of the frames j2k_cuda encodes; `xyz` for DCI
    X'Y'Z' frames, where an encoder takes another format for them."""
    kind = FORMATS[fs.fmt]["kind"]
    return xyz if kind == "xyz" else ("gbrp10le" if kind == "rgb" else "yuv422p10le")


def _frame_bytes(mode, target):
    """What a lossy frame may take: 1.5 % under the DCI cap in cap mode, else the target."""
    return DCI_CAP * 0.985 if mode == "cap" else target


def _ff_input(bench, fs, source):
    """FFmpeg's input options for the clip of the frame set: "file" reads the
    rawvideo file, looped (-stream_loop -1, a 53 MB packet a frame at DCI 4K);
    "memory" reads its distinct frames once and replays them as references
    (loop filter), so no file I/O is timed."""
    pix = _ff_pix(fs)
    a = [bench.tool("ffmpeg"), "-hide_banner", "-nostdin", "-y", "-loglevel", "error",
         "-f", "rawvideo", "-pix_fmt", pix, "-s", "%dx%d" % (fs.w, fs.h), "-framerate", "24"]
    if source == "file":
        return a + ["-stream_loop", "-1", "-i", fs.ff[pix]]
    return a + ["-i", fs.ff[pix], "-vf", "loop=loop=-1:size=%d" % fs.d]


def _j2kcuda_enc_args(fs, mode, target):
    f = FORMATS[fs.fmt]
    a = ["-c:v", "libj2kcuda", "-threads", str(THREADS)]
    if J2KC["backend"] != "cuda":
        a += ["-backend", J2KC["backend"]]
    if mode == "cap":
        a += ["-profile", f["profile"]]
    elif mode == "lossless":
        a += ["-lossless", "1"]
    else:
        a += ["-max_frame_bytes", str(int(target))]
    return a


def ff_path_rate(bench, fs, source, codec_args, env_extra=None):
    """One FFmpeg path's rate: input (file or memory), codec (none: the input
    alone), `-f null` output, timed from its progress reports."""
    cmd = _ff_input(bench, fs, source) + codec_args + ["-frames:v", "100000"] + FF_PROGRESS + ["-f", "null", "-"]
    r = bench.rate(cmd, env_extra)
    r["command"] = bench.cmd_text(cmd, env_extra)
    return r


def enc_ffmpeg_j2kcuda(bench, fs, mode, target, out):
    """j2k_cuda in FFmpeg from the rawvideo file, as users run it: the first
    frames to files (bytes, PSNR), the rate with `-f null` (FFmpeg's muxing
    of the packets is not timed, as no other row writes a file a frame)."""
    a = _j2kcuda_enc_args(fs, mode, target)
    pat = os.path.join(out, "%03d.j2c")
    n = 1 if mode == "sweep" else fs.d
    bench.run(_ff_input(bench, fs, "file") + a + ["-frames:v", str(n), "-start_number", "0", "-f", "image2", pat])
    files = [pat % i for i in range(n)]
    r = dict(files=files, bytes=[os.path.getsize(p) for p in files])
    if mode == "sweep":
        return dict(r, fps=0, frames=0, note="not timed")
    r.update(ff_path_rate(bench, fs, "file", a))
    r["note"] = "rawvideo file input, -f null; rate from -progress over %.1f s" % r["seconds"]
    return r


def enc_ffmpeg_native(bench, fs, mode, target, out):
    pix = _ff_pix(fs, xyz="gbrp12le")
    a = ["-c:v", "jpeg2000", "-format", "j2k", "-threads", str(THREADS)]
    if mode == "lossless":
        a += ["-pred", "dwt53"]
    else:
        tb = _frame_bytes(mode, target)
        # An integer ratio, which FFmpeg 8's encoder applies to each component's
        # share of a tile as if it were the whole tile's (its budget comes out
        # three times the asked one for three components): asked 3x to land on
        # the target. The table's bytes column shows where it lands.
        a += ["-layer_rates", "%d" % int(np.ceil(3 * fs.raw_bytes() / tb))]
    return _ffmpeg_clip(bench, fs, pix, a, out, once=mode == "sweep", frame_threads=True)


def enc_ffmpeg_libopenjpeg(bench, fs, mode, target, out):
    pix = _ff_pix(fs)
    a = ["-c:v", "libopenjpeg", "-format", "j2k", "-threads", str(THREADS)]
    if mode == "lossless":
        a += ["-compression_level", "0"]
    else:
        tb = _frame_bytes(mode, target)
        # libopenjpeg's rate is 2 x compression_level: the even ratio at or above the target's.
        level = int(np.ceil(fs.raw_bytes() / tb / 2))
        a += ["-compression_level", str(level), "-irreversible", "1"]
    return _ffmpeg_clip(bench, fs, pix, a, out, once=mode == "sweep", frame_threads=True)


_NVC = {}


def use_nvimgcodec_site(site):
    """Where nvimgcodec() finds nvimgcodec and nvJPEG2000 (BENCH_DIR/site)."""
    _NVC["site"] = site


def nvimgcodec():
    """nvidia.nvimgcodec from the carried site/ folder, with libnvjpeg2k
    loaded first by path (the extension opens it by its soname)."""
    if "mod" not in _NVC:
        site = _NVC["site"]
        try:
            import ctypes
            import importlib
            import cupy  # noqa: F401
            for lib in sorted(os.listdir(os.path.join(site, "nvidia", "nvjpeg2k", "lib"))):
                if lib.startswith("libnvjpeg2k.so"):
                    ctypes.CDLL(os.path.join(site, "nvidia", "nvjpeg2k", "lib", lib), mode=ctypes.RTLD_GLOBAL)
            try:
                import nvidia  # the machine's own namespace (CUDA wheels): add ours to it
                nvidia.__path__.append(os.path.join(site, "nvidia"))
            except ImportError:
                sys.path.insert(0, site)
            nvc = importlib.import_module("nvidia.nvimgcodec")
            _NVC["mod"] = nvc
            _NVC["version"] = getattr(nvc, "__version__", "?")
        except Exception as e:  # noqa: BLE001
            _NVC["mod"] = None
            _NVC["err"] = "%s: %s" % (type(e).__name__, e)
    if _NVC["mod"] is None:
        raise Skip("nvimgcodec: " + _NVC["err"])
    return _NVC["mod"]


def _gpu_free():
    import cupy
    return cupy.cuda.runtime.memGetInfo()[0]


def enc_nvjpeg2k(bench, fs, mode, target, out, psnr_target=None, ht=False):
    """nvJPEG2000 through nvimgcodec, a batch of CUDA frames a call; ht: its
    HTJ2K encoder. It takes no byte target: a cap (DCI's, or the target in
    "rate" mode) is met by the largest PSNR target whose streams fit."""
    nvc = nvimgcodec()
    import cupy
    f = FORMATS[fs.fmt]
    if f["sub"][1] != (1, 1):
        raise Skip("4:2:2 planes: nvimgcodec takes full-size components only")
    imgs_dev = [cupy.asarray(np.stack(p)) for p in fs.frames]  # planar C x H x W, uint16
    cupy.cuda.runtime.deviceSynchronize()
    free0 = _gpu_free()  # after the input frames, as j2kc_bench counts
    imgs = [nvc.as_image(a, sample_format=nvc.SampleFormat.P_RGB, precision=fs.prec) for a in imgs_dev]
    jp = nvc.Jpeg2kEncodeParams()
    jp.bitstream_type = nvc.Jpeg2kBitstreamType.J2K
    jp.num_resolutions = 6
    jp.code_block_size = (64, 64) if ht else (32, 32)
    jp.prog_order = nvc.Jpeg2kProgOrder.CPRL
    jp.mct_mode = 1
    if ht:
        jp.ht = True
    note = "batch of %d CUDA frames" % len(imgs)
    if mode == "lossless":
        params = nvc.EncodeParams(quality_type=nvc.QualityType.LOSSLESS, jpeg2k_encode_params=jp)
    elif psnr_target is not None:
        params = nvc.EncodeParams(quality_type=nvc.QualityType.PSNR, quality_value=float(psnr_target),
                                  jpeg2k_encode_params=jp)
    else:  # the byte cap: largest PSNR target whose streams stay under it
        cap = DCI_CAP if mode == "cap" else target
        best = None
        probe = nvc.Encoder(max_num_cpu_threads=max(1, THREADS - 1))
        for q in (40, 44, 48, 52, 56, 60, 64, 68, 72):
            params = nvc.EncodeParams(quality_type=nvc.QualityType.PSNR, quality_value=float(q),
                                      jpeg2k_encode_params=jp)
            sizes = [len(_cs_bytes(c)) for c in probe.encode(imgs, "jpeg2k", params=params)]
            if max(sizes) <= cap:
                best = (q, params)
            else:
                break
        if best is None:
            raise Skip("no PSNR target under the cap")
        params = best[1]
        note += ", PSNR target %d dB (no byte target)" % best[0]
    enc = nvc.Encoder(max_num_cpu_threads=max(1, THREADS - 1))
    cs = enc.encode(imgs, "jpeg2k", params=params)  # warm-up batch
    if any(c is None for c in cs):
        raise Skip("nvimgcodec returned no codestream")
    free_min = _gpu_free()
    reps = 2 if bench.quick else max(2, min(12, int(4.0 / max(1e-3, 0.05 * len(imgs)))))
    cupy.cuda.runtime.deviceSynchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        cs = enc.encode(imgs, "jpeg2k", params=params)
        data = [_cs_bytes(c) for c in cs]  # the host copies users need
        free_min = min(free_min, _gpu_free())
    dt = time.perf_counter() - t0
    files = []
    for i, d in enumerate(data):
        p = os.path.join(out, "%03d.j2c" % i)
        with open(p, "wb") as fp:
            fp.write(d)
        files.append(p)
    del imgs, imgs_dev
    return dict(fps=reps * len(cs) / dt, frames=reps * len(cs), files=files, bytes=[len(d) for d in data],
                gpu_mem_mib=(free0 - free_min) / 2 ** 20, note=note)


def _cs_bytes(c):
    try:
        return bytes(memoryview(c))
    except TypeError:
        return np.asarray(c).tobytes()


ENCODERS = [
    ("j2k_cuda", enc_j2kc("cuda")),
    ("j2k_cuda, CUDA frames", enc_j2kc("cuda", device_input=True)),
    ("nvJPEG2000", enc_nvjpeg2k),
    ("j2k_cuda in FFmpeg", enc_ffmpeg_j2kcuda),
    ("j2k_cuda CPU backend", enc_j2kc("cpu")),
    ("Grok grk_compress", enc_grk),
    ("OpenJPEG opj_compress", enc_opj),
    ("FFmpeg libopenjpeg", enc_ffmpeg_libopenjpeg),
    ("FFmpeg jpeg2000 (native)", enc_ffmpeg_native),
]
# What does not run, to keep `make bench` under 10 minutes on 16 cores: the
# slowest CPU peers (FFmpeg's native encoder and decoder, libopenjpeg, one
# frame a thread) run on the DCI cap cases only, decodes of each tool's own
# stream on the natural DCI cases only.
SLOW_CASES = ("dci4k-lossless-natural", "dci4k-cap-flat", "dci4k-cap-noise", "uhd422-lossless-natural",
              "8k444-lossless-natural")
SKIP = {("FFmpeg jpeg2000 (native)", c) for c in SLOW_CASES} | {("FFmpeg libopenjpeg", c) for c in SLOW_CASES} | {
    ("dec:FFmpeg jpeg2000 (native)", c) for c in ("dci4k-lossless-natural", "uhd422-lossless-natural",
                                                  "8k444-lossless-natural")} | {
    ("own", c) for c in ("dci4k-cap-flat", "dci4k-cap-noise", "uhd422-lossless-natural", "8k444-lossless-natural")} | {
    ("own:FFmpeg jpeg2000 (native)", c) for c, *_ in CASES} | {
    ("j2k_cuda in FFmpeg", "dci2k-cap-natural"), ("j2k_cuda in FFmpeg", "dci4k-cap-flat"),
    ("j2k_cuda in FFmpeg", "dci4k-cap-noise"), ("j2k_cuda in FFmpeg", "uhd422-lossless-natural"),
    ("j2k_cuda in FFmpeg", "8k444-lossless-natural"),
    ("j2k_cuda, CUDA frames", "dci4k-cap-flat"), ("j2k_cuda, CUDA frames", "dci4k-cap-noise"),
    ("FFmpeg jpeg2000 (native)", "8k444-lossless-natural"), ("FFmpeg libopenjpeg", "8k444-lossless-natural"),
    ("FFmpeg jpeg2000 (native)", "uhd422-lossless-natural"),
    ("FFmpeg jpeg2000 (native)", "dci4k-cap-flat"), ("FFmpeg libopenjpeg", "dci4k-cap-flat"),
    ("FFmpeg jpeg2000 (native)", "dci4k-cap-noise"), ("FFmpeg libopenjpeg", "dci4k-cap-noise"),
}


# ---------------------------------------------------------------------------
# Decoders: (bench, frames, codestream files, out dir) -> dict(fps, psnr)


def dec_j2kc(backend, tier1=None, in_flight=None):
    """j2kc_bench's decode; in_flight=1: one frame alone, submit to receive
    with nothing else queued (the latency a player sees). On the GPU the
    frames go to CUDA memory, as nvJPEG2000's do; a one-frame run to host
    memory gives the PSNR."""
    def run(bench, fs, files, out):
        be = J2KC["backend"] if backend == "cuda" else backend
        dst = os.path.join(out, "dec.raw")
        head = [bench.tool("j2kc_bench"), "decode", "--backend", be, "--threads", str(THREADS)]
        if tier1:
            head += ["--tier1", tier1]
        cmd = head + ["--warmup", str(len(files) if be == "cuda" else 1)]
        cmd += ["--output", "device"] if be == "cuda" else ["--out", dst]
        if in_flight:
            cmd += ["--in-flight", str(in_flight)]
        # Tier-1 placement variants: 16 frames (a CPU Tier-1 of 4K lossless runs at a few fps).
        n = len(files) if bench.quick or be != "cuda" else (8 if fs.w * fs.h > 4096 * 2160 else 16 if tier1 else 64)
        if in_flight and not bench.quick:
            n = max(n, 2 * in_flight)  # a window of two queues at least
        cmd += ["--frames", str(n)] + files
        _, so, _ = bench.run(cmd)
        r = json.loads(so.strip().splitlines()[-1])
        if be == "cuda":
            bench.run(head + ["--warmup", "0", "--frames", "1", "--out", dst, files[0]])
        r["psnr"] = psnr(fs.frames[0], read_planar(dst, fs.fmt, 0), fs.prec)
        r["command"] = bench.cmd_text(cmd)
        return r
    return run


def _cli_dec(bench, fs, files, out, make_cmd):
    times = []
    k = 0
    t_case = time.monotonic()
    first = None
    while True:
        i = k % len(files)
        dst = os.path.join(out, "d%03d.rawl" % i)
        dt, _, _ = bench.run(make_cmd(files[i], dst), timeout=min(120, max(5, bench.left())))
        if k == 0:
            first = dst
        else:
            times.append(dt)
        k += 1
        spent = time.monotonic() - t_case
        if k >= 2 and (len(times) >= (1 if bench.quick else 6) or spent > 4 or k >= len(files) and spent > 2):
            break
    if not times:
        times = [dt]
    return dict(fps=len(times) / sum(times), frames=len(times), psnr=psnr(fs.frames[0], read_planar(first, fs.fmt), fs.prec),
                note="process per frame, files in tmpfs")


def dec_cli(tool, threads_flag):
    """opj_decompress or grk_decompress, one process a frame."""
    def run(bench, fs, files, out):
        return _cli_dec(bench, fs, files, out, lambda s, d: [bench.tool(tool), "-i", s, "-o", d,
                                                             threads_flag, str(THREADS)])
    return run


dec_opj = dec_cli("opj_decompress", "-threads")
dec_grk = dec_cli("grk_decompress", "-H")


def _mxf_clip(bench, files, frames):
    """The codestreams in turn as one MXF clip of `frames` frames (`-c copy`,
    24 fps), which FFmpeg demuxes as DCI players read it, a packet a frame.
    Long enough not to loop while timed: at each -stream_loop point ffmpeg
    drains and flushes the decoder (fftools' decoder thread), which would
    empty j2k_cuda's frames in flight and cap FFmpeg's frame threads at the
    clip's length."""
    d = os.path.join(bench.work, "clips", os.path.relpath(os.path.dirname(files[0]), bench.work).replace(os.sep, "-"))
    clip = os.path.join(d, "clip%d.mxf" % frames)
    if not os.path.exists(clip):
        os.makedirs(d, exist_ok=True)
        pat = os.path.join(d, "in%03d.j2c")
        for i, p in enumerate(files):
            shutil.copyfile(p, pat % i)
        bench.run([bench.tool("ffmpeg"), "-hide_banner", "-nostdin", "-y", "-loglevel", "error",
                   "-stream_loop", str(-(-frames // len(files)) - 1), "-framerate", "24", "-start_number", "0",
                   "-f", "image2", "-i", pat, "-frames:v", str(frames), "-c", "copy", "-f", "mxf", clip])
    return clip


def _ff_dec_first(bench, fs, clip, head, out):
    """The first frame decoded to rawvideo, against the source: (PSNR, pixel
    format, seconds of the whole run)."""
    dst = os.path.join(out, "first.raw")
    dt, _, err = bench.run(head + ["-i", clip, "-frames:v", "1", "-f", "rawvideo", dst])
    m = re.search(r"Output #0.*?Video: rawvideo[^,]*, (\w+)", err, re.S)
    pix = m.group(1) if m else "?"
    try:
        return psnr(fs.frames[0], read_ffmpeg_output(dst, pix, fs.fmt), fs.prec), pix, dt
    except Skip:
        return None, pix, dt


def dec_ffmpeg_j2kcuda(tier1=None, cuda_frames=False, pinned=False):
    """`ffmpeg -c:v libj2kcuda -i clip.mxf -f null -` (the decode target's
    command), timed from its progress reports; the clip loops (-stream_loop -1).
    cuda_frames: the decoder writes AV_PIX_FMT_CUDA frames (`-hwaccel cuda
    -hwaccel_output_format cuda`), as the C API row writes CUDA memory; the
    PSNR comes from the same decode to system memory. FFmpeg's CUDA frames
    take no X'Y'Z', so DCI frames stay in system memory there (the wrapper
    warns), decoded in FFmpeg's CUDA context: the note says which. pinned:
    `-pinned 1`, host frames in the library's page-locked memory although
    ffmpeg sets its own get_buffer2 (which the default honours)."""
    def run(bench, fs, files, out):
        clip = _mxf_clip(bench, files, FF_DEC_CLIP)
        head = [bench.tool("ffmpeg"), "-hide_banner", "-nostdin", "-y", "-threads", str(THREADS), "-c:v", "libj2kcuda"]
        if J2KC["backend"] != "cuda":
            head += ["-backend", J2KC["backend"]]
        if tier1:
            head += ["-tier1", tier1]
        if pinned:
            head += ["-pinned", "1"]
        q, pix, _ = _ff_dec_first(bench, fs, clip, head, out)
        if cuda_frames:
            head += ["-hwaccel", "cuda", "-hwaccel_output_format", "cuda"]
            pix = ("%s in system memory (FFmpeg's CUDA frames take no X'Y'Z')" % pix if pix.startswith("xyz")
                   else "cuda (%s)" % pix)
        cmd = head[:4] + ["-loglevel", "error"] + head[4:] + ["-i", clip] + FF_PROGRESS + ["-f", "null", "-"]
        r = bench.rate(cmd)
        r.update(psnr=q, command=bench.cmd_text(cmd),
                 note="MXF clip of %d frames, -f null; rate from -progress over %.1f s; output %s" % (
                     FF_DEC_CLIP, r["seconds"], pix))
        return r
    return run


def dec_ffmpeg_native(bench, fs, files, out):
    """FFmpeg's jpeg2000 decoder on the same MXF clip to `-f null`. Its frame
    threads (one frame each) finish frames in bursts, one a thread, so it
    runs three frames a thread; the rate is the frames after the first round
    over the time after a one-frame run (start-up and one frame's latency,
    which the first round shares; that run writes the frame for PSNR)."""
    k = 3 * THREADS if not bench.quick else 2 * THREADS
    clip = _mxf_clip(bench, files, k)
    head = [bench.tool("ffmpeg"), "-hide_banner", "-nostdin", "-y", "-threads", str(THREADS), "-c:v", "jpeg2000"]
    q, pix, t1 = _ff_dec_first(bench, fs, clip, head, out)
    cmd = head[:4] + ["-loglevel", "error"] + head[4:] + ["-i", clip, "-f", "null", "-"]
    tn = bench.run(cmd)[0]
    fps, note = (k - THREADS) / max(tn - t1, 1e-6), "%d frames after the first round, less a one-frame run" % (
        k - THREADS)
    if tn - t1 < 0.1 * t1:
        fps, note = k / tn, "start-up included"
    return dict(fps=fps, frames=k - THREADS, psnr=q, command=bench.cmd_text(cmd),
                note="MXF clip of %d frames, -f null, %s; output %s" % (k, note, pix))


def dec_nvjpeg2k(batch=None):
    """nvJPEG2000 decoding `batch` codestreams a call (the files in turn;
    None: each file once), output in CUDA memory; batch=1 is one image alone."""
    def run(bench, fs, files, out):
        return _dec_nvjpeg2k(bench, fs, [files[i % len(files)] for i in range(batch or len(files))])
    return run


def _dec_nvjpeg2k(bench, fs, files):
    nvc = nvimgcodec()
    import cupy
    streams = []
    for p in files:
        with open(p, "rb") as fp:
            streams.append(nvc.CodeStream(fp.read()))
    free0 = _gpu_free()
    dec = nvc.Decoder(max_num_cpu_threads=max(1, THREADS - 1))
    params = nvc.DecodeParams(allow_any_depth=True, color_spec=nvc.ColorSpec.UNCHANGED)
    imgs = dec.decode(streams, params=params)  # warm-up batch
    if any(i is None for i in imgs):
        raise Skip("nvimgcodec decoded nothing")
    a = cupy.asnumpy(cupy.asarray(imgs[0]))
    q = None
    try:
        if a.ndim == 3 and a.shape[-1] == 3:
            q = psnr(fs.frames[0], [a[..., c] for c in range(3)], fs.prec)
        elif a.ndim == 3 and a.shape[0] == 3:
            q = psnr(fs.frames[0], [a[c] for c in range(3)], fs.prec)
    except Skip:
        q = None
    free_min = _gpu_free()
    reps = 2 if bench.quick else 8
    cupy.cuda.runtime.deviceSynchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        imgs = dec.decode(streams, params=params)
        cupy.asarray(imgs[-1])  # the images are ready once readable
        cupy.cuda.runtime.deviceSynchronize()
        free_min = min(free_min, _gpu_free())
    dt = time.perf_counter() - t0
    return dict(fps=reps * len(streams) / dt, frames=reps * len(streams), psnr=q,
                gpu_mem_mib=(free0 - free_min) / 2 ** 20, note="batch of %d, output in CUDA memory" % len(streams))


def decoders():
    """The decode rows; the Tier-1 placement variants where this build has them."""
    rows = [("j2k_cuda", dec_j2kc("cuda"))]
    if CAPS["bench_tier1"]:
        rows += [("j2k_cuda, Tier-1 %s" % v.upper(), dec_j2kc("cuda", v)) for v in TIER1_VARIANTS]
    rows += [("j2k_cuda, one frame in flight", dec_j2kc("cuda", in_flight=1))]
    rows += [("j2k_cuda, %d frames in flight" % DEEP_QUEUE, dec_j2kc("cuda", in_flight=DEEP_QUEUE))]
    rows += [("nvJPEG2000", dec_nvjpeg2k())]
    rows += [("nvJPEG2000, batch %d" % b, dec_nvjpeg2k(b)) for b in NVJPEG2K_BATCHES]
    rows += [("nvJPEG2000, one image", dec_nvjpeg2k(1))]
    variants = [v for v in TIER1_VARIANTS if v in CAPS["ffmpeg_tier1"]]
    if variants:
        rows += [("j2k_cuda in FFmpeg, -tier1 %s" % v, dec_ffmpeg_j2kcuda(v)) for v in variants]
    else:
        rows += [("j2k_cuda in FFmpeg", dec_ffmpeg_j2kcuda())]
    if J2KC["backend"] == "cuda":
        rows += [("j2k_cuda in FFmpeg, -pinned 1", dec_ffmpeg_j2kcuda("gpu" if variants else None, pinned=True))]
        rows += [("j2k_cuda in FFmpeg, CUDA frames", dec_ffmpeg_j2kcuda("gpu" if variants else None, cuda_frames=True))]
    rows += [("j2k_cuda CPU backend", dec_j2kc("cpu")),
             ("Grok grk_decompress", dec_grk),
             ("OpenJPEG opj_decompress", dec_opj),
             ("FFmpeg jpeg2000 (native)", dec_ffmpeg_native)]
    return rows


def decode_only_on(name):
    """Cases a decode row is limited to (None: every case), for time: the
    FFmpeg j2k_cuda rows on FF_CASE, one frame alone on FF_CASE and the HT
    cases, the Tier-1 variants also on 4K lossless."""
    if name.startswith("j2k_cuda in FFmpeg"):
        return (FF_CASE,)
    if name in ("j2k_cuda, one frame in flight", "nvJPEG2000, one image"):
        return (FF_CASE,) + HT_CASES
    if name.startswith("j2k_cuda, Tier-1"):
        return (FF_CASE, "dci4k-lossless-natural")
    return None


def own_encoder(name):
    """Decoder -> the encoder whose output is its "own" stream."""
    if name.startswith(("j2k_cuda in FFmpeg", "j2k_cuda, ")):
        return "j2k_cuda"
    if name.startswith("nvJPEG2000"):
        return "nvJPEG2000"
    return {"Grok grk_decompress": "Grok grk_compress", "OpenJPEG opj_decompress": "OpenJPEG opj_compress",
            "OpenJPH ojph_expand": "OpenJPH ojph_compress"}.get(name, name)


_REF_PSNR = {}


def reference_psnr(bench, fs, path):
    """PSNR of one codestream as OpenJPEG decodes it (FFmpeg's native decoder
    for 4:2:2, which opj_decompress turns into RGB). j2k_cuda's rows (GPU,
    CUDA frames, CPU backend, FFmpeg) write the same bytes: a codestream
    already measured against the same source frame is not decoded again."""
    idx = 0
    m = re.search(r"(\d+)\.j[2p]", os.path.basename(path))
    if m:
        idx = int(m.group(1))
    with open(path, "rb") as fp:
        key = (fs.fmt, fs.content, idx % fs.d, hashlib.sha1(fp.read()).hexdigest())
    if key not in _REF_PSNR:
        _REF_PSNR[key] = _reference_psnr(bench, fs, path, idx)
    return _REF_PSNR[key]


def _reference_psnr(bench, fs, path, idx):
    dst = path + ".ref.rawl"
    if FORMATS[fs.fmt]["sub"][1] != (1, 1):
        dst = path + ".ref.raw"
        bench.run([bench.tool("ffmpeg"), "-hide_banner", "-nostdin", "-y", "-loglevel", "error", "-c:v", "jpeg2000",
                   "-i", path, "-f", "rawvideo", "-pix_fmt", "yuv422p10le", dst], timeout=min(120, max(5, bench.left())))
    else:
        bench.run([bench.tool("opj_decompress"), "-i", path, "-o", dst, "-threads", str(THREADS)],
                    timeout=min(120, max(5, bench.left())))
    return psnr(fs.frames[idx % fs.d], read_planar(dst, fs.fmt), fs.prec)


# ---------------------------------------------------------------------------


def detect_caps(bench):
    """Whether j2kc_bench and FFmpeg's libj2kcuda decoder can place Tier-1."""
    try:
        _, so, _ = bench.run([bench.tool("j2kc_bench"), "caps"], timeout=20)
        CAPS["bench_tier1"] = bool(json.loads(so.strip().splitlines()[-1]).get("decoder_tier1"))
    except (Skip, ValueError, IndexError):
        CAPS["bench_tier1"] = False  # an older j2kc_bench: no caps command
    try:
        _, so, _ = bench.run([bench.tool("ffmpeg"), "-hide_banner", "-h", "decoder=libj2kcuda"], timeout=20)
        m = re.search(r"^\s*-tier1\s.*\n((?:\s{4,}\w+\s+\S+.*\n)*)", so, re.M)
        CAPS["ffmpeg_tier1"] = re.findall(r"^\s+(\w+)\s", m.group(1), re.M) if m else []
    except Skip:
        CAPS["ffmpeg_tier1"] = []
    try:
        _, so, _ = bench.run([bench.tool("ffmpeg"), "-hide_banner", "-filters"], timeout=20)
        CAPS["ffmpeg_loop"] = bool(re.search(r"^\s*\S+\s+loop\s", so, re.M))
    except Skip:
        CAPS["ffmpeg_loop"] = False


# FFmpeg encode paths beside the plain one (the case's "j2k_cuda in
# FFmpeg" row): (label, frames from, j2k_cuda or the input alone, glibc env).
FF_ENC_PATHS = [
    ("rawvideo file, no encoder (input ceiling)", "file", False, False),
    ("rawvideo file, no encoder, glibc env (input ceiling)", "file", False, True),
    ("j2k_cuda, rawvideo file", "file", True, False),  # the case's own row
    ("j2k_cuda, rawvideo file, glibc env", "file", True, True),
    ("frames in memory (loop filter), no encoder", "memory", False, False),
    ("j2k_cuda, frames in memory (loop filter)", "memory", True, False),
]


def run_ffmpeg_encode_paths(bench, fs, case, paths):
    """Where the FFmpeg encode path's limit lies, each path its own
    row with its exact command."""
    rows = paths.setdefault("encode", [])
    paths.update(case=FF_CASE, enc_target=FF_ENC_TARGET, dec_target=FF_DEC_TARGET,
                 note="Commands: ffmpeg and j2kc_bench are BENCH_DIR/bin's (LD_LIBRARY_PATH=BENCH_DIR/lib), the "
                      "files are in the run's work folder; each FFmpeg rate is output frames a second from -progress reports over the window, "
                      "after %.2f s of output, then the process is stopped" % FF_WARM)
    for label, source, enc, glibc in FF_ENC_PATHS:
        if enc and source == "file" and not glibc:
            r = dict(case["encode"].get("j2k_cuda in FFmpeg") or dict(error="not run"))
            r.pop("files", None)
        else:
            try:
                if bench.left() < 15:
                    raise Skip("time budget")
                if source == "memory" and not CAPS["ffmpeg_loop"]:
                    raise Skip("this ffmpeg has no loop filter: make bench-bins refreshes BENCH_DIR/bin/ffmpeg")
                r = ff_path_rate(bench, fs, source, _j2kcuda_enc_args(fs, case["mode"], None) if enc else [],
                                 MALLOC_ENV if glibc else None)
            except Skip as e:
                r = dict(error=str(e))
            except Exception as e:  # noqa: BLE001
                r = dict(error="%s: %s" % (type(e).__name__, e))
        r["label"] = label
        rows.append(r)
        bench.say("ffmpeg path enc %-52s %s" % (label, "%8.2f fps" % r["fps"] if "fps" in r else r.get("error")))


def ffmpeg_decode_paths(case, paths):
    """FFmpeg's decode rows of the case (and j2kc_bench's for the
    library's own rate), with the CPU/GPU split of j2k_cuda's decode."""
    rows = paths.setdefault("decode", [])
    for name, entry in case["decode"].items():
        if name.startswith(("j2k_cuda in FFmpeg", "FFmpeg jpeg2000")) or name.startswith("j2k_cuda") and \
                "CPU backend" not in name:
            r = dict((entry or {}).get("common") or dict(error="not run"))
            r["label"] = name if "FFmpeg" in name else name + " (C API: j2kc_bench, no FFmpeg)"
            rows.append(r)
