"""What every kernel family shares: the Cost record and the Family registry.

A family file (gemv.py, attention.py, ...) holds three things side by side: the tilelang factory,
the torch spelling of the same computation, and `cost(dims, ctx_len) -> Cost`. It registers
itself here with `register(Family(...))`.

Cost counts what a launch *must* move through global memory (each operand read once, each output
written once) and the arithmetic it must do. Implementation scratch (split-K / split-KV partials)
is reported separately as `scratch`, outside the roofline floor.
"""

from dataclasses import dataclass, field
from typing import Callable, Mapping

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "int32": 4, "int64": 8}
SHORT_DTYPE = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "int32": "i32", "int64": "i64"}

# Operand kinds. "weight" bytes are the parameters a step must stream; "cache" is the KV cache;
# "activation" is the small per-step state (residual stream, q/k/v, logits, token, position);
# "table" is a constant lookup table read per step (the RoPE cos/sin row).
KINDS = ("weight", "cache", "activation", "table")


@dataclass(frozen=True)
class Operand:
    role: str  # the family's name for it: "w", "x", "k_cache", "out", ...
    kind: str  # one of KINDS
    read: int  # bytes read from global memory
    written: int  # bytes written to global memory


@dataclass(frozen=True)
class Cost:
    flops: Mapping[str, int]  # by dtype: {"bf16": n, "f32": n}
    special: Mapping[str, int]  # special-function ops: {"exp": n, "rsqrt": n, "sincos": n}
    operands: tuple[Operand, ...]
    smem: int | None = None  # shared-memory bytes per block, where the implementation fixes it
    scratch: int = 0  # bytes of implementation scratch traffic (partials), not in the floor

    @property
    def bytes_read(self) -> int:
        return sum(o.read for o in self.operands)

    @property
    def bytes_written(self) -> int:
        return sum(o.written for o in self.operands)

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    def read_by_kind(self, kind: str) -> int:
        return sum(o.read for o in self.operands if o.kind == kind)

    def written_by_kind(self, kind: str) -> int:
        return sum(o.written for o in self.operands if o.kind == kind)

    def total_flops(self) -> int:
        return sum(self.flops.values())


def make_cost(flops: Mapping[str, int], special: Mapping[str, int], operands, smem=None, scratch=0) -> Cost:
    return Cost(
        flops={k: int(v) for k, v in flops.items() if v},
        special={k: int(v) for k, v in special.items() if v},
        operands=tuple(operands),
        smem=smem,
        scratch=int(scratch),
    )


@dataclass(frozen=True)
class Geometry:
    """How a tilelang launch spreads its work: its grid, its block's threads, the blocks an SM is
    planned to hold (None: the grid does not plan it), and its `units` of work (a row, a cache
    block) taken `workers` at a time (warps, programs). A last round with few units keeps few
    workers busy, a tail that the bytes-over-bandwidth floor does not count."""

    grid: tuple[int, ...]
    threads: int
    blocks_per_sm: int | None
    units: int
    unit: str
    workers: int
    worker: str
    per: str = ""  # what units and workers count per ("kv head": the grid repeats them for each)

    @property
    def rounds(self) -> int:
        return max(1, -(-self.units // max(1, self.workers)))

    @property
    def last_busy(self) -> float:
        """The share of workers busy in the last round."""
        return (self.units - (self.rounds - 1) * self.workers) / max(1, self.workers)


@dataclass(frozen=True)
class Family:
    """One kernel family. `torch(dims, bufs)` runs the launch on torch tensors in place;
    `cost(dims, ctx_len)` prices it; `tilelang(dims)` returns the prim_func (or None where the
    family has no tilelang kernel yet); `supported(dims)` says in a phrase why the tilelang kernel
    cannot run these dims (None: it can); `roles` is the operand order the prim_func takes;
    `geometry(dims, ctx_len)` is the tilelang launch's Geometry (None: the family does not say)."""

    name: str
    roles: tuple[str, ...]  # operand roles, in the prim_func's argument order
    cost: Callable[[Mapping, int], Cost]
    torch: Callable[[Mapping, Mapping], None]
    tilelang: Callable[[Mapping], object] | None = None
    supported: Callable[[Mapping], object] | None = None  # dims -> why the tilelang kernel can't run them, or None
    geometry: Callable[[Mapping, int], Geometry] | None = None
    describe: str = ""
    extra: dict = field(default_factory=dict)

    def geometry_of(self, dims: Mapping, ctx_len: int = 0) -> Geometry | None:
        """The tilelang launch's Geometry; None where the family does not say or its tilelang
        kernel cannot run these dims (torch runs them: there is no grid to show)."""
        if self.geometry is None or (self.supported is not None and self.supported(dims)):
            return None
        return self.geometry(dims, ctx_len)


FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    FAMILIES[family.name] = family
    return family


def family(name: str) -> Family:
    if not FAMILIES:
        import tfdash.kernels  # noqa: F401  (registers every family)
    return FAMILIES[name]
