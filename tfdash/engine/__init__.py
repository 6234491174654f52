"""The decode engine: config, weights, tokenizer, step plan, runtime and decode loop.

    config.py      ModelConfig and presets          names.py     HF tensor names -> plan buffers
    checkpoint.py  safetensors, validated           weights.py   packed (or random) weights
    tokenizer.py   tokenizers, streaming decode     plan.py      StepPlan: every launch of a step
    runtime.py     the plan launched (eager, graph) and the step state it owns (hold, capture)
    compile.py     tilelang kernels compiled once   decode.py    the decode loop (Generation)

`choose_engine` resolves the command line's engine arguments (the same for headless, the
dashboard and bench); `load_engine` is the one entry point the CLI, the profiler and the app use:

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
from tfdash.engine.limits import LEAST_CAPACITY, check_generation, check_prompt_ids, default_capacity
from tfdash.engine.plan import StepPlan, build_plan
from tfdash.defaults import DEFAULT_PROMPT  # noqa: F401  (re-exported)
from tfdash.defaults import DEFAULT_SEED
from tfdash.errors import CapacityError, TfdashError, UnsupportedShape

__all__ = [
    "PRESETS", "Engine", "Generation", "GenerationStats", "ModelConfig", "StepPlan", "TokenEvent",
    "build_plan", "default_backend", "default_device", "load_config", "load_engine", "preset",
]



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
    threads: int | None = None  # torch's CPU threads (chosen by engine.threads), None on CUDA
    threads_why: str = ""
    fallback: str | None = None  # why the default tilelang engine gave way to a torch runtime

    @property
    def random_weights(self) -> bool:
        return self.source == "random"

    def encode(self, prompt: str) -> list[int]:
        ids = self.tokenizer.encode(prompt)
        if not ids:
            raise TfdashError("the prompt encodes to no tokens")
        return ids

    def generate(self, prompt: str | list[int], max_new_tokens: int, stop=None, ignore_eos: bool = False,
                 depth: int | None = None, keep: int | None = None) -> Generation:
        """A generation on this engine: EOS ends it unless ignore_eos or the weights are random;
        `depth` steps in flight (default: SETTINGS.depth on CUDA; 1 on CPU, whose steps are synchronous:
        with more, a token was stamped only after the next step ran, so time to first token took a decode
        step and decode-only tok/s lost one)."""
        from tfdash.settings import SETTINGS

        ids = self.encode(prompt) if isinstance(prompt, str) else list(prompt)
        depth = depth or (SETTINGS.depth if self.runtime.cuda else 1)
        eos = () if (ignore_eos or self.random_weights) else self.config.eos_token_ids
        return Generation(self.runtime, ids, max_new_tokens, self.tokenizer, eos_ids=eos, depth=depth, stop=stop,
                          keep=keep)


@dataclass(frozen=True)
class EngineChoice:
    """What the command line's engine arguments resolve to, before any weight is loaded."""

    config: ModelConfig
    tokenizer: object
    source: str  # checkpoint path, or "random"
    device: str
    dtype: str
    backend: str

    def capacity(self, capacity: int | None = None, prompt: str | None = None,
                 max_new_tokens: int | None = None) -> int:
        """The KV capacity: as given (checked against max_position_embeddings), else the
        dashboard's 4096 or what the prompt and max_new_tokens need, in whole attention blocks."""
        cfg = self.config
        if capacity is not None:
            if capacity > cfg.max_position_embeddings:
                raise CapacityError(f"capacity {capacity} is past "
                                    f"max_position_embeddings={cfg.max_position_embeddings}")
            return capacity
        need = LEAST_CAPACITY
        if prompt is not None and max_new_tokens is not None:
            need = max(need, len(self.tokenizer.encode(prompt)) + max_new_tokens)
        return default_capacity(cfg, need)  # may round up past a max_position_embeddings < one block


def check_seed(ckpt, seed: int | None) -> None:
    """Any --seed given with --ckpt, 0 included: one line (it seeds random weights only), said by
    choose_engine and by bench with its other argument checks, before the device. No --seed is None
    (the parsers' default), so an explicit `--seed 0` is refused as `--seed 3` is."""
    if ckpt is not None and seed is not None:
        raise TfdashError(f"--seed {seed} seeds random weights; a checkpoint's weights are its own: "
                          "give --ckpt or --seed, not both")


def check_arguments(ckpt=None, model: str | None = None, seed: int | None = None, device: str | None = None,
                    backend: str | None = None) -> None:
    """The engine arguments that cannot go together (--ckpt with --model or any --seed, a CUDA backend
    with --device cpu), told apart from what the host or the checkpoint refuses: these are mistakes
    of the command line alone, which a command says as its parser says its own (errors.as_usage).
    choose_engine checks them first, on any host and before any file is read."""
    if ckpt is not None and model is not None:
        raise TfdashError("give --ckpt or --model, not both")
    check_seed(ckpt, seed)
    if device is not None and not device.startswith("cuda") and backend not in (None, "torch-eager"):
        raise TfdashError(f"backend {backend} needs --device cuda")


def choose_engine(ckpt: str | Path | None = None, model: str | None = None, device: str | None = None,
                  dtype: str | None = None, backend: str | None = None, seed: int | None = None) -> EngineChoice:
    """The engine the arguments ask for, the same for headless, the dashboard and bench: the
    embedded default (qwen3-tiny on CPU, the qwen3-1.7b shape on CUDA, random weights) or a
    checkpoint's config and tokenizer. Every conflict is a TfdashError line; an option that would
    change nothing (--model or any --seed with --ckpt) is one, not dropped."""
    import torch

    from tfdash.engine.tokenizer import StandInTokenizer, load_tokenizer

    check_arguments(ckpt, model, seed, device, backend)
    device = device or default_device()
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise TfdashError("--device cuda: no CUDA device is available (torch.cuda.is_available() is False)")
    if ckpt is not None:
        cfg, tokenizer, source = load_config(ckpt), load_tokenizer(ckpt), str(ckpt)
    else:
        cfg = preset(model or ("qwen3-1.7b" if device.startswith("cuda") else "qwen3-tiny"))
        tokenizer, source = StandInTokenizer(cfg.vocab_size), "random"
    dtype = dtype or ("bfloat16" if device.startswith("cuda") else "float32")
    backend = backend or default_backend(device)
    if backend != "torch-eager" and not device.startswith("cuda"):  # no --device (--device cpu: check_arguments)
        raise TfdashError(f"backend {backend} needs a CUDA device and this host has none "
                          "(torch.cuda.is_available() is False); on the CPU, --backend torch-eager runs")
    return EngineChoice(cfg, tokenizer, source, device, dtype, backend)


def qkv_trigger_first(value: str) -> bool | None:
    """build_plan's qkv_trigger_first for the knob's auto, on or off."""
    choice = {"auto": None, "on": True, "off": False}
    if value.strip().lower() not in choice:
        raise TfdashError(f"TFDASH_QKV_TRIGGER_FIRST={value!r} must be auto, on or off")
    return choice[value.strip().lower()]


def plan_for(cfg: ModelConfig, dtype: str, capacity: int, backend: str = "tilelang-graph") -> StepPlan:
    """The step plan load_engine builds for `backend`, with the plan knobs of SETTINGS in effect (a
    child process with the same environment builds the same plan: `tfdash counters` relies on it).
    The int8 head (TFDASH_LM_HEAD_Q8) is the tilelang engine's: the torch runtimes keep the bf16
    GEMV head, their fastest form (the int8 head's torch spelling is a reference, several times
    slower), and so does a shape its kernels do not take (a hidden size not a multiple of 512).
    The prompt is taken in chunks (TFDASH_PREFILL) by every backend, except where the tilelang
    prompt kernels cannot take the shape: there the step walks it."""
    from tfdash.engine.head_plan import q8_unsupported
    from tfdash.engine.prefill_plan import ROWS, prefill_unsupported
    from tfdash.kernels.splitkv import SPLIT_CAP
    from tfdash.settings import SETTINGS

    cap = int(SETTINGS.attn_split_cap)
    q8 = bool(SETTINGS.lm_head_q8) and backend == "tilelang-graph"
    plan = build_plan(cfg, dtype=dtype, capacity=capacity, attn_kv_early=bool(SETTINGS.attn_kv_early),
                      early_residual=bool(SETTINGS.early_residual),
                      o_proj_trigger_first=bool(SETTINGS.o_proj_trigger_first),
                      attn_merge_early=bool(SETTINGS.attn_merge_early), early_norm=bool(SETTINGS.early_norm),
                      attn_merge_acq_rel=bool(SETTINGS.attn_merge_acq_rel),
                      attn_merge_chunk=int(SETTINGS.attn_merge_chunk) or None,  # 0: the shape's own
                      attn_trigger_at=str(SETTINGS.attn_trigger_at) or None,  # empty: the shape's own
                      gate_up_silu=bool(SETTINGS.gate_up_silu),
                      qkv_trigger_first=qkv_trigger_first(str(SETTINGS.qkv_trigger_first)),
                      ring_in_graph=bool(SETTINGS.ring_in_graph), ring_stamps=bool(SETTINGS.ring_stamps),
                      attn_ilp=bool(SETTINGS.attn_ilp),
                      attn_rounds_carry=bool(SETTINGS.attn_rounds_carry),
                      lm_head_q8=q8,
                      attn_split_cap=None if cap == SPLIT_CAP else cap,  # the default keeps the kernel's name
                      prefill_rows=ROWS if SETTINGS.prefill else 0)
    if plan.meta["options"]["lm_head_q8"] and q8_unsupported(plan):
        plan = build_plan(cfg, **{**plan.meta["options"], "lm_head_q8": False})
    if backend == "tilelang-graph" and plan.meta["options"]["prefill_rows"] and prefill_unsupported(plan):
        plan = build_plan(cfg, **{**plan.meta["options"], "prefill_rows": 0})  # the step walks the prompt
    return plan


def load_engine(ckpt: str | Path | None = None, model: str | None = None, device: str | None = None,
                dtype: str | None = None, backend: str | None = None, capacity: int | None = None,
                prompt: str | None = None, max_new_tokens: int | None = None, seed: int | None = None,
                progress=None, threads: int | None = None, ui: bool = False, loading=None, status=None) -> Engine:
    """Build an engine on the embedded default (qwen3-tiny on CPU, the qwen3-1.7b shape on CUDA,
    random weights) or on a checkpoint. When prompt and max_new_tokens are given, the lengths are
    checked against max_position_embeddings and the capacity before any weight is loaded. On CPU,
    torch's thread count is set by `choose_threads(threads, ui)` (`ui`: a dashboard shares the
    process and wants a core). `progress` hears of each kernel compiled (compile.compile_plan) and
    `loading(done_bytes, total_bytes)` of each weight loaded (tfdash.engine.loading); `status(text)`
    of each phase after the weights' bytes (loading.PACKING, loading.RUNTIME), seconds each for a
    large model on a CPU, where the status line or stderr would otherwise stand still."""
    import torch

    from tfdash.engine.runtime import make_runtime
    from tfdash.engine.weights import load_weights, torch_dtype

    requested_backend = backend
    choice = choose_engine(ckpt, model, device, dtype, backend, seed)
    seed = DEFAULT_SEED if seed is None else seed  # no --seed: the random weights' seed, as Engine.seed records it
    cfg, tokenizer, source, device, dtype, backend = (choice.config, choice.tokenizer, choice.source, choice.device,
                                                      choice.dtype, choice.backend)
    capacity = choice.capacity(capacity, prompt, max_new_tokens)
    if ckpt is not None:
        from tfdash.engine.checkpoint import inventory

        inventory(Path(ckpt), cfg)  # the config against the tensors on disk, before anything is sized by it
    plan = plan_for(cfg, dtype, capacity, backend)
    if prompt is not None and max_new_tokens is not None:
        ids = tokenizer.encode(prompt)
        check_generation(cfg, plan.capacity, len(ids), max_new_tokens)
        check_prompt_ids(cfg, ids)
    fallback = None
    if backend == "tilelang-graph":
        from tfdash.engine.compile import unsupported

        why = unsupported(plan)  # before any weight is loaded
        if why and requested_backend:
            raise UnsupportedShape(f"the tilelang engine cannot run {why}; --backend torch-graph can")
        if why:
            backend = "torch-graph"
            fallback = f"the tilelang engine cannot run {why}, so the engine is the torch-graph peer"
            plan = plan_for(cfg, dtype, capacity, backend)
    if not device.startswith("cuda"):
        from tfdash.engine.threads import apply_threads, choose_threads

        threads, threads_why = choose_threads(threads, ui=ui)
        apply_threads(threads)
    else:
        from tfdash.engine.threads import gpu_threads

        threads, threads_why = gpu_threads(threads)
    from tfdash.engine.head_plan import derived_bytes
    from tfdash.engine.loading import RUNTIME
    from tfdash.engine.memory import allocation_error, check_fits

    made = derived_bytes(plan)  # every runtime of the plan makes them (the torch spellings read them too)
    check_fits(cfg, plan.capacity, dtype, device, derived=made)
    try:
        weights = load_weights(cfg, ckpt, torch_dtype(dtype), device, seed, loaded=loading, status=status)
        if status is not None:
            status(RUNTIME)
        runtime = make_runtime(backend, plan, weights, device, progress=progress)
    except (torch.OutOfMemoryError, MemoryError) as e:
        raise allocation_error(e, cfg, plan.capacity, dtype, device, made) from None
    return Engine(cfg, plan, runtime, tokenizer, source, device, backend, seed, threads, threads_why, fallback)
