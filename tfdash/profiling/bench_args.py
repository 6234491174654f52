"""`tfdash bench`'s command line: the backends it knows, its parser, the backends a run measures
(--backends, --gemv, --also-capacity), and the checks of its arguments that need no device (a typo
is worth saying on any machine, before the missing GPU). The measurement itself is
tfdash.profiling.bench."""

from __future__ import annotations

import argparse

from tfdash.argparsing import Parser, ckpt_dir, prompt_text
from tfdash.errors import TfdashError, UnsupportedShape, UsageError, as_usage
from tfdash.options import preset_name, seed_number
from tfdash.profiling.files import out_arg
from tfdash.profiling.variants import GEMV_OPS, PLAN_VARIANTS, gemv_variant

BACKENDS = ("tilelang-graph", "tilelang-nopdl", *PLAN_VARIANTS, "torch-compile", "torch-graph", "hf-compile")
DEFAULT_BACKENDS = "tilelang-graph,torch-compile,torch-graph"
PROG = "tfdash bench"


def parser() -> argparse.ArgumentParser:
    from tfdash.defaults import DEFAULT_PROMPT, DEFAULT_SEED, PRESET_NAMES

    p = Parser(prog=PROG,
               description="tok/s of the tilelang graph engine and its "
                           "peers, alternating in one process over several rounds. Needs a CUDA device "
                           "(the arguments are checked on any machine).")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--ckpt", metavar="DIR", type=ckpt_dir, help="a Qwen3 checkpoint (default: random weights)")
    src.add_argument("--model", metavar="PRESET", default=None, type=preset_name,
                     help="a preset: " + ", ".join(PRESET_NAMES)
                     + " (default: qwen3-1.7b)")
    p.add_argument("--max-new-tokens", type=int, default=2048, metavar="N",
                   help="tokens each backend generates a round (default %(default)s)")
    p.add_argument("--prompt", type=prompt_text, default=DEFAULT_PROMPT, help="the prompt text (default: %(default)r)")
    p.add_argument("--rounds", type=int, default=3, help="alternations of all backends (default 3)")
    p.add_argument("--backends", default=DEFAULT_BACKENDS,
                   help="comma-separated, from: " + ", ".join(BACKENDS) + " (default: %(default)s; "
                        "hf-compile only where transformers is installed)")
    p.add_argument("--gemv", action="append", default=[], metavar="OP:KEY=V[,KEY=V][+OP:...]",
                   help="a GEMV launch-settings variant as one more tilelang peer (repeatable; OP one of "
                        f"{', '.join(GEMV_OPS)}; KEY rows, seg, blocks_per_sm, min_blocks (__launch_bounds__' "
                        "blocks per SM) or trigger_first=1), e.g. down:seg=8,blocks_per_sm=1, or several "
                        "ops joined by +: the sweep that decides an entry of the GEMV table")
    p.add_argument("--json", metavar="OUT", type=out_arg,
                   help="write every round and the summary as JSON (- for stdout)")
    p.add_argument("--seed", type=seed_number, default=None,  # None: given or not, told apart (check_seed)
                   help=f"seed of the random weights (default {DEFAULT_SEED}), as the other commands take it")
    p.add_argument("--capacity", type=int, default=None, metavar="N",
                   help="KV cache positions (default: just enough for the run; the dashboard uses 4096). "
                        "Attention's grid stops growing at 32 programs a kv head, so a larger cache launches no more")
    p.add_argument("--also-capacity", type=int, action="append", default=[], metavar="N",
                   help="one more tilelang-graph peer whose KV cache holds N positions (repeatable), "
                        "e.g. 4096, the dashboard's: what a larger cache costs, in the same process")
    return p


def check_numbers(args) -> None:
    """The counts and sizes, each said on its own; a --seed that --ckpt makes moot."""
    from tfdash.engine import check_seed

    with as_usage(PROG):  # --seed beside --ckpt: said as the parser says its own mistakes
        check_seed(args.ckpt, args.seed)
    for flag, n in (("--rounds", args.rounds), ("--max-new-tokens", args.max_new_tokens)):
        if n < 1:
            raise UsageError(f"{flag} {n} must be at least 1", PROG)
    if args.capacity is not None and args.capacity < 1:
        raise UsageError(f"--capacity {args.capacity} must be positive", PROG)
    for n in args.also_capacity:
        if n < 1:
            raise UsageError(f"--also-capacity {n} must be positive", PROG)
    for flag, given in (("--gemv", args.gemv), ("--also-capacity", args.also_capacity)):
        twice = sorted({str(v) for v in given if given.count(v) > 1})
        if twice:  # one name per row: the second copy was built beside the first and replaced its row
            raise UsageError(f"{flag} {', '.join(twice)} given twice: each is one row of the table", PROG)


def wanted_backends(args) -> tuple[list[str], dict[str, dict]]:
    """The backends the run measures, a row each, in order (--backends, then each --gemv variant,
    then each --also-capacity cache), and the build options of each tilelang variant (the plan
    variants' and --gemv's)."""
    wanted = [b.strip() for b in args.backends.split(",") if b.strip()]
    if not wanted and not args.gemv and not args.also_capacity:  # else a run that measures nothing
        raise UsageError(f"--backends {args.backends!r} names no backend (known: {', '.join(BACKENDS)})", PROG)
    unknown = set(wanted) - set(BACKENDS)
    if unknown:
        raise UsageError(f"unknown backend(s): {', '.join(sorted(unknown))} (known: {', '.join(BACKENDS)})", PROG)
    if len(set(wanted)) < len(wanted):  # a second copy would be built beside the first, and replace its row
        raise UsageError(f"--backends names {', '.join(sorted({b for b in wanted if wanted.count(b) > 1}))} "
                         "twice: each backend is one row of the table", PROG)
    variants = dict(PLAN_VARIANTS)
    for spec in args.gemv:
        with as_usage(PROG):  # said as the parser says its own mistakes
            name, options = gemv_variant(spec)
        variants[name] = options
        wanted.append(name)
    return wanted + [f"tilelang@{n}" for n in args.also_capacity], variants


def check_shapes(cfg, wanted: list[str], variants: dict[str, dict]) -> None:
    """Each tilelang backend's plan built on the model before the device and any weight: a --gemv
    setting past its weight's shape is a mistake of that argument (UsageError), and a shape the
    tilelang engine cannot run is said now (UnsupportedShape), naming the torch backends that can."""
    from tfdash.engine.compile import unsupported
    from tfdash.engine.plan import build_plan

    for b in (b for b in wanted if b.startswith("tilelang")):
        try:
            plan = build_plan(cfg, dtype="bfloat16", capacity=64, **variants.get(b, {}))
        except TfdashError as e:
            if not b.startswith("tilelang["):  # a named variant's options are the program's, not the user's
                raise
            raise UsageError(f"--gemv {b.removeprefix('tilelang[').removesuffix(']')!r}: {e}", PROG) from None
        why = unsupported(plan)
        if why:
            raise UnsupportedShape(f"{b}: the tilelang engine cannot run {why}; the torch backends "
                                   f"(--backends torch-compile,torch-graph) can")


def check_lengths(args, cfg):
    """The prompt and --max-new-tokens against the model and each cache, before the device: a
    typo is said on any machine. Returns the tokenizer, the prompt's ids and the run's capacity."""
    from tfdash.engine.limits import check_generation, check_prompt_ids, default_capacity
    from tfdash.engine.tokenizer import StandInTokenizer, load_tokenizer

    limit = cfg.max_position_embeddings  # a cache past it was clamped to it silently, its row still named N
    for flag, n in (("--capacity", args.capacity), *(("--also-capacity", n) for n in args.also_capacity)):
        if n is not None and n > limit:
            raise UsageError(f"{flag} {n} is past max_position_embeddings={limit}", PROG)
    tok = load_tokenizer(args.ckpt) if args.ckpt is not None else StandInTokenizer(cfg.vocab_size)
    ids = tok.encode(args.prompt)
    # A capacity that just fits (the torch peer masks attention over the whole capacity), or whole
    # attention blocks of --capacity.
    capacity = default_capacity(cfg, args.capacity if args.capacity is not None else len(ids) + args.max_new_tokens)
    try:  # each a mistake of the arguments (the prompt, --max-new-tokens, the caches): said as the parser's
        check_generation(cfg, capacity, len(ids), args.max_new_tokens)
    except TfdashError as e:  # the cache is --capacity's (in whole attention blocks): named, as --also-capacity's is
        grown = f" (whole attention blocks: {capacity})" if capacity != args.capacity else ""
        raise UsageError(str(e) if args.capacity is None else f"--capacity {args.capacity}{grown}: {e}",
                         PROG) from None
    check_prompt_ids(cfg, ids)
    for n in args.also_capacity:
        cap = default_capacity(cfg, n)
        try:
            check_generation(cfg, cap, len(ids), args.max_new_tokens)
        except TfdashError as e:  # the cache it names is N in whole attention blocks, said as --capacity's is
            grown = f" (whole attention blocks: {cap})" if cap != n else ""
            raise UsageError(f"--also-capacity {n}{grown}: {e}", PROG) from None
    return tok, ids, capacity
