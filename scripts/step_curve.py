"""Does the decode loop cost the GPU time? A diagnostic (H200 only).

`tfdash bench` times a generation's steps by the token ring (the clock stamps argmax stores beside each
token, else events after each replay: Generation's step_ns); `scripts/kernel_times.py` times back-to-back replays with events
around each, from one position. Where the two disagree, this script runs both on one engine and
one cache, binned by position:

    gen      a Generation of --new tokens (after the bench's warm-up), each step's ring-event time
    replay   `--reps` replays back to back from the bin's first position (kernel_times' timing)

per bin of --bin positions, the median µs of each and their difference, and the gaps between the
steps (the GPU idle between one replay and the next) that the generation's host loop adds, read
as gen minus replay. A gap near zero says the loop keeps the GPU fed and the difference lives in
the kernels; a positive one names host time to win back.

    python scripts/step_curve.py [--model qwen3-1.7b] [--new 2048] [--bin 256] --out OUT.json
"""

import argparse
import json
import platform
import statistics
import sys
from datetime import datetime, timezone

import torch

from tfdash.defaults import DEFAULT_PROMPT
from tfdash.engine.config import preset
from tfdash.engine.decode import Generation
from tfdash.engine.limits import default_capacity
from tfdash.engine.plan import build_plan
from tfdash.engine.runtime import TilelangRuntime
from tfdash.engine.tokenizer import StandInTokenizer
from tfdash.engine.weights import pack, random_state_dict

from kernel_times import replay_times  # this script's folder is on sys.path when it runs


def generation_steps(rt, ids, new, tok):
    """Each step's µs over one generation, by position (step s runs at position s)."""
    for _ in Generation(rt, ids, 16, tok):  # the bench's warm-up
        pass
    gen = Generation(rt, ids, new, tok)
    n = sum(1 for _ in gen)
    assert n == new, f"the generation stopped after {n} of {new} tokens ({gen.stats.stopped})"
    return [ns / 1e3 for ns in gen.stats.step_ns]


def curve(steps, rt, bin_w, reps):
    """Per bin: the generation's median step and back-to-back replays' median from the bin start."""
    rows = []
    for start in range(0, len(steps), bin_w):
        g = steps[start:start + bin_w]
        r = replay_times(rt, min(reps, len(g)), start)
        rows.append({"positions": [start, start + len(g) - 1], "gen_us": statistics.median(g),
                     "replay_us": statistics.median(r), "gen_p90_us": sorted(g)[int(0.9 * (len(g) - 1))]})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen3-1.7b")
    ap.add_argument("--new", type=int, default=2048, help="new tokens of the generation")
    ap.add_argument("--bin", type=int, default=256, help="positions a bin")
    ap.add_argument("--reps", type=int, default=64, help="back-to-back replays a bin")
    ap.add_argument("--rounds", type=int, default=2, help="generation then replays, this many times")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    cfg = preset(args.model)
    tok = StandInTokenizer(cfg.vocab_size)
    ids = tok.encode(DEFAULT_PROMPT)
    capacity = default_capacity(cfg, len(ids) + args.new)
    rt = TilelangRuntime(build_plan(cfg, "bfloat16", capacity=capacity),
                         pack(cfg, random_state_dict(cfg, torch.bfloat16, "cuda", 0)), "cuda")
    rt.capture(ids)
    out = {"host": platform.node(), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join(["scripts/step_curve.py", *sys.argv[1:]]), "model": args.model,
           "new_tokens": args.new, "prompt_tokens": len(ids), "capacity": capacity,
           "bin": args.bin, "reps": args.reps, "rounds": []}
    for k in range(args.rounds):
        steps = generation_steps(rt, ids, args.new, tok)
        rows = curve(steps, rt, args.bin, args.reps)
        out["rounds"].append({"gen_step_us": steps, "bins": rows})
        print(f"round {k}: generation step p50 {statistics.median(steps):.1f} us, mean {statistics.mean(steps):.1f}")
        print(f"{'positions':>12} {'gen us':>9} {'replay us':>10} {'gen - replay':>13} {'gen p90':>9}")
        for r in rows:
            a, b = r["positions"]
            print(f"{a:>5}-{b:<6} {r['gen_us']:>9.1f} {r['replay_us']:>10.1f} "
                  f"{r['gen_us'] - r['replay_us']:>13.1f} {r['gen_p90_us']:>9.1f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
