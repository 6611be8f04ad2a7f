#!/usr/bin/env python3
"""Rate-distortion comparison at the profiles' byte caps and at generic ratios:
j2k_cuda (j2kc, CPU backend: the same bytes as the CUDA one), OpenJPEG, Grok
and FFmpeg's native encoder, side by side, every stream decoded by
opj_decompress and compared with its source (PSNR over all samples of all
components, peak = 2^bits - 1).

    python3 bench/rd.py --photos DIR [--work DIR] [--cases dci_4k,dci_2k]
                                [--codecs j2kc,opj,grk,ffmpeg] [--j2kc PATH] [--ffmpeg PATH]
                                [--step-phases N]

DIR holds photographs (*.jpg, *.png), e.g. the images of Debian's
plasma-workspace-wallpapers (`apt-get download plasma-workspace-wallpapers`,
`dpkg -x`, as bench/prep.sh does). Each photograph is scaled and
cropped to the case's size by ffmpeg and converted to its sample format:

    dci_2k, dci_4k       12-bit X'Y'Z' 2048x1080 / 4096x2160 at the 24 fps cap
                         (1,302,083 bytes); opj_compress -cinema2K/-cinema4K 24,
                         grk_compress -w/-x 24
    imf_2k, imf_4k       16-bit RGB 1920x1080 (main level 3, sub-level 1) /
                         3840x2160 (main level 6, sub-level 3) at 24 fps;
                         opj/grk get the IMF coding parameters (9/7, 5 or 6
                         levels, 32x32 blocks, CPRL, precincts 256 and 128 at
                         r0) and the cap as a ratio (-r)
    imf_2k_422           10-bit Y'CbCr 4:2:2 1920x1080, IMF 2K M3 S1 (Grok reads no
                         subsampled raw input; j2kc decodes these streams)
    rgb8_R, rgb16_R      generic 1024x768 RGB at compression ratio R of the raw
    xyz12_R, yuv422_R    samples (opj/grk -r R, ffmpeg -layer_rates R); j2kc
                         gets OpenJPEG's byte count as its budget (--bytes), so
                         that the two compare at equal bytes

FFmpeg's encoder has no byte cap: at the profile caps it is given the ratio of
the raw size to the cap. It takes 8/16-bit RGB and 4:2:2 only here.
--step-phases N passes j2kc's option of that name to its encodes (N phases
searched on each frame of the generic cases; without it, 4 on the first).
Prints one line a photograph and case, then the mean of each codec's PSNR
difference to j2kc. Work files (several hundred MB at 4K) go to --work.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)

DCI_CAP = 1302083  # floor(250e6 / 8 / 24)


def imf_cap(sub_level, fps=24):
    return (100 << sub_level) * 125000 // fps


# name: width, height, source format, budget kind
PROFILE_CASES = {
    "dci_2k": (2048, 1080, "xyz12", ("dci", 2)),
    "dci_4k": (4096, 2160, "xyz12", ("dci", 4)),
    "imf_2k": (1920, 1080, "rgb16", ("imf", "2K", 3, 1)),
    "imf_4k": (3840, 2160, "rgb16", ("imf", "4K", 6, 3)),
    "imf_2k_422": (1920, 1080, "yuv422", ("imf", "2K", 3, 1)),
}
GENERIC_SIZE = (1024, 768)
BITS = {"rgb8": 8, "rgb16": 16, "xyz12": 12, "yuv422": 10}


def run(cmd, timeout=600):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd[:3]), (r.stderr or r.stdout).strip()[-300:]))
    return r.stdout


class Source:
    """One photograph at one size and sample format, in the files each tool reads."""

    def __init__(self, tools, photo, width, height, fmt, work):
        self.width, self.height, self.fmt = width, height, fmt
        self.bits = BITS[fmt]
        stem = os.path.join(work, "%s.%dx%d.%s" % (os.path.splitext(os.path.basename(photo))[0],
                                                   width, height, fmt))
        scale = "scale=%d:%d:flags=lanczos:force_original_aspect_ratio=increase,crop=%d:%d" % (
            width, height, width, height)
        ff = [tools.ffmpeg, "-v", "error", "-y", "-i", photo, "-vf", scale]
        if fmt == "yuv422":
            self.path = stem + ".raw"  # planar big-endian: what j2kc --raw, opj -F and grk -F read
            if not os.path.exists(self.path):
                run(ff + ["-pix_fmt", "yuv422p10be", "-f", "rawvideo", self.path])
            self.samples = width * height * 2
        elif fmt == "xyz12":
            self.path = stem + ".ppm"
            if not os.path.exists(self.path):
                raw = stem + ".xyz12le"
                run(ff + ["-pix_fmt", "xyz12le", "-f", "rawvideo", raw])
                run([tools.psnr, "--xyz12", str(width), str(height), raw, self.path])
                os.remove(raw)
            self.samples = width * height * 3
        else:
            self.path = stem + ".ppm"
            if not os.path.exists(self.path):
                run(ff + ["-pix_fmt", "rgb24" if fmt == "rgb8" else "rgb48be", self.path])
            self.samples = width * height * 3

    def raw_bytes(self):
        return self.samples * self.bits / 8

    def opj_raw_bytes(self):
        """The raw size OpenJPEG's and Grok's -r divides: every component
        counted at the first one's size."""
        return self.width * self.height * 3 * self.bits / 8

    def raw_spec(self):
        """opj/grk -F: width,height,components,bits,u@subsampling."""
        return "%d,%d,3,%d,u@1x1:2x1:2x1" % (self.width, self.height, self.bits)

    def psnr(self, tools, stream, work):
        """PSNR of opj_decompress's decode of stream against the source
        (j2kc's for 4:2:2: opj_decompress writes raw chroma upsampled)."""
        if self.fmt == "yuv422":
            out = os.path.join(work, "dec.raw")
            run([tools.j2kc, "decode", "--backend", "cpu", "--raw-components", "-i", stream, "-o", out])
            line = run([tools.psnr, "--raw16", str((1 << self.bits) - 1), self.path, out])
        else:
            out = os.path.join(work, "dec.ppm")
            run([tools.opj_decompress, "-i", stream, "-o", out])
            line = run([tools.psnr, self.path, out])
        os.remove(out)
        return float(line.split()[0])


class Tools:
    def __init__(self, args, work):
        self.j2kc = args.j2kc
        self.ffmpeg = args.ffmpeg
        self.opj_compress = shutil.which("opj_compress")
        self.opj_decompress = shutil.which("opj_decompress")
        self.grk_compress = shutil.which("grk_compress")
        if not self.opj_decompress:
            sys.exit("rd: opj_decompress is needed to decode every stream")
        if not self.ffmpeg or not shutil.which(self.ffmpeg):
            sys.exit("rd: ffmpeg is needed to convert the photographs (--ffmpeg PATH)")
        self.psnr = os.path.join(work, "rd_psnr")
        run(["cc", "-O2", "-o", self.psnr, os.path.join(HERE, "rd_psnr.c"), "-lm"])


def j2kc_input(src):
    if src.fmt == "yuv422":
        return ["--raw", "%dx%dx3x10u@4:2:2" % (src.width, src.height), "-i", src.path]
    return ["-i", src.path]


def opj_input(src, tool):
    if src.fmt == "yuv422":
        return ["-i", src.path, "-F", src.raw_spec()]
    return ["-i", src.path]


def encode(codec, tools, src, budget, ratio, out, step_phases=None):
    """Encodes src with codec under the case's budget; returns the stream path.
    Without a budget, ratio is OpenJPEG's compression ratio for opj and grk,
    and the byte count it reached for j2kc and ffmpeg."""
    kind = budget[0] if budget else "ratio"
    if codec == "j2kc":
        cmd = [tools.j2kc, "encode", "--backend", "cpu", "--threads", "1"] + j2kc_input(src) + ["-o", out + ".j2c"]
        if kind == "dci":
            cmd += ["--profile", "dci_%dk" % budget[1], "--fps", "24"]
        elif kind == "imf":
            cmd += ["--profile", "imf", "--fps", "24", "--bytes", str(imf_cap(budget[3]))]
        else:
            cmd += ["--bytes", str(ratio)]  # the generic case passes OpenJPEG's byte count
        if step_phases:
            cmd += ["--step-phases", str(step_phases)]
        run(cmd)
        return out + ".j2c"
    if codec in ("opj", "grk"):
        exe = tools.opj_compress if codec == "opj" else tools.grk_compress
        if not exe:
            return None
        cmd = [exe] + opj_input(src, codec) + ["-o", out + ".j2k"]
        if kind == "dci":
            if codec == "opj":
                cmd += ["-cinema%dK" % budget[1], "24"]
            else:
                cmd += ["-w" if budget[1] == 2 else "-x", "24"]
        elif kind == "imf":
            # -IMF left opj_compress 2.5 and grk_compress 10 up to 2.8 times
            # over the cap (the rate it derives is not applied): the IMF
            # coding parameters are given one by one, the cap as a ratio.
            levels = 5 if budget[1] == "2K" else 6
            cmd += ["-I", "-r", "%.4f" % (src.opj_raw_bytes() / imf_cap(budget[3])), "-n", str(levels + 1),
                    "-b", "32,32", "-p", "CPRL", "-c", ",".join(["[256,256]"] * levels + ["[128,128]"])]
        else:
            cmd += ["-I", "-r", "%g" % ratio]
        run(cmd)
        return out + ".j2k"
    if codec == "ffmpeg":
        if not tools.ffmpeg or src.fmt == "xyz12":
            return None
        target = DCI_CAP if kind == "dci" else imf_cap(budget[3]) if kind == "imf" else ratio
        return ffmpeg_encode(tools, src, target, out + ".ff.j2k")
    raise ValueError(codec)


def ffmpeg_encode(tools, src, target, path):
    """FFmpeg's -layer_rates misses its ratio by a content-dependent factor:
    up to four tries scale it by the size reached, keeping the largest
    stream within target bytes (or the smallest when none fits)."""
    if src.fmt == "yuv422":
        inp = ["-f", "rawvideo", "-pix_fmt", "yuv422p10be", "-s", "%dx%d" % (src.width, src.height),
               "-i", src.path]
    else:
        inp = ["-i", src.path]
    ratio, best = src.raw_bytes() / target, None
    for attempt in range(4):
        trial = "%s.%d" % (path, attempt)
        run([tools.ffmpeg, "-v", "error", "-y"] + inp +
            ["-c:v", "jpeg2000", "-format", "j2k", "-pred", "dwt97int", "-layer_rates", "%.4f" % ratio,
             "-tile_width", str(src.width), "-tile_height", str(src.height), "-f", "rawvideo", trial])
        size = os.path.getsize(trial)
        if best is None or better(size, best[1], target):
            if best:
                os.remove(best[0])
            best = (trial, size)
        else:
            os.remove(trial)
        if 0.98 * target <= size <= target:
            break
        ratio *= size / (0.99 * target)
    os.replace(best[0], path)
    return path


def better(size, best, target):
    """Larger within target beats smaller; of two over target, the smaller."""
    if size <= target:
        return best > target or size > best
    return best > target and size < best


def cases_of(names):
    """(case name, width, height, format, budget or None, ratio or None)."""
    for name in names:
        if name in PROFILE_CASES:
            w, h, fmt, budget = PROFILE_CASES[name]
            yield name, w, h, fmt, budget, None
        else:
            fmt, _, ratio = name.rpartition("_")
            if fmt not in BITS:
                sys.exit("rd: unknown case %s" % name)
            yield name, GENERIC_SIZE[0], GENERIC_SIZE[1], fmt, None, float(ratio)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--photos", required=True)
    ap.add_argument("--work", default=os.path.join(TOP, "build", "rd-work"))
    ap.add_argument("--cases", default="dci_2k,dci_4k")
    ap.add_argument("--codecs", default="j2kc,opj,grk,ffmpeg")
    ap.add_argument("--j2kc", default=os.path.join(TOP, "build", "core", "cuda", "j2kc"))
    ap.add_argument("--ffmpeg", default=shutil.which("ffmpeg"))
    ap.add_argument("--step-phases", type=int)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    tools = Tools(args, args.work)
    photos = sorted(glob.glob(os.path.join(args.photos, "*.jpg")) + glob.glob(os.path.join(args.photos, "*.png")))
    if not photos:
        sys.exit("rd: no *.jpg or *.png in %s" % args.photos)
    codecs = args.codecs.split(",")
    deltas = {}
    print("%-12s %-16s" % ("case", "photo") + "".join("%22s" % c for c in codecs))
    for name, w, h, fmt, budget, ratio in cases_of(args.cases.split(",")):
        for photo in photos:
            src = Source(tools, photo, w, h, fmt, args.work)
            out = os.path.join(args.work, "enc")
            order = codecs if budget else ["opj"] + [c for c in codecs if c != "opj"]
            res = {}
            for codec in order:
                arg = ratio
                if codec in ("j2kc", "ffmpeg") and not budget:
                    arg = res["opj"][0] if "opj" in res else int(src.raw_bytes() / ratio)
                try:
                    stream = encode(codec, tools, src, budget, arg, out, args.step_phases)
                    if stream:
                        res[codec] = (os.path.getsize(stream), src.psnr(tools, stream, args.work))
                        os.remove(stream)
                except RuntimeError as e:
                    print("  %s failed: %s" % (codec, e), file=sys.stderr)
            cells = ["%10s %8.3f dB" % ("{:,}".format(res[c][0]), res[c][1]) if c in res else "%22s" % "-"
                     for c in codecs]
            print("%-12s %-16s" % (name, os.path.splitext(os.path.basename(photo))[0][:16]) + "".join(
                "%22s" % c for c in cells), flush=True)
            if "j2kc" in res:
                for c in codecs:
                    if c != "j2kc" and c in res:
                        deltas.setdefault((name, c), []).append(res["j2kc"][1] - res[c][1])
    print("\nmean j2kc PSNR minus each peer's (dB; positive: j2kc ahead), worst point in brackets")
    for (name, c), d in sorted(deltas.items()):
        print("  %-12s %-7s %+7.3f  [%+.3f]  (%d photos)" % (name, c, sum(d) / len(d), min(d), len(d)))


if __name__ == "__main__":
    main()
