"""Which of an engine's buffers carries the 1 % between identical engines in one process: the default
plan built five times, A and B each loading their own weights (A first), C a third runtime on A's
weights with its own cache and scratch, then F on A's weights and state except the KV cache, which
is B's, and G on A's weights and KV cache with the rest of B's state, each generating 2048 new
tokens in turn over rounds (each round starting one engine later). The state's placement carried it
(B and a runtime on A's weights with B's state ran alike, 1.2 % behind A), not the weights'; F and G
split the state into the cache and the rest.

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
    from tfdash.engine.runtime import TilelangRuntime, state_buffers

    first = load_engine(model=a.model, device="cuda", capacity=2112)
    second = load_engine(model=a.model, device="cuda", capacity=2112)
    plan = first.plan
    weights = {n: first.runtime.bufs[n] for n, s in plan.buffers.items() if s.kind == "weight"}
    state_a, state_b = state_buffers(first.runtime), state_buffers(second.runtime)
    cache = ("k_cache", "v_cache")
    peers = {"A: weights 1, state 1": first.runtime, "B: weights 2, state 2": second.runtime,
             "C: weights 1, state 3": TilelangRuntime(plan, weights, "cuda", pdl=True),
             "F: weights 1, state 1, cache 2": TilelangRuntime(
                 plan, {**weights, **state_a, **{n: state_b[n] for n in cache}}, "cuda", pdl=True),
             "G: weights 1, state 2, cache 1": TilelangRuntime(
                 plan, {**weights, **state_b, **{n: state_a[n] for n in cache}}, "cuda", pdl=True)}
    for n in state_a:  # where each state landed: the address and its offset in a 2 MiB page
        a, b = state_a[n].data_ptr(), state_b[n].data_ptr()
        print(f"state {n:>12} {state_a[n].nbytes:>11} B: 1 at {a:#x} (+{a % (1 << 21):#x}), "
              f"2 at {b:#x} (+{b % (1 << 21):#x})", flush=True)
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
