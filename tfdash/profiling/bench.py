"""`tfdash bench`: the tilelang graph engine against its peers, A/B in one process.

Every backend decodes the same prompt with the same weights for the same number of new tokens,
and the backends alternate over several rounds, each round starting one backend later (A B C,
B C A, C A B, ...), so drift in clocks or temperature hits all of them alike and no backend always
runs first in its round (each row records its `position`). The tilelang backends also run on one
cache and scratch (the first one's, where a plan's shapes match), since where those land moved an
engine by about 1 % on the H200. Reported per backend: tok/s over the whole generation
(median and spread over rounds), time to first token and decode-only tok/s (the tfdash engines;
transformers' generate reports neither), ms/step p50 from CUDA events, achieved GB/s (the analyzer's
bytes of every step of the generation, by the plan that backend runs, over its wall time) and the
share of the measured cold copy bandwidth.

    tilelang-graph   every kernel tilelang, the step replayed from one CUDA graph, launched with
                     programmatic dependent launch (PDL)
    tilelang-nopdl   the same kernels and graph with plain launches (the PDL A/B)
    tilelang-unfused q/k norm + RoPE + KV append in a launch of its own (the fusion A/B)
    tilelang-gu1     gate_up's grid at one block per SM, so all of down's blocks can be resident
                     early under PDL (the grid A/B)
    tilelang-latekv  attention reads the KV cache after its grid dependency, not before it (the KV-prefetch A/B)
    tilelang-lateres o_proj and down read their residual after their grid dependency (the A/B)
    tilelang-otlate  gate_up launches after o_proj's grid dependency, not at its start (TFDASH_O_PROJ_TRIGGER_FIRST)
    tilelang-sc24    attention's grid at most 24 programs per kv head (the default: 32), each looping over its blocks
                     of the cache; tilelang-scall: one program a block, however large the cache (before the cap)
    tilelang-mlate   attention's merge loads its partials after the (max, sum) pairs, not beside
                     them (the merge A/B: TFDASH_ATTN_MERGE_EARLY)
    tilelang-tdep    attention lets o_proj launch at its grid dependency where the shape's own
                     waits for its values (0.6B; TFDASH_ATTN_TRIGGER_AT)
    tilelang-meg4    groups of 4 q heads merge early, as the plan before did (4B, 8B)
    tilelang-downsilu down makes silu(g) * u from gate_up's g|u, as the plan before did (TFDASH_GATE_UP_SILU)
    tilelang-qtlate  attention launches after the qkv GEMV's grid dependency where the shape's
                     own launches it at qkv's start (0.6B; TFDASH_QKV_TRIGGER_FIRST)
    tilelang-ringcopy the token copied into the host's ring after each replay, where the default's
                     argmax stores it there from inside the graph (TFDASH_RING_IN_GRAPH)
    tilelang-ringevents each step timed by a timed event after its replay, not the ring's clock stamps (TFDASH_RING_STAMPS)
    tilelang-chains  attention's score and value phases each one chain, not interleaved (TFDASH_ATTN_ILP)
    tilelang-eachround attention's rounds each rope q and load K/V at their start (TFDASH_ATTN_ROUNDS_CARRY)
    tilelang-bf16head the lm_head as the bf16 GEMV, not bounded through its int8 copy (TFDASH_LM_HEAD_Q8)
    tilelang[OP:K=V] a GEMV launch-settings variant (--gemv), the sweep behind the GEMV table
    tilelang@N       tilelang-graph with an N-position KV cache (--also-capacity N), against the run-sized one
    torch-compile    the same plan's torch spelling through torch.compile (inductor's default
                     mode, fullgraph), captured whole in one CUDA graph: the strongest PyTorch peer
    torch-graph      the same plan in torch ops (cuBLAS GEMVs, KV masked over capacity), one graph
    hf-compile       transformers' static-cache generate with a torch.compile'd forward
"""

from __future__ import annotations

import datetime as dt
import platform
import statistics
import sys
import time

from tfdash.errors import TfdashError
from tfdash.profiling.bench_args import (  # noqa: F401 (BACKENDS, DEFAULT_BACKENDS re-exported)
    BACKENDS, DEFAULT_BACKENDS, check_lengths, check_numbers, check_shapes, parser, wanted_backends)
from tfdash.profiling.bench_table import (  # noqa: F401 (TABLE_HEAD, table_row re-exported)
    TABLE_HEAD, header_line, table_lines, table_row, write_report)
from tfdash.profiling.files import check_not_a_snapshot, check_writable_file
from tfdash.settings import SETTINGS
from tfdash.signals import exit_code, finishing
from tfdash.signals import name as signal_name

SCHEMA = "tfdash.bench/1"


def launches_per_step(name, peer, plan):
    """Kernels a step launches: the plan's launches for the tilelang graphs; for a torch graph,
    the kernel nodes CUDA counts in its graph (None where that cannot be read)."""
    if name.startswith("tilelang"):
        return len(getattr(peer, "plan", plan))
    graph = getattr(peer, "graph", None)
    try:
        return count_graph_kernels(graph) if graph is not None else None
    except Exception:
        return None


def count_graph_kernels(graph) -> int:
    """Kernel nodes of a captured torch.cuda.CUDAGraph, through the CUDA driver's graph API."""
    import ctypes

    lib = ctypes.CDLL("libcuda.so.1")
    raw = graph.raw_cuda_graph() if hasattr(graph, "raw_cuda_graph") else None
    if raw is None:
        raise RuntimeError("this torch cannot hand out the raw CUDA graph")
    n = ctypes.c_size_t(0)
    if lib.cuGraphGetNodes(ctypes.c_void_p(raw), None, ctypes.byref(n)):
        raise RuntimeError("cuGraphGetNodes failed")
    nodes = (ctypes.c_void_p * n.value)()
    if lib.cuGraphGetNodes(ctypes.c_void_p(raw), nodes, ctypes.byref(n)):
        raise RuntimeError("cuGraphGetNodes failed")
    kinds = ctypes.c_int(0)
    kernels = 0
    for node in nodes:
        lib.cuGraphNodeGetType(ctypes.c_void_p(node), ctypes.byref(kinds))
        kernels += kinds.value == 0  # CU_GRAPH_NODE_TYPE_KERNEL
    return kernels


def said(e: BaseException, width: int = 300) -> str:
    """An exception's message on one line: its first line, and where that only introduces the cause
    (torch.compile's "backend='inductor' raised:"), the cause's line after it."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    if not lines:
        return ""
    text = lines[0] + (f" {lines[1]}" if lines[0].endswith(":") and len(lines) > 1 else "")
    return text[:width]


def generation_bytes(plan, target, steps: int, prompt_tokens: int = 0) -> int:
    """Bytes the analyzer says the generation moves: step p runs at ctx_len p. A plan that takes
    the prompt in chunks (build_plan's prefill_rows) runs no step on the prompt: its chunks' launches
    (each weight once a chunk) and the head's on the last position move their own bytes instead."""
    from tfdash.profiling.analyze import analyze

    b0 = analyze(plan, target, 0).bytes
    b1 = analyze(plan, target, 1).bytes
    rows = dict(plan.meta.get("options", {})).get("prefill_rows", 0)
    first = prompt_tokens if rows and prompt_tokens > 1 else 0  # the positions taken in chunks
    positions = steps * (steps - 1) // 2 - first * (first - 1) // 2  # the sum of the steps' ctx_len
    from tfdash.engine.prefill_plan import build_prefill_plan

    pf = build_prefill_plan(plan, rows).launches if first else ()
    head = [x for x in plan.launches if x.layer is None and x.index > 0] if first else ()
    chunks = sum(launch.cost(start).bytes for start in range(0, first, rows or 1) for launch in pf)
    return (steps - first) * b0 + (b1 - b0) * positions + chunks + sum(x.cost(first - 1).bytes for x in head)


def bytes_by_peer(peers: dict, plan, target, steps: int, prompt_tokens: int = 0) -> dict[str, int]:
    """Each peer's generation bytes by the plan it runs (`peer.plan`; the default plan for the torch
    and transformers peers), so a variant that moves fewer bytes (the int8 head) is held to its own
    bytes, not credited with the default's."""
    made: dict[int, int] = {}
    out = {}
    for name, peer in peers.items():
        p = getattr(peer, "plan", None) or plan
        if id(p) not in made:
            made[id(p)] = generation_bytes(p, target, steps, prompt_tokens)
        out[name] = made[id(p)]
    return out


def _one_round(name, peer, ids, n, tok, r):
    from tfdash.engine.decode import Generation

    if name == "hf-compile":
        toks, wall = peer.generate(ids, n)
        return ({"round": r, "backend": name, "new_tokens": len(toks), "wall_s": wall / 1e9,
                 "tok_per_s": len(toks) / (wall / 1e9), "ttft_ms": None, "decode_tok_per_s": None,
                 "ms_per_step_p50": None, "ms_per_step_p99": None}, toks)
    gen = Generation(peer, ids, n, tok)
    toks = [ev.token_id for ev in gen]
    return round_row(r, name, gen.stats), toks


def round_order(names: list[str], r: int) -> list[str]:
    """Round r's order: the backends rotated by r, so each takes every place in a round in turn."""
    k = r % len(names) if names else 0
    return names[k:] + names[:k]


def round_row(r: int, name: str, st) -> dict:
    """One round of a tfdash engine: its GenerationStats as the JSON row (the mean step beside the
    p50: a tail of slow steps moves the mean and the wall time, not the p50)."""
    dec = st.decode_tok_per_s
    mean = sum(st.step_ns) / len(st.step_ns) / 1e6 if len(st.step_ns) else None
    return {"round": r, "backend": name, "new_tokens": st.new_tokens, "wall_s": st.wall_ns / 1e9,
            "tok_per_s": st.tok_per_s, "ttft_ms": st.ttft_ns / 1e6 if st.ttft_ns else None,
            "decode_tok_per_s": dec, "ms_per_step_p50": st.ms_per_step_p50, "ms_per_step_p99": st.ms_per_step_p99,
            "ms_per_step_mean": mean}


def summary_row(rs: list[dict], bandwidth: float, first_tokens) -> dict:
    """One backend's rounds: medians and spread."""
    def median_of(key):
        xs = [x[key] for x in rs if x.get(key) is not None]
        return statistics.median(xs) if xs else None

    tps = [x["tok_per_s"] for x in rs]
    gbps = statistics.median(x["achieved_gbps"] for x in rs)
    return {"tok_per_s_median": statistics.median(tps), "tok_per_s_min": min(tps), "tok_per_s_max": max(tps),
            "ttft_ms": median_of("ttft_ms"), "decode_tok_per_s": median_of("decode_tok_per_s"),
            "ms_per_step_p50": median_of("ms_per_step_p50"),
            "achieved_gbps": gbps, "pct_of_copy_ceiling": 100 * gbps * 1e9 / bandwidth, "first_tokens": first_tokens}


def run_rounds(peers: dict, ids, args, tok, peer_bytes: dict, errors: dict):
    """The rounds, each backend once a round in `round_order`: the rows, each backend's first tokens,
    and the stop signal that ended them early (None when all ran). Ctrl+C, SIGTERM or SIGHUP keeps the
    rounds finished before it (the one it cut is dropped: a part-round's tok/s is no round's), so the
    table and --json still report them; they were lost with the whole run."""
    rounds: list[dict] = []
    tokens_by_backend: dict[str, list[int]] = {}
    r = 0
    try:
        for r in range(args.rounds):
            for position, name in enumerate(round_order(list(peers), r)):
                peer = peers[name]
                if name in errors:
                    continue
                try:
                    row, toks = _one_round(name, peer, ids, args.max_new_tokens, tok, r)
                    row["position"] = position
                except Exception as e:  # one failing peer must not lose the others' numbers
                    errors[name] = f"{type(e).__name__}: {said(e)}"
                    print(f"# {name} failed: {errors[name]}", file=sys.stderr)
                    continue
                row["achieved_gbps"] = peer_bytes[name] / row["wall_s"] / 1e9
                tokens_by_backend.setdefault(name, toks)
                rounds.append(row)
                print(f"# round {r} {name:>15}: {row['tok_per_s']:8.1f} tok/s", file=sys.stderr)
    except KeyboardInterrupt as e:  # Interrupted (SIGTERM, SIGHUP) too
        print(f"\ntfdash: interrupted ({signal_name(e)}) in round {r}; the table covers what was measured "
              f"before it ({len(rounds)} backend round{'s' if len(rounds) != 1 else ''})", file=sys.stderr)
        return rounds, tokens_by_backend, e
    return rounds, tokens_by_backend, None


def _host_meta() -> dict:
    import torch

    meta = {"host": platform.node(), "python": platform.python_version(), "torch": torch.__version__,
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")}
    if torch.cuda.is_available():
        meta["gpu"] = torch.cuda.get_device_name()
        meta["cuda"] = torch.version.cuda
    try:
        import tilelang

        meta["tilelang"] = tilelang.__version__
    except Exception:
        meta["tilelang"] = None
    return meta


def main(argv: list[str]) -> int:
    import torch

    from tfdash.engine import load_engine
    from tfdash.engine.decode import Generation
    from tfdash.engine.limits import default_capacity
    from tfdash.engine.plan import build_plan
    from tfdash.engine.runtime import TilelangRuntime, state_buffers
    from tfdash.profiling.ab import Variant, variant_plan

    args = parser().parse_args(argv)
    # the arguments first (a typo is worth saying on any machine; --json's file too), then the device
    check_numbers(args)
    check_writable_file(args.json, "--json")
    check_not_a_snapshot(args.json, "--json", args.ckpt)
    settings = SETTINGS.values()  # every knob read now: a bad one is one line before any work, and recorded
    wanted, variants = wanted_backends(args)
    from tfdash.engine.config import load_config, preset

    cfg = load_config(args.ckpt) if args.ckpt is not None else preset(args.model or "qwen3-1.7b")
    check_shapes(cfg, wanted, variants)  # the shape too is an argument: said before the device and any weight
    tok, ids, capacity = check_lengths(args, cfg)  # the prompt and new tokens against each cache
    if not torch.cuda.is_available():
        raise TfdashError("tfdash bench needs a CUDA device (torch.cuda.is_available() is False)")

    print(f"# loading {cfg.name} ({'random weights' if not args.ckpt else args.ckpt}), capacity {capacity}",
          file=sys.stderr)
    eng0 = load_engine(ckpt=args.ckpt, model=None if args.ckpt else cfg.name, device="cuda", dtype="bfloat16",
                       backend="torch-graph", capacity=capacity, prompt=args.prompt,
                       max_new_tokens=args.max_new_tokens, seed=args.seed)
    plan = eng0.plan  # the torch peers' (the bf16 GEMV head, their fastest form)
    from tfdash.engine import plan_for

    engine_plan = plan_for(cfg, "bfloat16", capacity)  # the tilelang engine's: the plan knobs in effect
    peers: dict[str, object] = {}
    weights = {n: eng0.runtime.bufs[n] for n, s in plan.buffers.items() if s.kind == "weight"}
    state: dict = {}  # the first tilelang peer's cache and scratch, which the others run on in turn

    def tilelang(p, pdl=True):
        rt = TilelangRuntime(p, {**weights, **state}, "cuda", pdl=pdl)
        state.update({} if state else state_buffers(rt))
        return rt

    def build(b):
        if b == "torch-graph":
            return eng0.runtime
        if b == "torch-compile":
            from tfdash.engine.compiled import CompiledGraphRuntime

            return CompiledGraphRuntime(plan, weights, "cuda")
        if b in ("tilelang-graph", "tilelang-nopdl"):
            return tilelang(engine_plan, pdl=b == "tilelang-graph")
        if b in variants:  # the engine's plan with the variant's options over its own
            return tilelang(variant_plan(engine_plan, Variant(b, variants[b]))[0])
        if b.startswith("tilelang@"):  # its capacity checked by check_lengths
            cap = default_capacity(cfg, int(b.partition("@")[2]))
            return tilelang(build_plan(cfg, **{**engine_plan.meta["options"], "capacity": cap}))
        from tfdash.profiling.hf_peer import HFPeer  # hf-compile

        return HFPeer(cfg, eng0.runtime)

    errors_build: dict[str, str] = {}
    for b in wanted:
        try:
            peers[b] = build(b)
        except Exception as e:  # a kernel that fails to build, no memory for a copy: the others still run
            if b == "hf-compile" and isinstance(e, ImportError):
                print("# transformers is not installed: skipping hf-compile", file=sys.stderr)
                continue
            errors_build[b] = f"build: {type(e).__name__}: {said(e)}"
            print(f"# {b} could not be built: {errors_build[b]}", file=sys.stderr)

    from tfdash.profiling.probe import measured_target, probe_bandwidth

    probe = probe_bandwidth("cuda")
    target = measured_target("cuda", probe)
    steps = len(ids) - 1 + args.max_new_tokens
    gen_bytes = generation_bytes(engine_plan, target, steps, len(ids))
    peer_bytes = bytes_by_peer(peers, plan, target, steps, len(ids))

    # Warm-up: capture the graphs, compile HF (its first generate compiles for both shapes).
    print("# warm-up (graph capture, torch.compile)", file=sys.stderr)
    errors_warm: dict[str, str] = dict(errors_build)
    for name, peer in list(peers.items()):
        t = time.perf_counter()
        try:
            if name == "hf-compile":
                peer.generate(ids, 32)
            else:
                peer.capture(ids)
                for _ in Generation(peer, ids, 16, tok):
                    pass
        except Exception as e:
            errors_warm[name] = f"warm-up: {type(e).__name__}: {said(e)}"
            print(f"# {name} failed to warm up: {errors_warm[name]}", file=sys.stderr)
            del peers[name]
            continue
        print(f"#   {name}: {time.perf_counter() - t:.1f} s", file=sys.stderr)

    errors: dict[str, str] = dict(errors_warm)
    rounds, tokens_by_backend, interrupted = run_rounds(peers, ids, args, tok, peer_bytes, errors)

    summary = {}
    for name in peers:
        rs = [x for x in rounds if x["backend"] == name]
        if not rs:
            continue
        summary[name] = summary_row(rs, probe.bandwidth, tokens_by_backend[name][:16])
        summary[name]["launches_per_step"] = launches_per_step(name, peers[name], plan)
        summary[name]["generation_bytes"] = peer_bytes[name]
        if getattr(peers[name], "compile_s", None) is not None:
            summary[name]["compile_s"] = peers[name].compile_s
    ref = tokens_by_backend.get("torch-graph")
    for name, toks in tokens_by_backend.items():
        if ref is not None:
            same = 0
            for a, b in zip(toks, ref):
                if a != b:
                    break
                same += 1
            summary[name]["tokens_equal_to_torch_graph_prefix"] = same

    header = header_line(cfg.name, args.ckpt, len(ids), args.max_new_tokens, capacity, args.rounds, probe)
    lines = table_lines(header, summary, probe.source)
    if interrupted is not None:
        lines.append(f"interrupted ({signal_name(interrupted)}): {len(rounds)} backend round"
                     f"{'s' if len(rounds) != 1 else ''} of {args.rounds * len(peers)} measured")
    payload = None
    if args.json:
        payload = {"schema": SCHEMA, "command": "tfdash bench " + " ".join(argv), **_host_meta(), "settings": settings,
                   "model": cfg.to_dict(), "checkpoint": args.ckpt or "random",
                   "seed": None if args.ckpt else eng0.seed, "prompt": args.prompt,  # the random weights' (--seed)
                   "prompt_tokens": len(ids), "new_tokens": args.max_new_tokens, "capacity": capacity,
                   "launches_per_step": len(engine_plan), "generation_bytes": gen_bytes,
                   "ceiling": probe.to_dict(), "rounds": rounds, "summary": summary, "errors": errors,
                   "table": lines, **({"interrupted": True} if interrupted is not None else {})}
    with finishing("the table and --json"):  # a second Ctrl+C waits for them
        write_report(lines, args.json, payload)
    if interrupted is not None:
        return exit_code(interrupted)
    if not summary:  # every backend failed: the lines above say why, and the exit status too (it was 0)
        raise TfdashError("no backend was measured" + (f": {', '.join(errors)} failed" if errors else ""))
    return 0
