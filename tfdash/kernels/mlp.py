"""Fused MLP family: the gate_up and down GEMVs in one launch, a grid-wide barrier between them.

    gu  = W_gu @ (rmsnorm(x) * norm_w)          phase 1, the gate_up GEMV
    x  += W_down @ (silu(gu[:I]) * gu[I:])      phase 2, the down GEMV

Each phase is the GEMV family's own (tfdash.kernels.gemv_phase) with its own launch
settings, over one grid, so each row is the same arithmetic as the two launches it replaces.
Between the phases every block arrives at a barrier in global memory. Before arriving, each warp
already streams its first row group of W_down, so the down weights flow while the last gate_up
rows finish, and no kernel boundary (its grid completion and the next grid's ramp) stands between
the two.

The barrier needs every block resident at once (an ordinary launch, not a cooperative one, so
this is arranged, not guaranteed by the driver). The grid is `blocks_per_sm` blocks on each of
SMS multiprocessors (the smaller of the two phases' table settings); the launch bounds ask the
compiler for registers that fit that many; `supported` refuses a setting whose threads or shared
memory cannot; `check_device` refuses a device with fewer multiprocessors. The next kernel is let
launch after the barrier, as the two launches it replaces let it after down's grid dependency.
"""

from tfdash.kernels.base import Family, Geometry, Operand, make_cost, register
from tfdash.kernels.gemv import SMS, THREADS, cost as gemv_cost, supported as gemv_supported, torch_gemv

PHASES = ("gate_up", "down")
# each phase's operand roles as this family names them
ROLES = {"gate_up": {"x": "x", "norm_w": "norm_w", "w": "w_gu", "out": "gu"},
         "down": {"x": "gu", "w": "w_down", "out": "x"}}


def phase_dims(dims, phase: str) -> dict:
    """One phase's GEMV dims, with the launch's dtype and PDL setting."""
    return dict(dims[phase], dtype=dims["dtype"], **({"pdl": dims["pdl"]} if "pdl" in dims else {}))


def torch_mlp(dims, bufs):
    for phase in PHASES:
        torch_gemv(phase_dims(dims, phase), {role: bufs[name] for role, name in ROLES[phase].items() if name in bufs})


def cost(dims, ctx_len=0):
    """The two GEMVs' costs together: gu is written by the first and read by the second."""
    flops, special, moved = {}, {}, {}
    smem = 0
    for phase in PHASES:
        c = gemv_cost(phase_dims(dims, phase), ctx_len)
        for k, v in c.flops.items():
            flops[k] = flops.get(k, 0) + v
        for k, v in c.special.items():
            special[k] = special.get(k, 0) + v
        for o in c.operands:
            name = ROLES[phase][o.role]
            kind, read, written = moved.get(name, (o.kind, 0, 0))
            moved[name] = (kind, read + o.read, written + o.written)
        smem += c.smem or 0
    return make_cost(flops, special, [Operand(n, *v) for n, v in moved.items()], smem=smem)


def grid(dims) -> int:
    return SMS * dims["blocks_per_sm"]


MAX_THREADS_PER_SM = 2048  # H200 (sm_90)
SMEM_PER_SM = 228 * 1024  # bytes, of which each block reserves 1 KiB for the system


def supported(dims):
    bps = dims["blocks_per_sm"]
    smem = cost(dims).smem
    if bps * THREADS > MAX_THREADS_PER_SM or bps * (smem + 1024) > SMEM_PER_SM:
        return (f"a fused MLP at {bps} blocks an SM ({THREADS} threads and {smem:,} B of shared memory each): "
                f"its barrier needs every block resident at once, and an SM holds {MAX_THREADS_PER_SM} threads "
                f"and {SMEM_PER_SM:,} B")
    for phase in PHASES:
        why = gemv_supported(phase_dims(dims, phase))
        if why:
            return why
    return None


def check_device(plan, multiprocessors: int) -> None:
    """Refuse a plan whose fused MLP's grid cannot be resident at once on `multiprocessors`: its
    barrier would wait forever for blocks that never start."""
    from tfdash.errors import UnsupportedShape

    for launch in plan.kernels().values():
        if launch.family == "mlp" and multiprocessors < SMS:
            raise UnsupportedShape(f"the fused MLP ({launch.kernel}) runs {grid(launch.dims)} blocks that must all be "
                                   f"resident at once: it needs {SMS} multiprocessors, this device has {multiprocessors}")


def tilelang_mlp(dims):
    """Grid SMS x blocks_per_sm, THREADS threads a block. Phase 1's prefetch, the grid dependency,
    phase 1; phase 2's prefetch; the barrier (a sense-reversing one: bar[0] counts arrivals, the
    last to arrive resets it and releases bar[1], the generation the others wait on); then the
    next kernel may launch, and phase 2 reads gu (after an acquire and a block barrier)."""
    import tilelang.language as T

    from tfdash.kernels.gemv_phase import gemv_phase

    pdl = dims.get("pdl", True)
    dt, bps, G = dims["dtype"], dims["blocks_per_sm"], grid(dims)
    up, down = (phase_dims(dims, p) for p in PHASES)
    one, two = gemv_phase(T, up, G), gemv_phase(T, down, G)
    H, I2 = up["K"], up["N"]

    @T.prim_func
    def mlp(x: T.Tensor((H,), dt), norm_w: T.Tensor((H,), dt), w_gu: T.Tensor((I2, H), dt),
            gu: T.Tensor((I2,), dt), w_down: T.Tensor((H, I2 // 2), dt), bar: T.Tensor((2,), "int32")):
        with T.Kernel(G, threads=THREADS) as bx:
            T.annotate_min_blocks_per_sm(bps)  # every block resident at once: the barrier waits on all
            tx = T.get_thread_binding(0)
            lane = tx % 32
            warp = tx // 32
            gen = T.alloc_var("int32")
            a = one.pack(*one.alloc())
            b = two.pack(*two.alloc())
            one.prefetch(a, norm_w, w_gu, gu, bx, tx, lane, warp)
            if pdl:
                T.pdl_sync()
            one.run(a, x, norm_w, w_gu, gu, None, bx, tx, lane, warp)
            two.prefetch(b, None, w_down, x, bx, tx, lane, warp)
            T.sync_threads()
            if tx == 0:
                gen = T.atomic_load(bar[1], memory_order="acquire")
                if T.atomic_add(bar[0], 1, memory_order="acq_rel", return_prev=True) == G - 1:
                    bar[0] = 0
                    T.atomic_store(bar[1], gen + 1, memory_order="release")
                else:
                    while T.atomic_load(bar[1], memory_order="acquire") == gen:
                        pass
            T.sync_threads()
            if pdl:
                T.pdl_trigger()
            two.run(b, gu, None, w_down, x, None, bx, tx, lane, warp)

    return mlp


def geometry(dims, ctx_len: int = 0) -> Geometry:
    """gate_up's row groups over the fused grid's warps (down's take the same warps after)."""
    from tfdash.kernels.gemv import launch_settings

    R, _, _ = launch_settings(phase_dims(dims, "gate_up"))
    G = grid(dims)
    return Geometry((G,), THREADS, dims["blocks_per_sm"], -(-dims["gate_up"]["N"] // R),
                    "row" if R == 1 else f"{R}-row group", G * (THREADS // 32), "warp")


FAMILY = register(Family(
    name="mlp",
    roles=("x", "norm_w", "w_gu", "gu", "w_down", "bar"),
    cost=cost, torch=torch_mlp, tilelang=tilelang_mlp, supported=supported, geometry=geometry,
    describe="gate_up then down in one launch, a grid-wide barrier between them (all blocks resident)",
))
