"""The lengths a generation must fit: the KV capacity it needs, and the checks on its prompt and
new tokens against the model and the cache, each a one-line error."""

from __future__ import annotations

from tfdash.engine.attn_plan import ATTN_BLOCK
from tfdash.engine.config import ModelConfig
from tfdash.errors import CapacityError, TfdashError


LEAST_CAPACITY = 4096  # positions a run's cache holds at least when none is given: the dashboard's re-runs fit


def default_capacity(cfg: ModelConfig, needed: int) -> int:
    """The KV capacity for `needed` positions: rounded up to whole attention blocks."""
    cap = -(-max(needed, 1) // ATTN_BLOCK) * ATTN_BLOCK
    return min(cap, max(cfg.max_position_embeddings, ATTN_BLOCK))


def check_ctx(cfg: ModelConfig, capacity: int, ctx_len: int) -> None:
    """A step at ctx_len attends over ctx_len + 1 positions and writes position ctx_len."""
    if ctx_len < 0:
        raise CapacityError(f"ctx_len={ctx_len} must be >= 0")
    if ctx_len >= cfg.max_position_embeddings:
        raise CapacityError(f"ctx_len={ctx_len} is past max_position_embeddings={cfg.max_position_embeddings} "
                            f"(largest ctx_len is {cfg.max_position_embeddings - 1})")
    if ctx_len >= capacity:
        raise CapacityError(f"ctx_len={ctx_len} is past the KV cache capacity of {capacity} "
                            f"position{'' if capacity == 1 else 's'} (largest ctx_len is {capacity - 1})")


def check_generation(cfg: ModelConfig, capacity: int, prompt_len: int, max_new_tokens: int) -> None:
    """The step at position p writes cache slot p; a generation touches positions 0..P+N-2."""
    if prompt_len < 1:
        raise CapacityError("the prompt must have at least one token")
    if max_new_tokens < 1:
        raise CapacityError(f"max-new-tokens={max_new_tokens} must be at least 1")
    total = prompt_len + max_new_tokens
    if total > cfg.max_position_embeddings:
        raise CapacityError(f"prompt ({prompt_len} tokens) + max-new-tokens ({max_new_tokens}) = {total} is past "
                            f"max_position_embeddings={cfg.max_position_embeddings}"
                            + what_fits(cfg.max_position_embeddings - prompt_len, "a shorter prompt"))
    if total - 1 > capacity:
        raise CapacityError(f"prompt ({prompt_len} tokens) + max-new-tokens ({max_new_tokens}) = {total} needs "
                            f"{total - 1} KV positions, past the cache capacity of {capacity}"
                            + what_fits(min(capacity + 1, cfg.max_position_embeddings) - prompt_len,
                                        "a larger cache"))


def what_fits(most: int, otherwise: str) -> str:
    """The error's way out: the most new tokens that fit (a default the model cannot run, such as the
    dashboard's 2048 on a short-context checkpoint, needs the number), or what else would do."""
    return f" (--max-new-tokens {most} or fewer)" if most >= 1 else f" (the prompt alone fills it: {otherwise})"


def check_prompt_ids(cfg: ModelConfig, ids) -> None:
    """Every prompt id indexes the embedding; one past it is a device-side assert on CUDA."""
    bad = [t for t in ids if not 0 <= int(t) < cfg.vocab_size]
    if bad:
        raise TfdashError(f"prompt token id {bad[0]} is outside the model's vocabulary of {cfg.vocab_size} "
                          f"(is the tokenizer the checkpoint's own?)")
