"""`tfdash analyze`: the static cost of one decode step, as annotated text or JSON."""

from __future__ import annotations

import argparse
import sys

from tfdash.argparsing import Parser
from tfdash.errors import CapacityError, UsageError, as_usage
from tfdash.textsafe import visible


def _dim(spec: str, flag: str, form: str) -> str:
    """The value of `flag`'s ctx_len=VALUE; a spec of another form is named with the form `flag` takes."""
    key, sep, value = spec.partition("=")
    if not sep or key != "ctx_len":
        raise argparse.ArgumentTypeError(f"{flag}: expected ctx_len={form}, got {spec!r}")
    return value


class _Shown:
    """A stream that writes control characters as placeholders: the model's name (a checkpoint
    folder's) and the target's (a --target file's) are untrusted text, sent to the terminal as they were."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(visible(text, keep="\n"))

    def flush(self) -> None:
        self.stream.flush()


def parser() -> argparse.ArgumentParser:
    from tfdash.argparsing import ckpt_dir, user_path
    from tfdash.defaults import PRESET_NAMES
    from tfdash.options import preset_name
    from tfdash.profiling.files import out_arg

    p = Parser(prog="tfdash analyze",
               description="Static cost of one decode step: flops, "
                           "bytes read and written per launch and operand, ideal time on a target.")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--model", metavar="PRESET", type=preset_name, help="a preset: " + ", ".join(PRESET_NAMES)
                     + " (default: qwen3-1.7b)")
    src.add_argument("--ckpt", metavar="DIR", type=ckpt_dir,
                     help="read the shape from DIR/config.json (no weights loaded)")
    p.add_argument("--target", default="h200", metavar="h200|h100-sxm|h100-pcie|h100-nvl|FILE", type=user_path,
                   help="a GPU's datasheet (h200, h100-sxm, h100-pcie, h100-nvl) or a JSON file: a target's fields, a snapshot or an analyze --json "
                        "report or sweep (the target it was priced against), or the bandwidth probe's "
                        "bandwidth.json")
    p.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"),
                   help="the dtype of the plan priced, as a run's --dtype (default %(default)s)")
    p.add_argument("--capacity", type=int, metavar="N",
                   help="KV cache positions (default: max_position_embeddings)")
    when = p.add_mutually_exclusive_group()
    when.add_argument("--dim", metavar="ctx_len=N", help="the context length of the step (default 0)")
    when.add_argument("--sweep", metavar="ctx_len=A:B:STEP", help="a table over ctx_len = A, A+STEP, ..., and B last, "
                      "off the STEP grid or not")
    p.add_argument("--operands", action="store_true", help="split each launch's traffic by operand")
    p.add_argument("--json", metavar="OUT", type=out_arg,
                   help="also write the report as JSON (schema tfdash.analysis/1; - for stdout)")
    return p


def _int(text: str, what: str, prog: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"{what}: {text!r} is not an integer", prog) from None


def _sweep(spec: str, prog: str) -> tuple[int, int, int]:
    """--sweep's ctx_len=A:B:STEP as (A, B, STEP): its form, numbers and order, before any work."""
    from tfdash.profiling.analyze import sweep_points

    parts = spec.split(":")
    if len(parts) != 3:
        raise UsageError(f"--sweep ctx_len={spec}: expected A:B:STEP", prog)
    a, b, step = (_int(x, "--sweep", prog) for x in parts)
    with as_usage(prog):
        sweep_points(a, b, step)
    return a, b, step


def default_model_note() -> str:
    """What `analyze` prices without --model, and whether the dashboard on this host runs it."""
    from tfdash.engine import default_device

    if default_device().startswith("cuda"):
        return "pricing qwen3-1.7b (no --model): the dashboard's default on this host too"
    return ("pricing qwen3-1.7b (no --model), the H200's default; the dashboard on this host (no CUDA) "
            "runs qwen3-tiny: pass --model qwen3-tiny to price that")


def main(argv: list[str]) -> int:
    from tfdash.engine.config import load_config, preset
    from tfdash.engine import plan_for
    from tfdash.profiling.analyze import analyze, render_text, to_json
    from tfdash.profiling.targets import resolve_target

    p = parser()
    try:
        args = p.parse_args(argv)
        dim = _dim(args.dim, "--dim", "N") if args.dim else None
        sw = _dim(args.sweep, "--sweep", "A:B:STEP") if args.sweep else None
    except argparse.ArgumentTypeError as e:
        p.error(str(e))
    from tfdash.settings import SETTINGS

    SETTINGS.values()  # every knob read now, as the run and bench do: a bad one is one line, never ignored
    # The arguments' own mistakes are said as the parser says its own: the command and its help
    if args.operands and args.sweep:  # else silently a table without them
        raise UsageError("--operands splits the launches of one step (--dim); a --sweep row is a step's totals "
                         "(its --json has every launch's operands)", p.prog)
    sweep = _sweep(sw, p.prog) if sw is not None else None
    ctx = _int(dim, "--dim ctx_len", p.prog) if dim is not None else 0
    if args.json:  # before a sweep that may take minutes
        from tfdash.profiling.files import check_not_a_snapshot, check_not_an_input, check_writable_file

        check_writable_file(args.json, "--json")
        from tfdash.profiling.targets import TARGETS

        target_file = None if args.target in TARGETS else args.target  # `h200` names no file
        check_not_an_input(args.json, "--json", {"the --target file": target_file})
        check_not_a_snapshot(args.json, "--json", args.ckpt)
    cfg = load_config(args.ckpt) if args.ckpt is not None else preset(args.model or "qwen3-1.7b")
    with as_usage(p.prog, UsageError):  # an empty or unknown name; a file's own errors are the file's
        target = resolve_target(args.target)
    capacity = args.capacity if args.capacity is not None else cfg.max_position_embeddings
    if capacity > cfg.max_position_embeddings:
        raise UsageError(f"--capacity {capacity} is past max_position_embeddings={cfg.max_position_embeddings}",
                         p.prog)
    with as_usage(p.prog, CapacityError):  # --capacity, --dim and --sweep against the model and the cache
        plan = plan_for(cfg, args.dtype, capacity)  # the plan the engine runs: the TFDASH_* plan knobs in effect
        for c in sweep[:2] if sweep is not None else (ctx,):
            plan.check_ctx(c)
    from tfdash.profiling.files import missing_folders_of_file, replaces_file, table_stream

    out = _Shown(table_stream(args.json))  # --json /dev/stdout: the table to stderr
    # asked before a sweep's file (or the report's) makes them: the "# wrote" line says so, as diff's does
    new = missing_folders_of_file(args.json) if args.json else []
    replaced = bool(args.json) and replaces_file(args.json)
    if sweep is not None:
        from tfdash.profiling.sweep_run import run_sweep

        run_sweep(plan, target, *sweep, args.json, out=out)  # rows as priced; JSON points streamed into the file
        payload = None
    else:
        report = analyze(plan, target, ctx)
        out.write(render_text(report, operands=args.operands))
        payload = to_json(report)
    if args.json:
        from tfdash.profiling.export_files import gz_name
        from tfdash.profiling.files import write_json_atomic, wrote_line

        if payload is not None:  # a sweep wrote its file as it went
            write_json_atomic(args.json, payload, gz=gz_name(args.json))
        print(wrote_line(args.json, new, replaced), file=sys.stderr)
    if not args.ckpt and not args.model:  # after the report: an error stays its one line
        print(f"# {default_model_note()}", file=sys.stderr)
    return 0
