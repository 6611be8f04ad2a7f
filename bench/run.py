#!/usr/bin/env python3
"""make bench: j2k_cuda and its peers on the same frames, machine and invocation.

Reads everything from the folder bench/prep.sh filled (BENCH_DIR):
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

The pieces: harness.py (the folder, the budget, running and timing commands),
cases.py (formats, cases, frames, PSNR), peers.py (how each encoder and
decoder runs), report.py (results.md and the charts), readme.py (README's
Performance section); this file runs the cases, the stage breakdown and the
rate sweep in priority order and writes results.json.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import sys
import time

from cases import CASES, DCI_CAP, FORMATS, SWEEP_BPP, SWEEP_FORMAT, SWEEP_PSNR, FrameSet, load_photos
from harness import THREADS, Bench, Skip
from peers import (CAPS, ENCODERS, FF_CASE, J2KC, SKIP, decode_only_on, decoders, detect_caps, enc_ffmpeg_libopenjpeg,
                   enc_ffmpeg_native, enc_grk, enc_j2kc, enc_nvjpeg2k, enc_opj, ffmpeg_decode_paths, own_encoder,
                   reference_psnr, run_ffmpeg_encode_paths, use_nvimgcodec_site)
from ht_peers import HT_ENCODERS, HT_SKIP, ht_decoders, ht_target
import report


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


def add_earlier_run(results, path):
    """Starts results from an earlier run's (a run split in parts to fit a
    time budget): its measurements stay until this run replaces them, its
    command goes before this one's, and its seconds count in the total."""
    earlier = json.load(open(path))
    for key in ("cases", "sweep", "stages", "ffmpeg_paths"):
        results[key].update(earlier.get(key) or {})
    meta = results["meta"]
    if earlier["meta"].get("gpu") != meta["gpu"]:
        raise SystemExit("--add-to: %s ran on %s, this machine is %s" % (path, earlier["meta"].get("gpu"), meta["gpu"]))
    meta["command"] = earlier["meta"]["command"] + "; then " + meta["command"]
    meta["date"] = earlier["meta"]["date"]
    return earlier["meta"].get("seconds", 0.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True, help="folder made by bench/prep.sh")
    ap.add_argument("--out", default="build/bench-out", help="results.json, results.md, charts")
    ap.add_argument("--budget", type=float, default=500,
                    help="seconds for the whole run (the last item may overrun it by ~15 s); the cases' order is "
                         "their priority: a cut takes the 8K case's last rows first")
    ap.add_argument("--quick", action="store_true", help="one short pass (debugging the harness)")
    ap.add_argument("--cases", default="", help="comma-separated case ids (default: all)")
    ap.add_argument("--no-sweep", action="store_true")
    ap.add_argument("--add-to", metavar="RESULTS_JSON",
                    help="an earlier run's results.json on the same machine: its cases, stages and sweep are kept "
                         "where this run does not measure them again, and the report covers both runs")
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
    use_nvimgcodec_site(os.path.join(bench.dir, "site"))
    manifest = {}
    try:
        manifest = json.load(open(os.path.join(bench.dir, "manifest.json")))
    except OSError:
        pass
    meta = dict(date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                gpu=gpu_info(bench), cpu=cpu_info(), threads=THREADS,
                command="python3 bench/run.py " + " ".join(
                    os.path.relpath(a) if a.startswith("/") else a for a in sys.argv[1:]), quick=bench.quick,
                manifest=manifest)
    bench.say("GPU: %s; CPU: %s x %d" % (meta["gpu"], meta["cpu"], THREADS))
    detect_caps(bench)
    meta["caps"] = dict(CAPS, j2kc_backend=J2KC["backend"])
    bench.say("caps: %s" % meta["caps"])
    photos = load_photos(os.path.join(bench.dir, "photos"))
    results = dict(meta=meta, cases={}, sweep={}, stages={}, formats={k: v["label"] for k, v in FORMATS.items()},
                   ffmpeg_paths={})
    earlier_seconds = 0.0
    if args.add_to:
        earlier_seconds = add_earlier_run(results, args.add_to)
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
        ht = mode.startswith("ht-")
        # What the encoders are asked: the DCI cap, lossless, or a byte target ("rate").
        coding = mode[len("ht-"):] if ht else mode
        target = ht_target(fs) if coding == "rate" else None
        case = dict(fmt=fmt, content=content, mode=mode, encode={}, decode={},
                    raw_bytes=fs.raw_bytes(), cap=DCI_CAP if mode == "cap" else target)
        results["cases"][case_id] = case
        skip = SKIP | HT_SKIP
        for name, fn in (HT_ENCODERS if ht else ENCODERS):
            if (name, case_id) in skip:
                continue
            out = os.path.join(bench.work, "enc", case_id, re.sub(r"\W+", "_", name))
            os.makedirs(out, exist_ok=True)
            try:
                if bench.left() < 15:
                    raise Skip("time budget")
                r = fn(bench, fs, coding, target, out)
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
        for name, fn in (ht_decoders() if ht else decoders()):
            if ("dec:" + name, case_id) in skip or case_id not in (decode_only_on(name) or (case_id,)):
                continue
            # A Tier-1 placement the default row already ran is not run again.
            dflt = ((case["decode"].get("j2k_cuda") or {}).get("common") or {}).get("tier1_place")
            if name.startswith("j2k_cuda, Tier-1") and dflt and name.endswith(" " + dflt.upper()):
                continue
            entry = {}
            own_enc = case["encode"].get(own_encoder(name), {})
            for which, files in (("common", common), ("own", own_enc.get("files"))):
                if which == "own" and (("own", case_id) in skip or ("own:" + name, case_id) in skip):
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
            sweepers = [("j2k_cuda", enc_j2kc("cuda")), ("j2k_cuda, no step phase search", enc_j2kc("cuda", step_phases=1)),
                        ("Grok grk_compress", enc_grk),
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

    results["meta"]["seconds"] = earlier_seconds + time.monotonic() - bench.t_start
    save()
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
    main()
