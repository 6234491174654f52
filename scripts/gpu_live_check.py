#!/usr/bin/env python3
"""The live dashboard's keyboard features on the H200, in one process (qwen3-1.7b, random weights).

    python3 scripts/gpu_live_check.py --out-dir OUT [--parts ab,counters,rates] [--device cpu]

Parts (each in its own try/except; a failure is recorded and the next part runs):
    ab        `a` in a live 8192-token run, the variant picked by name (--variant, default
              tilelang-lateres), ⏎; waits for the verdict and saves dashboard-ab.svg of the A/B
              screen with it. `tfdash bench` on the same pair, right after, is the comparison.
    counters  the drill-down of gate_up (⏎ on its row), `n`; waits until its counters tab is
              filled, saves drill-counters.svg, and compares tok/s of the last 256 steps before
              the key with the same after the ncu child process has finished
    rates     a 2048-token run under the dashboard: its time to first token and decode-only tok/s
Writes results.json into --out-dir and prints a short table last. Exit status 1 when a part failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_app_check import SIZE, send_key  # noqa: E402

RECENT = 256  # steps in "tok/s now" before and after the counters key


def recent_tok_s(snap, after_step: int | None = None) -> tuple[float, int, int]:
    """(tok/s from the median of RECENT step times, how many it used, the step index of the first):
    the latest RECENT, or with `after_step` the first RECENT from that step on."""
    kept = list(snap.step_ns)
    first = snap.steps - len(kept)  # the step index of kept[0]
    if after_step is None:
        start = max(0, len(kept) - RECENT)
    else:
        start = max(0, after_step - first)
    usable = kept[start:start + RECENT]
    if not usable:
        return 0.0, 0, first + start
    return 1e9 / statistics.median(usable), len(usable), first + start


async def wait(pilot, cond, what: str, timeout: float) -> float:
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        await pilot.pause(0.1)
    return time.monotonic() - t0


def app_for(engine, max_new: int):
    from tfdash.app.main import live_app, make_session
    from tfdash.engine import DEFAULT_PROMPT

    return live_app(lambda status: make_session(engine, DEFAULT_PROMPT, max_new, ignore_eos=True),
                    max_new_tokens=max_new)


async def ab_part(engine, out: Path, variant: str, max_new: int, res: dict) -> dict:
    """(`res` is filled as the part goes, so a failure keeps what was seen.)"""
    from textual.widgets import DataTable

    app = app_for(engine, max_new)
    res.update(variant=variant, new_tokens=max_new)
    async with app.run_test(size=SIZE) as pilot:
        await wait(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens >= 256, "tokens", 600)
        send_key(app, "a")
        await wait(pilot, lambda: type(app.screen).__name__ == "ABScreen", "the A/B screen", 10)
        await pilot.pause(0.3)
        table = app.screen.query_one("#ab-variants", DataTable)
        names = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        table.move_cursor(row=names.index(variant))
        await pilot.pause(0.1)
        res["tokens_at_start"] = app.snapshot.new_tokens
        send_key(app, "enter")
        status, seen = app.screen.query_one("#ab-status"), []
        t0 = time.monotonic()

        def verdict() -> bool:  # every status line the screen shows, with its time, for the record
            line = str(status.render())
            if not seen or seen[-1][1] != line:
                seen.append((round(time.monotonic() - t0, 2), line, app.snapshot.new_tokens, app.state))
                res["status_lines"] = seen
            return bool(app.snapshot.ab)

        res["wait_s"] = await wait(pilot, verdict, "the A/B verdict", 240)
        await pilot.pause(0.5)
        res["svg"] = str(app.save_screenshot(filename="dashboard-ab.svg", path=str(out)))
        r = app.snapshot.ab[-1]
        res["result"] = r
        send_key(app, "escape")
        await pilot.pause(0.2)
        send_key(app, "q")
        await pilot.pause(0.5)
    return res


async def counters_part(engine, out: Path, max_new: int) -> dict:
    from tfdash.app.widgets.kernel_table import KernelTable

    app = app_for(engine, max_new)
    res: dict = {"new_tokens": max_new, "launch": "gate_up"}
    async with app.run_test(size=SIZE) as pilot:
        await wait(pilot, lambda: app.snapshot is not None and app.snapshot.new_tokens >= 1024, "tokens", 600)
        kt = app.query_one(KernelTable)
        labels = [str(kt.table.get_row_at(i)[0]).strip() for i in range(kt.table.row_count)]
        kt.table.move_cursor(row=labels.index("gate_up"))
        before, n_before, ctx_before = recent_tok_s(app.snapshot)
        res.update(tok_s_before=before, steps_before=n_before, tokens_at_press=app.snapshot.new_tokens,
                   steps_at_press=app.snapshot.steps, ctx_before=ctx_before)
        send_key(app, "enter")
        await wait(pilot, lambda: type(app.screen).__name__ == "DrillScreen", "the drill-down", 10)
        await pilot.pause(0.3)
        send_key(app, "n")
        t0 = time.monotonic()

        drill = app.screen

        def filled() -> bool:
            why = next((s for s in getattr(drill, "_counter_status", {}).values() if s.startswith("unavailable")), "")
            if why:
                raise RuntimeError(f"the counters tab says {why}")
            return any(k.counters is not None and k.role.endswith(".gate_up") for k in app.snapshot.kernels)

        res["counters_s"] = await wait(pilot, filled, "gate_up's counters", 420)
        steps_done = app.snapshot.steps
        # the RECENT steps right after the counters arrived, before anything else (the screenshot) runs
        await wait(pilot, lambda: app.snapshot.steps >= steps_done + RECENT, "steps after ncu", 60)
        after, n_after, ctx_after = recent_tok_s(app.snapshot, after_step=steps_done)
        await pilot.pause(1.0)
        res["svg"] = str(app.save_screenshot(filename="drill-counters.svg", path=str(out)))
        row = next(k for k in app.snapshot.kernels if k.counters is not None and k.role.endswith(".gate_up"))
        res["counters"] = {"role": row.role, "dram_bytes": row.counters.dram_bytes,
                           "analyzer_bytes": row.bytes_read + row.bytes_written}
        res.update(tok_s_after=after, steps_after=n_after, wall_s=time.monotonic() - t0, ctx_after=ctx_after,
                   change_pct=100.0 * (after - before) / before if before else None)
        send_key(app, "escape")
        await pilot.pause(0.2)
        send_key(app, "q")
        await pilot.pause(0.5)
    # ctx_len moved on while ncu ran, so each side is set against the same graph replayed
    # undisturbed over the same positions, right after the run
    for side in ("before", "after"):
        ref = 1e9 / reference_step_ns(engine, max(0, res[f"ctx_{side}"]), RECENT)
        res[f"tok_s_{side}_undisturbed"] = ref
        res[f"{side}_vs_undisturbed_pct"] = 100.0 * (res[f"tok_s_{side}"] - ref) / ref
    return res


def reference_step_ns(engine, ctx: int, n: int) -> float:
    """ns a step of `n` back-to-back replays from position `ctx` (CUDA events; pos and tok put back)."""
    import torch

    rt = engine.runtime
    with rt.held(("pos", "tok")):
        rt.set_position(ctx)
        rt.step()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(n):
            rt.step()
        b.record()
        b.synchronize()
    return a.elapsed_time(b) * 1e6 / n


async def rates_part(engine, max_new: int) -> dict:
    app = app_for(engine, max_new)
    async with app.run_test(size=SIZE) as pilot:
        await wait(pilot, lambda: app.state in ("done", "stopped", "error"), "the run", 600)
        snap = app.snapshot
        send_key(app, "q")
        await pilot.pause(0.5)
    return {"new_tokens": snap.new_tokens, "ttft_ms": snap.ttft_ns / 1e6, "tok_s": snap.tok_per_s,
            "decode_tok_s": snap.decode_tok_per_s, "state": app.state}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--parts", default="ab,counters,rates")
    p.add_argument("--variant", default="tilelang-lateres")
    p.add_argument("--max-new-tokens", type=int, default=8192, help="the A/B and counters runs")
    p.add_argument("--stacks-every", type=float, default=0,
                   help="dump every thread's stack into OUT/stacks.txt each this many seconds (a hang's record)")
    args = p.parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if args.stacks_every:
        import faulthandler

        faulthandler.dump_traceback_later(args.stacks_every, repeat=True, file=open(out / "stacks.txt", "w"))

    from tfdash.engine import DEFAULT_PROMPT, load_engine

    cpu = args.device == "cpu"
    model = "qwen3-tiny" if cpu else "qwen3-1.7b"
    long_n = 3000 if cpu else args.max_new_tokens
    engine = load_engine(model=model, device=args.device, max_new_tokens=long_n, prompt=DEFAULT_PROMPT)
    results: dict = {"host": platform.node(), "device": args.device, "backend": engine.backend, "model": model,
                     "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                     "command": "python3 scripts/gpu_live_check.py " + " ".join(sys.argv[1:]), "errors": {}}
    parts = args.parts.split(",")
    for part in parts:
        try:
            if part == "ab":
                results["ab"] = {}
                results["ab"] = asyncio.run(ab_part(engine, out, args.variant, long_n, results["ab"]))
            elif part == "counters":  # long enough to outlast the ncu child process
                n_c = 3000 if cpu else 32768
                c_engine = load_engine(model=model, device=args.device, max_new_tokens=n_c, prompt=DEFAULT_PROMPT)
                results["counters"] = asyncio.run(counters_part(c_engine, out, n_c))
                del c_engine
            elif part == "rates":
                short = load_engine(model=model, device=args.device, max_new_tokens=2048, prompt=DEFAULT_PROMPT)
                results["rates"] = asyncio.run(rates_part(short, 96 if cpu else 2048))
        except Exception:
            results["errors"][part] = traceback.format_exc(limit=6)
        (out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    a, c, r = results.get("ab", {}), results.get("counters", {}), results.get("rates", {})
    if a:
        res = a.get("result", {})
        print(f"ab {a['variant']}: {res.get('verdict')} (A {res.get('a', {}).get('tok_per_s')}, "
              f"B {res.get('b', {}).get('tok_per_s')}); {a.get('svg')}")
    if c:
        print(f"counters {c.get('counters')}: ncu {c.get('counters_s', 0):.0f} s; tok/s before {c.get('tok_s_before', 0):.1f} "
              f"({c.get('before_vs_undisturbed_pct', 0):+.2f} % vs undisturbed), after {c.get('tok_s_after', 0):.1f} "
              f"({c.get('after_vs_undisturbed_pct', 0):+.2f} %); {c.get('svg')}")
    if r:
        print(f"rates (dashboard, {r['new_tokens']} tokens): TTFT {r['ttft_ms']:.1f} ms, tok/s {r['tok_s']:.1f}, "
              f"decode-only {r['decode_tok_s']:.1f}")
    for part, err in results["errors"].items():
        print(f"  {part} FAILED: {err.strip().splitlines()[-1]}")
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
