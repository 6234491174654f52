"""Why the torch-compile peer fails to warm up, with the whole traceback: first torch.compile of a
small function on the device in the same mode (is inductor itself working on this machine?), then
the bench's peer itself (CompiledGraphRuntime over the torch-graph engine's plan and weights, its
graph captured and replayed), each in its own try that prints the error's last lines. Where the
peer fails, it is tried again without one ingredient at a time: the token ring in its graph,
inductor's mode (max-autotune where the peer takes the default, and the other way round). (The state arena was one: aot_autograd refuses a step that writes views of
one allocation in different dtypes, so the peer's state is always its own tensors.)

    python3 scripts/compile_probe.py [--model qwen3-1.7b] [--capacity 2112] [--lines 40]
"""

import argparse
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def attempt(what: str, fn, lines: int) -> bool:
    t = time.perf_counter()
    try:
        fn()
    except Exception:
        tail = traceback.format_exc().rstrip().splitlines()[-lines:]
        print(f"== {what}: FAILED after {time.perf_counter() - t:.1f} s\n" + "\n".join(tail), flush=True)
        return False
    print(f"== {what}: ok in {time.perf_counter() - t:.1f} s", flush=True)
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen3-1.7b")
    ap.add_argument("--capacity", type=int, default=2112)
    ap.add_argument("--lines", type=int, default=40, help="the traceback's last lines to print")
    args = ap.parse_args()
    import torch

    from tfdash.engine.compiled import MODE

    def small():
        f = torch.compile(lambda x, w: torch.nn.functional.silu(x @ w).sum(), mode=MODE, fullgraph=True)
        x, w = torch.randn(1, 256, device="cuda"), torch.randn(256, 256, device="cuda")
        torch.testing.assert_close(f(x, w), torch.nn.functional.silu(x @ w).sum(), rtol=1e-3, atol=1e-2)

    def peer(mode=MODE, **knobs):
        from tfdash.engine import load_engine
        from tfdash.engine.compiled import CompiledGraphRuntime
        from tfdash.settings import SETTINGS

        torch._dynamo.reset()  # a failed attempt's traces go with it
        with SETTINGS.override(**knobs):
            eng = load_engine(model=args.model, device="cuda", dtype="bfloat16", backend="torch-graph",
                              capacity=args.capacity)
            weights = {n: eng.runtime.bufs[n] for n, s in eng.plan.buffers.items() if s.kind == "weight"}
            rt = CompiledGraphRuntime(eng.plan, weights, "cuda", mode=mode)
        rt.capture([1, 2, 3])
        rt.reset([1, 2, 3])
        for _ in range(4):
            rt.step()
        torch.cuda.synchronize()
        print(f"   compile and capture {rt.compile_s:.1f} s", flush=True)

    ok = attempt(f"torch.compile(mode={MODE!r}) of a small function", small, args.lines)
    at = f"at {args.model}, capacity {args.capacity}"
    if not attempt(f"the torch-compile peer {at}", peer, args.lines):
        ok = False  # which ingredient: the in-graph token ring, inductor's mode (its state is scattered)
        attempt(f"the peer {at}, no ring in its graph", lambda: peer(ring_in_graph=False), args.lines)
        other = "max-autotune-no-cudagraphs" if MODE is None else None
        attempt(f"the peer {at}, inductor's mode {other!r}", lambda: peer(mode=other), args.lines)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
