"""The options the commands share, and their types: the model's (--ckpt, --model, --device,
--dtype, --backend, --seed, --threads) and the generation's (--prompt, --max-new-tokens,
--ignore-eos), which the run, bench, analyze and counters each take, so that a mistake in one reads
the same in every command; and a snapshot file's type (open, --baseline, diff, counters --snapshot).
Each type raises argparse.ArgumentTypeError, which the command's parser says in its one line."""

from __future__ import annotations

import argparse

from tfdash.argparsing import ckpt_dir, prompt_text, user_path

def positive(v: str) -> int:
    try:
        n = int(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{v[:40]!r} is not an integer") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} must be at least 1")
    return n


def thread_count(v: str) -> int:
    from tfdash.engine.threads import MAX_THREADS

    n = positive(v)
    if n > MAX_THREADS:
        raise argparse.ArgumentTypeError(f"{n} is more than {MAX_THREADS}")
    return n


def seed_number(v: str) -> int:
    """--seed's type in every command: a whole number the weight generators can take."""
    try:
        n = int(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{v[:40]!r} is not an integer") from None
    if not 0 <= n < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"{v[:40]} is out of range (0..{SEED_LIMIT - 1})")
    return n


def preset_name(v: str) -> str:
    """--model's type in every command: an empty name (`--model "$MODEL"` with MODEL unset) is said,
    as `--ckpt ''` is, rather than read as no --model and run on the default shape; an unknown one
    is said by the command's parser, as its other arguments' mistakes are."""
    from tfdash.defaults import PRESET_NAMES

    if not v.strip():
        raise argparse.ArgumentTypeError(f"{v!r} is empty: give a preset ({', '.join(PRESET_NAMES)})")
    if v not in PRESET_NAMES:
        raise argparse.ArgumentTypeError(f"unknown model preset {v!r}; choose one of {', '.join(PRESET_NAMES)}")
    return v


def snapshot_path(v: str) -> str:
    """A snapshot to read (open's, --baseline, diff's A and B, counters --snapshot): `user_path`, and
    an empty one said as such, where '' read as the current folder ("is a directory")."""
    if not v.strip():
        raise argparse.ArgumentTypeError(f"{v!r} is empty: give a snapshot file")
    return user_path(v)


SEED_LIMIT = 1 << 40  # the per-tensor generator seeds (seed * 1e6 + a 32-bit hash) stay under 2**64


def add_model_args(p: argparse.ArgumentParser, threads: bool = True) -> None:
    """The model's options; `threads` False where no CPU engine runs (counters: a CUDA step)."""
    src = p.add_argument_group("model")
    src.add_argument("--ckpt", metavar="DIR", type=ckpt_dir,
                     help="a Qwen3 checkpoint directory (config.json, safetensors, "
                     "tokenizer.json); without it, random weights of --model's shape")
    from tfdash.defaults import DEFAULT_SEED, PRESET_NAMES

    src.add_argument("--model", metavar="PRESET", type=preset_name,
                     help=", ".join(PRESET_NAMES) + " (default: qwen3-tiny on CPU, "
                     "qwen3-1.7b on CUDA)")
    src.add_argument("--device", choices=("cpu", "cuda"), help="default: cuda when available")
    src.add_argument("--dtype", choices=("bfloat16", "float16", "float32"),
                     help="default: bfloat16 on CUDA, float32 on CPU")
    src.add_argument("--backend", choices=("torch-eager", "torch-graph", "tilelang-graph"),
                     help="default: tilelang-graph on CUDA (torch-graph without tilelang), torch-eager on CPU")
    src.add_argument("--seed", type=seed_number, default=None,  # None: given or not, told apart (check_seed)
                     help=f"seed of the random weights (default {DEFAULT_SEED})")
    if not threads:
        return
    src.add_argument("--threads", type=thread_count, default=None, metavar="N",
                     help="CPU: torch's threads (default: OMP_NUM_THREADS, else the cores less one left spare, "
                          "less two with the dashboard, 1 to 8: a busy core stalls every op of a wider pool)")


def add_run_args(p: argparse.ArgumentParser) -> None:
    from tfdash.defaults import AB_MAX_NEW, DASHBOARD_MAX_NEW, DEFAULT_PROMPT, HEADLESS_MAX_NEW

    add_model_args(p)
    g = p.add_argument_group("generation")
    g.add_argument("--prompt", type=prompt_text, default=DEFAULT_PROMPT, help="the prompt text (default: %(default)r)")
    g.add_argument("--max-new-tokens", type=positive, default=None, metavar="N",
                   help=f"tokens to generate (default {HEADLESS_MAX_NEW} headless, {AB_MAX_NEW} with --ab, "
                        f"{DASHBOARD_MAX_NEW} in the dashboard)")
    g.add_argument("--ignore-eos", action="store_true", help="keep generating past an end-of-sequence token")
