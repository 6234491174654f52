"""Where an engine's small state lands and what that costs it. Identical engines of one plan measured
up to about 1.7 % apart on the H200; runtimes sharing engine A's weights and KV cache with their own
small state (activations, tables, partials and counters) spread about as far, ones with their own
KV cache did not. This builds engine A, then `--tries` runtimes on A's weights and cache with their
own small state where the caching allocator puts each buffer (S1, S2, ...) and as many with it in one
arena from a 2 MiB page boundary (R4096-1, R4096-2, ...: the `state_arena` setting, each buffer at a
multiple of `--align` bytes), all alive at once so each lands elsewhere. Each generates `--tokens`
new tokens in turn over rounds, each round starting one runtime later. The spread within S against
within R, and R's level against S's, say whether the arena pins the step's speed; each buffer's
offset in its 2 MiB page is printed beside. `--weights` adds runtimes with their own copy of the
weights, tensor by tensor (V1, ...) and packed in one allocation (P1, ...), to ask the same of the
weights; `--modules` adds runtimes that load every kernel's code again from a copy of its library
(K1, ...), to ask it of where the code lands.

    python scripts/placement.py --model qwen3-1.7b [--tries 3] [--rounds 2] [--tokens 2048] [--align 512,4096]
        [--weights] [--modules]
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

CACHE = ("k_cache", "v_cache")


def reloaded(kernel, where: Path):
    """`kernel` again through a copy of its library at a new path: the CUDA runtime registers the
    copy's device code as another module, so its code lands elsewhere in device memory. A probe of
    tilelang's cython adapter: what it sets up mirrors the adapter's own load from its disk cache."""
    import copy
    import ctypes

    from tilelang.jit.adapter.cython import adapter as cy

    a = kernel.adapter
    src = Path(a.lib_generator.libpath or "")
    if not src.is_file():
        raise SystemExit(f"placement.py: {kernel} has no library on disk to copy ({src}); precompile first")
    dst = where / f"{len(list(where.iterdir()))}-{src.name}"
    shutil.copy(src, dst)
    b = copy.copy(a)
    b.lib_generator = copy.copy(a.lib_generator)
    b.lib_generator.libpath = str(dst)  # what the copy reports as its library is the copy
    b.lib = ctypes.CDLL(str(dst))
    b.lib.get_last_error.restype = ctypes.c_char_p
    if b.lib.init() != 0:
        raise SystemExit(f"placement.py: reloading {src.name}: {b.lib.get_last_error().decode()}")
    w = cy.CythonKernelWrapper(a.result_idx, a.params, b.lib, *cy._device_providers())
    for name in ("dynamic_symbolic_map", "dynamic_symbolic_sources", "buffer_dtype_map", "static_shape_map",
                 "static_strides_map", "static_contiguous_list", "buffer_device_map", "ptr_map"):
        getattr(w, f"set_{name}")(getattr(a, name))
    b.cython_wrapper = w
    b._post_init()
    k = copy.copy(kernel)
    k.adapter, k.torch_function = b, b.func
    return k


def aligns(text: str) -> list[int]:
    """`--align 512,4096` -> [512, 4096]; each a positive multiple of the granule `carve` takes."""
    from tfdash.engine.memory import GRANULE

    try:
        got = [int(x) for x in text.split(",")]
    except ValueError:
        got = []
    if not got or any(n <= 0 or n % GRANULE for n in got):
        raise argparse.ArgumentTypeError(f"{text!r}: want positive multiples of {GRANULE}, comma-separated")
    return got


def spread(rates: dict[str, list[float]], prefix: str) -> str:
    med = {n: statistics.median(v) for n, v in rates.items() if n.startswith(prefix)}
    if not med:
        return f"{prefix}: none"
    lo, hi = min(med.values()), max(med.values())
    return f"{prefix}: {lo:.1f} to {hi:.1f} tok/s ({(hi - lo) / lo * 100:.2f} % apart) over {len(med)} runtimes"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen3-1.7b")
    ap.add_argument("--tries", type=int, default=3,
                    help="runtimes with their own small state scattered, and as many with it in an arena")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--weights", action="store_true",
                    help="also runtimes with their own weights: cloned tensor by tensor (V), and packed in one "
                         "4 KiB-aligned allocation in the plan's order (P)")
    ap.add_argument("--modules", action="store_true",
                    help="also runtimes that load every kernel's code again, from a copy of its library (K)")
    ap.add_argument("--align", type=aligns, default=None,
                    help="arenas to try, by each buffer's alignment in bytes (comma-separated)")
    ap.add_argument("--tokens", type=int, default=2048)
    a = ap.parse_args(argv)
    from tfdash.settings import SETTINGS

    a.align = a.align or [SETTINGS.state_arena or 4096]  # the default arena unless told
    if a.tries < 1 or a.rounds < 1 or a.tokens < 1:
        ap.error("--tries, --rounds and --tokens must be at least 1")
    from tfdash.engine import load_engine
    from tfdash.engine.decode import Generation
    from tfdash.engine.memory import PAGE
    from tfdash.engine.runtime import TilelangRuntime, state_buffers

    eng = load_engine(model=a.model, device="cuda", capacity=a.tokens + 64)
    plan = eng.plan
    weights = {n: eng.runtime.bufs[n] for n, s in plan.buffers.items() if s.kind == "weight"}
    base = state_buffers(eng.runtime)
    cache = {n: base[n] for n in CACHE}
    peers = {"A": eng.runtime}
    for prefix, align in [("S", 0)] + [(f"R{n}-", n) for n in a.align]:
        with SETTINGS.override(state_arena=align):
            for i in range(1, a.tries + 1):
                peers[f"{prefix}{i}"] = TilelangRuntime(plan, {**weights, **cache}, "cuda", pdl=True)
    if a.weights:  # own weights: each tensor cloned where the allocator puts it (V), or packed in launch order (P)
        from tfdash.engine.memory import carve

        for i in range(1, a.tries + 1):
            peers[f"V{i}"] = TilelangRuntime(plan, {**{n: t.clone() for n, t in weights.items()}, **cache},
                                             "cuda", pdl=True)
        for i in range(1, a.tries + 1):
            packed = carve({n: (tuple(t.shape), t.dtype) for n, t in weights.items()}, "cuda", 4096)
            for n, t in packed.items():
                t.copy_(weights[n])
            peers[f"P{i}"] = TilelangRuntime(plan, {**packed, **cache}, "cuda", pdl=True)
    if a.modules:  # own small state (in the default arena) and its own load of every kernel's code
        where = Path(tempfile.mkdtemp(prefix="tfdash-modules-", dir=os.environ.get("TILELANG_CACHE_DIR")))
        atexit.register(shutil.rmtree, where, True)
        base_libs = {n: k.adapter.lib._handle for n, k in eng.runtime.kernels.items()}
        for i in range(1, a.tries + 1):
            rt = TilelangRuntime(plan, {**weights, **cache}, "cuda", pdl=True)
            rt.kernels = {n: reloaded(k, where) for n, k in rt.kernels.items()}
            rt.launch_fns = [rt._launch_fn(j) for j in range(len(plan.launches))]
            peers[f"K{i}"] = rt
            own = {n for n, k in rt.kernels.items() if k.adapter.lib._handle != base_libs[n]}
            print(f"K{i}: {len(own)} of {len(rt.kernels)} kernels through their own library", flush=True)
    for name, rt in peers.items():  # where each runtime's state landed: offsets in a 2 MiB page
        own = {n: t for n, t in state_buffers(rt).items() if n not in rt.shared or name == "A"}
        print(f"state {name}: " + " ".join(f"{n}+{t.data_ptr() % PAGE:#x}" for n, t in own.items()), flush=True)
    ids = eng.encode("Write a detailed explanation of how a GPU executes a matrix multiplication.")
    for rt in peers.values():
        rt.capture(ids)
    rates: dict[str, list[float]] = {name: [] for name in peers}
    tokens: dict[str, list[int]] = {}
    names = list(peers)
    for r in range(a.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            gen = Generation(peers[name], ids, a.tokens, eng.tokenizer)
            tokens[name] = [e.token_id for e in gen]
            steps = list(gen.stats.step_ns)
            rates[name].append(gen.stats.tok_per_s)
            print(f"round {r} {name}: tok/s {gen.stats.tok_per_s:.1f}, step mean "
                  f"{statistics.mean(steps) / 1e3:.2f} us p50 {statistics.median(steps) / 1e3:.2f} us", flush=True)
    for name, v in rates.items():
        print(f"{name}: median {statistics.median(v):.1f} tok/s over {len(v)} rounds of {a.tokens} new tokens")
    odd = [n for n, t in tokens.items() if t != tokens["A"]]
    print(f"tokens: {len(tokens) - len(odd)} of {len(tokens)} runtimes decode A's" + (f"; not {odd}" if odd else ""))
    a_lo, a_hi = min(rates["A"]), max(rates["A"])  # the noise floor: one runtime, round to round
    print(f"A: {a_lo:.1f} to {a_hi:.1f} tok/s ({(a_hi - a_lo) / a_lo * 100:.2f} % apart) over its {a.rounds} rounds")
    print(spread(rates, "S"), "(own small state where the allocator puts it; A's weights and cache)")
    if a.weights:
        print(spread(rates, "V"), "(own weights, each tensor where the allocator puts it)")
        print(spread(rates, "P"), "(own weights packed in one allocation)")
    if a.modules:
        print(spread(rates, "K"), "(own small state in the default arena, own load of the kernels' code)")
    for n in a.align:
        print(spread(rates, f"R{n}-"), f"(own small state in one arena, {n}-byte aligned; A's weights and cache)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
