"""Whether an engine's speed depends on where its buffers landed: the default plan built five times
in one process, A and B each loading their own weights (A first), C a third runtime on A's weights
with its own cache and scratch, D on A's weights with B's cache and scratch, and E on B's weights
with A's, each generating 2048 new tokens in turn over rounds (each round starting one engine
later). Identical engines measured about 1 % apart, so this says whether the weights' or the
state's placement carries it.

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
    weights_b = {n: second.runtime.bufs[n] for n in weights}

    def state(rt):  # the cache, activations and scratch a runtime allocated (the host's ring stays its own)
        return {n: rt.bufs[n] for n, s in plan.buffers.items()
                if s.kind != "weight" and s.parent is None and n != "ring"}

    peers = {"A: weights 1, state 1": first.runtime, "B: weights 2, state 2": second.runtime,
             "C: weights 1, state 3": TilelangRuntime(plan, weights, "cuda", pdl=True),
             "D: weights 1, state 2": TilelangRuntime(plan, {**weights, **state(second.runtime)}, "cuda", pdl=True),
             "E: weights 2, state 1": TilelangRuntime(plan, {**weights_b, **state(first.runtime)}, "cuda", pdl=True)}
    ids = first.encode("Write a detailed explanation of how a GPU executes a matrix multiplication.")
    for p in peers.values():
        p.capture(ids)
    rates = {name: [] for name in peers}
    names = list(peers)
    for r in range(a.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
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
