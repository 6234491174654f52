"""A kernel's machine code and where its warps stall (a diagnostic).

`build`: writes the default plan's launch of each family named (its CUDA, the sm_90a cubin as
tilelang builds it, ptxas's report and, where cuobjdump is on PATH or in /usr/local/cuda/bin,
the SASS), on any host with nvcc. `replay`: captures the default plan's step and replays it from
ctx `--ctx` (kernel_times' replays, H200 only), for Nsight Compute to sample the kernels inside the graph:

    python scripts/kernel_sass.py build --model qwen3-1.7b --families attention --out DIR
    ncu --clock-control none --graph-profiling node --kernel-name regex:attn --launch-skip 56 \\
        --launch-count 8 --section SourceCounters -o DIR/attn python scripts/kernel_sass.py replay
    ncu --import DIR/attn.ncu-rep --page source --csv --print-source sass > DIR/attn-source.csv
    python scripts/kernel_sass.py stalls --csv DIR/attn-source.csv --out DIR/attn-stalls.txt

`stalls` sums the profiled launches' warp-state samples per SASS instruction into one listing:
index, samples, the stall reason with most of them, warps that executed it, the instruction.
"""

import argparse
import shutil
import subprocess
from pathlib import Path

from kernel_times import replay_times  # this script's folder is on sys.path when it runs
from tfdash.engine.config import preset
from tfdash.engine.plan import build_plan


def cuobjdump() -> str | None:
    local = Path("/usr/local/cuda/bin/cuobjdump")
    return shutil.which("cuobjdump") or (str(local) if local.exists() else None)


def build(args):
    from tfdash.engine.compile import SM90A, compile_one
    from tfdash.engine.ptxas import build_cubin, parse

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plan = build_plan(preset(args.model), "bfloat16", capacity=args.capacity)
    families = args.families.split(",")
    for name, launch in plan.kernels().items():
        if launch.family not in families:
            continue
        src = compile_one(launch, target=SM90A, pdl=True, backend="tvm_ffi").get_kernel_source()
        report = build_cubin(src, out / f"{name}.cubin")
        (out / f"{name}.ptxas.txt").write_text(report)
        line = parse(report).line()
        tool = cuobjdump()
        if tool:
            sass = subprocess.run([tool, "-sass", str(out / f"{name}.cubin")], capture_output=True, text=True)
            (out / f"{name}.sass").write_text(sass.stdout + sass.stderr)
        print(f"{name}: {line}{'' if tool else ' (no cuobjdump: cubin only)'}")


def replay(args):
    import torch

    from tfdash.engine.runtime import TilelangRuntime
    from tfdash.engine.weights import pack, random_state_dict

    cfg = preset(args.model)
    weights = pack(cfg, random_state_dict(cfg, torch.bfloat16, "cuda", seed=0))
    rt = TilelangRuntime(build_plan(cfg, "bfloat16", capacity=args.capacity), weights, "cuda")
    rt.capture()
    replay_times(rt, args.reps, args.ctx)
    print(f"replayed {args.reps} steps from ctx {args.ctx}")


def stalls(args):
    import csv

    launches, head = [], None
    for row in csv.reader(open(args.csv)):
        if row and row[0] == "Kernel Name":
            launches.append([])
        elif row and row[0] == "Address":
            head = {h: i for i, h in enumerate(row)}
        elif row and launches:
            launches[-1].append(row)
    if not launches or head is None:
        raise SystemExit(f"{args.csv}: no Nsight Compute source page in it")
    reasons = [h for h in head if h.startswith("stall_") and "Not Issued" not in h]

    def count(row, name):
        v = row[head[name]]
        return int(v) if v.isdigit() else 0

    lines, total = [], 0
    for k, row in enumerate(launches[0]):
        per = {r: sum(count(rows[k], r) for rows in launches) for r in reasons}
        n = sum(count(rows[k], "Warp Stall Sampling (All Samples)") for rows in launches)
        total += n
        top = max(per, key=per.get)[len("stall_"):] if n else ""
        lines.append(f"{k:5d} {n:6d} {top:16s} {row[head['Instructions Executed']]:>6s} {row[1].strip()}")
    Path(args.out).write_text(f"# {len(launches)} launches, {total} warp-state samples\n" + "\n".join(lines) + "\n")
    print(f"{args.out}: {len(lines)} instructions, {total} samples over {len(launches)} launches")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["build", "replay", "stalls"])
    ap.add_argument("--csv", help="stalls: Nsight Compute's source page (--page source --csv --print-source sass)")
    ap.add_argument("--model", default="qwen3-1.7b")
    ap.add_argument("--capacity", type=int, default=2048)
    ap.add_argument("--families", default="attention")
    ap.add_argument("--ctx", type=int, default=1024)
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--out", default="sass")
    args = ap.parse_args()
    {"build": build, "replay": replay, "stalls": stalls}[args.what](args)


if __name__ == "__main__":
    main()
