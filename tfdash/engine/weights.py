"""Model weights in the engine's layout: packed q|k|v and gate|up, named as the StepPlan names them.

Weights come from a checkpoint (HF names, validated by `checkpoint`) or are random: seeded, one
generator stream per tensor, scaled so the logits are not flat (std of a logit is about 2).
"""

from __future__ import annotations

import hashlib
import math

import torch

from tfdash.engine.checkpoint import expected_tensors
from tfdash.engine.config import ModelConfig
from tfdash.engine.names import packing

TORCH_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def torch_dtype(name: str) -> torch.dtype:
    return TORCH_DTYPES[name]


def _seed(base: int, name: str) -> int:
    return base * 1_000_003 + int.from_bytes(hashlib.sha1(name.encode()).digest()[:4], "little")


def random_state_dict(cfg: ModelConfig, dtype: torch.dtype, device="cpu", seed: int = 0,
                      gain: float = 1.5, loaded=None) -> dict[str, torch.Tensor]:
    """HF-named random weights of cfg's shape. Linears have std 1.5/sqrt(fan_in), so each layer
    mixes rather than passes its input through; the (tied) embedding has std 3/sqrt(hidden), so a
    logit of a unit-RMS hidden state has std about 3 (not flat, and greedy decoding does not
    collapse into one repeated token); norm weights are 1 + N(0, 0.05), so the scale is exercised.

    `gain` scales the linears. The default 1.5 makes a deep stack chaotic: bf16 rounding alone moves
    the 28-layer model's logits to cosine ~0.9997 of its f32 self. Accuracy tests use gain 0.5,
    whose stack is tame like a trained checkpoint's. `loaded(done_bytes, total_bytes)` is called
    after each tensor (`load_weights`)."""
    gen = torch.Generator(device=device)
    out = {}
    shapes = expected_tensors(cfg)
    count = counter(loaded, sum(math.prod(s) for s in shapes.values()) * dtype.itemsize)
    for name, shape in shapes.items():
        gen.manual_seed(_seed(seed, name))
        t = torch.empty(shape, dtype=torch.float32 if device == "cpu" else dtype, device=device)
        if len(shape) == 1:
            t.normal_(1.0, 0.05, generator=gen)
        elif "embed_tokens" in name or name == "lm_head.weight":
            t.normal_(0.0, 3.0 / math.sqrt(cfg.hidden_size), generator=gen)
        else:
            t.normal_(0.0, gain / math.sqrt(shape[1]), generator=gen)
        out[name] = t.to(dtype)
        count(out[name])
    return out


def counter(loaded, total: int):
    """A function of each tensor made, calling `loaded(done_bytes, total)` (none where `loaded` is None)."""
    done = 0

    def count(t: torch.Tensor) -> None:
        nonlocal done
        done += t.numel() * t.element_size()
        if loaded is not None:
            loaded(done, total)

    return count


def pack(cfg: ModelConfig, sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """HF names -> plan buffer names (tfdash.engine.names); q|k|v and gate|up concatenated along
    the output rows. Consumes `sd` (tensors are popped as they are packed, to keep peak memory
    near one copy); a tied lm_head in `sd` is dropped."""
    if cfg.tie_word_embeddings:
        sd.pop("lm_head.weight", None)  # a tied checkpoint may carry the embedding twice
    w = {}
    for buf, parts in packing(cfg).items():
        ts = [sd.pop(name) for name, _ in parts]
        w[buf] = ts[0] if len(ts) == 1 else torch.cat(ts, 0)
    return {k: v.contiguous() for k, v in w.items()}


def load_weights(cfg: ModelConfig, ckpt=None, dtype: torch.dtype = torch.bfloat16, device="cpu", seed: int = 0,
                 loaded=None, status=None):
    """Packed weights from `ckpt`, or random ones of cfg's shape when ckpt is None. A large model's
    weights take a minute or more (a checkpoint read from disk, random ones made on a CPU), so
    `loaded(done_bytes, total_bytes)` is called after each tensor, for a progress bar; `status(text)`
    as the packing starts (loading.PACKING: seconds at 1.7B on a CPU, after the last tensor's bytes)."""
    if ckpt is None:
        sd = random_state_dict(cfg, dtype, device, seed, loaded=loaded)
    else:
        from tfdash.engine.checkpoint import load_state_dict

        sd = load_state_dict(ckpt, cfg, dtype, device, loaded=loaded)
    if status is not None:
        from tfdash.engine.loading import PACKING

        status(PACKING)
    return pack(cfg, sd)
