#!/usr/bin/env python3
"""Continuous per-kernel timing on the H200, in one process (qwen3-1.7b shape, random weights).

    PYTHONPATH=<cupti-python, cuda-bindings, cuda-pathfinder, pyelftools> \\
        python3 scripts/gpu_continuous_check.py --out /tmp/out/continuous_check.json

Parts (each in its own try/except: a failure is written into the JSON and the next part runs):
    env        cupti-python's version and path, which libcupti files the process has mapped
               (torch's and cupti-python's: one copy or two), the chosen source's check()
    graph      CUPTI records for kernels inside CUDAGraph.replay(): 3 replays -> 3 x kernels
               records, their graph id, and the mapper cutting them into 3 whole steps
    kineto     continuous records on, paused for a torch.profiler window (profile_steps), then
               resumed: do records still come back after kineto had CUPTI?
    perturb    at ctx --ctx, --steps steps each, alternating: plain (CUDA events only), under
               continuous records, under a torch.profiler window. Step p50 from the ring's CUDA
               events in each (does tracing slow the step?), and per-launch p50 continuous vs
               torch.profiler (does it change the kernels' own times?)
    ab         --rounds alternating rounds of a --tokens generation: (a) headless without
               profiling, (b) continuous timing on. tok/s of each, overhead %, host CPU seconds
               per run, the mechanism's host ns per step, steps measured vs run, and per step
               Sigma exclusive + gap (the CUPTI span) against that step's CUDA-event time
    sweep      a --sweep-tokens generation with continuous timing and one profile window (`p`)
               at 1024 tokens: sweep points, attention's p50 by ctx_len, pauses; its snapshot
               is written beside --out (open it with `tfdash open`)
Writes everything to --out and prints a short table. Exit status 1 when a part errored.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the JSON results file")
    p.add_argument("--model", default="qwen3-1.7b")
    p.add_argument("--backend", default=None, help="default: tilelang-graph when tilelang is installed")
    p.add_argument("--tokens", type=int, default=2048, help="new tokens per A/B run")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--ctx", type=int, default=1024)
    p.add_argument("--steps", type=int, default=64, help="steps per perturbation measurement")
    p.add_argument("--sweep-tokens", type=int, default=4096)
    p.add_argument("--skip", default="", help="comma-separated parts to skip")
    p.add_argument("--source", default="ring", choices=("ring", "cupti-python"),
                   help="the record source: the C ring (the default) or cupti-python's Python callback")
    p.add_argument("--device", default="cuda", help="cpu: a smoke test of the script's plumbing (qwen3-tiny)")
    args = p.parse_args(argv)

    import torch

    from tfdash.engine import DEFAULT_PROMPT, load_engine, tilelang_available
    from tfdash.profiling.timeline import Timer, profile_steps

    out = {"script": "gpu_continuous_check", "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "host": platform.node(), "argv": sys.argv[1:], "torch": torch.__version__, "parts": {}}
    skip = set(filter(None, args.skip.split(",")))
    st: dict = {}

    def part(name):
        def wrap(fn):
            if name in skip:
                out["parts"][name] = {"skipped": True}
                return
            t = time.perf_counter()
            print(f"# {name}", flush=True)
            try:
                res = fn() or {}
            except Exception as e:  # noqa: BLE001  (record and go on)
                res = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
                print(f"  [ERROR] {name}: {type(e).__name__}: {e}", flush=True)
            res["wall_s"] = round(time.perf_counter() - t, 2)
            out["parts"][name] = res
            write(out, args)  # after every part: a crash later keeps what was measured
        return wrap

    @part("engine")
    def _():
        cuda = args.device == "cuda"
        backend = args.backend or (("tilelang-graph" if tilelang_available() else "torch-graph") if cuda
                                   else "torch-eager")
        if not cuda:
            args.model = "qwen3-tiny"
        eng = load_engine(model=args.model, device=args.device, backend=backend, max_new_tokens=args.tokens,
                          prompt=DEFAULT_PROMPT)
        eng.runtime.ensure_captured()
        st["eng"] = eng
        out["gpu"] = torch.cuda.get_device_name() if cuda else None
        timer = Timer(eng.runtime)
        timer.prepare()  # the kernel map (torch.profiler's first start) before any continuous source
        st["timer"] = timer
        return {"backend": backend, "launches_per_step": len(eng.plan), "capacity": eng.plan.capacity,
                "kernel_map_error": timer.kernel_map.error}

    eng, timer = st.get("eng"), st.get("timer")
    if eng is None or timer is None:
        return finish(out, args)
    rt = eng.runtime

    from tfdash.profiling.continuous import ContinuousTiming, CuptiActivity, Records, StepMapper
    from tfdash.profiling.continuous.ring_source import RingSource

    Source = RingSource if args.source == "ring" else CuptiActivity
    from tfdash.profiling.continuous.check import join_spans, pct, run_steps
    from tfdash.profiling.session import Session

    @part("env")
    def _():
        res = {"source": args.source, "check": Source(rt).check(), "ring_check": RingSource(rt).check()}
        try:
            import cupti
            from importlib.metadata import version

            res.update(cupti_file=getattr(cupti, "__file__", None), cupti_python=version("cupti-python"))
        except Exception as e:  # noqa: BLE001
            res["cupti_import"] = f"{type(e).__name__}: {e}"
        maps = Path("/proc/self/maps").read_text().splitlines()
        res["libcupti_mapped"] = sorted({ln.split()[-1] for ln in maps if "libcupti" in ln})
        return res

    def collecting():
        got: list[Records] = []
        src = Source(rt)
        src.start(got.append)
        return src, got

    @part("graph")
    def _():
        src, got = collecting()
        try:
            with rt.held():
                for _ in range(3):
                    rt.graph.replay()
                rt.synchronize()
            src.flush()
        finally:
            src.stop()
        names = [n for r in got for n in r.names]
        graphs = sorted({int(g) for r in got for g in r.graph})
        m = StepMapper(timer.kernel_map.names)
        steps = sum(len(s) for r in got if (s := m.feed(r)) is not None)
        return {"records": len(names), "expected": 3 * m.K, "graph_ids": graphs, "first_names": names[:5],
                "steps_mapped": steps, "ok": steps == 3 and len(names) >= 3 * m.K,
                "source_error": src.error, "clock_offset_ns": src.clock_offset_ns}

    @part("kineto")
    def _():
        src, got = collecting()
        res = {}
        try:
            with rt.held():
                rt.graph.replay()
                rt.synchronize()
            src.flush()
            res["records_before"] = sum(len(r) for r in got)
            src.pause()
            rt.set_position(args.ctx)
            w = profile_steps(rt, 8, timer)
            res["window_ok"], res["window_error"] = w.ok, w.error
            n0 = sum(len(r) for r in got)
            src.resume()
            with rt.held():
                for _ in range(3):
                    rt.graph.replay()
                rt.synchronize()
            src.flush()
            res["records_after_resume"] = sum(len(r) for r in got) - n0
        finally:
            src.stop()
        res["ok"] = res.get("records_after_resume", 0) >= 3 * len(eng.plan) and res.get("window_ok", False)
        return res

    @part("perturb")
    def _():
        n, ctx = args.steps, args.ctx
        plain, cont, kin = [], [], []
        cont_p50 = kin_p50 = None
        errors: dict = {}

        def arm(name, fn):
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - one arm failing keeps the others
                errors.setdefault(name, f"{type(e).__name__}: {e}")

        def continuous_arm():
            nonlocal cont_p50
            import numpy as np

            seen = []
            t = ContinuousTiming(Source(rt), timer.kernel_map.names, keep=max(2, n), on_steps=seen.append)
            t.start()
            try:
                ev = run_steps(rt, n, ctx)
                t.source.flush()
            finally:
                t.stop()
            cont.append(pct(ev, 50))
            if seen:
                ex = np.concatenate([s.excl for s in seen])
                cont_p50 = [float(pct(ex[:, i], 50)) for i in range(ex.shape[1])]

        def kineto_arm():
            nonlocal kin_p50
            rt.set_position(ctx)
            w = profile_steps(rt, n, timer)
            if not w.ok:
                raise RuntimeError(w.error)
            kin.append(w.step_p50_ns)
            kin_p50 = [w.p50(i) for i in range(len(w.names))]

        for r in range(args.rounds):
            arm("plain", lambda: plain.append(pct(run_steps(rt, n, ctx), 50)))
            arm("continuous", continuous_arm)
            arm("torch_profiler", kineto_arm)
        res = {"ctx": ctx, "steps": n, "step_p50_ns": {"plain": plain, "continuous": cont, "torch_profiler": kin},
               "arm_errors": errors}
        m = {k: statistics.median(v) for k, v in res["step_p50_ns"].items() if v}
        res["median_step_ns"] = m
        if "plain" in m:
            res["step_slowdown_pct"] = {k: 100 * (v / m["plain"] - 1) for k, v in m.items() if k != "plain"}
        if cont_p50 and kin_p50:
            ratios = [a / b for a, b in zip(cont_p50, kin_p50) if b]
            res.update(kernel_sum_ns={"continuous": sum(cont_p50), "torch_profiler": sum(kin_p50)},
                       kernel_ratio_p50=pct(ratios, 50), kernel_ratio_min=min(ratios), kernel_ratio_max=max(ratios),
                       per_launch=[{"role": la.role, "continuous_ns": a, "torch_profiler_ns": b}
                                   for la, a, b in zip(eng.plan.launches, cont_p50, kin_p50)])
        return res

    def session_run(continuous: bool, n: int, steps_log=None, window_at=None):
        kw = dict(timing="continuous", on_steps=steps_log.append if steps_log is not None else None,
                  record_source=Source) if continuous else dict(timing="windows")
        s = Session(eng_for(n), DEFAULT_PROMPT, n, nvml=False, ignore_eos=True, keep_steps=100000, **kw)
        asked = []

        def on(m):
            if window_at is not None and not asked and getattr(m, "new_tokens", 0) >= window_at:
                asked.append(s.request_profile(32))

        c0 = time.process_time()
        s.run(on if window_at is not None else None)
        return s, s.snapshot(), time.process_time() - c0

    prompt_len = len(eng.encode(DEFAULT_PROMPT))
    bigger: dict = {}

    def eng_for(n):
        """The A/B engine (its capacity as the dashboard sizes it for --tokens), or one sized for n."""
        if prompt_len + n + 1 <= eng.plan.capacity:
            return eng
        if bigger.get("n") != n:
            bigger.clear()
            e = load_engine(model=args.model, device=args.device, backend=eng.backend, max_new_tokens=n,
                            prompt=DEFAULT_PROMPT)
            e.runtime.ensure_captured()
            bigger.update(n=n, eng=e)
        return bigger["eng"]

    @part("ab")
    def _():
        session_run(False, 64)
        session_run(True, 64)  # warm-ups: CUPTI's first start, the allocator
        arms = {"headless": [], "continuous": []}
        cpu = {"headless": [], "continuous": []}
        last = {}
        for r in range(args.rounds):
            for arm in (("headless", "continuous") if r % 2 == 0 else ("continuous", "headless")):
                log = [] if arm == "continuous" else None
                s, snap, cpu_s = session_run(arm == "continuous", args.tokens, log)
                arms[arm].append(snap.tok_per_s)
                cpu[arm].append(cpu_s)
                if arm == "continuous":
                    last = {"snap": snap, "log": log, "state": s.continuous.state if s.continuous else None,
                            "note": s.timing_info().note}
        a, b = statistics.median(arms["headless"]), statistics.median(arms["continuous"])
        res = {"tokens": args.tokens, "rounds": args.rounds, "tok_s": arms, "median_tok_s": {"headless": a,
               "continuous": b}, "overhead_pct": 100 * (a - b) / a if a else None, "host_cpu_s_per_run": cpu,
               "method": "the same generation, headless without profiling vs continuous timing, alternating, medians"}
        snap, log = last.get("snap"), last.get("log") or []
        if snap is not None:
            t = snap.timing
            res.update(timing_method=t.method, timing_note=last["note"], source=t.source, state=last["state"],
                       steps_run=snap.steps, steps_measured=t.steps_measured, steps_dropped=t.steps_dropped,
                       records=t.records, records_ignored=t.records_ignored, host_ns_per_step=t.host_ns_per_step)
        if log:
            res.update(join_spans(log, snap.step_ns))
        return res

    @part("sweep")
    def _():
        s, snap, _ = session_run(True, args.sweep_tokens, window_at=1024)
        t = snap.timing
        attn = [i for i, la in enumerate(eng.plan.launches) if la.family == "attention"][:1]
        pts = [w for w in snap.windows]
        path = Path(args.out).with_name("continuous-sweep-snapshot.json")
        from tfdash.profiling.export import write_snapshot

        write_snapshot(snap, path)
        return {"tokens": args.sweep_tokens, "tok_s": snap.tok_per_s, "method": t.method, "note": t.note,
                "pauses": t.pauses, "state": s.continuous.state if s.continuous else None,
                "steps_run": snap.steps, "steps_measured": t.steps_measured, "steps_dropped": t.steps_dropped,
                "sweep_points": len(pts), "profile_windows": snap.profile_windows,
                "attention_p50_by_ctx": [(w.ctx_len, w.kernel_ns[attn[0]]) for w in pts] if attn else [],
                "slow_steps": [{"step": x.step, "span_ns": x.span_ns, "excess_ns": x.excess_ns,
                                "launch": eng.plan.launches[x.launch].role if x.launch >= 0 else "gap",
                                "by_ns": x.launch_excess_ns} for x in t.slow_steps],
                "snapshot": str(path)}

    return finish(out, args)


def write(out, args) -> None:
    from tfdash.profiling.files import write_json_atomic

    write_json_atomic(args.out, json.loads(json.dumps(out, default=str)))


def finish(out, args) -> int:
    out["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    errors = {k: v["error"] for k, v in out["parts"].items() if isinstance(v, dict) and "error" in v}
    out["ok"] = not errors
    write(out, args)
    P = out["parts"]

    def g(*path, fmt="{:.1f}"):
        node = P
        for k in path:
            if not isinstance(node, dict) or node.get(k) is None:
                return "-"
            node = node[k]
        try:
            return fmt.format(node)
        except (TypeError, ValueError):
            return str(node)

    rows = [
        ("backend", g("engine", "backend", fmt="{}")),
        ("cupti check", g("env", "check", fmt="{}")),
        ("libcupti mapped", g("env", "libcupti_mapped", fmt="{}")),
        ("graph records / expected", f"{g('graph', 'records', fmt='{}')} / {g('graph', 'expected', fmt='{}')}"),
        ("records after kineto", g("kineto", "records_after_resume", fmt="{}")),
        ("step slowdown % (perturb)", g("perturb", "step_slowdown_pct", fmt="{}")),
        ("kernel p50 cont/kineto", g("perturb", "kernel_ratio_p50", fmt="{:.4f}")),
        ("tok/s headless", g("ab", "median_tok_s", "headless")),
        ("tok/s continuous", g("ab", "median_tok_s", "continuous")),
        ("overhead %", g("ab", "overhead_pct", fmt="{:.2f}")),
        ("host ns/step (mechanism)", g("ab", "host_ns_per_step", fmt="{:.0f}")),
        ("steps measured / run", f"{g('ab', 'steps_measured', fmt='{}')} / {g('ab', 'steps_run', fmt='{}')}"),
        ("span vs event |rel| p50", g("ab", "span_vs_event_absrel_p50", fmt="{:.4f}")),
        ("sweep points", g("sweep", "sweep_points", fmt="{}")),
        ("parts errored", ", ".join(errors) or "none"),
    ]
    print(f"\nwrote {args.out}")
    for k, v in rows:
        print(f"{k:<28} {v}")
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
