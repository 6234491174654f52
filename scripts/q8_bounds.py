"""How tight the int8 lm_head's bounds are, on the CPU: for a random head of a preset's shape (the
random model's scale) and a random h, plain and with 1 % of its values 50 times larger, every row's
bound against its exact logit (f64), and how many rows the pick would compute exactly.

    python scripts/q8_bounds.py [--model qwen3-1.7b] [--seed 0]
"""

import argparse
import math
import sys
import time

import torch

from tfdash.engine.config import preset
from tfdash.kernels.lm_head_q8 import QG, bound, quantize_h, quantize_rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen3-1.7b")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    cfg = preset(args.model)
    V, K = cfg.vocab_size, cfg.hidden_size
    gen = torch.Generator().manual_seed(args.seed)
    w = (torch.randn(V, K, generator=gen) * (3 / math.sqrt(K))).to(torch.bfloat16)
    t0 = time.time()
    q, meta = quantize_rows(w)
    print(f"{args.model}: head {V} x {K}, quantized in {time.time() - t0:.1f} s")
    q8 = q.view(torch.int8).view(V, -1, QG).int()
    for name, h in (("plain", torch.randn(K, generator=gen)),
                    ("outliers", torch.randn(K, generator=gen) * torch.where(torch.rand(K, generator=gen) < 0.01,
                                                                               50.0, 1.0))):
        h = h.to(torch.bfloat16)
        r, t, hn, dn = quantize_h(h)
        a = ((q8 * r.view(-1, QG).int()).sum(-1).float() * t).sum(-1) * meta[:, 0]
        b = bound(meta, a, hn, dn, K)
        exact = w.double() @ h.double()
        worst = float(((exact - a.double()).abs() / b.double()).max())
        cand = int((a + b >= (a - b).max()).sum())
        print(f"  h {name:<8} rows past their bound {int(((exact - a.double()).abs() > b.double()).sum())}, "
              f"worst |logit - a| / b {worst:.3f}, candidates {cand} ({cand / V:.3%}), "
              f"mean b {float(b.mean()):.2f} against a logit std {float(exact.std()):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
