"""The decode engine: config, weights, tokenizer, step plan, runtime and decode loop.

`load_engine` is the one entry point the CLI, the profiler and the app use:

    eng = load_engine(ckpt=None, model="qwen3-tiny", device="cpu")
    gen = eng.generate("The GPU", max_new_tokens=64)
    for event in gen: print(event.text, end="")
    print(gen.stats.summary())
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path

from tfdash.engine.config import PRESETS, ModelConfig, load_config, preset
from tfdash.engine.decode import Generation, GenerationStats, TokenEvent
from tfdash.engine.plan import StepPlan, build_plan, check_generation, check_prompt_ids, default_capacity
from tfdash.errors import CapacityError, TfdashError

__all__ = [
    "PRESETS", "Engine", "Generation", "GenerationStats", "ModelConfig", "StepPlan", "TokenEvent",
    "build_plan", "default_backend", "default_device", "load_config", "load_engine", "preset",
]

DEFAULT_PROMPT = "Write a detailed explanation of how a GPU executes a matrix multiplication."


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def tilelang_available() -> bool:
    if platform.system() != "Linux":
        return False
    try:
        import importlib.util

        return importlib.util.find_spec("tilelang") is not None
    except (ImportError, ValueError):
        return False


def fallback_note(device: str, backend: str, requested: str | None) -> str | None:
    """One line when a CUDA run picked the torch peer only because tilelang is missing."""
    if requested or not device.startswith("cuda") or backend != "torch-graph" or tilelang_available():
        return None
    return ("tilelang is not importable here, so the engine is the torch-graph peer (cuBLAS GEMVs, "
            "about 5x slower on the H200); install tilelang for the tilelang-graph engine")


def default_backend(device: str) -> str:
    if device.startswith("cuda"):
        return "tilelang-graph" if tilelang_available() else "torch-graph"
    return "torch-eager"


@dataclass
class Engine:
    config: ModelConfig
    plan: StepPlan
    runtime: object
    tokenizer: object
    source: str  # checkpoint path, or "random"
    device: str
    backend: str
    seed: int = 0

    @property
    def random_weights(self) -> bool:
        return self.source == "random"

    def encode(self, prompt: str) -> list[int]:
        ids = self.tokenizer.encode(prompt)
        if not ids:
            raise TfdashError("the prompt encodes to no tokens")
        return ids

    def generate(self, prompt: str | list[int], max_new_tokens: int, stop=None, ignore_eos: bool = False,
                 depth: int | None = None) -> Generation:
        from tfdash.settings import SETTINGS

        ids = self.encode(prompt) if isinstance(prompt, str) else list(prompt)
        depth = depth or (SETTINGS.depth if self.runtime.cuda else 2)
        eos = () if (ignore_eos or self.random_weights) else self.config.eos_token_ids
        return Generation(self.runtime, ids, max_new_tokens, self.tokenizer, eos_ids=eos, depth=depth, stop=stop)


def load_engine(ckpt: str | Path | None = None, model: str | None = None, device: str | None = None,
                dtype: str | None = None, backend: str | None = None, capacity: int | None = None,
                prompt: str | None = None, max_new_tokens: int | None = None, seed: int = 0,
                progress=None) -> Engine:
    """Build an engine on the embedded default (qwen3-tiny on CPU, the qwen3-1.7b shape on CUDA,
    random weights) or on a checkpoint. When prompt and max_new_tokens are given, the lengths are
    checked against max_position_embeddings and the capacity before any weight is loaded."""
    import torch

    from tfdash.engine.runtime import make_runtime
    from tfdash.engine.tokenizer import StandInTokenizer, load_tokenizer
    from tfdash.engine.weights import load_weights, torch_dtype

    device = device or default_device()
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise TfdashError("--device cuda: no CUDA device is available (torch.cuda.is_available() is False)")
    if ckpt is not None:
        if model is not None:
            raise TfdashError("give --ckpt or --model, not both")
        cfg = load_config(ckpt)
        tokenizer = load_tokenizer(ckpt)
        source = str(ckpt)
    else:
        cfg = preset(model or ("qwen3-1.7b" if device.startswith("cuda") else "qwen3-tiny"))
        tokenizer = StandInTokenizer(cfg.vocab_size)
        source = "random"
    dtype = dtype or ("bfloat16" if device.startswith("cuda") else "float32")
    backend = backend or default_backend(device)
    if backend != "torch-eager" and not device.startswith("cuda"):
        raise TfdashError(f"backend {backend} needs --device cuda")
    if capacity is None:
        need = 4096
        if prompt is not None and max_new_tokens is not None:
            need = max(need, len(tokenizer.encode(prompt)) + max_new_tokens)
        capacity = default_capacity(cfg, need)  # may round up past a max_position_embeddings < one block
    elif capacity > cfg.max_position_embeddings:
        raise CapacityError(f"capacity {capacity} is past max_position_embeddings={cfg.max_position_embeddings}")
    if ckpt is not None:
        from tfdash.engine.checkpoint import inventory

        inventory(Path(ckpt), cfg)  # the config against the tensors on disk, before anything is sized by it
    from tfdash.settings import SETTINGS

    plan = build_plan(cfg, dtype=dtype, capacity=capacity, attn_kv_early=bool(SETTINGS.attn_kv_early),
                      early_residual=bool(SETTINGS.early_residual),
                      down_smem_prefetch=bool(SETTINGS.down_smem_prefetch))
    if prompt is not None and max_new_tokens is not None:
        ids = tokenizer.encode(prompt)
        check_generation(cfg, plan.capacity, len(ids), max_new_tokens)
        check_prompt_ids(cfg, ids)
    from tfdash.engine.memory import allocation_error, check_fits

    check_fits(cfg, plan.capacity, dtype, device)
    try:
        weights = load_weights(cfg, ckpt, torch_dtype(dtype), device, seed)
        runtime = make_runtime(backend, plan, weights, device, progress=progress)
    except (torch.OutOfMemoryError, MemoryError) as e:
        raise allocation_error(e, cfg, plan.capacity, dtype, device) from None
    return Engine(cfg, plan, runtime, tokenizer, source, device, backend, seed)
