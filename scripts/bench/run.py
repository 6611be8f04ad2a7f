#!/usr/bin/env python3
"""make bench: j2k_cuda and its peers on the same frames, machine and invocation.

Reads everything from the folder scripts/bench/prep.sh filled (BENCH_DIR):
bin/ (j2kc_bench, ffmpeg, opj_*, grk_*), lib/ (their libraries), site/
(nvimgcodec + nvJPEG2000), photos/. Makes the frames (natural, flat, white
noise) in /dev/shm, runs every encoder and decoder on them, and writes
results.json, results.md (printed too) and PNG charts to --out.

Honesty rules kept here: every peer reads the same frames (planar files for
the CLI tools and j2kc_bench, the same samples in FFmpeg's pixel format for
FFmpeg); CPU peers get every core of the machine; warm-up frames are run and
not timed (the first frame of a CLI tool, the first run of an FFmpeg clip, a
first batch for nvJPEG2000); the CLI tools' times are whole processes that
read and write files in /dev/shm (tmpfs), as their users run them, which the
table says. FFmpeg's j2k_cuda rows are timed from ffmpeg's own -progress
reports over a window after warm-up; FFmpeg's frame-threaded codecs, whose
frames finish in bursts, by whole runs less a one-frame run. On DCI 4K
natural frames the FFmpeg encode and decode paths run side by side (input
ceilings, file or memory input, glibc malloc settings, decode through
`-f null`), each with its exact command in results.md. PSNR is measured on OpenJPEG's decode of each encoder's output
(the reference decoder), against the source frame.
"""
import argparse
import datetime
import hashlib
import json
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np

THREADS = os.cpu_count() or 16
DCI_CAP = 1302083  # 250 Mb/s at 24 frames/s, bytes per frame (DCI 1.4, both 2K and 4K)

FORMATS = {
    "dci2k": dict(w=2048, h=1080, prec=12, sub=[(1, 1)] * 3, kind="xyz", profile="dci_2k",
                  label="DCI 2K 12-bit X'Y'Z'"),
    "dci4k": dict(w=4096, h=2160, prec=12, sub=[(1, 1)] * 3, kind="xyz", profile="dci_4k",
                  label="DCI 4K 12-bit X'Y'Z'"),
    "uhd422": dict(w=3840, h=2160, prec=10, sub=[(1, 1), (2, 1), (2, 1)], kind="yuv", profile="none",
                   label="UHD 10-bit 4:2:2 Y'CbCr"),
    "8k444": dict(w=7680, h=4320, prec=10, sub=[(1, 1)] * 3, kind="rgb", profile="none",
                  label="8K 10-bit 4:4:4 RGB"),
}

# (case id, format, content, mode). Order is priority: the time budget cuts
# from the end.
CASES = [
    ("dci4k-cap-natural", "dci4k", "natural", "cap"),
    ("dci2k-cap-natural", "dci2k", "natural", "cap"),
    ("dci4k-lossless-natural", "dci4k", "natural", "lossless"),
    ("dci4k-cap-flat", "dci4k", "flat", "cap"),
    ("dci4k-cap-noise", "dci4k", "noise", "cap"),
    ("uhd422-lossless-natural", "uhd422", "natural", "lossless"),
    ("8k444-lossless-natural", "8k444", "natural", "lossless"),
]
SWEEP_FORMAT = "dci2k"
SWEEP_BPP = [0.25, 0.5, 1.0, 2.0, 4.0]
SWEEP_PSNR = [36, 40, 44, 48, 52, 56, 60]  # nvJPEG2000 has no byte target: PSNR targets instead

# The FFmpeg paths and their targets at DCI 4K (encode from host frames,
# 120 fps; decode through `ffmpeg -f null`, 96 fps), measured side by side on
# this case.
FF_CASE = "dci4k-cap-natural"
FF_ENC_TARGET, FF_DEC_TARGET = 120.0, 96.0
# glibc settings that keep FFmpeg's rawvideo packets (53 MB at DCI 4K) off a
# fresh mmap each: the file-input rows run with and without them.
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "268435456", "MALLOC_TRIM_THRESHOLD_": "1073741824"}
# FFmpeg rows timed from `-progress` reports: after WARM seconds of output, the
# frames written over at least WINDOW seconds (and MIN_FRAMES frames, at most
# MAX_WINDOW seconds); then the process is stopped.
FF_WARM, FF_WINDOW, FF_MIN_FRAMES, FF_MAX_WINDOW = 0.5, 1.5, 12, 8.0
FF_PROGRESS = ["-progress", "pipe:1", "-stats_period", "0.25"]
# Frames of the MXF clip FFmpeg's j2k_cuda decode rows read (no loop while
# timed: 2.5 s at 240 fps; 780 MB at the DCI 4K cap).
FF_DEC_CLIP = 600
# Where j2k_cuda's own rows run: "cuda", or "cpu" for a dry run off the GPU
# machine (--cpu): the same commands on the reference backend.
J2KC = {"backend": "cuda"}
# What this build can set (found at start-up): the decoder's Tier-1 placement
# in j2kc_bench (--tier1) and in FFmpeg (-tier1 on the j2k_cuda decoder).
CAPS = {"bench_tier1": False, "ffmpeg_tier1": [], "ffmpeg_loop": False}
# HOOK for the lead: the Tier-1 placements the decode rows compare when the
# core (j2kc_decoder_config::tier1_on_gpu) and the wrapper (-tier1) have them;
# [] leaves them out. j2kc_bench's row of the default placement stands for
# its own variant; FFmpeg's rows are the explicit ones.
TIER1_VARIANTS = ["cpu", "gpu"]


class Skip(Exception):
    """A peer that cannot run a case; the reason goes into the table."""


# ---------------------------------------------------------------------------
# Environment


class Bench:
    def __init__(self, args):
        self.dir = os.path.abspath(args.dir)
        self.out = os.path.abspath(args.out)
        self.quick = args.quick
        self.t_start = time.monotonic()
        self.deadline = self.t_start + args.budget
        base = "/tmp"  # tmpfs where it is large enough (the 8K frames and streams take a few GB)
        if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) and shutil.disk_usage("/dev/shm").free > 8 << 30:
            base = "/dev/shm"
        self.work = os.path.join(base, "j2kc-bench")
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        os.makedirs(self.out, exist_ok=True)
        self.bin = os.path.join(self.dir, "bin")
        self.env = dict(os.environ)
        self.env["LD_LIBRARY_PATH"] = os.path.join(self.dir, "lib") + (
            ":" + self.env["LD_LIBRARY_PATH"] if self.env.get("LD_LIBRARY_PATH") else "")
        self.env.pop("J2KC_TIMING", None)
        self.log = open(os.path.join(self.out, "bench.log"), "w")
        self.log.write("work folder: %s\n" % self.work)

    def left(self):
        return self.deadline - time.monotonic()

    def say(self, msg):
        line = "[%6.1fs] %s" % (time.monotonic() - self.t_start, msg)
        print(line, file=sys.stderr, flush=True)
        self.log.write(line + "\n")
        self.log.flush()

    def run(self, cmd, timeout=None, env=None):
        """Runs a command, returns (seconds, stdout, stderr); raises Skip on failure."""
        if timeout is None:
            timeout = max(5.0, self.left())
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env or self.env)
        except subprocess.TimeoutExpired:
            raise Skip("timed out after %.0f s" % timeout)
        dt = time.monotonic() - t0
        if p.returncode != 0:
            tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
            self.log.write("FAILED %s\n%s\n" % (" ".join(cmd), p.stderr[-2000:]))
            raise Skip("exit %d: %s" % (p.returncode, " | ".join(tail)[:160]))
        return dt, p.stdout, p.stderr

    def tool(self, name):
        return os.path.join(self.bin, name)

    def cmd_text(self, cmd, env_extra=None):
        """A command as results.md shows it: BENCH_DIR/bin tools by name."""
        words = [os.path.basename(w) if w.startswith(self.bin + os.sep) else w for w in cmd]
        pre = ["%s=%s" % kv for kv in (env_extra or {}).items()]
        return " ".join(pre + [shlex.quote(w) for w in words])

    def rate(self, cmd, env_extra=None):
        """Output frames a second of an FFmpeg command carrying FF_PROGRESS:
        the frame counts of its progress reports over a window after a
        warm-up, then the process is stopped (SIGTERM). Start-up, the first
        frames and the drain at the end are outside the window."""
        env = dict(self.env, **(env_extra or {}))
        err_path = os.path.join(self.work, "ffmpeg-stderr.txt")
        err = open(err_path, "w")
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True, env=env)
        lines = queue.Queue()

        def reader():
            for line in p.stdout:
                lines.put((time.monotonic(), line.strip()))
            lines.put((time.monotonic(), None))
        threading.Thread(target=reader, daemon=True).start()
        t_start = time.monotonic()
        first = s0 = last = None
        frames, stopped, why = 0, False, None
        try:
            while True:
                try:
                    t, line = lines.get(timeout=max(1.0, min(60.0, self.left())))
                except queue.Empty:
                    why = "no progress report for %.0f s" % min(60.0, self.left())
                    break
                if line is None:
                    break
                if line.startswith("frame="):
                    frames = int(line[6:] or 0)
                elif line.startswith("progress="):
                    if frames > 0 and first is None:
                        first = t
                    if first is not None and s0 is None and t >= first + FF_WARM:
                        s0 = (t, frames)
                    last = (t, frames)
                    if s0 and (t - s0[0] >= FF_WINDOW and frames - s0[1] >= FF_MIN_FRAMES
                               or t - s0[0] >= FF_MAX_WINDOW):
                        stopped = True
                        break
                    if line == "progress=end":
                        break
                if time.monotonic() - t_start > max(5.0, self.left()):
                    why = "time budget"
                    break
        finally:
            # Stopped: SIGTERM, and SIGKILL after 1 s (the output is -f null,
            # and FFmpeg 8 can wait on the endless loop filter's frames).
            if p.poll() is None:
                p.send_signal(signal.SIGTERM if stopped else signal.SIGKILL)
            try:
                p.wait(timeout=1)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            err.close()
        tail = open(err_path, errors="replace").read()
        self.log.write("rate %s: window %s..%s rc %s\n%s\n" % (" ".join(cmd), s0, last, p.returncode, tail[-1500:]))
        if why:
            raise Skip(why)
        if not stopped and p.returncode != 0:
            raise Skip("exit %d: %s" % (p.returncode, " | ".join(tail.strip().splitlines()[-3:])[:160]))
        if not s0 or last[0] <= s0[0] or last[1] <= s0[1]:
            raise Skip("too few progress reports (%d frames)" % frames)
        n, dt = last[1] - s0[1], last[0] - s0[0]
        return dict(fps=n / dt, frames=n, seconds=dt)


# ---------------------------------------------------------------------------
# Frames


def plane_shapes(fmt):
    f = FORMATS[fmt]
    return [((f["h"] + dy - 1) // dy, (f["w"] + dx - 1) // dx) for dx, dy in f["sub"]]


def load_photos(folder):
    from PIL import Image
    photos = []
    for name in sorted(os.listdir(folder)):
        if name.lower().endswith((".jpg", ".jpeg", ".png")):
            im = Image.open(os.path.join(folder, name)).convert("RGB")
            photos.append(np.asarray(im, dtype=np.float32) / 255.0)
    if not photos:
        raise SystemExit("no photographs in " + folder)
    return photos


def mosaic(photos, k, w, h):
    """A w x h frame of native-resolution crops of real photographs: 2048x1080
    or 1920x1080 tiles, each from another photograph (no upscaling, so the
    detail is the camera's)."""
    nx, ny = max(1, round(w / 2048)), max(1, round(h / 1080))
    xs = [w * i // nx for i in range(nx + 1)]
    ys = [h * i // ny for i in range(ny + 1)]
    out = np.empty((h, w, 3), np.float32)
    n = 0
    for j in range(ny):
        for i in range(nx):
            tw, th = xs[i + 1] - xs[i], ys[j + 1] - ys[j]
            ph = photos[(k * 5 + n * 3) % len(photos)]
            ph_h, ph_w = ph.shape[:2]
            cy = (ph_h - th) * ((k + n) % 3) // 2
            cx = (ph_w - tw) * ((k + 2 * n) % 3) // 2
            out[ys[j]:ys[j + 1], xs[i]:xs[i + 1]] = ph[cy:cy + th, cx:cx + tw]
            n += 1
    return out


def srgb_linear(v):
    return np.where(v <= 0.04045, v / 12.92, ((v + 0.055) / 1.055) ** 2.4)


def natural_planes(fmt, photos, k):
    f = FORMATS[fmt]
    rgb = mosaic(photos, k, f["w"], f["h"])
    if f["kind"] == "xyz":  # sRGB -> XYZ -> DCI X'Y'Z' (48 cd/m2 white, 2.6 gamma), 12-bit
        lin = srgb_linear(rgb)
        m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]], np.float32)
        xyz = np.clip(lin @ m.T * (48.0 / 52.37), 0, 1) ** (1 / 2.6)
        return [np.rint(xyz[..., c] * 4095).astype(np.uint16) for c in range(3)]
    if f["kind"] == "yuv":  # BT.709 Y'CbCr, 10-bit narrow range, 4:2:2 by averaging pairs
        r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
        y = 0.2126 * r + 0.7152 * g + 0.0722 * b
        cb = (b - y) / 1.8556
        cr = (r - y) / 1.5748
        cb = 0.5 * (cb[:, 0::2] + cb[:, 1::2])
        cr = 0.5 * (cr[:, 0::2] + cr[:, 1::2])
        return [np.rint(64 + 876 * y).astype(np.uint16), np.rint(512 + 896 * cb).astype(np.uint16),
                np.rint(512 + 896 * cr).astype(np.uint16)]
    return [np.rint(rgb[..., c] * 1023).astype(np.uint16) for c in range(3)]  # 10-bit R'G'B'


def synthetic_planes(fmt, content, k):
    f = FORMATS[fmt]
    maxv = (1 << f["prec"]) - 1
    rng = np.random.default_rng(1000 + k)
    planes = []
    for shape in plane_shapes(fmt):
        if content == "flat":
            planes.append(np.full(shape, (maxv + 1) // 2 - 37 * k, np.uint16))
        else:  # white noise over the whole range
            planes.append(rng.integers(0, maxv + 1, size=shape, dtype=np.uint16))
    return planes


class FrameSet:
    """D distinct frames of one format and content, in every layout a peer reads."""

    def __init__(self, bench, fmt, content, photos, distinct):
        self.fmt, self.content, self.d = fmt, content, distinct
        f = FORMATS[fmt]
        self.w, self.h, self.prec = f["w"], f["h"], f["prec"]
        self.dir = os.path.join(bench.work, "%s-%s" % (fmt, content))
        os.makedirs(self.dir, exist_ok=True)
        self.frames = []
        for k in range(distinct):
            planes = natural_planes(fmt, photos, k) if content == "natural" else synthetic_planes(fmt, content, k)
            self.frames.append(planes)
        # Planar 16-bit little-endian: j2kc_bench (all frames), opj/grk (.rawl, one per frame).
        self.planar = os.path.join(self.dir, "frames.raw")
        with open(self.planar, "wb") as fp:
            for planes in self.frames:
                for p in planes:
                    fp.write(p.astype("<u2").tobytes())
        self.rawl = []
        for k, planes in enumerate(self.frames):
            path = os.path.join(self.dir, "f%03d.rawl" % k)
            with open(path, "wb") as fp:
                for p in planes:
                    fp.write(p.astype("<u2").tobytes())
            self.rawl.append(path)
        # FFmpeg: xyz12le (packed, value << 4) for DCI, gbrp* for RGB (planes
        # G, B, R), yuv422p10le as is; gbrp12le of X'Y'Z' (as R, G, B) for the
        # native encoder, which takes no xyz12le.
        self.ff = {}
        kind = f["kind"]
        if kind == "xyz":
            self.ff["xyz12le"] = self._write_ff("xyz12le", lambda p: np.stack(p, -1) << 4)
            self.ff["gbrp12le"] = self._write_ff("gbrp12le", lambda p: np.stack([p[1], p[2], p[0]]))
        elif kind == "rgb":
            self.ff["gbrp10le"] = self._write_ff("gbrp10le", lambda p: np.stack([p[1], p[2], p[0]]))
        else:
            self.ff["yuv422p10le"] = self.planar

    def _write_ff(self, pix, fn):
        path = os.path.join(self.dir, "ff-%s.raw" % pix)
        with open(path, "wb") as fp:
            for planes in self.frames:
                fp.write(np.ascontiguousarray(fn(planes)).astype("<u2").tobytes())
        return path

    def opj_raw_spec(self):
        f = FORMATS[self.fmt]
        sub = ":".join("%dx%d" % s for s in f["sub"])
        return "%d,%d,3,%d,u@%s" % (self.w, self.h, self.prec, sub)

    def raw_bytes(self):
        return sum(a * b for a, b in plane_shapes(self.fmt)) * self.prec / 8.0


def read_planar(path, fmt, index=0):
    shapes = plane_shapes(fmt)
    n = sum(a * b for a, b in shapes)
    if os.path.getsize(path) % (n * 2):
        raise Skip("output is not %s planes (%d bytes): converted by the tool" % (fmt, os.path.getsize(path)))
    data = np.fromfile(path, dtype="<u2", count=n, offset=index * n * 2)
    if data.size != n:
        raise Skip("decoded output has %d samples, expected %d" % (data.size, n))
    planes, off = [], 0
    for a, b in shapes:
        planes.append(data[off:off + a * b].reshape(a, b))
        off += a * b
    return planes


def read_ffmpeg_output(path, pix, fmt):
    """FFmpeg's rawvideo output as planes in the source's component order."""
    shapes = plane_shapes(fmt)
    h, w = shapes[0]
    if pix == "xyz12le":
        a = np.fromfile(path, dtype="<u2", count=h * w * 3).reshape(h, w, 3) >> 4
        return [a[..., c] for c in range(3)]
    if pix in ("rgb48le", "rgb48"):
        a = np.fromfile(path, dtype="<u2", count=h * w * 3).reshape(h, w, 3)
        prec = FORMATS[fmt]["prec"]
        return [a[..., c] >> (16 - prec) for c in range(3)]
    if pix.startswith("gbrp"):
        g, b, r = _planes3(path, h, w)
        return [r, g, b]
    if pix.startswith("yuv422p") or pix.startswith("yuv444p"):
        return read_planar(path, fmt)
    raise Skip("decoder output %s not compared" % pix)


def _planes3(path, h, w):
    a = np.fromfile(path, dtype="<u2", count=h * w * 3)
    return [a[i * h * w:(i + 1) * h * w].reshape(h, w) for i in range(3)]


def psnr(src, dec, prec):
    maxv = float((1 << prec) - 1)
    se, n = 0.0, 0
    for s, d in zip(src, dec):
        if s.shape != d.shape:
            raise Skip("decoded plane %s, source %s" % (d.shape, s.shape))
        diff = s.astype(np.int32) - d.astype(np.int32)
        se += float(np.dot(diff.ravel().astype(np.int64), diff.ravel().astype(np.int64)))
        n += diff.size
    if se == 0:
        return float("inf")
    return 10 * np.log10(maxv * maxv * n / se)


# ---------------------------------------------------------------------------
# Encoders. Each takes (bench, frames, mode, target bytes or None, out dir)
# and returns dict(fps, bytes=[...], files=[...], ...).


def frames_for(bench, per_frame_s, lo=2, hi=24, seconds=6.0):
    n = int(seconds / max(per_frame_s, 1e-3))
    return max(lo, min(hi, n)) if not bench.quick else lo


def enc_j2kc(backend, device_input=False):
    def run(bench, fs, mode, target, out):
        be = J2KC["backend"] if backend == "cuda" else backend
        if device_input and be != "cuda":
            raise Skip("n/a")
        f = FORMATS[fs.fmt]
        sub = ":".join("%dx%d" % s for s in f["sub"])
        # Warm-up: every distinct frame once on the GPU (each size class of
        # the pipeline), one frame on the CPU backend (its thread pool).
        cmd = [bench.tool("j2kc_bench"), "encode", "--in", fs.planar, "--width", str(fs.w), "--height", str(fs.h),
               "--comps", "3", "--prec", str(fs.prec), "--sub", sub, "--distinct", str(fs.d),
               "--backend", be, "--threads", str(THREADS), "--warmup", str(fs.d if be == "cuda" else 1),
               "--out-dir", out]
        if mode == "lossless":
            cmd += ["--lossless"]
        elif mode == "cap":
            cmd += ["--profile", f["profile"]]
        else:
            cmd += ["--bytes", str(int(target))]
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


def enc_cli(tool, threads_flag):
    """OpenJPEG's opj_compress or Grok's grk_compress (same options but the
    thread count's flag), one process a frame."""
    def run(bench, fs, mode, target, out):
        def cmd(src, dst):
            c = [bench.tool(tool), "-i", src, "-o", dst, "-F", fs.opj_raw_spec(), threads_flag, str(THREADS)]
            if mode == "cap":
                c += ["-r", "%.3f" % (fs.raw_bytes() / (DCI_CAP * 0.985)), "-I"]
            elif mode == "sweep":
                c += ["-r", "%.3f" % (fs.raw_bytes() / target), "-I"]
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


def _ff_pix(fs):
    """FFmpeg's pixel format of the frames j2k_cuda encodes."""
    kind = FORMATS[fs.fmt]["kind"]
    return "xyz12le" if kind == "xyz" else ("gbrp10le" if kind == "rgb" else "yuv422p10le")


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
    a = ["-c:v", "j2k_cuda", "-threads", str(THREADS)]
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
    f = FORMATS[fs.fmt]
    pix = "gbrp12le" if f["kind"] == "xyz" else ("gbrp10le" if f["kind"] == "rgb" else "yuv422p10le")
    a = ["-c:v", "jpeg2000", "-format", "j2k", "-threads", str(THREADS)]
    if mode == "lossless":
        a += ["-pred", "dwt53"]
    else:
        tb = DCI_CAP * 0.985 if mode == "cap" else target
        # An integer ratio, which FFmpeg 8's encoder applies to each component's
        # share of a tile as if it were the whole tile's (its budget comes out
        # three times the asked one for three components): asked 3x to land on
        # the target. The table's bytes column shows where it lands.
        a += ["-layer_rates", "%d" % int(np.ceil(3 * fs.raw_bytes() / tb))]
    return _ffmpeg_clip(bench, fs, pix, a, out, once=mode == "sweep", frame_threads=True)


def enc_ffmpeg_libopenjpeg(bench, fs, mode, target, out):
    f = FORMATS[fs.fmt]
    pix = "xyz12le" if f["kind"] == "xyz" else ("gbrp10le" if f["kind"] == "rgb" else "yuv422p10le")
    a = ["-c:v", "libopenjpeg", "-format", "j2k", "-threads", str(THREADS)]
    if mode == "lossless":
        a += ["-compression_level", "0"]
    else:
        tb = DCI_CAP * 0.985 if mode == "cap" else target
        # libopenjpeg's rate is 2 x compression_level: the even ratio at or above the target's.
        level = int(np.ceil(fs.raw_bytes() / tb / 2))
        a += ["-compression_level", str(level), "-irreversible", "1"]
    return _ffmpeg_clip(bench, fs, pix, a, out, once=mode == "sweep", frame_threads=True)


_NVC = {}


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


def enc_nvjpeg2k(bench, fs, mode, target, out, psnr_target=None):
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
    jp.code_block_size = (32, 32)
    jp.prog_order = nvc.Jpeg2kProgOrder.CPRL
    jp.mct_mode = 1
    note = "batch of %d CUDA frames" % len(imgs)
    if mode == "lossless":
        params = nvc.EncodeParams(quality_type=nvc.QualityType.LOSSLESS, jpeg2k_encode_params=jp)
    elif psnr_target is not None:
        params = nvc.EncodeParams(quality_type=nvc.QualityType.PSNR, quality_value=float(psnr_target),
                                  jpeg2k_encode_params=jp)
    else:  # the byte cap: largest PSNR target whose streams stay under it
        best = None
        probe = nvc.Encoder(max_num_cpu_threads=max(1, THREADS - 1))
        for q in (40, 44, 48, 52, 56, 60, 64, 68, 72):
            params = nvc.EncodeParams(quality_type=nvc.QualityType.PSNR, quality_value=float(q),
                                      jpeg2k_encode_params=jp)
            sizes = [len(_cs_bytes(c)) for c in probe.encode(imgs, "jpeg2k", params=params)]
            if max(sizes) <= DCI_CAP:
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


def dec_j2kc(backend, tier1=None):
    def run(bench, fs, files, out):
        be = J2KC["backend"] if backend == "cuda" else backend
        dst = os.path.join(out, "dec.raw")
        cmd = [bench.tool("j2kc_bench"), "decode", "--backend", be, "--threads", str(THREADS),
               "--warmup", str(len(files) if be == "cuda" else 1), "--out", dst]
        if tier1:
            cmd += ["--tier1", tier1]
        # Tier-1 placement variants: 16 frames (a CPU Tier-1 of 4K lossless runs at a few fps).
        n = len(files) if bench.quick or be != "cuda" else (8 if fs.w * fs.h > 4096 * 2160 else 16 if tier1 else 32)
        cmd += ["--frames", str(n)] + files
        _, so, _ = bench.run(cmd)
        r = json.loads(so.strip().splitlines()[-1])
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


def dec_ffmpeg_j2kcuda(tier1=None):
    """`ffmpeg -c:v j2k_cuda -i clip.mxf -f null -` (the decode target's
    command), timed from its progress reports; the clip loops (-stream_loop -1)."""
    def run(bench, fs, files, out):
        clip = _mxf_clip(bench, files, FF_DEC_CLIP)
        head = [bench.tool("ffmpeg"), "-hide_banner", "-nostdin", "-y", "-threads", str(THREADS), "-c:v", "j2k_cuda"]
        if J2KC["backend"] != "cuda":
            head += ["-backend", J2KC["backend"]]
        if tier1:
            head += ["-tier1", tier1]
        q, pix, _ = _ff_dec_first(bench, fs, clip, head, out)
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


def dec_nvjpeg2k(bench, fs, files, out):
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
    rows += [("nvJPEG2000", dec_nvjpeg2k)]
    variants = [v for v in TIER1_VARIANTS if v in CAPS["ffmpeg_tier1"]]
    if variants:
        rows += [("j2k_cuda in FFmpeg, -tier1 %s" % v, dec_ffmpeg_j2kcuda(v)) for v in variants]
    else:
        rows += [("j2k_cuda in FFmpeg", dec_ffmpeg_j2kcuda())]
    rows += [("j2k_cuda CPU backend", dec_j2kc("cpu")),
             ("Grok grk_decompress", dec_grk),
             ("OpenJPEG opj_decompress", dec_opj),
             ("FFmpeg jpeg2000 (native)", dec_ffmpeg_native)]
    return rows


def decode_only_on(name):
    """Cases a decode row is limited to (None: every case), for time: the
    FFmpeg j2k_cuda rows on FF_CASE, the Tier-1 variants also on 4K lossless."""
    if name.startswith("j2k_cuda in FFmpeg"):
        return (FF_CASE,)
    if name.startswith("j2k_cuda, Tier-1"):
        return (FF_CASE, "dci4k-lossless-natural")
    return None


def own_encoder(name):
    """Decoder -> the encoder whose output is its "own" stream."""
    if name.startswith(("j2k_cuda in FFmpeg", "j2k_cuda, Tier-1")):
        return "j2k_cuda"
    return {"Grok grk_decompress": "Grok grk_compress", "OpenJPEG opj_decompress": "OpenJPEG opj_compress"}.get(
        name, name)


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
    """Whether j2kc_bench and FFmpeg's j2k_cuda decoder can place Tier-1."""
    try:
        _, so, _ = bench.run([bench.tool("j2kc_bench"), "caps"], timeout=20)
        CAPS["bench_tier1"] = bool(json.loads(so.strip().splitlines()[-1]).get("decoder_tier1"))
    except (Skip, ValueError, IndexError):
        CAPS["bench_tier1"] = False  # an older j2kc_bench: no caps command
    try:
        _, so, _ = bench.run([bench.tool("ffmpeg"), "-hide_banner", "-h", "decoder=j2k_cuda"], timeout=20)
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


def gpu_info(bench):
    try:
        _, so, _ = bench.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                             timeout=20)
        return so.strip().splitlines()[0]
    except Exception:  # noqa: BLE001
        return "no GPU found"


def cpu_info():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True, help="folder made by scripts/bench/prep.sh")
    ap.add_argument("--out", default="build/bench-out", help="results.json, results.md, charts")
    ap.add_argument("--budget", type=float, default=415,
                    help="seconds for the whole run (the last item may overrun it by ~15 s); the cases' order is "
                         "their priority: a cut takes the 8K case's last rows first")
    ap.add_argument("--quick", action="store_true", help="one short pass (debugging the harness)")
    ap.add_argument("--cases", default="", help="comma-separated case ids (default: all)")
    ap.add_argument("--no-sweep", action="store_true")
    ap.add_argument("--small", type=int, default=1, help="divide frame sizes by this (debugging off the GPU machine)")
    ap.add_argument("--cpu", action="store_true",
                    help="j2k_cuda's rows on its CPU backend (a dry run of the commands off the GPU machine)")
    args = ap.parse_args()
    if args.cpu:
        J2KC["backend"] = "cpu"
    if args.small > 1:
        for f in FORMATS.values():
            f["w"] //= args.small
            f["h"] //= args.small
    bench = Bench(args)
    _NVC["site"] = os.path.join(bench.dir, "site")
    manifest = {}
    try:
        manifest = json.load(open(os.path.join(bench.dir, "manifest.json")))
    except OSError:
        pass
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                gpu=gpu_info(bench), cpu=cpu_info(), threads=THREADS,
                command="python3 scripts/bench/run.py " + " ".join(
                    os.path.relpath(a) if a.startswith("/") else a for a in sys.argv[1:]), quick=bench.quick,
                manifest=manifest)
    bench.say("GPU: %s; CPU: %s x %d" % (meta["gpu"], meta["cpu"], THREADS))
    detect_caps(bench)
    meta["caps"] = dict(CAPS, j2kc_backend=J2KC["backend"])
    bench.say("caps: %s" % meta["caps"])
    photos = load_photos(os.path.join(bench.dir, "photos"))
    results = dict(meta=meta, cases={}, sweep={}, stages={}, formats={k: v["label"] for k, v in FORMATS.items()},
                   ffmpeg_paths={})
    wanted = [c for c in CASES if not args.cases or c[0] in args.cases.split(",")]
    framesets = {}

    def frameset(fmt, content):
        key = (fmt, content)
        if key not in framesets:
            d = 2 if fmt == "8k444" or bench.quick else 4
            t0 = time.monotonic()
            framesets[key] = FrameSet(bench, fmt, content, photos, d)
            bench.say("frames %s/%s: %d made in %.1f s" % (fmt, content, d, time.monotonic() - t0))
        return framesets[key]

    def save():
        with open(os.path.join(bench.out, "results.json"), "w") as fp:
            json.dump(results, fp, indent=1, default=float)

    def run_case(case_id, fmt, content, mode):
        if bench.left() < 20:
            bench.say("time budget spent: %s not run" % case_id)
            results["cases"][case_id] = dict(fmt=fmt, content=content, mode=mode, skipped="time budget")
            return
        fs = frameset(fmt, content)
        case = dict(fmt=fmt, content=content, mode=mode, encode={}, decode={},
                    raw_bytes=fs.raw_bytes(), cap=DCI_CAP if mode == "cap" else None)
        results["cases"][case_id] = case
        for name, fn in ENCODERS:
            if (name, case_id) in SKIP:
                continue
            out = os.path.join(bench.work, "enc", case_id, re.sub(r"\W+", "_", name))
            os.makedirs(out, exist_ok=True)
            try:
                if bench.left() < 15:
                    raise Skip("time budget")
                r = fn(bench, fs, mode, None, out)
                try:
                    r["psnr"] = reference_psnr(bench, fs, r["files"][0])
                except Skip as e:
                    r["psnr_error"] = str(e)
                case["encode"][name] = r
                bench.say("%s enc %-26s %8.2f fps  %s bytes  PSNR %s" % (
                    case_id, name, r["fps"], r["bytes"][:2], r.get("psnr")))
            except Skip as e:
                case["encode"][name] = dict(error=str(e))
                bench.say("%s enc %-26s skipped: %s" % (case_id, name, e))
            except Exception as e:  # noqa: BLE001  (a peer's failure never stops the run)
                case["encode"][name] = dict(error="%s: %s" % (type(e).__name__, e))
                bench.say("%s enc %-26s failed: %s: %s" % (case_id, name, type(e).__name__, e))
            save()
        if case_id == FF_CASE:
            run_ffmpeg_encode_paths(bench, fs, case, results["ffmpeg_paths"])
            save()
        # The common stream: j2k_cuda's (the CPU backend writes the same bytes,
        # and stands in where no GPU ran).
        common = (case["encode"].get("j2k_cuda", {}).get("files")
                  or case["encode"].get("j2k_cuda CPU backend", {}).get("files"))
        for name, fn in decoders():
            if ("dec:" + name, case_id) in SKIP or case_id not in (decode_only_on(name) or (case_id,)):
                continue
            # A Tier-1 placement the default row already ran is not run again.
            dflt = ((case["decode"].get("j2k_cuda") or {}).get("common") or {}).get("tier1_place")
            if name.startswith("j2k_cuda, Tier-1") and dflt and name.endswith(" " + dflt.upper()):
                continue
            entry = {}
            own_enc = case["encode"].get(own_encoder(name), {})
            for which, files in (("common", common), ("own", own_enc.get("files"))):
                if which == "own" and (("own", case_id) in SKIP or ("own:" + name, case_id) in SKIP):
                    continue
                if which == "own" and own_encoder(name) in ("j2k_cuda", "j2k_cuda CPU backend"):
                    entry["own"] = entry.get("common")
                    continue
                if not files:
                    entry[which] = dict(error="no stream")
                    continue
                out = os.path.join(bench.work, "dec", case_id, re.sub(r"\W+", "_", name), which)
                os.makedirs(out, exist_ok=True)
                try:
                    if bench.left() < 15:
                        raise Skip("time budget")
                    entry[which] = fn(bench, fs, files, out)
                    bench.say("%s dec %-26s %-6s %8.2f fps  PSNR %s" % (
                        case_id, name, which, entry[which]["fps"], entry[which].get("psnr")))
                except Skip as e:
                    entry[which] = dict(error=str(e))
                    bench.say("%s dec %-26s %-6s skipped: %s" % (case_id, name, which, e))
                except Exception as e:  # noqa: BLE001
                    entry[which] = dict(error="%s: %s" % (type(e).__name__, e))
                    bench.say("%s dec %-26s %-6s failed: %s: %s" % (case_id, name, which, type(e).__name__, e))
            case["decode"][name] = entry
            save()
        if case_id == FF_CASE:
            ffmpeg_decode_paths(case, results["ffmpeg_paths"])
            save()
        shutil.rmtree(os.path.join(bench.work, "dec", case_id), ignore_errors=True)
        shutil.rmtree(os.path.join(bench.work, "clips"), ignore_errors=True)

    def run_stages():
        # Per-stage breakdown of j2k_cuda (each stage synchronised: J2KC_TIMING=1).
        if bench.left() > 30:
            fs = frameset("dci4k", "natural")
            env = dict(bench.env, J2KC_TIMING="1")
            out = os.path.join(bench.work, "stages")
            os.makedirs(out, exist_ok=True)
            for backend in (J2KC["backend"],):
                try:
                    _, so, _ = bench.run([bench.tool("j2kc_bench"), "encode", "--in", fs.planar, "--width", str(fs.w),
                                          "--height", str(fs.h), "--comps", "3", "--prec", "12", "--distinct",
                                          str(fs.d), "--backend", backend, "--threads", str(THREADS), "--warmup",
                                          str(fs.d), "--frames", "8", "--profile", "dci_4k", "--out-dir", out], env=env)
                    results["stages"]["encode dci4k " + backend] = json.loads(so.strip().splitlines()[-1])
                    files = [os.path.join(out, "%03d.j2c" % i) for i in range(fs.d)]
                    _, so, _ = bench.run([bench.tool("j2kc_bench"), "decode", "--backend", backend, "--threads",
                                          str(THREADS), "--warmup", str(fs.d), "--frames", "8"] + files, env=env)
                    results["stages"]["decode dci4k " + backend] = json.loads(so.strip().splitlines()[-1])
                except Skip as e:
                    results["stages"]["error"] = str(e)
            bench.say("stages: %s" % json.dumps(results["stages"])[:300])

    def run_sweep():
        # Rate-distortion sweep at equal bytes (DCI 2K natural).
        if bench.left() > 40:
            fs = frameset(SWEEP_FORMAT, "natural")
            sweepers = [("j2k_cuda", enc_j2kc("cuda")), ("Grok grk_compress", enc_grk),
                        ("OpenJPEG opj_compress", enc_opj), ("FFmpeg jpeg2000 (native)", enc_ffmpeg_native),
                        ("FFmpeg libopenjpeg", enc_ffmpeg_libopenjpeg)]
            bpps = SWEEP_BPP if not bench.quick else SWEEP_BPP[1:4:2]
            for name, fn in sweepers:
                pts = []
                for bpp in bpps:
                    if bench.left() < 25:
                        break
                    target = bpp * fs.w * fs.h / 8
                    out = os.path.join(bench.work, "sweep", re.sub(r"\W+", "_", name), str(bpp))
                    os.makedirs(out, exist_ok=True)
                    try:
                        r = fn(bench, fs, "sweep", target, out)
                        q = reference_psnr(bench, fs, r["files"][0])
                        pts.append(dict(bpp=bpp, bytes=r["bytes"][0], psnr=q, fps=r["fps"]))
                    except Skip as e:
                        pts.append(dict(bpp=bpp, error=str(e)))
                results["sweep"][name] = pts
                bench.say("sweep %s: %s" % (name, [(p.get("bytes"), round(p["psnr"], 2) if p.get("psnr") else None)
                                                   for p in pts]))
                save()
            pts = []
            out = os.path.join(bench.work, "sweep", "nvjpeg2k")
            os.makedirs(out, exist_ok=True)
            for q in (SWEEP_PSNR if not bench.quick else SWEEP_PSNR[1:4:2]):
                if bench.left() < 25:
                    break
                try:
                    r = enc_nvjpeg2k(bench, fs, "sweep", None, out, psnr_target=q)
                    pts.append(dict(psnr_target=q, bytes=r["bytes"][0], psnr=reference_psnr(bench, fs, r["files"][0]),
                                    fps=r["fps"]))
                except Skip as e:
                    pts.append(dict(psnr_target=q, error=str(e)))
            results["sweep"]["nvJPEG2000"] = pts
            bench.say("sweep nvJPEG2000: %s" % [(p.get("bytes"), p.get("psnr")) for p in pts])

    plan = [("case", c) for c in wanted]
    # The stage breakdown and the sweep come after the first three cases, so a
    # budget cut takes the extremes and the big formats first.
    if not args.cases:
        plan[3:3] = [("stages", None)] + ([("sweep", None)] if not args.no_sweep else [])
    for what, c in plan:
        if what == "case":
            run_case(*c)
        elif what == "stages":
            run_stages()
        else:
            run_sweep()

    results["meta"]["seconds"] = time.monotonic() - bench.t_start
    save()
    import report
    md = report.markdown(results)
    with open(os.path.join(bench.out, "results.md"), "w") as fp:
        fp.write(md)
    print(md)
    try:
        charts = report.charts(results, bench.out)
        bench.say("charts: %s" % ", ".join(charts))
    except Exception as e:  # noqa: BLE001
        bench.say("charts failed: %s: %s" % (type(e).__name__, e))
    shutil.rmtree(bench.work, ignore_errors=True)
    bench.say("done in %.0f s: %s" % (time.monotonic() - bench.t_start, bench.out))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
