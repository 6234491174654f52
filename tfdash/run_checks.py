"""The run command's (`tfdash`, headless or the dashboard) checks of its engine arguments, before any
weight is loaded: options that cannot go together (--ckpt with --model or --seed, a CUDA backend with
--device cpu) and a prompt with --max-new-tokens past the model's positions. Each is a mistake of
the command line, so it is said as the parser says its own: `tfdash: error: ... (see tfdash --help)`,
as bench says the same mistakes of its own arguments. What the host or the checkpoint refuses (no
CUDA device, a folder without config.json) is no usage mistake and keeps its own line."""

from __future__ import annotations

from tfdash.errors import as_usage

PROG = "tfdash"


def check_engine_args(args, max_new_tokens: int):
    """The engine `args` ask for (an EngineChoice) and its KV capacity, once the arguments are
    checked against each other, the checkpoint's tensors against its config, and the lengths against
    the model; `max_new_tokens` is the run's (its default, where
    --max-new-tokens is not given, differs between headless and the dashboard)."""
    from tfdash.engine import check_arguments, choose_engine
    from tfdash.engine.limits import check_generation

    engine_args = dict(ckpt=args.ckpt, model=args.model, seed=getattr(args, "seed", None), device=args.device,
                       backend=getattr(args, "backend", None))
    with as_usage(PROG):
        check_arguments(**engine_args)
    choice = choose_engine(dtype=getattr(args, "dtype", None), **engine_args)
    if args.ckpt is not None:  # the tensors on disk against the config (headers only): a broken checkpoint
        from pathlib import Path  # is said before the lengths its config allows

        from tfdash.engine.checkpoint import inventory

        inventory(Path(args.ckpt), choice.config)
    capacity = choice.capacity(None, args.prompt, max_new_tokens)
    with as_usage(PROG):  # the prompt and --max-new-tokens: the cache is sized to fit them, the model may not be
        check_generation(choice.config, capacity, len(choice.tokenizer.encode(args.prompt)), max_new_tokens)
    return choice, capacity
