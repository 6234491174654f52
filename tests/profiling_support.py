"""Helpers for the profiling tests: small CPU engines, a rich snapshot, and a structural validator
of the Chrome trace-event format (the JSON object form Perfetto and chrome://tracing open)."""

from __future__ import annotations

import math
import numbers

from tfdash.engine import Engine
from tfdash.engine.config import ModelConfig
from tfdash.engine.plan import build_plan
from tfdash.engine.runtime import Runtime
from tfdash.engine.tokenizer import StandInTokenizer
from tfdash.engine.weights import load_weights
from tfdash.profiling.snapshot import (KernelRow, KernelSpan, ProfileSnapshot, Roofline, RunMeta, Series,
                                       TokenRecord)

MICRO = ModelConfig(name="qwen3-micro", hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1, head_dim=16,
                    intermediate_size=64, vocab_size=256, tie_word_embeddings=True, rope_theta=1e6,
                    rms_norm_eps=1e-6, max_position_embeddings=32768)


def micro_engine(capacity: int = 1024, cfg: ModelConfig = MICRO) -> Engine:
    """The qwen3 structure at a size that decodes thousands of tokens a second on one CPU core."""
    import torch

    plan = build_plan(cfg, "float32", capacity=capacity)
    rt = Runtime(plan, load_weights(cfg, None, torch.float32, "cpu", 0), "cpu")
    return Engine(cfg, plan, rt, StandInTokenizer(cfg.vocab_size), "random", "cpu", "torch-eager")


def meta(**kw) -> RunMeta:
    base = dict(tfdash_version="0.1.0", host="h", device="cuda", gpu="NVIDIA H200", driver="580.159.04",
                torch_version="2.11.0", tilelang_version="0.1.15", cuda_version="13.0", backend="tilelang-graph",
                dtype="bfloat16", model=MICRO.to_dict(), checkpoint="random", git_commit="abc123-dirty",
                started_at="2026-11-29T09:00:00Z", prompt="héllo \"world\"\n", capacity=4096, launches_per_step=3)
    base.update(kw)
    return RunMeta(**base)


def rich_snapshot() -> ProfileSnapshot:
    """Every field populated, Nones where allowed, awkward text."""
    rows = (
        KernelRow(0, "embed", None, "embed", "embed_gather", 12.5, 100, 200, 0, "memory", 1500.0, 1700.0, 0.01,
                  ("embed_gather_kernel",), 32),
        KernelRow(1, "L0.qkv_proj", 0, "gemv", "gemv_qkv", 4000.0, 8_000_000, 8192, 16_000_000, "memory",
                  5200.0, 5400.5, 0.4, ("gemv_qkv_kernel",), 32),
        KernelRow(2, "lm_head", None, "gemv", "gemv_lm_head", 9000.25, 622_000_000, 600_000, 10, "compute"),
    )
    return ProfileSnapshot(
        meta=meta(),
        tokens=(TokenRecord(0, 17, " héllo", 1000), TokenRecord(1, 4, "", 2000), TokenRecord(2, 99, "😀\t", 3100)),
        step_ns=(900, 1000, 1100, 1200),
        prompt_tokens=2, new_tokens=3, wall_ns=3100,
        kernels=rows,
        nvml=(Series("dram_gbps", "GB/s", (0.25, 0.5), (None, 3000.5), note="GPM x 4917 GB/s"),
              Series("power_w", "W", (0.25, 0.5), (400.0, 410.5))),
        roofline=Roofline(ctx_len=1024, steps=32, bytes_per_step=3_500_000_000, predicted_step_ns=800000.0,
                          floor_ns=820000.0, measured_step_ns=1_600_000.0, kernel_sum_ns=1_450_000.0,
                          gap_ns=150_000.0, achieved_gbps=2187.5, ceiling_gbps=4270.0, datasheet_gbps=4800.0,
                          nvml_gbps=None, ceiling_source="probe", nvml_source="no GPM interval", timing="cupti"),
        marginal=({"what": "lm_head", "launches": [2], "delta_ns": 150000.0, "spread_ns": 2000.0, "rounds": 7},),
        unavailable={"nvml.sm_util_pct": "not supported"},
        target={"name": "h200-measured", "bandwidth": 4.27e12, "peak_flops": {"bf16": 9.89e14}},
        steps=4, paused_ns=12345, profile_windows=1,
        timeline=(KernelSpan(5, 1, "gemv_qkv_kernel", 100, 5200), KernelSpan(5, 2, "gemv_lm_head_kernel", 5400, 9000)),
    )


# -- the Chrome trace-event format -------------------------------------------------------------
ALLOWED_PH = set("XBEiICMbenstfPOND")  # complete, begin/end, instant, counter, metadata, async, flow, ...


def _num(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


def validate_chrome_trace(obj) -> list[str]:
    """Problems with a trace-event JSON object ([] when it is well formed)."""
    errs: list[str] = []
    if not isinstance(obj, dict):
        return ["top level is not an object"]
    events = obj.get("traceEvents")
    if not isinstance(events, list):
        return ["traceEvents is not a list"]
    if "displayTimeUnit" in obj and obj["displayTimeUnit"] not in ("ms", "ns"):
        errs.append("displayTimeUnit must be ms or ns")
    open_b: dict = {}
    for i, e in enumerate(events):
        where = f"traceEvents[{i}]"
        if not isinstance(e, dict):
            errs.append(f"{where} is not an object")
            continue
        for key in ("name", "ph", "ts", "pid", "tid"):
            if key not in e:
                errs.append(f"{where} lacks {key}")
        ph = e.get("ph")
        if ph not in ALLOWED_PH:
            errs.append(f"{where} ph {ph!r} not allowed")
        if not isinstance(e.get("name"), str):
            errs.append(f"{where} name is not a string")
        if not _num(e.get("ts")) or e.get("ts", 0) < 0:
            errs.append(f"{where} ts must be a finite number >= 0")
        for k in ("pid", "tid"):
            if not isinstance(e.get(k), (int, str)) or isinstance(e.get(k), bool):
                errs.append(f"{where} {k} must be an int or a string")
        if "args" in e and not isinstance(e["args"], dict):
            errs.append(f"{where} args must be an object")
        if ph == "X" and (not _num(e.get("dur")) or e["dur"] < 0):
            errs.append(f"{where} X event needs dur >= 0")
        if ph == "C":
            args = e.get("args")
            if not isinstance(args, dict) or not args or not all(_num(v) for v in args.values()):
                errs.append(f"{where} C event needs args of numbers")
        if ph == "M":
            if e.get("name") not in ("process_name", "thread_name", "process_sort_index", "thread_sort_index",
                                     "process_labels"):
                errs.append(f"{where} unknown metadata event {e.get('name')!r}")
            if not isinstance(e.get("args"), dict):
                errs.append(f"{where} M event needs args")
        if ph == "B":
            open_b.setdefault((e.get("pid"), e.get("tid")), []).append(e)
        if ph == "E":
            stack = open_b.get((e.get("pid"), e.get("tid")), [])
            if not stack:
                errs.append(f"{where} E without B")
            else:
                stack.pop()
    for key, stack in open_b.items():
        if stack:
            errs.append(f"unclosed B events on {key}")
    return errs
