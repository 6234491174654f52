"""`tfdash counters`: Nsight Compute's hardware counters of the step's launches, beside the
analyzer's bytes.

    tfdash counters (--launch ROLE ... | --all) [--layers LIST] [--ctx N] [--json OUT]
                    [--snapshot FILE] [--timeout S] [model options]

ncu runs over a child process that builds the same engine, captures the step and replays it
once at ctx_len N (tfdash.profiling.counters). Per launch it prints DRAM bytes read and written
against the analyzer's at the same ctx_len and their ratio, achieved occupancy (warps active),
registers a thread, shared memory a block, grid and block, and the duration under ncu, which
runs each kernel alone: serialized, not the in-graph time. `--json OUT` writes the same as
JSON (schema tfdash.counters/1); `--snapshot FILE` puts the counters into a saved snapshot of the
same model, so `tfdash open FILE` shows them. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import sys

from tfdash.argparsing import Parser
from tfdash.errors import CapacityError, TfdashError, UsageError
from tfdash.options import snapshot_path
from tfdash.profiling.counters import DEFAULT_CTX, RUN_TIMEOUT_S, check_ctx_arg, measure, prepare, select
from tfdash.profiling.files import out_arg
from tfdash.profiling.snapshot import Counters
from tfdash.textsafe import visible
from tfdash.units import fmt_bytes

SCHEMA = "tfdash.counters/1"
HEADER = ("launch", "kernel", "DRAM read", "analyzer", "ratio", "written", "analyzer", "warps act.", "regs",
          "smem", "grid", "block", "ncu µs (serialized)")


def _layers(text: str) -> set[int]:
    try:
        return {int(x) for x in text.split(",") if x.strip()}
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: expected layer numbers like 0 or 0,13,27") from None


def parser() -> argparse.ArgumentParser:
    from tfdash.options import add_model_args

    p = Parser(prog="tfdash counters",
               description="Nsight Compute's counters of the step's "
                           "launches (inside a graph replay) beside the analyzer's bytes.")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--launch", action="append", metavar="ROLE", help="a role (L3.gate_up), an op (down: every "
                      "layer's) or a glob (L0.*); repeatable")
    what.add_argument("--all", action="store_true", help="every launch of the step")
    p.add_argument("--layers", type=_layers, metavar="LIST", help="of layered launches, only these layers "
                   "(e.g. 0: one layer plus embed, lm_head and argmax)")
    p.add_argument("--ctx", type=int, default=DEFAULT_CTX, metavar="N",
                   help="ctx_len of the profiled replay (default %(default)s)")
    p.add_argument("--json", metavar="OUT", type=out_arg,
                   help="also write the results as JSON (schema tfdash.counters/1; - for stdout)")
    p.add_argument("--snapshot", metavar="FILE", type=snapshot_path,
                   help="put the counters into this saved snapshot (rewritten)")
    p.add_argument("--timeout", type=float, default=RUN_TIMEOUT_S, metavar="S",
                   help="stop one ncu run after S seconds (default %(default)g)")
    add_model_args(p, threads=False)  # ncu profiles a CUDA step: no CPU threads to set
    return p


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.1f} %"


def _ratio(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


def _dims(d: tuple[int, ...]) -> str:
    return "x".join(map(str, d)) if d else "—"


def row_cells(role: str, c: Counters) -> list[str]:
    smem = None if c.smem_static is None and c.smem_dynamic is None else (c.smem_static or 0) + (c.smem_dynamic or 0)
    return [visible(role), visible(c.kernel), fmt_bytes(c.dram_read), fmt_bytes(c.predicted_read), _ratio(c.ratio),
            fmt_bytes(c.dram_written), fmt_bytes(c.predicted_written), _pct(c.warps_active_pct),
            "—" if c.registers is None else str(c.registers), fmt_bytes(smem), _dims(c.grid), _dims(c.block),
            "—" if c.ncu_ns is None else f"{c.ncu_ns / 1e3:,.2f}"]


def render(plan, counters: dict[int, Counters], ctx: int) -> str:
    rows = [list(HEADER)] + [row_cells(plan.launches[i].role, c) for i, c in sorted(counters.items())]
    widths = [max(len(r[j]) for r in rows) for j in range(len(HEADER))]
    lines = [f"# Nsight Compute inside one graph replay at ctx_len {ctx}; ratio = DRAM bytes (read + written) / "
             "the analyzer's; ncu runs each kernel alone, so its µs are serialized, not in-graph"]
    for r in rows:
        lines.append("  ".join(v.ljust(w) if j < 2 else v.rjust(w) for j, (v, w) in enumerate(zip(r, widths))))
    return "\n".join(lines) + "\n"


def to_json(plan, counters: dict[int, Counters], ctx: int) -> dict:
    from tfdash.profiling.export import to_jsonable

    return {"schema": SCHEMA, "ctx_len": ctx, "model": plan.config.name, "dtype": plan.dtype,
            "launches": [{"index": i, "role": plan.launches[i].role, **to_jsonable(c), "ratio": c.ratio}
                         for i, c in sorted(counters.items())]}


def into_snapshot(path: str, plan, counters: dict[int, Counters]) -> None:
    from dataclasses import replace

    from tfdash.profiling.counters import with_counters
    from tfdash.profiling.export import load_snapshot, write_snapshot

    snap = load_snapshot(path)
    rows = {k.index: (k.role, k.kernel) for k in snap.kernels}
    if any(rows.get(i) != (plan.launches[i].role, plan.launches[i].kernel) for i in counters):
        raise TfdashError(f"{path}: its launches are not this engine's step plan (another model or plan)")
    write_snapshot(replace(snap, kernels=with_counters(snap.kernels, counters)), path)


def main(argv: list[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    # the arguments first (a typo is worth saying on any machine, as bench does), then the host
    if args.ctx < 0:  # said as the parser says its own mistakes: the command and its help
        raise UsageError(f"--ctx {args.ctx} must be 0 or more", p.prog)
    if not 0 < args.timeout < float("inf"):
        raise UsageError(f"--timeout {args.timeout:g} must be a positive number of seconds", p.prog)
    engine_args = dict(ckpt=args.ckpt, model=args.model, device=args.device, dtype=args.dtype,
                       backend=args.backend, seed=args.seed)
    try:  # past the cache the child builds: said now, not after the host, the engine's build and ncu
        check_ctx_arg(engine_args, args.ctx)
    except CapacityError as e:
        raise UsageError(f"--ctx {args.ctx}: {e}", p.prog) from None
    from tfdash.settings import SETTINGS

    SETTINGS.values()  # every knob, as the run and bench read them: a bad one is one line
    if args.json:  # so is a --json that cannot be written
        from tfdash.profiling.files import check_not_a_snapshot, check_not_an_input, check_writable_file

        check_writable_file(args.json, "--json")
        check_not_an_input(args.json, "--json", {"the --snapshot file": args.snapshot})
        check_not_a_snapshot(args.json, "--json")
    if args.snapshot is not None:  # a snapshot that cannot take the counters is said before minutes of profiling
        from tfdash.profiling.export import load_snapshot
        from tfdash.profiling.files import check_writable_file

        load_snapshot(args.snapshot)
        check_writable_file(args.snapshot, "--snapshot")  # rewritten through a new file in its folder
    req = prepare(engine_args, lambda plan: select(plan, args.launch or (), args.all, args.layers), args.ctx,
                  args.timeout)
    plan = req.plan
    print(f"tfdash counters: {len(req.indices)} launches of {plan.config.name} at ctx_len {args.ctx}",
          file=sys.stderr)
    counters = measure(req, progress=lambda s: print(f"tfdash counters: {s}", file=sys.stderr, flush=True))
    from tfdash.profiling.export_files import gz_name
    from tfdash.profiling.files import (missing_folders_of_file, replaces_file, table_stream, write_json_atomic,
                                        wrote_line)

    table_stream(args.json).write(render(plan, counters, args.ctx))  # --json /dev/stdout: the JSON alone
    if args.json:
        new, replaced = missing_folders_of_file(args.json), replaces_file(args.json)  # before the write: as diff
        write_json_atomic(args.json, to_json(plan, counters, args.ctx), gz=gz_name(args.json))
        print(wrote_line(args.json, new, replaced), file=sys.stderr)
    if args.snapshot:
        into_snapshot(args.snapshot, plan, counters)
        print(visible(f"# counters added to {args.snapshot}"), file=sys.stderr)
    return 0
