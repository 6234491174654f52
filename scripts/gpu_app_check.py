#!/usr/bin/env python3
"""The dashboard on the H200, in one process (qwen3-1.7b shape, random weights, tilelang graph).

    python3 scripts/gpu_app_check.py --out-dir OUT [--device cpu]   (cpu: a plumbing smoke test)

Parts (each in its own try/except; a failure is recorded and the next part runs):
    midrun     the live dashboard (run headless at 160x48) on an 8192-token generation: at 1024
               tokens it profiles a window (`p`), then saves an SVG screenshot mid-run and one of
               the step's timeline (`T`), lets the run finish and writes the final snapshot (for
               `tfdash open`) and its exports
    overhead   tok/s of a 2048-token generation headless and under the live dashboard, A/B in
               one process, alternating, medians (tfdash.app.overhead.dashboard_ab)
Writes results.json, dashboard-midrun.svg and snapshot-h200.json into --out-dir and prints a
short table last. Exit status 1 when a part failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import sys
import time
import traceback
from pathlib import Path

from textual import events

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SIZE = (160, 48)


def send_key(app, key: str) -> None:
    """A key as the terminal driver delivers it. (Pilot.press waits for the process to go idle,
    which under a live decode is the end of the run.)"""
    ev = events.Key(key, key if len(key) == 1 else None)
    ev.set_sender(app)
    app._driver.send_message(ev)


async def midrun(engine, out: Path, max_new: int, profile_at: int) -> dict:
    from tfdash.app.main import live_app, make_session
    from tfdash.engine import DEFAULT_PROMPT
    from tfdash.profiling.export import export_all, write_snapshot

    app = live_app(lambda status: make_session(engine, DEFAULT_PROMPT, max_new), max_new_tokens=max_new,
                   export_dir=out)
    res: dict = {}
    async with app.run_test(size=SIZE) as pilot:
        t0 = time.monotonic()
        while app.snapshot is None or app.snapshot.new_tokens < profile_at:
            if time.monotonic() - t0 > 600:
                raise TimeoutError("no tokens within 600 s")
            await pilot.pause(0.05)
        res["tokens_at_press"] = app.snapshot.new_tokens
        t1 = time.monotonic()
        send_key(app, "p")
        while not (app.snapshot and any(k.measured_p50_ns for k in app.snapshot.kernels)):
            if time.monotonic() - t1 > 300:
                raise TimeoutError("the profile window did not report within 300 s")
            await pilot.pause(0.05)
        res["window_seen_s"] = time.monotonic() - t1
        res["tokens_at_window_seen"] = app.snapshot.new_tokens
        await pilot.pause(0.3)  # let the kernel table and roofline redraw
        res["tokens_at_screenshot"] = app.snapshot.new_tokens
        res["state_at_screenshot"] = app.state
        res["svg"] = str(Path(app.save_screenshot(filename="dashboard-midrun.svg", path=str(out))))
        try:  # the step's timeline of the latest window: PDL overlap between launches, drawn
            send_key(app, "T")
            t2 = time.monotonic()
            while type(app.screen).__name__ != "TimelineScreen" and time.monotonic() - t2 < 10:
                await pilot.pause(0.05)
            await pilot.pause(0.3)
            res["timeline_svg"] = str(Path(app.save_screenshot(filename="timeline-midrun.svg", path=str(out))))
            send_key(app, "escape")
            await pilot.pause(0.2)
        except Exception as e:  # noqa: BLE001 - the run goes on without the picture
            res["timeline_error"] = f"{type(e).__name__}: {e}"
        while app.state not in ("done", "stopped", "error"):
            if time.monotonic() - t0 > 900:
                raise TimeoutError("the run did not finish")
            await pilot.pause(0.1)
        snap = app.snapshot
        await pilot.press("q")
    write_snapshot(snap, out / "snapshot-h200.json")
    export_all(snap, out / "exports")
    res.update(new_tokens=snap.new_tokens, tok_per_s=snap.tok_per_s, run_state=app.state,
               kernels_measured=sum(1 for k in snap.kernels if k.measured_p50_ns is not None),
               kernels=len(snap.kernels))
    return res


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--max-new-tokens", type=int, default=2048, help="per A/B run")
    p.add_argument("--midrun-tokens", type=int, default=8192,
                   help="the screenshot run: long enough that the window reports before it ends")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--model", default=None, help="a preset (default: qwen3-1.7b on CUDA, qwen3-tiny on CPU)")
    p.add_argument("--skip-ab", action="store_true", help="only the mid-run screenshot and snapshot")
    p.add_argument("--skip-midrun", action="store_true", help="only the overhead A/B")
    p.add_argument("--switch-us", type=float, default=None,
                   help="the decode loop's switch interval on CUDA (default tfdash.engine.decode.SWITCH_S)")
    args = p.parse_args(argv)
    import tfdash.engine.decode as decode

    if args.switch_us is not None:
        decode.SWITCH_S = args.switch_us / 1e6
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)

    from tfdash.engine import DEFAULT_PROMPT, load_engine

    cpu = args.device == "cpu"
    if not cpu:  # as `tfdash` on CUDA does before its screen: the sessions' profilers start in workers
        from tfdash.profiling.kernel_map import profiler_on_this_thread

        profiler_on_this_thread()
    n = 96 if cpu else args.max_new_tokens
    m_n = 192 if cpu else args.midrun_tokens
    model = args.model or ("qwen3-tiny" if cpu else "qwen3-1.7b")
    # The A/B runs on the engine the dashboard would build for n tokens (KV capacity 4096 at
    # 2048); the screenshot run needs room for m_n. Attention's grid covers the capacity, so the
    # two are separate engines (the same weights: the same seed).
    engine = load_engine(model=model, device=args.device, max_new_tokens=n, prompt=DEFAULT_PROMPT)
    mid_engine = None if args.skip_midrun else load_engine(model=model, device=args.device, max_new_tokens=m_n,
                                                           prompt=DEFAULT_PROMPT)
    results: dict = {"host": platform.node(), "device": args.device, "backend": engine.backend,
                     "model": engine.config.name, "new_tokens": n, "capacity": engine.plan.capacity,
                     "midrun_tokens": None if args.skip_midrun else m_n, "midrun_capacity": mid_engine.plan.capacity if mid_engine else None,
                     "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                     "command": "python3 scripts/gpu_app_check.py " + " ".join(sys.argv[1:]),
                     "switch_interval_s": decode.SWITCH_S,
                     "ring_in_graph": getattr(engine.runtime, "ring_in_graph", False), "errors": {}}
    try:
        if not args.skip_midrun:
            results["midrun"] = asyncio.run(midrun(mid_engine, out, m_n, profile_at=min(1024, m_n // 8)))
    except Exception:
        results["errors"]["midrun"] = traceback.format_exc(limit=6)
    try:
        if args.skip_ab:
            raise SystemExit
        from tfdash.app.overhead import dashboard_ab
        from tfdash.app.main import make_session

        del mid_engine  # its weights and graph, before the A/B
        results["overhead"] = dashboard_ab(lambda: make_session(engine, DEFAULT_PROMPT, n), rounds=args.rounds,
                                           size=SIZE)
    except SystemExit:
        pass
    except Exception:
        results["errors"]["overhead"] = traceback.format_exc(limit=6)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    m, o = results.get("midrun", {}), results.get("overhead", {})
    print(f"dashboard on {results['backend']} ({results['model']}, {n} new tokens)")
    if m:
        print(f"  mid-run SVG at {m.get('tokens_at_screenshot')} tokens: {m.get('svg')}; "
              f"{m.get('kernels_measured')}/{m.get('kernels')} kernel rows measured; run {m.get('run_state')}, "
              f"{m.get('tok_per_s', 0):.1f} tok/s")
    if o:
        print(f"  tok/s headless {o.get('medians', {}).get('headless')}, dashboard {o.get('medians', {}).get('dashboard')}, "
              f"overhead {o.get('overhead_pct')} %")
        for arm, runs in o.get("details", {}).items():
            print(f"  {arm}: " + "; ".join(f"p50 {d['step_p50_ms'] or 0:.3f} p99 {d['step_p99_ms'] or 0:.3f} ms, "
                                          f"{d['slow_steps']} steps over 2x p50 (+{d['slow_excess_ms']:.1f} ms)"
                                          for d in runs))
    for part, err in results["errors"].items():
        print(f"  {part} FAILED: {err.strip().splitlines()[-1]}")
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
