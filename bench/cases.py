"""The cases of `make bench` (run.py): picture formats, the case list in
priority order, the rate sweep's points, and the frames every peer reads
(natural photo mosaics, flat, white noise), with the PSNR they are scored by."""
import os

import numpy as np

from harness import Skip

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
    # HTJ2K (ISO/IEC 15444-15): a byte target of ht_peers.HT_BPP bits a sample, and lossless.
    ("ht4k-rate-natural", "dci4k", "natural", "ht-rate"),
    ("ht4k-lossless-natural", "dci4k", "natural", "ht-lossless"),
    ("8k444-lossless-natural", "8k444", "natural", "lossless"),
]
HT_CASES = tuple(c for c, _, _, mode in CASES if mode.startswith("ht-"))
SWEEP_FORMAT = "dci2k"
SWEEP_BPP = [0.25, 0.5, 1.0, 2.0, 4.0]
SWEEP_PSNR = [36, 40, 44, 48, 52, 56, 60]  # nvJPEG2000 has no byte target: PSNR targets instead


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
