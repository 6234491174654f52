"""The process Nsight Compute profiles for `tfdash counters`: it builds the same engine as the
command line asks for, captures the step's graph, sets the position to --ctx and replays the
graph once between cudaProfilerStart and cudaProfilerStop. Everything before (weights, tilelang
compiles, the capture's warm-up steps) is outside the profiled range, so the kernels ncu sees are
exactly the step plan's launches of one graph replay at a known ctx_len, in plan order.

    python -m tfdash.profiling.counters_child --ctx 512 [--model PRESET | --ckpt DIR] [...]

Status lines go to stderr as "tfdash counters: ..."; an error is one "tfdash counters: error: ..."
line and exit status 2 (the parent reads it back as the reason).
"""

from __future__ import annotations

import argparse
import sys


def parser() -> argparse.ArgumentParser:
    from tfdash.options import add_model_args

    p = argparse.ArgumentParser(prog="python -m tfdash.profiling.counters_child")
    add_model_args(p, threads=False)  # ncu profiles a CUDA step: no CPU threads to set
    p.add_argument("--ctx", type=int, required=True, help="ctx_len of the profiled replay")
    p.add_argument("--replays", type=int, default=1, help="graph replays in the profiled range")
    return p


def say(text: str) -> None:
    print(f"tfdash counters: {text}", file=sys.stderr, flush=True)


def profiled_replay(runtime, ctx: int, replays: int = 1) -> None:
    """`replays` replays of the captured step at ctx_len `ctx`, the only work inside the
    profiler's range; the step state is put back afterwards."""
    import torch

    runtime.ensure_captured()
    with runtime.held():
        for _ in range(max(1, replays)):
            runtime.set_position(ctx)
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStart()
            runtime.step()
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()


def main(argv: list[str] | None = None) -> int:
    from tfdash.errors import TfdashError

    args = parser().parse_args(argv)
    try:
        from tfdash.engine import load_engine

        say("building the engine (tilelang compiles the first time)")
        eng = load_engine(ckpt=args.ckpt, model=args.model, device=args.device, dtype=args.dtype,
                          backend=args.backend, seed=args.seed)
        if not eng.runtime.cuda:
            raise TfdashError("counters need a CUDA device; this engine runs on the CPU")
        say(f"{eng.config.name} · {eng.backend} · {len(eng.plan)} launches; capturing, then one replay at "
            f"ctx_len {args.ctx}")
        profiled_replay(eng.runtime, args.ctx, args.replays)
        say("replay done")
    except TfdashError as e:
        say(f"error: {e}")
        return 2
    except Exception as e:  # noqa: BLE001 - the parent shows one line, never a traceback
        say(f"error: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
