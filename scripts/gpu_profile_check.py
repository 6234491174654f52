#!/usr/bin/env python3
"""The profiling layer on the H200, end to end, in one process (qwen3-1.7b shape, random weights).

    python3 scripts/gpu_profile_check.py --out /tmp/out/profile_check.json [--backend torch-graph]

Parts (each in its own try/except: a failure is recorded and the next part runs):
    probe      cold D2D copy bandwidth (2 x 2 GiB), cached per device -> the measured Target
    window     a live Session decoding past ctx 1024 with a CUPTI profile window there; then a
               window outside the generation at exactly ctx 1024. Checks: every launch measured,
               sum of kernel p50s + gap = step p50 within 1%, CUPTI's replay period vs the ring
               events' step time, tilelang kernel names
    nvml       a plain 2048-token Session with the NVML sampler: GPM DRAM GB/s over the decode vs
               the analyzer's predicted GB/s (bytes/step at the mid ctx x steps/s), and the ratio
    marginal   doubled-launch A/B of lm_head and L13.gate_up at ctx 1024
    overhead   tok/s over 2048 tokens with and without a 32-step window every 1024 tokens (the bar),
               then every 256 (a stress figure)
               (alternating, same process, medians)
Writes everything as JSON to --out (and the window session's snapshot, Chrome trace and CSV
beside it), then prints a short table. Exit status 1 when a part failed or a check did not hold.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the JSON results file")
    p.add_argument("--backend", default=None, help="tilelang-graph (default when tilelang is installed) or torch-graph")
    p.add_argument("--model", default="qwen3-1.7b")
    p.add_argument("--device", default="cuda", help="cpu: a smoke test of the script's plumbing (torch-eager)")
    p.add_argument("--ctx", type=int, default=1024)
    p.add_argument("--steps", type=int, default=32, help="steps per profile window")
    p.add_argument("--tokens", type=int, default=2048, help="new tokens for the NVML and overhead runs")
    p.add_argument("--every", default="1024,256",
                   help="overhead runs: a window every N tokens, for each N (the 3%% bar holds for the first)")
    p.add_argument("--rounds", type=int, default=3, help="overhead A/B rounds")
    p.add_argument("--refresh-probe", action="store_true", help="measure the bandwidth again (ignore the cache)")
    p.add_argument("--skip", default="", help="comma-separated parts to skip")
    args = p.parse_args(argv)

    import torch

    from tfdash.engine import DEFAULT_PROMPT, load_engine, tilelang_available

    out = {"script": "gpu_profile_check", "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "host": platform.node(), "argv": sys.argv[1:], "torch": torch.__version__, "parts": {}, "checks": []}
    skip = set(filter(None, args.skip.split(",")))
    ctx_state: dict = {}

    def check(name, ok, detail=""):
        out["checks"].append({"name": name, "ok": bool(ok), "detail": detail})
        print(f"  [{'ok' if ok else 'FAIL'}] {name} {detail}", flush=True)

    def part(name):
        def wrap(fn):
            if name in skip:
                out["parts"][name] = {"skipped": True}
                return
            t = time.perf_counter()
            print(f"# {name}", flush=True)
            try:
                res = fn() or {}
                res["wall_s"] = round(time.perf_counter() - t, 2)
                out["parts"][name] = res
            except Exception as e:  # noqa: BLE001  (record and go on)
                out["parts"][name] = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc(),
                                      "wall_s": round(time.perf_counter() - t, 2)}
                print(f"  [ERROR] {name}: {type(e).__name__}: {e}", flush=True)
        return wrap

    @part("engine")
    def _():
        cuda = args.device == "cuda"
        backend = args.backend or (("tilelang-graph" if tilelang_available() else "torch-graph") if cuda else "torch-eager")
        cap = max(4096, args.ctx + 2 * args.steps + 64, args.tokens + 64)
        try:
            eng = load_engine(model=args.model, device=args.device, backend=backend, capacity=cap)
        except Exception as e:
            if backend != "tilelang-graph" or args.backend:
                raise
            print(f"  tilelang-graph failed ({type(e).__name__}: {e}); falling back to torch-graph", flush=True)
            out["fallback"] = f"tilelang-graph: {type(e).__name__}: {e}"
            backend = "torch-graph"
            eng = load_engine(model=args.model, device="cuda", backend=backend, capacity=cap)
        if cuda:
            eng.runtime.capture(eng.encode(DEFAULT_PROMPT)) if hasattr(eng.runtime, "capture") else None
            out["gpu"] = torch.cuda.get_device_name()
        ctx_state["eng"] = eng
        return {"backend": backend, "model": args.model, "launches_per_step": len(eng.plan), "capacity": cap}

    eng = ctx_state.get("eng")
    if eng is None:
        return finish(out, args)

    from tfdash.profiling import probe
    from tfdash.profiling.export import export_all
    from tfdash.profiling.session import Session, TokenBatch
    from tfdash.profiling.timeline import profile_steps

    @part("probe")
    def _():
        r = probe.probe_bandwidth(args.device, refresh=args.refresh_probe)
        t = probe.measured_target(args.device, r)
        ctx_state["target"] = t
        if args.device == "cuda":
            check("probe bandwidth plausible (1..5.5 TB/s)", 1e12 < r.bandwidth < 5.5e12,
                  f"{r.bandwidth / 1e12:.3f} TB/s")
        return {**r.to_dict(), "target": t.to_dict()}

    target = ctx_state.get("target") or probe.default_target(args.device)
    prompt_len = len(eng.encode(DEFAULT_PROMPT))

    def window_report(w, label):
        plan = eng.plan
        rows = []
        for la in plan.launches:
            rows.append({"index": la.index, "role": la.role, "kernel": la.kernel, "device_kernels": list(w.names[la.index]),
                         "p50_ns": w.p50(la.index), "p90_ns": w.p90(la.index)})
        ksum, step, gap = w.kernel_sum_ns, w.step_p50_ns, w.gap_ns
        check(f"{label}: window ok", w.ok, w.error or "")
        if not w.ok:
            return {"error": w.error}
        check(f"{label}: every launch has a measured time in every step",
              len(w.launch_ns) == len(plan) and all(len(x) == w.steps for x in w.launch_ns),
              f"{len(w.launch_ns)} launches x {w.steps} steps; {sum(1 for x in w.launch_ns if min(x) == 0)} "
              f"launches fully hidden under their predecessor in some step")
        # gap_ns is step - sum by definition; the check is that CUPTI's own clock agrees: its
        # exclusive kernel times plus its idle (replay period - sum) against the token ring's step.
        dgap = w.device_gap_ns
        if dgap is not None:
            check(f"{label}: sum of kernels + gap = step (1%)", abs(ksum + dgap - step) <= 0.01 * step,
                  f"{ksum / 1e3:.1f} + {dgap / 1e3:.1f} (CUPTI idle) = {(ksum + dgap) / 1e3:.1f} vs step "
                  f"{step / 1e3:.1f} us (the token ring's)")
            check(f"{label}: gap >= 0 (exclusive kernel times)", gap >= 0, f"{gap / 1e3:.1f} us")
        else:
            check(f"{label}: sum of kernels + gap = step (1%)", abs(ksum + gap - step) <= 0.01 * step,
                  f"{ksum / 1e3:.1f} + {gap / 1e3:.1f} = {step / 1e3:.1f} us")
        per_step = sorted(sum(x[s] for x in w.launch_ns) for s in range(w.steps))
        if eng.backend == "tilelang-graph":
            bad = [r["role"] for r in rows if r["device_kernels"] != [f"{r['kernel']}_kernel"]]
            check(f"{label}: tilelang kernels named <kernel>_kernel", not bad, ", ".join(bad[:5]))
        top = sorted(rows, key=lambda r: -r["p50_ns"])[:10]
        return {"first_step": w.first_step, "steps": w.steps, "ctx_len": w.ctx_len, "step_p50_ns": step,
                "kernel_sum_ns": ksum, "gap_ns": gap, "device_gap_ns": dgap, "period_ns": w.period_ns,
                "kernel_sum_per_step_p50_ns": per_step[len(per_step) // 2], "top": top, "launches": rows}

    @part("window")
    def _():
        steps = args.steps
        n_new = max(1, args.ctx - prompt_len + 1) + steps + 64
        s = Session(eng, DEFAULT_PROMPT, n_new, target=target, ignore_eos=True)
        asked = []

        def on(m):
            if isinstance(m, TokenBatch) and not asked and prompt_len - 1 + m.new_tokens >= args.ctx - 16:
                asked.append(s.request_profile(steps))

        s.run(on)
        snap = s.snapshot()
        res = {"session_tok_s": snap.tok_per_s, "profile_windows": snap.profile_windows,
               "paused_ms": snap.paused_ns / 1e6}
        if s.windows:
            res["live"] = window_report(s.windows[-1], "live window")
        else:
            check("live window ran", False, snap.unavailable.get("kernels", ""))
        rt = eng.runtime
        rt.bufs["pos"].fill_(args.ctx)
        w = profile_steps(rt, steps, s.timer)
        res["at_ctx"] = window_report(w, f"window at ctx {args.ctx}")
        r = snap.roofline
        if r is not None:
            res["roofline"] = {k: getattr(r, k) for k in r.__dataclass_fields__} | {
                "pct_ceiling": r.pct_ceiling, "pct_datasheet": r.pct_datasheet}
        paths = export_all(snap, Path(args.out).parent / "profile_check_export")
        res["export"] = {k: str(v) for k, v in paths.items()}
        return res

    @part("nvml")
    def _():
        s = Session(eng, DEFAULT_PROMPT, args.tokens, target=target, ignore_eos=True, nvml=True, nvml_interval=0.2)
        s.run()
        snap = s.snapshot()
        if s.sampler is None:
            check("NVML available", False, snap.unavailable.get("nvml", ""))
            return {"unavailable": snap.unavailable.get("nvml")}
        # Over the decode (the first 0.1 s left out): NVML's GPM GB/s, and the analyzer's bytes/step
        # at the generation's middle ctx times the steps per second actually run.
        t0, t1 = 0.1, snap.wall_ns / 1e9
        nv, note = s.sampler.window_gbps(t0, t1)
        mid = prompt_len - 1 + args.tokens // 2
        bytes_mid = s.analysis(mid).bytes
        steps_per_s = snap.steps / t1 if t1 else 0.0
        predicted = bytes_mid * steps_per_s / 1e9
        ratio = nv / predicted if nv and predicted else None
        check("NVML GPM DRAM GB/s measured", nv is not None, note)
        if ratio is not None:
            check("NVML GB/s within 0.5x..1.5x of predicted", 0.5 < ratio < 1.5, f"x{ratio:.2f}")
        series = {x.name: [v for v in x.values if v is not None] for x in snap.nvml}
        return {"nvml_gbps": nv, "nvml_source": note, "predicted_gbps": predicted, "ratio": ratio,
                "tok_s": snap.tok_per_s, "bytes_per_step_mid": bytes_mid, "steps_per_s": steps_per_s,
                "unavailable": {k: v for k, v in snap.unavailable.items() if k.startswith("nvml")},
                "series_last": {k: (v[-1] if v else None) for k, v in series.items()},
                "samples": len(snap.nvml[0].t) if snap.nvml else 0}

    @part("marginal")
    def _():
        from tfdash.profiling.marginal import measure

        layer = min(13, eng.config.num_layers - 1)
        res = {}
        for what in ("lm_head", f"L{layer}.gate_up"):
            r = measure(eng.runtime, what, ctx_len=args.ctx, rounds=7, reps=20)
            res[what] = r
            ok = "unavailable" not in r and r["delta_ns"] > 0
            check(f"marginal {what} > 0", ok,
                  f"{r.get('delta_ns', 0) / 1e3:.1f} +- {r.get('spread_ns', 0) / 1e3:.1f} us" if ok else r.get("unavailable", ""))
        return res

    @part("overhead")
    def _():
        from tfdash.profiling.overhead import tok_s_ab

        res = {}
        for k, every in enumerate(int(x) for x in str(args.every).split(",")):
            r = tok_s_ab(eng, DEFAULT_PROMPT, args.tokens, every=every, steps=args.steps, rounds=args.rounds,
                         target=target, warmup=k == 0)
            res[f"every_{every}"] = r
            phases = ", ".join(f"{k} {v:.1f}" for k, v in r.get("window_phase_ms_median", {}).items())
            line = (f"{r['overhead_pct']:.2f}% ({r['windows_per_run'][0]} windows of {args.steps} steps per run; "
                    f"host ms per window: {phases or '-'})")
            if k == 0:
                check(f"profiling windows (one every {every} tokens) cost < 3% tok/s",
                      r["overhead_pct"] is not None and r["overhead_pct"] < 3, line)
                res.update(plain_tok_s=r["plain_tok_s"], windows_tok_s=r["windows_tok_s"], overhead_pct=r["overhead_pct"])
            else:
                print(f"  [info] one window every {every} tokens: {line}", flush=True)
        return res

    return finish(out, args)


def finish(out, args) -> int:
    from tfdash.profiling.files import write_json_atomic

    out["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    failed = [c for c in out["checks"] if not c["ok"]]
    errors = {k: v["error"] for k, v in out["parts"].items() if isinstance(v, dict) and "error" in v}
    out["ok"] = not failed and not errors
    write_json_atomic(args.out, json.loads(json.dumps(out, default=str)))
    P = out["parts"]

    def g(path, fmt="{:.1f}", default="-", scale=None):
        node = P
        for k in path:
            if not isinstance(node, dict) or k not in node or node[k] is None:
                return default
            node = node[k]
        try:
            return fmt.format(node * scale if scale else node)
        except (TypeError, ValueError):
            return str(node)

    print(f"\nwrote {args.out}")
    us = "{:.1f}"
    rows = [
        ("backend", g(("engine", "backend"), "{}")),
        ("probe TB/s", g(("probe", "bandwidth"), "{:.3f}", scale=1e-12)),
        (f"step us @ctx {args.ctx}", g(("window", "at_ctx", "step_p50_ns"), us, scale=1e-3)),
        ("  sum of kernels us", g(("window", "at_ctx", "kernel_sum_ns"), us, scale=1e-3)),
        ("  gap us", g(("window", "at_ctx", "gap_ns"), us, scale=1e-3)),
        ("  CUPTI idle us", g(("window", "at_ctx", "device_gap_ns"), us, scale=1e-3)),
        ("NVML GB/s", g(("nvml", "nvml_gbps"))),
        ("predicted GB/s", g(("nvml", "predicted_gbps"))),
        ("NVML / predicted", g(("nvml", "ratio"), "{:.2f}")),
        ("marginal lm_head us", g(("marginal", "lm_head", "delta_ns"), us, scale=1e-3)),
        ("tok/s plain", g(("overhead", "plain_tok_s"))),
        ("tok/s with windows", g(("overhead", "windows_tok_s"))),
        ("window overhead %", g(("overhead", "overhead_pct"), "{:.2f}")),
        ("checks failed", str(len(failed))),
        ("parts errored", ", ".join(errors) or "none"),
    ]
    for k, v in rows:
        print(f"{k:<24} {v}")
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
