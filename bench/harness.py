"""The harness of `make bench` (run.py): the folder, the time budget, running
and timing commands (whole runs, or FFmpeg's -progress reports over a window
after warm-up), and a peer that cannot run a case (Skip)."""
import os
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

THREADS = os.cpu_count() or 16

# FFmpeg rows timed from `-progress` reports: after WARM seconds of output, the
# frames written over at least WINDOW seconds (and MIN_FRAMES frames, at most
# MAX_WINDOW seconds); then the process is stopped.
FF_WARM, FF_WINDOW, FF_MIN_FRAMES, FF_MAX_WINDOW = 0.5, 1.5, 12, 8.0
FF_PROGRESS = ["-progress", "pipe:1", "-stats_period", "0.25"]


class Skip(Exception):
    """A peer that cannot run a case; the reason goes into the table."""


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
        warm-up, then the process is stopped (SIGTERM), or up to the last
        report before its input ends. Start-up, the first frames and the
        drain at the end are outside the window."""
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
        frames, stopped, ended, why = 0, False, False, None
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
                elif line == "progress=end":
                    # The input ended: the window stops at the report before
                    # this one (this one includes the drain), and the process
                    # exits by itself.
                    ended = True
                    break
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
                if time.monotonic() - t_start > max(5.0, self.left()):
                    why = "time budget"
                    break
        finally:
            # Stopped: SIGTERM, and SIGKILL after 1 s (the output is -f null,
            # and FFmpeg 8 can wait on the endless loop filter's frames);
            # ended: its own exit, with as long to close.
            if p.poll() is None and not ended:
                p.send_signal(signal.SIGTERM if stopped else signal.SIGKILL)
            try:
                p.wait(timeout=10 if ended else 1)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            err.close()
        tail = open(err_path, errors="replace").read()
        self.log.write("rate %s: window %s..%s rc %s\n%s\n" % (" ".join(cmd), s0, last, p.returncode, tail[-1500:]))
        if why:
            raise Skip(why)
        if not stopped and p.returncode not in (0, None):
            raise Skip("exit %d: %s" % (p.returncode, " | ".join(tail.strip().splitlines()[-3:])[:160]))
        if not s0 or last[0] <= s0[0] or last[1] <= s0[1]:
            raise Skip("too few progress reports (%d frames)%s" % (frames, ": the input ended" if ended else ""))
        n, dt = last[1] - s0[1], last[0] - s0[0]
        return dict(fps=n / dt, frames=n, seconds=dt)


def frames_for(bench, per_frame_s, lo=2, hi=24, seconds=6.0):
    n = int(seconds / max(per_frame_s, 1e-3))
    return max(lo, min(hi, n)) if not bench.quick else lo
