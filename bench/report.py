"""Markdown tables and PNG charts of a `make bench` results.json (bench/run.py).

    python3 bench/report.py results.json [OUT_DIR]   # prints the tables, redraws the charts
"""
import json
import math
import os
import sys

CASE_TITLES = {
    "cap": "lossy at the DCI cap (1,302,083 bytes a frame: 250 Mb/s at 24 fps)",
    "lossless": "lossless (5/3, RCT where the components are full size)",
    "ht-rate": "HTJ2K code-blocks at 2 bits a sample (a byte target where the encoder takes one)",
    "ht-lossless": "HTJ2K code-blocks, lossless (5/3, RCT)",
}


def _f(v, nd=1):
    if v is None:
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "lossless"
    return ("%%.%df" % nd) % v


def _bytes(r):
    b = r.get("bytes") or []
    return "{:,}".format(int(sum(b) / len(b))) if b else "-"


def _err(r):
    return (r or {}).get("error", "?").replace("|", "/")[:70]


def _ratio(ref, r):
    if not ref or not r or "fps" not in ref or "fps" not in r or not r["fps"]:
        return "-"
    return "%.1fx" % (ref["fps"] / r["fps"])


def decode_split(res):
    """Rows of j2k_cuda's decode split at FF_CASE, from j2kc_decoder_stage_times
    as j2kc_bench reports it (ms a frame): CUDA backend, tier2 and tier1 are CPU
    time summed over the worker threads, upload/dwt/color/download GPU time."""
    fp = res.get("ffmpeg_paths") or {}
    case = res["cases"].get(fp.get("case") or "dci4k-cap-natural") or {}
    threads = res["meta"].get("threads") or 1
    rows = []
    for name, entry in (case.get("decode") or {}).items():
        r = (entry or {}).get("common") or {}
        s = r.get("stages_ms")
        if not name.startswith("j2k_cuda") or "FFmpeg" in name or "CPU backend" in name or not s or not r.get("fps"):
            continue
        # With Tier-1 on the GPU, tier1 is the Tier-1 kernel's GPU time (j2kc.h).
        place = r.get("tier1_place", "cpu")
        t1_gpu = place == "gpu"
        cpu = s.get("tier2", 0) + (0 if t1_gpu else s.get("tier1", 0))
        gpu = sum(s.get(k, 0) for k in ("upload", "dwt", "color", "download")) + (s.get("tier1", 0) if t1_gpu else 0)
        rows.append(dict(name=name, place=place, fps=r["fps"], wall=1000.0 / r["fps"], tier2=s.get("tier2", 0),
                         tier1=s.get("tier1", 0), cpu=cpu, cpu_wall=cpu / threads, upload=s.get("upload", 0),
                         dwt=s.get("dwt", 0), color=s.get("color", 0), download=s.get("download", 0), gpu=gpu,
                         latency=s.get("total", 0)))
    return rows


def ffmpeg_path_rows(res):
    """(encode rows, decode rows) of the FFmpeg paths, each with fps or error,
    share of the issue's target, and (decode) the ratio to FFmpeg's own decoder."""
    fp = res.get("ffmpeg_paths") or {}
    enc = [dict(r, target=fp.get("enc_target")) for r in fp.get("encode", [])]
    dec = [dict(r, target=fp.get("dec_target")) for r in fp.get("decode", [])]
    native = next((r for r in dec if r["label"].startswith("FFmpeg jpeg2000") and r.get("fps")), None)
    for r in dec:
        if native and r.get("fps") and r is not native:
            r["vs_native"] = r["fps"] / native["fps"]
    return enc, dec


def _share(r):
    if not r.get("fps") or not r.get("target"):
        return "-"
    return "%.0f%%" % (100.0 * r["fps"] / r["target"])


def _cmd(r):
    c = r.get("command")
    return "`%s`" % c.replace("|", "\\|") if c else "-"


def ffmpeg_markdown(res):
    fp = res.get("ffmpeg_paths") or {}
    if not fp.get("encode") and not fp.get("decode"):
        return []
    case = res["cases"].get(fp.get("case")) or {}
    out = ["## FFmpeg paths: %s, %s content, %s" % (
        res["formats"].get(case.get("fmt"), case.get("fmt")), case.get("content"),
        CASE_TITLES.get(case.get("mode"), case.get("mode"))), ""]
    if fp.get("note"):
        out += [fp["note"] + ".", ""]
    enc, dec = ffmpeg_path_rows(res)
    if enc:
        out += ["Encode through ffmpeg from host frames (target: %.0f fps). Input ceiling: the same command "
                "with no encoder; frames in memory: the clip's distinct frames read once and replayed as references "
                "(loop filter), so no file is read while timed; glibc env: the malloc settings that keep FFmpeg's "
                "rawvideo packets off a fresh mmap each." % fp.get("enc_target", 0), "",
                "| path | fps | of target | frames timed | command |", "|---|---|---|---|---|"]
        for r in enc:
            fps = _f(r["fps"], 1) if "fps" in r else "n/a (%s)" % _err(r)
            out.append("| %s | %s | %s | %s | %s |" % (r["label"], fps, _share(r), r.get("frames", "-"), _cmd(r)))
        out.append("")
    if dec:
        out += ["Decode (target: %.0f fps through `ffmpeg -f null`), j2k_cuda's codestreams of the case; "
                "FFmpeg reads them from an MXF clip (`-c copy` of the codestreams, looped); j2kc_bench is the "
                "library through its C API, for the wrapper's share. Ratio: fps over FFmpeg's native jpeg2000 "
                "decoder's (%d threads, frame threads) on the same clip." % (fp.get("dec_target", 0),
                                                                             res["meta"]["threads"]), "",
                "| decoder | fps | of target | vs FFmpeg native | PSNR dB | command |", "|---|---|---|---|---|---|"]
        for r in dec:
            fps = _f(r["fps"], 1) if "fps" in r else "n/a (%s)" % _err(r)
            ratio = "%.1fx" % r["vs_native"] if r.get("vs_native") else "-"
            out.append("| %s | %s | %s | %s | %s | %s |" % (r["label"], fps, _share(r), ratio,
                                                            _f(r.get("psnr"), 2), _cmd(r)))
        out.append("")
    split = decode_split(res)
    if split:
        out += ["j2k_cuda's decode split (j2kc_decoder_stage_times through j2kc_bench, ms a frame, frames in "
                "flight overlapping): CPU Tier-2, and Tier-1 where it runs on the CPU, are thread-ms summed over "
                "the workers (CPU / %d: the wall time if they kept every thread busy); on the GPU, Tier-1 is its "
                "kernel's time and upload includes the code-block bytes; GPU stages from CUDA events; latency: "
                "submit to receive." % res["meta"]["threads"], "",
                "| decoder | fps | wall ms/frame | Tier-1 on | Tier-2 (CPU) | Tier-1 | CPU sum | CPU / %d | "
                "GPU upload | GPU dequant+IDWT | GPU MCT+pack | GPU download | GPU sum | latency |" %
                res["meta"]["threads"], "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in split:
            out.append("| %s | %s | %s | %s | %s |" % (
                r["name"], _f(r["fps"], 2), _f(r["wall"], 2), r["place"].upper(),
                " | ".join(_f(r[k], 2) for k in ("tier2", "tier1", "cpu", "cpu_wall", "upload", "dwt", "color",
                                                 "download", "gpu", "latency"))))
        out.append("")
    return out


CAP_FORMATS = (("dci2k", "DCI 2K"), ("dci4k", "DCI 4K"))


def dci_cap_points(res):
    """Each encoder's (mean bytes a frame, PSNR) at the DCI caps on natural
    frames, by format: {name: {"dci2k": (bytes, psnr), ...}}, in the order the
    encoders first appear."""
    points = {}
    for f, _ in CAP_FORMATS:
        c = res["cases"].get("%s-cap-natural" % f) or {}
        for name, r in (c.get("encode") or {}).items():
            if r.get("bytes") and r.get("psnr") is not None and not math.isinf(r["psnr"]):
                points.setdefault(name, {})[f] = (int(sum(r["bytes"]) / len(r["bytes"])), r["psnr"])
    return points


def markdown(res):
    m = res["meta"]
    out = ["# make bench: j2k_cuda against its peers", "",
           "%s; GPU: %s; CPU: %s, %d threads for every CPU peer; command: `%s`%s; %.0f s." % (
               m["date"], m["gpu"], m["cpu"], m["threads"], m["command"], " (quick pass)" if m.get("quick") else "",
               m.get("seconds", 0)), ""]
    out.append("Encode fps: frames a second over the timed frames after warm-up; ratio: j2k_cuda's fps over the "
               "peer's (>1: j2k_cuda faster). Bytes: mean codestream size. PSNR: OpenJPEG's decode of the "
               "encoder's first frame against the source. Decode: each decoder on j2k_cuda's stream (common) "
               "and on its own encoder's stream (own). CLI tools (opj_*, grk_*) run one process a frame, reading "
               "and writing files in tmpfs; FFmpeg's j2k_cuda rows are timed from ffmpeg's -progress reports over a "
               "window after warm-up (-f null output), FFmpeg's own codecs (frame threads, frames done in bursts) "
               "subtract a one-frame run (start-up); nvJPEG2000 gets CUDA frames in batches through nvimgcodec, and both it and j2k_cuda's GPU decode rows write CUDA memory. GPU MiB: device memory the codec took (drop of "
               "free memory).")
    out.append("")
    for cid, c in res["cases"].items():
        title = "%s, %s content, %s" % (res["formats"].get(c["fmt"], c["fmt"]), c["content"],
                                       CASE_TITLES.get(c["mode"], c["mode"]))
        out += ["## %s" % title, ""]
        if c.get("skipped"):
            out += ["not run: %s" % c["skipped"], ""]
            continue
        ref_e = c["encode"].get("j2k_cuda")
        ref_d = c["decode"].get("j2k_cuda", {}).get("common")
        out.append("| codec | encode fps | j2k_cuda enc ratio | bytes/frame | PSNR dB | decode fps (common) | "
                   "j2k_cuda dec ratio | decode fps (own) | GPU MiB enc/dec | notes |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        names = list(c["encode"].keys()) + [n for n in c["decode"] if n not in c["encode"]]
        for name in names:
            e = c["encode"].get(name)
            d = c["decode"].get(name, {})
            dc, do = d.get("common"), d.get("own")
            cells = [name]
            if e is None:
                cells += ["-", "-", "-", "-"]
            elif "error" in e:
                cells += ["n/a", "-", "-", "-"]
            else:
                cells += [_f(e["fps"], 2), _ratio(ref_e, e) if name != "j2k_cuda" else "1.0x", _bytes(e),
                          _f(e.get("psnr"), 2)]
            if dc is None:
                cells += ["-", "-"]
            elif "error" in dc:
                cells += ["n/a", "-"]
            else:
                cells += [_f(dc["fps"], 2), _ratio(ref_d, dc) if name != "j2k_cuda" else "1.0x"]
            cells.append("-" if do is None else ("n/a" if "error" in do else _f(do["fps"], 2)))
            mem = [_f((x or {}).get("gpu_mem_mib"), 0) if (x or {}).get("gpu_mem_mib", -1) > 0 else "-"
                   for x in (e, dc)]
            cells.append("/".join(mem))
            notes = []
            for label, x in (("enc", e), ("dec", dc), ("own dec", do)):
                if x and "error" in x:
                    notes.append("%s: %s" % (label, _err(x)))
            if e and "note" in e:
                notes.append(e["note"])
            if c.get("cap") and e and e.get("bytes") and max(e["bytes"]) > c["cap"]:
                notes.append("over the cap")
            cells.append("; ".join(notes))
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    out += ffmpeg_markdown(res)
    st = res.get("stages") or {}
    if any(k.startswith(("encode", "decode")) for k in st):
        out += ["## j2k_cuda per-stage milliseconds (DCI 4K natural, J2KC_TIMING=1: each stage synchronised)", "",
                "| pass | upload | colour | DWT | quant | Tier-1 | rate | Tier-2 | download | total | GPU MiB |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for k, v in st.items():
            s = v.get("stages_ms") if isinstance(v, dict) else None
            if not s:
                continue
            out.append("| %s | %s | %s |" % (k, " | ".join(_f(s[x], 2) for x in (
                "upload", "color", "dwt", "quant", "tier1", "rate", "tier2", "download", "total")),
                _f(v.get("gpu_mem_mib"), 0)))
        out.append("")
    caps = dci_cap_points(res)
    if caps:
        out += ["## Rate-distortion at the DCI caps (natural content; PSNR of OpenJPEG's decode)", "",
                "| encoder | " + " | ".join("%s bytes/frame | %s PSNR dB" % (t, t) for _, t in CAP_FORMATS) + " |",
                "|---" * (1 + 2 * len(CAP_FORMATS)) + "|"]
        for name, pts in caps.items():
            cells = []
            for f, _ in CAP_FORMATS:
                b, q = pts.get(f, (None, None))
                cells += ["-" if b is None else "{:,}".format(b), _f(q, 2)]
            out.append("| %s | %s |" % (name, " | ".join(cells)))
        out.append("")
    sw = res.get("sweep") or {}
    if sw:
        out += ["## Rate-distortion sweep (%s, natural content; PSNR of OpenJPEG's decode)" %
                res["formats"].get("dci2k"), "",
                "| codec | points (bytes: PSNR dB) |", "|---|---|"]
        for name, pts in sw.items():
            cells = []
            for p in pts:
                if "error" in p:
                    cells.append("n/a (%s)" % _err(p)[:40])
                else:
                    cells.append("{:,}: {:.2f}".format(p["bytes"], p["psnr"]))
            out.append("| %s | %s |" % (name, "; ".join(cells)))
        out.append("")
        out.append("nvJPEG2000 takes no byte target: its points are PSNR targets (%s dB)." %
                   ", ".join(str(p.get("psnr_target")) for p in sw.get("nvJPEG2000", [])))
        out.append("")
    return "\n".join(out)


def charts(res, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    made = []
    cases = [(cid, c) for cid, c in res["cases"].items() if not c.get("skipped")]
    sub = "%s, %s" % (res["meta"]["gpu"].split(",")[0], res["meta"]["date"])

    def bars(kind, fname, title):
        names = []
        for _, c in cases:
            src = c["encode"] if kind == "encode" else c["decode"]
            for n in src:
                if n not in names:
                    names.append(n)
        fig, ax = plt.subplots(figsize=(13, 5.5))
        width = 0.8 / max(1, len(names))
        for i, n in enumerate(names):
            ys = []
            for _, c in cases:
                r = c["encode"].get(n) if kind == "encode" else (c["decode"].get(n) or {}).get("common")
                ys.append(r["fps"] if r and "fps" in r else 0)
            ax.bar([k + i * width for k in range(len(cases))], ys, width, label=n)
        if any(p.get_height() > 0 for p in ax.patches):
            ax.set_yscale("log")
        ax.set_xticks([k + 0.4 - width / 2 for k in range(len(cases))])
        ax.set_xticklabels([cid for cid, _ in cases], rotation=15, fontsize=8)
        ax.set_ylabel("frames per second (log)")
        ax.set_title("%s (%s)" % (title, sub))
        ax.legend(fontsize=7, ncol=3)
        ax.grid(axis="y", which="both", alpha=0.3)
        fig.tight_layout()
        p = os.path.join(out_dir, fname)
        fig.savefig(p, dpi=110)
        plt.close(fig)
        made.append(p)

    bars("encode", "encode_fps.png", "Encode")
    bars("decode", "decode_fps.png", "Decode of j2k_cuda's stream")

    sw = res.get("sweep") or {}
    caps = dci_cap_points(res)
    if sw or caps:
        # Left: the DCI 2K sweep with each encoder's point at the 2K cap (a
        # star, same colour); right: the points at the DCI 4K cap.
        fig, (ax, ax4) = plt.subplots(1, 2, figsize=(13, 5.5), gridspec_kw=dict(width_ratios=[3, 2]))
        names = list(sw) + [n for n in caps if n not in sw]
        colour = {n: "C%d" % (i % 10) for i, n in enumerate(names)}
        for n, pts in sw.items():
            pts = [p for p in pts if "psnr" in p and p["psnr"] is not None and not math.isinf(p["psnr"])]
            if pts:
                ax.plot([p["bytes"] / 1e6 for p in pts], [p["psnr"] for p in pts], "o-", color=colour[n], label=n)
        for n, pts in caps.items():
            for a, f in ((ax, "dci2k"), (ax4, "dci4k")):
                if f in pts:
                    a.plot(pts[f][0] / 1e6, pts[f][1], "*", ms=11, color=colour[n],
                           label=n if a is ax4 or n not in sw else None)
        ax.set_xscale("log")
        ax.set_xlabel("bytes per frame (MB, log); stars: at the DCI cap")
        ax.set_ylabel("PSNR dB (OpenJPEG's decode)")
        ax.set_title("Rate-distortion, %s natural (%s)" % (res["formats"].get("dci2k"), sub), fontsize=9)
        ax4.set_xlabel("bytes per frame (MB)")
        ax4.set_title("At the DCI cap, %s natural" % res["formats"].get("dci4k"), fontsize=9)
        for a in (ax, ax4):
            a.grid(alpha=0.3)
            if a.get_legend_handles_labels()[0]:
                a.legend(fontsize=7)
        fig.tight_layout()
        p = os.path.join(out_dir, "rate_distortion.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        made.append(p)

    st = {k: v for k, v in (res.get("stages") or {}).items() if isinstance(v, dict) and v.get("stages_ms")}
    if st:
        keys = ["upload", "color", "dwt", "quant", "tier1", "rate", "tier2", "download"]
        fig, ax = plt.subplots(figsize=(8, 3.5))
        for i, (k, v) in enumerate(st.items()):
            left = 0
            for j, s in enumerate(keys):
                w = v["stages_ms"].get(s, 0)
                ax.barh(i, w, left=left, color="C%d" % j, label=s if i == 0 else None)
                left += w
        ax.set_yticks(range(len(st)))
        ax.set_yticklabels(list(st.keys()))
        ax.set_xlabel("milliseconds per frame (stages synchronised)")
        ax.set_title("j2k_cuda per-stage time, DCI 4K natural (%s)" % sub, fontsize=9)
        ax.legend(fontsize=7, ncol=4)
        fig.tight_layout()
        p = os.path.join(out_dir, "stages.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        made.append(p)

    mem = []
    for cid, c in cases:
        for n, r in c["encode"].items():
            if r.get("gpu_mem_mib", -1) > 0:
                mem.append(("%s enc\n%s" % (n, cid), r["gpu_mem_mib"]))
        for n, d in c["decode"].items():
            r = (d or {}).get("common") or {}
            if r.get("gpu_mem_mib", -1) > 0:
                mem.append(("%s dec\n%s" % (n, cid), r["gpu_mem_mib"]))
    if mem:
        fig, ax = plt.subplots(figsize=(10, max(3, 0.35 * len(mem))))
        ax.barh(range(len(mem)), [m[1] for m in mem])
        ax.set_yticks(range(len(mem)))
        ax.set_yticklabels([m[0].replace("\n", " | ") for m in mem], fontsize=7)
        ax.set_xlabel("GPU memory taken (MiB)")
        ax.set_title("GPU memory (%s)" % sub, fontsize=9)
        fig.tight_layout()
        p = os.path.join(out_dir, "gpu_memory.png")
        fig.savefig(p, dpi=110)
        plt.close(fig)
        made.append(p)
    return made


if __name__ == "__main__":
    res = json.load(open(sys.argv[1]))
    print(markdown(res))
    if len(sys.argv) > 2:
        print(charts(res, sys.argv[2]), file=sys.stderr)
