"""`tfdash bench`'s hf-compile peer: transformers' own Qwen3 on the engine's weight tensors.

Its `generate` runs with a static cache, which transformers compiles itself; it is timed as a
whole (prompt and new tokens), since it has no step the bench could time on its own.
"""

from __future__ import annotations

import time

class HFPeer:
    """transformers' Qwen3ForCausalLM on the same weights, static cache, compiled forward."""

    backend = "hf-compile"

    def __init__(self, cfg, runtime, device="cuda"):
        import torch
        import transformers

        from tfdash.engine.names import hf_config

        hf_cfg = hf_config(cfg)
        with torch.device(device):
            model = transformers.Qwen3ForCausalLM(hf_cfg).to(torch.bfloat16).eval()
        from tfdash.engine.names import hf_views

        sd = hf_views(cfg, runtime.bufs)
        model.load_state_dict(sd, strict=False)
        if cfg.tie_word_embeddings:
            model.tie_weights()
        # generate() compiles the decoding forward itself when the cache is static
        # (transformers' auto-compile, its CompileConfig defaults); no manual torch.compile.
        model.generation_config.cache_implementation = "static"
        self.model, self.device = model, device

    def generate(self, ids, n):
        import torch

        inp = torch.tensor([ids], device=self.device)
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        out = self.model.generate(inp, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                                  cache_implementation="static")
        torch.cuda.synchronize()
        wall = time.perf_counter_ns() - t0
        return out[0, len(ids):].tolist(), wall
