"""GEMV family: every projection of the decode step (batch 1, so every matmul is a GEMV).

    out[N] (=|+=) W[N, K] @ prologue(x)

prologue: "none"     h = x
          "rmsnorm"  h = rmsnorm(x) * norm_w          (the norm fused into its consumer)
          "silu_mul" h = silu(x[:K]) * x[K:]          (gate|up packed: x has 2K entries)
epilogue: "store"    out = W @ h                      (out in `out_dtype`; f32 for the logits)
          "residual" out += W @ h                     (the residual add fused into its producer)
          "silu_mul" out = silu(y[:N/2]) * y[N/2:], y = W @ h   (gate|up's product made once, by
                                                      its producer, for down to read as it is)

Roundings follow transformers' Qwen3 in the model dtype: the GEMV result is rounded to the dtype
before the residual add, silu(g) is rounded before the product with u.
"""

import functools
import json
from pathlib import Path

import torch
import torch.nn.functional as F

from tfdash.errors import TfdashError
from tfdash.kernels.base import DTYPE_BYTES, SHORT_DTYPE, Family, Geometry, Operand, make_cost, register
from tfdash.kernels.common import linear_f32, rmsnorm


def prologue_torch(dims, x, norm_w):
    K = dims["K"]
    if dims["prologue"] == "rmsnorm":
        return rmsnorm(x, norm_w, dims["eps"])
    if dims["prologue"] == "silu_mul":
        return F.silu(x[:K]) * x[K:]
    return x


def torch_gemv(dims, bufs):
    h = prologue_torch(dims, bufs["x"], bufs.get("norm_w"))
    out = bufs["out"]
    if out.dtype == torch.float32 and bufs["w"].dtype != torch.float32:
        y = linear_f32(h, bufs["w"])
    else:
        y = F.linear(h, bufs["w"])
    if dims["epilogue"] == "residual":
        out.add_(y)
    elif dims["epilogue"] == "silu_mul":
        out.copy_(F.silu(y[:dims["N"] // 2]) * y[dims["N"] // 2:])
    else:
        out.copy_(y)


def cost(dims, ctx_len=0):
    N, K = dims["N"], dims["K"]
    es = DTYPE_BYTES[dims["dtype"]]
    out_es = DTYPE_BYTES[dims["out_dtype"]]
    flops = {SHORT_DTYPE[dims["dtype"]]: 2 * N * K}
    f32 = 0
    special = {}
    x_len = K
    ops = [Operand("w", "weight", N * K * es, 0)]
    if dims["prologue"] == "rmsnorm":
        f32 += 4 * K  # square, sum, scale by rstd, scale by norm_w
        special["rsqrt"] = 1
        ops.append(Operand("norm_w", "weight", K * es, 0))
    elif dims["prologue"] == "silu_mul":
        x_len = 2 * K
        f32 += 4 * K  # silu = g / (1 + exp(-g)), then * u
        special["exp"] = K
    ops.insert(0, Operand("x", "activation", x_len * es, 0))
    if dims["epilogue"] == "residual":
        f32 += N
        ops.append(Operand("out", "activation", N * out_es, N * out_es))
    elif dims["epilogue"] == "silu_mul":
        f32 += 2 * N  # silu = g / (1 + exp(-g)), then * u, for N/2 pairs
        special["exp"] = N // 2
        ops.append(Operand("out", "activation", 0, N // 2 * out_es))
    else:
        ops.append(Operand("out", "activation", 0, N * out_es))
    flops["f32"] = flops.get("f32", 0) + f32
    rows, _, bps = launch_settings(dims)
    scratch = 2 * 4 * grid_size(N, K, bps, rows) if dims.get("argmax") else 0
    # shared memory of the tilelang kernel: h staged in the model dtype (the small reduction
    # arrays share its space: tilelang's planner aliases them once h is dead)
    return make_cost(flops, special, ops, smem=K * es, scratch=scratch)


# -- tilelang ------------------------------------------------------------------------------
THREADS = 256  # 8 warps per block
VEC = 8  # bf16 per 16-byte load
SMS = 132  # H200 multiprocessors; the grid is capped at `blocks_per_sm` of them
BLOCKS_PER_SM = 2  # default; a plan may ask fewer for one op, leaving room for its successor's
#                    blocks to become resident early under PDL and prefetch their weights

LOADS = 16  # 16-byte weight loads a lane keeps in flight (R rows x SEG chunks)
CHUNK = 32 * VEC  # columns a warp covers with one 16-byte load per lane
TABLE_FILE = Path(__file__).with_name("gemv_table.json")

MAX_ROWS = 2  # four rows a warp (K = 1024: 4 rows x 4 chunks) took 143 registers a thread, so
#               one 256-thread block fitted per SM where the grid plans two


def rows_per_warp(K: int) -> int:
    """Rows a warp streams together: about LOADS 16-byte weight loads in flight per lane."""
    return max(1, min(MAX_ROWS, LOADS // max(1, K // CHUNK)))


def chunks_per_segment(K: int, rows: int | None = None) -> int:
    """Chunks (256 columns each) of a row loaded at once. A long row (down: K = 6144, 24 chunks)
    is streamed in segments: holding all of it took 130 registers a thread, so only one block
    fitted on an SM and the grid ran in two waves. The fewest segments that keep R x SEG <= LOADS,
    balanced (the last may be shorter): 24 chunks -> 12 + 12, 38 -> 13 + 13 + 12."""
    chunks = max(1, K // CHUNK)  # (a K under one chunk has no tilelang kernel: `supported` says so)
    cap = max(1, LOADS // (rows or rows_per_warp(K)))
    segs = -(-chunks // cap)
    return -(-chunks // segs)


def rule(N: int, K: int) -> dict:
    """Launch settings for a weight shape the table does not list."""
    return {"rows": rows_per_warp(K), "seg": chunks_per_segment(K), "blocks_per_sm": BLOCKS_PER_SM}


def paired(settings: dict, K: int) -> dict:
    """Settings for the silu_mul epilogue, which pairs each gate row with its up row in one warp:
    an odd rows-a-warp becomes the next even number, its segment chosen again by the rule."""
    if settings["rows"] % 2 == 0:
        return dict(settings)
    rows = settings["rows"] + 1
    return dict(settings, rows=rows, seg=chunks_per_segment(K, rows))


MAX_BLOCKS_PER_SM = 2048 // THREADS  # an SM's 2048 threads hold 8 of these blocks
MAX_LOADS = 255 // 4  # 16-byte loads a lane can hold in flight: 4 registers each, 255 registers a thread


def check_override(op: str, override: dict, dims: dict) -> None:
    """Settings over `dims` (a GEMV's N, K and the table's rows and seg) past what its weight holds (a
    segment longer than its row's chunks, more rows than it has), past a lane's registers (rows x seg
    loads in flight, each 4 registers) or past an SM (blocks) are one line naming them, before any
    kernel is built: the kernel they name would unroll every row and chunk it was told of."""
    N, K = dims["N"], dims["K"]
    chunks = max(1, K // CHUNK)
    per_sm = (MAX_BLOCKS_PER_SM, f"an SM holds at most {MAX_BLOCKS_PER_SM} of its {THREADS}-thread blocks")
    most = {"seg": (chunks, f"{op}'s K={K} is {chunks} chunk{'s' if chunks != 1 else ''} of {CHUNK} columns"),
            "rows": (N, f"{op} has N={N} rows"), "blocks_per_sm": per_sm, "min_blocks": per_sm}
    for k, (limit, why) in most.items():
        if override.get(k, 0) > limit:
            raise TfdashError(f"GEMV setting {op}:{k}={override[k]} is past {limit} ({why})")
    rows, seg = override.get("rows", dims["rows"]), override.get("seg", dims["seg"])
    if rows * seg > MAX_LOADS:
        raise TfdashError(f"GEMV settings {op}: rows={rows} x seg={seg} is {rows * seg} 16-byte loads in flight a "
                          f"lane, past the {MAX_LOADS} its 255 registers hold (4 each)")


@functools.lru_cache(maxsize=1)
def table() -> dict:
    """{(N, K): settings} from gemv_table.json: each entry says how it was chosen."""
    raw = json.loads(TABLE_FILE.read_text(encoding="utf-8"))
    return {(e["N"], e["K"]): {k: e[k] for k in ("rows", "seg", "blocks_per_sm")} for e in raw["entries"]}


def settings(N: int, K: int) -> dict:
    """The launch settings of an N x K GEMV: the table's entry, else the rule."""
    return dict(table().get((N, K)) or rule(N, K))


def launch_settings(dims) -> tuple[int, int, int]:
    """(rows per warp, chunks per segment, blocks per SM) of a launch; dims recorded before the
    plan carried them take the rule."""
    r = rule(dims["N"], dims["K"])
    rows = dims.get("rows", r["rows"])
    seg = dims.get("seg") or chunks_per_segment(dims["K"], rows)
    return rows, seg, dims.get("blocks_per_sm", BLOCKS_PER_SM)


def grid_size(N: int, K: int, blocks_per_sm: int = BLOCKS_PER_SM, rows: int | None = None) -> int:
    groups = -(-N // (rows or rows_per_warp(K)))
    return max(1, min(-(-groups // (THREADS // 32)), SMS * blocks_per_sm))


def supported(dims):
    if dims["K"] % CHUNK:
        return f"a GEMV with K={dims['K']} (its GEMV wants K a multiple of {CHUNK})"
    if dims["epilogue"] == "silu_mul" and (launch_settings(dims)[0] % 2 or dims["N"] % 2):
        return (f"the silu_mul epilogue with {launch_settings(dims)[0]} rows a warp over N={dims['N']} "
                f"(it pairs gate and up rows: an even number of each)")
    if dims.get("argmax") and dims["N"] >= 2 ** 24:
        return f"a vocabulary of {dims['N']} (the argmax carries indices in f32, exact below 2**24)"
    return None


def tilelang_gemv(dims):
    """One prim_func for every GEMV of the step.

    Block: 256 threads. The prologue runs once per block: x -> h (rmsnorm, silu*up or a copy),
    rounded to the model dtype exactly as the torch spelling rounds, staged in shared memory.
    Main loop: each warp owns R consecutive rows at a time (grid-stride over row groups); lane l
    reads 16 bytes of each row at k = c*256 + 8l, so a warp streams 512 contiguous bytes per row
    per chunk, every load of a row group's segment (SEG chunks; the whole row unless it is long)
    issued before its FMAs (the chunk loop is unrolled).
    Partial dot products are reduced with warp shuffles; lane 0 applies the epilogue.
    """
    import tilelang.language as T

    from tfdash.kernels.gemv_phase import gemv_phase

    pdl = dims.get("pdl", True)
    N, K = dims["N"], dims["K"]
    dt, out_dt = dims["dtype"], dims["out_dtype"]
    x_len = 2 * K if dims["prologue"] == "silu_mul" else K
    out_len = N // 2 if dims["epilogue"] == "silu_mul" else N
    grid = geometry(dims).grid[0]  # what the drill-down shows of this launch
    phase = gemv_phase(T, dims, grid)
    amax_on, min_blocks = bool(dims.get("argmax")), int(dims.get("min_blocks", 0))
    # trigger_first: the next kernel may launch at this one's start (its blocks stream their weights
    # while the kernel before this one runs); the plan allows it where that one reads only weights early
    trig_first = pdl and bool(dims.get("trigger_first"))

    @T.macro
    def body(x, norm_w, w, out, amax):
        with T.Kernel(grid, threads=THREADS) as bx:
            if min_blocks:  # __launch_bounds__(THREADS, min_blocks): the register budget a thread
                T.annotate_min_blocks_per_sm(min_blocks)
            tx = T.get_thread_binding(0)
            lane = tx % 32
            warp = tx // 32
            h_s, red_s, xv, uv, nv, hv, wv, acc, resv, bv_s, bi_s = phase.alloc()
            ns = phase.pack(h_s, red_s, xv, uv, nv, hv, wv, acc, resv, bv_s, bi_s)
            if trig_first:
                T.pdl_trigger()
            phase.prefetch(ns, norm_w, w, out, bx, tx, lane, warp)  # before the grid dependency
            if pdl:  # programmatic dependent launch: wait for the kernel before, then let the next one launch
                T.pdl_sync()
                if not trig_first:
                    T.pdl_trigger()
            phase.run(ns, x, norm_w, w, out, amax, bx, tx, lane, warp)

    if amax_on:

        @T.prim_func
        def gemv(x: T.Tensor((x_len,), dt), norm_w: T.Tensor((K,), dt), w: T.Tensor((N, K), dt),
                 out: T.Tensor((out_len,), out_dt), amax: T.Tensor((grid, 2), "float32")):
            body(x, norm_w, w, out, amax)
    elif dims["prologue"] == "rmsnorm":

        @T.prim_func
        def gemv(x: T.Tensor((x_len,), dt), norm_w: T.Tensor((K,), dt), w: T.Tensor((N, K), dt),
                 out: T.Tensor((out_len,), out_dt)):
            body(x, norm_w, w, out, None)
    else:

        @T.prim_func
        def gemv(x: T.Tensor((x_len,), dt), w: T.Tensor((N, K), dt), out: T.Tensor((out_len,), out_dt)):
            body(x, None, w, out, None)

    return gemv


def geometry(dims, ctx_len: int = 0) -> Geometry:
    """Row groups (R rows each) over the grid's warps, grid-stride: a warp takes one at a time."""
    R, _, bps = launch_settings(dims)
    grid = grid_size(dims["N"], dims["K"], bps, R)
    return Geometry((grid,), THREADS, bps, -(-dims["N"] // R), "row" if R == 1 else f"{R}-row group",
                    grid * (THREADS // 32), "warp")


FAMILY = register(Family(
    name="gemv",
    roles=("x", "norm_w", "w", "out", "amax"),
    cost=cost,
    torch=torch_gemv,
    tilelang=tilelang_gemv,
    supported=supported,
    geometry=geometry,
    describe="out (=|+=) W @ prologue(x); prologue rmsnorm|silu_mul|none, epilogue store|residual",
))
