"""Whether an engine's speed depends on the order engines were built in one process: the default
plan built three times, A and B each loading their own weights (A first) and C a second runtime on
A's weights, each generating 2048 new tokens in turn over rounds (each round starting one engine
later). The bench builds its backends in the order they are listed, each with its own weights.

    python scripts/build_order.py --model qwen3-1.7b [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen3-1.7b")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=2048)
    a = ap.parse_args(argv)
    from tfdash.engine import load_engine
    from tfdash.engine.decode import Generation
    from tfdash.engine.runtime import TilelangRuntime

    first = load_engine(model=a.model, device="cuda", capacity=2112)
    second = load_engine(model=a.model, device="cuda", capacity=2112)
    plan = first.plan
    weights = {n: first.runtime.bufs[n] for n, s in plan.buffers.items() if s.kind == "weight"}
    shared = TilelangRuntime(plan, weights, "cuda", pdl=True)
    ids = first.encode("Write a detailed explanation of how a GPU executes a matrix multiplication.")
    peers = {"A first, own weights": first.runtime, "B second, own weights": second.runtime,
             "C third, A's weights": shared}
    for p in peers.values():
        p.capture(ids)
    rates = {name: [] for name in peers}
    names = list(peers)
    for r in range(a.rounds):
        for name in names[r % 3:] + names[:r % 3]:
            gen = Generation(peers[name], ids, a.tokens, first.tokenizer)
            for _ in gen:
                pass
            steps = list(gen.stats.step_ns)
            rates[name].append(gen.stats.tok_per_s)
            print(f"round {r} {name}: tok/s {gen.stats.tok_per_s:.1f}, step mean "
                  f"{statistics.mean(steps) / 1e3:.2f} us p50 {statistics.median(steps) / 1e3:.2f} us", flush=True)
    for name, v in rates.items():
        print(f"{name}: median {statistics.median(v):.1f} tok/s over {len(v)} rounds of {a.tokens} new tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
