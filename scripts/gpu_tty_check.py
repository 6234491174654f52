#!/usr/bin/env python3
"""`tfdash` on a real terminal (a pty) on the H200: does anything but the dashboard reach the screen?

    python3 scripts/gpu_tty_check.py --out-dir OUT [--max-new-tokens 8192] [-- extra tfdash args]

Starts `python -m tfdash` in a pty at 160x48, waits for tokens, presses `p` (a CUPTI window from
the worker thread: where kineto prints its "External init callback" line), waits for the kernel
rows, presses `q`. Writes the terminal byte stream (tty.raw), the library log the dashboard kept
(dashboard-stderr.log) and tty.json, and prints a short summary. Exit status 1 when a library
line reached the terminal or the app did not exit cleanly.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

ANSI = re.compile(r"\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][A-Z0-9]|[=>])")
LIBRARY_MARKS = ("External init callback", "TileLang:", "UserWarning", "Traceback")


def plain(buf: bytes) -> str:
    return ANSI.sub("", buf.decode("utf-8", "replace"))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", required=True)
    p.add_argument("--max-new-tokens", type=int, default=8192)
    p.add_argument("rest", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    total = f"{args.max_new_tokens:,}"
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "160", "LINES": "48",
           "TFDASH_CACHE_DIR": os.environ.get("TFDASH_CACHE_DIR", str(out / "cache"))}
    master, slave = pty.openpty()
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    cmd = [sys.executable, "-m", "tfdash", "--max-new-tokens", str(args.max_new_tokens), *rest]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    buf = bytearray()
    marks: dict[str, float] = {}

    def pump(seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            r, _, _ = select.select([master], [], [], 0.1)
            if r:
                try:
                    chunk = os.read(master, 1 << 16)
                except OSError:
                    return
                if not chunk:
                    return
                buf.extend(chunk)

    def tokens() -> int:
        found = re.findall(r"([\d,]+)\s+tokens of " + re.escape(total), plain(bytes(buf[-200000:])))
        return max((int(x.replace(",", "")) for x in found), default=0)

    try:
        while tokens() < 1024 and proc.poll() is None and time.monotonic() - t0 < 400:
            pump(0.3)
        marks["tokens_before_p"] = tokens()
        os.write(master, b"p")
        marks["p_at_s"] = time.monotonic() - t0
        while proc.poll() is None and time.monotonic() - t0 < 420:
            pump(0.3)
            if "measured" in plain(bytes(buf[-100000:])) and tokens() > marks["tokens_before_p"] + 256:
                break
        marks["tokens_before_q"] = tokens()
        os.write(master, b"q")
        while proc.poll() is None and time.monotonic() - t0 < 480:
            pump(0.3)
        pump(1.0)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    rc = proc.wait()
    (out / "tty.raw").write_bytes(bytes(buf))
    text = plain(bytes(buf))
    log = Path(env["TFDASH_CACHE_DIR"]) / "dashboard-stderr.log"
    log_text = log.read_text(errors="replace") if log.exists() else ""
    if log.exists():
        (out / "dashboard-stderr.log").write_text(log_text)
    leaked = [m for m in LIBRARY_MARKS if m in text]
    res = {"command": " ".join(cmd), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rc": rc,
           **marks, "wall_s": time.monotonic() - t0, "leaked_to_terminal": leaked,
           "library_log_lines": len(log_text.splitlines()), "library_log_marks": [m for m in LIBRARY_MARKS if m in log_text],
           "last_line": text.strip().splitlines()[-1] if text.strip() else ""}
    (out / "tty.json").write_text(json.dumps(res, indent=1))
    for k, v in res.items():
        print(f"{k:22} {v}")
    return 0 if rc == 0 and not leaked else 1


if __name__ == "__main__":
    sys.exit(main())
