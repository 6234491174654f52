"""Which plan variants decode the default graph's bits: each variant's 64-token generation (after a
200-position prompt walk) against the default's, and the default against itself, at 1.7B.
Prints, per variant, the first step whose token differs and the largest logit difference."""
import sys

import torch

from tfdash.engine.config import preset
from tfdash.engine.plan import build_plan
from tfdash.engine.runtime import TilelangRuntime
from tfdash.engine.weights import pack, random_state_dict

CFG, DEV = preset("qwen3-1.7b"), "cuda"
PROMPT = [11, 22, 33, 44, 55] * 40
STEPS = len(PROMPT) - 1 + 64


def run(rt):
    rt.reset(PROMPT)
    for _ in range(STEPS):
        rt.step()
    torch.cuda.synchronize()
    return rt.bufs["out_tokens"][:STEPS].clone(), rt.bufs["logits"].clone()


def main():
    weights = pack(CFG, random_state_dict(CFG, torch.bfloat16, DEV, seed=0, gain=0.5))
    base = TilelangRuntime(build_plan(CFG, dtype="bfloat16", capacity=2048), weights, DEV)
    base.capture()
    bt, bl = run(base)
    cases = [("default again", None), ("latekv", {"attn_kv_early": False}), ("lateres", {"early_residual": False}),
             ("chains", {"attn_ilp": False}), ("chains+latekv", {"attn_ilp": False, "attn_kv_early": False})]
    for name, opts in cases:
        rt = base if opts is None else TilelangRuntime(build_plan(CFG, dtype="bfloat16", capacity=2048, **opts),
                                                       weights, DEV)
        if opts is not None:
            rt.capture()
        for rep in range(2):
            t, lg = run(rt)
            diff = (t != bt).nonzero()
            first = int(diff[0]) if len(diff) else -1
            print(f"{name:16s} rep {rep}: tokens differ at {len(diff)} steps (first {first}), "
                  f"max |logit diff| {float((lg.float() - bl.float()).abs().max()):.4g}", flush=True)
        del rt
    return 0


if __name__ == "__main__":
    sys.exit(main())
